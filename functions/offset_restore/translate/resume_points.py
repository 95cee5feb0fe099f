"""The never-skip resume point, computed from every record of a partition, in whatever order the
restore wrote them (docs/translation.md).

For a committed source offset ``c`` the resume point is the first target offset whose record carries
a source offset ``>= c`` — the first offset where the running maximum of the offset headers reaches
``c``. No record carrying ``>= c`` lies before it, so nothing is skipped. Records at or after it that
carry a source offset ``< c`` are read twice: the entry is exact only when there are none, and
``duplicates`` counts them. On a restore written in order this is the first record ``>= c`` and
every entry is exact.

Records without the offset header between the first and the last restored record cannot be placed:
any of them may carry ``>= c``. The resume point is never after the first of them, and every one at
or after the resume point is counted as a possible duplicate. Records without the header before the
first restored record (the topic held data before the restore) or after the last one (written after
it) are not part of the restore and count for neither.

Evidence before assumptions: a record whose content the snapshot's evidence names may be placed
(``PartitionLog.spans``) where its header does not say it: a record without the header before the
first restored one whose fingerprint is the snapshot's record ``s`` is restored record ``s``; a
record whose header says ``x`` but whose content is the snapshot's record ``s`` may carry either. A
placed record carries an interval ``[low, high]``: the resume point comes from the highest it may
carry (nothing is skipped whichever it is) and the duplicates from the lowest (a bound, never below
the truth). ``translate/evidence_placement.py`` decides the spans.

Pure logic: the caller reads the partition (``PartitionLog``) and this module answers for any number
of committed offsets at once, in O((n + q) log n).
"""

from __future__ import annotations

import bisect
import itertools
import operator
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, cast

__all__ = ["NO_KEY", "PartitionLog", "Resume", "increasing", "resume_points", "running_max"]

NO_KEY = -1
"""The key of a record without the offset header (source offsets are never negative)."""


