"""What the windows a search read say about the order a restore wrote a partition in.

The header search bisects as if the offset headers grew with the target offset. That is an
assumption about the restore, so every window read is checked against it: source offsets must
strictly increase; no record without the header may lie between restored records; and between two
restored records read, the offsets not read must not outnumber the source offsets between them
(more records than the source had means a chunk written twice or foreign records inside). Holes in
what was read (transaction markers, compaction) are allowed in the same proportion in what was not.

A partition that fails any check is read whole and answered by ``resume_points``; one that passes is
consistent in everything read (docs/translation.md says what that does and does not prove).
Pure logic: the translate module feeds the records it fetched.
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from offset_restore.translate.resume_points import NO_KEY, PartitionLog, increasing

__all__ = [
    "ObservedPartition",
    "Overcounted",
    "disorder_in",
    "find_disorder",
    "first_unread",
    "hole_rate_of",
    "middle_unread",
    "overcounted",
]


@dataclass
class _Window:
    start: int
    end: int
    offsets: array
    keys: array
    timestamps: array


@dataclass
class ObservedPartition:
    """Every window read of one partition, in the order read."""

    windows: list[_Window] = field(default_factory=list)
    fallen: str | None = None
    """Why the headers read already fall back (a window's own, or against a window apart from it): the
    partition is out of order whatever the rest holds, its searches may stop (it is read whole)."""
    _firsts: list[int] = field(default_factory=list)
    _spans: list[_Span] = field(default_factory=list)

    def add(self, start: int, end: int, records: list[tuple[int, int | None, int]]) -> None:
        """``records``: (offset, source offset or None, timestamp) in offset order; [start, end) read."""
        window = _Window(
            start,
            end,
            array("q", (r[0] for r in records)),
            array("q", (NO_KEY if r[1] is None else r[1] for r in records)),
            array("q", (r[2] for r in records)),
        )
        span = _keyed_span(window)
        if self.fallen is None and span is not None:
            self.fallen = self._falls(span)
        self.windows.append(window)

    def _falls(self, new: _Span) -> str | None:
        """Why the new window's headers fall back, in it or against the windows read next to it (by
        first keyed offset; the others are left to the whole check): a look at two neighbours, not
        at every window, as a search reads hundreds on a partition."""
        if new.inside is not None:
            return new.inside
        at = bisect.bisect(self._firsts, new.first_offset)
        self._firsts.insert(at, new.first_offset)
        self._spans.insert(at, new)
        return _falls_against(new, self._spans[max(0, at - 1) : at] + self._spans[at + 1 : at + 2])

    def merged(self) -> tuple[PartitionLog, list[tuple[int, int]]]:
        """The records read, once each in offset order, and the merged [start, end) ranges read."""
        log = PartitionLog()
        ranges: list[tuple[int, int]] = []
        for w in sorted(self.windows, key=lambda w: w.start):
            last = log.offsets[-1] if log.offsets else -1
            at = 0 if not w.offsets or w.offsets[0] > last else bisect.bisect_right(w.offsets, last)
            log.offsets.extend(w.offsets[at:])  # a record read twice (windows overlap) is kept once
            log.keys.extend(w.keys[at:])
            log.timestamps.extend(w.timestamps[at:])
            if ranges and w.start <= ranges[-1][1]:
                ranges[-1] = (ranges[-1][0], max(ranges[-1][1], w.end))
            elif w.end > w.start:
                ranges.append((w.start, w.end))
        return log, ranges


class _Span(NamedTuple):
    """A window's first and last keyed records, and why its own headers fall back (None: they do not)."""

    first_offset: int
    first_key: int
    last_offset: int
    last_key: int
    inside: str | None


def _keyed_span(w: _Window) -> _Span | None:
    """The keyed records' span of a window (None: it has none)."""
    keyed = [(w.offsets[i], w.keys[i]) for i in range(len(w.offsets)) if w.keys[i] != NO_KEY]
    if not keyed:
        return None
    return _Span(*keyed[0], *keyed[-1], _first_fall(keyed))


def _falls_against(new: _Span, others: list[_Span]) -> str | None:
    """Why ``new`` (in order in itself) shows headers falling back against a window wholly before or
    after it (overlapping windows are left to the whole check, ``disorder_in``)."""
    for other in others:
        if other.last_offset < new.first_offset:
            before, after = other, new
        elif new.last_offset < other.first_offset:
            before, after = new, other
        else:
            continue
        if after.first_key <= before.last_key:
            return _fell(before.last_offset, before.last_key, after.first_offset, after.first_key)
    return None


def _fell(o1: int, k1: int, o2: int, k2: int) -> str:
    """The words for a header at or below the one before it (target offsets ``o1`` < ``o2``)."""
    what = "again" if k2 == k1 else f"after source offset {k1} at target offset {o1}"
    return f"target offset {o2} carries source offset {k2} {what}"


def _first_fall(keyed: Iterable[tuple[int, int]]) -> str | None:
    """Why the first header at or below the one before it falls back, among (offset, key) pairs in
    offset order (None: none does)."""
    return next((_fell(o1, k1, o2, k2) for (o1, k1), (o2, k2) in itertools.pairwise(keyed) if k2 <= k1), None)


def find_disorder(observed: ObservedPartition) -> str | None:
    """Why the records read contradict a restore in order, or None when they do not."""
    return disorder_in(*observed.merged())


def disorder_in(log: PartitionLog, ranges: list[tuple[int, int]], hole_rate: float | None = None) -> str | None:
    """``find_disorder`` for records already merged; ``ranges``: the [start, end) ranges read.
    ``hole_rate``: the share of holes allowed in what was not read (default: as in what was)."""
    found = _first_problem(log, ranges, hole_rate)
    return found[0] if found else None


