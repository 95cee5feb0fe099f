"""What the fingerprint windows cannot see, from every position of a partition together.

Each position's window is read by time, from the first record as old as its evidence to a little
past the first one newer (``translate/strategies/fingerprint.py``): records moved or copied again
far from it are not in it, so a match can call exact what skips records moved earlier, or what
reads again a region copied twice later (a replication task that restarted). What every window of
the partition read together shows it:

- **Placed records.** A record whose fingerprint is some position's evidence is the copy of that
  source record. A group resumes no later than the first placed record at or past its committed
  offset (the running maximum of ``resume_points``, over the records the evidence places).
- **Counts.** Between two matched positions the target holds at most as many records as the source
  had offsets between them (holes on either side only make fewer). More records before a match than
  since an earlier match may hold records the group has not read, moved there: it resumes just after
  that earlier match (the latest such). More records after a match than before a later one may hold
  copies of records it has read: not exact.

A decision moved earlier reads again at most the records between where it resumes and its match (the
strategy counts them); a region copied twice claims no bound. Pure logic.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

__all__ = ["Doubt", "Found", "doubts"]


@dataclass(frozen=True, slots=True)
class Found:
    """One position's decision on the partition."""

    key: Hashable
    committed: int
    source: int
    """The source offset of the record at ``offset`` when ``placed``, else the committed offset."""
    offset: int
    placed: bool
    """The record at ``offset`` is the copy of source record ``source`` (its evidence matched)."""
    exact: bool

    @property
    def spare(self) -> int:
        return self.offset - self.source


@dataclass(frozen=True, slots=True)
class Doubt:
    """Why a decision is not exact (without what it claims of duplicates: the strategy adds that), and where it
    resumes instead (None: where it was). ``counted``:
    the earlier offset comes from counts alone (records moved there may be newer, or older copies):
    reading back what lies between tells which, and the decision stands when none is newer."""

    why: str
    offset: int | None = None
    counted: bool = False


def doubts(
    found: Sequence[Found], records: Sequence[tuple[int, int, int]]
) -> tuple[dict[Hashable, Doubt], dict[Hashable, Doubt]]:
    """``found``: the partition's decisions; ``records``: (lowest and highest source offset it may
    be, target offset) of every record the evidence placed in the windows read. Returns the
    decisions that may skip (with where to resume instead) and those that may read records again."""
    matches = sorted(found, key=lambda f: (f.source, f.offset))
    by_source = sorted((hi, offset) for _, hi, offset in records)
    by_offset = sorted((offset, lo) for lo, _, offset in records)
    return _moved_earlier(matches, by_source), _copied_after(matches, by_offset)


def _moved_earlier(matches: list[Found], records: list[tuple[int, int]]) -> dict[Hashable, Doubt]:
    sources = [s for s, _ in records]
    earliest = list(itertools.accumulate(reversed([o for _, o in records]), min))[::-1]
    out: dict[Hashable, Doubt] = {}
    stack: list[Found] = []  # earlier placed matches whose spare records only grow
    spares: list[int] = []
    for f in matches:
        limits = []
        at = bisect.bisect_left(sources, f.committed)
        if at < len(records) and earliest[at] < f.offset:
            limits.append((earliest[at], f"a copy of a record at or past source offset {f.committed} lies at "
                           f"target offset {earliest[at]}, before {f.offset}", False))  # fmt: skip
        below = bisect.bisect_left(spares, f.spare) - 1
        if below >= 0 and stack[below].offset + 1 < f.offset:
            h = stack[below]
            limits.append((h.offset + 1, f"the target holds {f.spare - h.spare} more records between offsets "
                           f"{h.offset} and {f.offset} than the source had between {h.source} and {f.source}: "
                           "records moved there may be ones this group has not read", True))  # fmt: skip
        if limits:
            offset, why, counted = min(limits)
            out[f.key] = Doubt(why, offset, counted)
        elif f.placed:
            while stack and stack[-1].spare >= f.spare:
                stack.pop()
                spares.pop()
            stack.append(f)
            spares.append(f.spare)
    return out


def _copied_after(matches: list[Found], records: list[tuple[int, int]]) -> dict[Hashable, Doubt]:
    """``records``: (target offset, lowest source offset) of the records the evidence placed."""
    out: dict[Hashable, Doubt] = {}
    furthest: Found | None = None  # the later placed match with the most records to spare
    for f in reversed(matches):
        if not f.placed:
            continue
        extra = furthest.spare - f.spare if furthest is not None else 0
        if f.exact and furthest is not None and extra > _copies_past(f, furthest.offset, records):
            out[f.key] = Doubt(
                f"the target holds {furthest.spare - f.spare} more records between offsets {f.offset} and "
                f"{furthest.offset} than the source had between {f.source} and {furthest.source}: a region copied "
                "twice (or foreign records) after the match"
            )
        elif furthest is None or f.spare > furthest.spare:
            furthest = f
    return out


def _copies_past(f: Found, until: int, records: list[tuple[int, int]]) -> int:
    """Second copies, between ``f``'s match and ``until``, of records at or past its committed
    offset: extra records that the group reads for the first time (a region copied twice that it had
    not reached), which explain as many of the extra records as they number."""
    start = bisect.bisect_right(records, (f.offset, float("inf")))
    end = bisect.bisect_left(records, (until, -1))
    later = [lo for _, lo in records[start:end] if lo >= f.committed]
    return len(later) - len(set(later))