@dataclass
class PartitionLog:
    """Every record of a partition read in offset order: its offset, source offset, timestamp."""

    offsets: array = field(default_factory=lambda: array("q"))
    keys: array = field(default_factory=lambda: array("q"))
    timestamps: array = field(default_factory=lambda: array("q"))
    spans: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Records placed by the snapshot's evidence: index -> (lowest, highest) source offset it may
    carry, in place of its header (``translate/evidence_placement.py``)."""

    def append(self, offset: int, key: int | None, timestamp: int) -> None:
        if self.offsets and offset <= self.offsets[-1]:
            return  # read twice (overlapping fetches): the log is kept once
        self.offsets.append(offset)
        self.keys.append(NO_KEY if key is None else key)
        self.timestamps.append(timestamp)

    def extend(self, offsets: Sequence[int], keys: Sequence[int | None], timestamps: Sequence[int]) -> None:
        """Append the columns of records read in offset order (source offset None: no header), at once; those
        at or before the last offset held are read twice (overlapping fetches) and kept once."""
        last = self.offsets[-1] if self.offsets else -1
        if offsets and offsets[0] <= last:
            fresh = [i for i, offset in enumerate(offsets) if offset > last]
            offsets, timestamps = [offsets[i] for i in fresh], [timestamps[i] for i in fresh]
            keys = [keys[i] for i in fresh]
        _append_all(self.offsets, offsets)
        known = cast(Sequence[int], keys) if None not in keys else [NO_KEY if k is None else k for k in keys]
        _append_all(self.keys, known)
        _append_all(self.timestamps, timestamps)

    def __len__(self) -> int:
        return len(self.offsets)

    def gapless(self) -> bool:
        """Whether a record was read at every offset between the first read and the last (offsets only grow,
        each once): nothing between two records read to count as a hole or an over-counted gap."""
        offsets = self.offsets
        return not offsets or offsets[-1] - offsets[0] == len(offsets) - 1

    def carried(self) -> tuple[array, array]:
        """The lowest and the highest source offset each record may carry: its header, or its span
        (NO_KEY for a record that is not placed)."""
        if not self.spans:
            return self.keys, self.keys
        low, high = array("q", self.keys), array("q", self.keys)
        for index, (lo, hi) in self.spans.items():
            low[index], high[index] = lo, hi
        return low, high

    def restored_range(self) -> tuple[int, int, int, int] | None:
        """(index of the first restored record, of the last, smallest source offset, largest), or
        None when no record is placed (by its header or the evidence)."""
        low, high = self.carried()
        if high and NO_KEY not in high:  # every record placed (a restore with headers): at C speed
            return 0, len(high) - 1, min(low), max(high)
        keyed = [i for i in range(len(high)) if high[i] != NO_KEY]
        if not keyed:
            return None
        return keyed[0], keyed[-1], min(low[i] for i in keyed), max(high[i] for i in keyed)


class Resume(NamedTuple):
    """Where a group committed at a source offset resumes, and what that costs (a tuple: a dense plan makes
    one a position, at a third of a frozen dataclass's cost).

    ``at`` is the record's position in the log (one past the last restored record when no record
    carries ``>= c``: ``beyond``); ``offset`` the target offset to commit. ``pulled_back`` says that a
    record without the header moved the resume point earlier. ``carried``: the highest source offset
    the record at the resume point may carry (None: unknown, or beyond).
    """

    offset: int
    at: int
    duplicates: int
    beyond: bool
    pulled_back: bool
    carried: int | None = None

    @property
    def exact(self) -> bool:
        return self.duplicates == 0 and not self.pulled_back


class _Fenwick:
    """Counts of inserted values by rank, with prefix sums."""

    def __init__(self, size: int) -> None:
        self.tree = [0] * (size + 1)

    def add(self, rank: int) -> None:
        i = rank + 1
        while i < len(self.tree):
            self.tree[i] += 1
            i += i & -i

    def below(self, rank: int) -> int:
        """How many inserted values have a rank < ``rank``."""
        total, i = 0, rank
        while i > 0:
            total += self.tree[i]
            i -= i & -i
        return total


def _append_all(column: array, values: Sequence[int]) -> None:
    """``column.extend(values)``, converting a list at once (``fromlist``: twice as fast as ``extend``'s
    element-by-element path, and a dense plan appends millions)."""
    if isinstance(values, list):
        column.fromlist(values)
    else:
        column.extend(values)


def resume_points(log: PartitionLog, wanted: Iterable[int]) -> dict[int, Resume]:
    """The resume point of every committed source offset in ``wanted``.

    A partition without any restored record has no answer (an empty dict).
    """
    low, keys = log.carried()
    unkeyed = keys.count(NO_KEY)
    if unkeyed == len(keys):
        return {}
    first = next(i for i, key in enumerate(keys) if key != NO_KEY)
    last = len(keys) - 1 - next(i for i, key in enumerate(reversed(keys)) if key != NO_KEY)
    in_order = increasing(keys)
    running = keys if in_order and not unkeyed else running_max(keys)  # keys are NO_KEY or more
    unknown = [i for i in range(first + 1, last) if keys[i] == NO_KEY] if unkeyed else []
    starts: dict[int, tuple[int, bool, bool]] = {}  # c -> (index, beyond, pulled back)
    for c in set(wanted):
        at = bisect.bisect_left(running, c)
        beyond = at >= len(keys)
        index = last + 1 if beyond else at
        pulled = bool(unknown) and unknown[0] < index
        starts[c] = (unknown[0] if pulled else index, beyond, pulled)
    if not log.spans and in_order and not any(pulled for _, _, pulled in starts.values()):
        # In order (a restore written sorted), and no start pulled back before records it had
        # processed: no record after a start carries a smaller source offset, so the only
        # duplicates are the records without the header after it.
        counts = {c: len(unknown) - bisect.bisect_left(unknown, index) for c, (index, _, _) in starts.items()}
    else:
        counts = _duplicates(low, unknown, {c: index for c, (index, _, _) in starts.items()})
    answers = {}
    for c, (index, beyond, pulled) in starts.items():
        offset = log.offsets[index] if index <= last else log.offsets[last] + 1
        carried = keys[index] if index <= last and keys[index] != NO_KEY else None
        answers[c] = Resume(offset, index, counts[c], beyond, pulled, carried)
    return answers


def running_max(values: array) -> array:
    """The running maximum of ``values``: a copy where they never fall (a restore in order: checked and
    copied at C speed, where calling ``max`` a value costs a dense plan a second)."""
    if all(map(operator.le, values, itertools.islice(values, 1, None))):
        return array("q", values)
    return array("q", itertools.accumulate(values, max))


def increasing(keys: array) -> bool:
    """Whether the source offsets the records carry strictly grow (records without one left aside): the order
    check every reader of a log asks, at C speed."""
    carried = [k for k in keys if k != NO_KEY] if NO_KEY in keys else keys
    return all(map(operator.lt, carried, itertools.islice(carried, 1, None)))  # at C speed


def _duplicates(keys: array, unknown: list[int], starts: dict[int, int]) -> dict[int, int]:
    """Per c: restored records at or after its start that may carry a source offset < c (``keys``:
    the lowest each may carry), plus records without the header inside the restored range.
    Offline: the log is walked backwards once, each start answered when the walk reaches it."""
    ranks = sorted({k for k in keys if k != NO_KEY})
    tree = _Fenwick(len(ranks))
    by_start = sorted(starts.items(), key=lambda item: -item[1])
    counts: dict[int, int] = {}
    at = len(keys)
    for c, start in by_start:
        while at > start:
            at -= 1
            if keys[at] != NO_KEY:
                tree.add(bisect.bisect_left(ranks, keys[at]))
        unknown_after = len(unknown) - bisect.bisect_left(unknown, start)
        counts[c] = tree.below(bisect.bisect_left(ranks, c)) + unknown_after
    return counts