SHORT_HOLE = 8
"""The longest run of offsets without a record that counts toward the holes believed in what was not
read: transaction markers and compacted records are scattered, one or a few at a time. A longer run —
an aborted transaction, a range written twice and compacted — licenses nothing where it was not read:
reads aimed at such a gap (``strategies/overcount.py``) must find it there."""


HOLE_SLACK = 2
"""Short holes allowed in a gap beyond its share: a rate measured on a few windows (a transaction
marker every 1,000 records, seen four times) under-counts what a long gap holds by one or two."""


def hole_rate_of(log: PartitionLog, ranges: list[tuple[int, int]]) -> float:
    """The share of the offsets read that were short holes (``SHORT_HOLE``) between records read."""
    read = sum(e - s for s, e in ranges)
    if not read:
        return 0.0
    if log.gapless():
        return 0.0
    offsets = log.offsets
    holes, at = 0, 0
    for i in range(1, len(offsets)):
        low, high = offsets[i - 1], offsets[i]
        gap = high - low - 1
        if 0 < gap <= SHORT_HOLE:
            while at < len(ranges) and ranges[at][1] <= low:
                at += 1
            if at < len(ranges) and ranges[at][0] <= low and high < ranges[at][1]:
                holes += gap  # both records in one range read: the offsets between held nothing
    return holes / read


class Overcounted(NamedTuple):
    """A gap between two restored records read that holds more unread offsets than the source had
    records between them: ``excess`` more than the holes allowed there."""

    low: int
    high: int
    excess: int


def overcounted(log: PartitionLog, ranges: list[tuple[int, int]], hole_rate: float | None = None) -> Overcounted | None:
    """The first problem of the records read when it is an over-counted gap (aborted transactions
    look so until read); None when it is another, or there is none. Reads aimed at holes must not
    raise the share of holes believed in what is still unread: the caller passes the share the
    windows showed before."""
    found = _first_problem(log, ranges, hole_rate)
    if found is None or found[1] is None or _falls_back(log):
        return None  # no problem, another, or headers that fall back further on: no read undoes that
    return found[1]


def middle_unread(gap: Overcounted, ranges: list[tuple[int, int]]) -> int | None:
    """An unread offset in the middle of ``gap`` (the first unread one after the middle, else before)."""
    middle = first_unread((gap.low + gap.high) // 2, gap.high, ranges)
    return middle if middle is not None else first_unread(gap.low + 1, gap.high, ranges)


def _falls_back(log: PartitionLog) -> bool:
    """Whether a header anywhere among the records read is at or below the one before it: the
    partition is out of order whatever the unread offsets between hold (the local broker returns the
    records of aborted transactions: their copy and its rewrite read so), and will be read whole."""
    return not increasing(log.keys)


def _first_problem(
    log: PartitionLog, ranges: list[tuple[int, int]], hole_rate: float | None
) -> tuple[str, Overcounted | None] | None:
    """The first contradiction of a restore in order, and for an over-counted gap its keyed ends."""
    if hole_rate is None:
        hole_rate = hole_rate_of(log, ranges)
    keys, offsets = log.keys, log.offsets
    if NO_KEY not in keys and increasing(keys):  # the common case
        if log.gapless():
            return None  # no gap at all between records read
        steps = map(operator.sub, offsets[1:], offsets[:-1])
        apart = itertools.compress(itertools.count(), map(operator.lt, itertools.repeat(1), steps))  # at C speed
        return next(filter(None, (_overcounted_at(log, i, i + 1, ranges, hole_rate) for i in apart)), None)
    keyed = [i for i in range(len(log)) if keys[i] != NO_KEY]
    for a, b in itertools.pairwise(keyed):
        (o1, k1), (o2, k2) = (offsets[a], keys[a]), (offsets[b], keys[b])
        if k2 <= k1:
            return _fell(o1, k1, o2, k2), None
        if b > a + 1:
            return f"target offset {offsets[a + 1]} has no offset header between restored records", None
        found = _overcounted_at(log, a, b, ranges, hole_rate) if o2 > o1 + 1 else None
        if found is not None:
            return found
    return None


def _overcounted_at(
    log: PartitionLog, a: int, b: int, ranges: list[tuple[int, int]], hole_rate: float
) -> tuple[str, Overcounted] | None:
    """Whether the offsets between restored records ``a`` and ``b`` of the log (in order, nothing
    between) that no window read outnumber the source's records between them and the holes allowed."""
    (o1, k1), (o2, k2) = (log.offsets[a], log.keys[a]), (log.offsets[b], log.keys[b])
    unread = _unread(o1 + 1, o2, ranges)
    allowed = (k2 - k1 - 1) + math.ceil(unread * hole_rate) + HOLE_SLACK
    if unread <= allowed:
        return None
    return (
        f"{unread} target offsets between source offsets {k1} and {k2} (target {o1}..{o2}): more "
        "records than the source had there (a chunk written twice, or records without the header)"
    ), Overcounted(o1, o2, unread - allowed)


def first_unread(start: int, end: int, ranges: list[tuple[int, int]]) -> int | None:
    """The first offset of [start, end) no window read (None: all were)."""
    at = start
    for s, e in ranges:
        if s <= at < e:
            at = e
    return at if at < end else None


def _unread(start: int, end: int, ranges: list[tuple[int, int]]) -> int:
    """How many offsets of [start, end) no window read."""
    covered = sum(max(0, min(end, e) - max(start, s)) for s, e in ranges)
    return (end - start) - covered
