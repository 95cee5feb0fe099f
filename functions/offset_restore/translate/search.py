"""Find, in many target partitions at once, the first record whose key is ``>=`` a wanted value.

The key is a number that grows with the offset: the source offset a restore wrote into a header, or
the record timestamp. Each partition keeps what earlier fetches showed: the keys of the records read
and the offset ranges read completely (a compacted gap inside a range read is known to hold no
record). A search is settled when the first record with key ``>=`` the wanted value is known and
nothing unread lies between it and the last record below; or when everything after the last record
below has been read and holds no such record ("beyond").

Every round fetches each partition that still has an unsettled search once, all partitions in one
request per broker. The position is estimated by interpolation between the nearest known records
below and above (or from a caller's first guess), and by bisection when interpolation did not halve
the unknown range in the previous round. Fetches start a few records before the estimate so that the
record just below the answer usually comes in the same window.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from typing import TypeVar

from offset_restore.kafka.model import TP, LogBounds, PartitionFetch, Record
from offset_restore.reading.rounds import AtEnd, Failed, Fetch, FetchRounds, Served, Unserved

__all__ = [
    "KeyedRecord",
    "Observer",
    "PartitionIndex",
    "SearchResult",
    "SearchStats",
    "index_window",
    "search_first_at_least",
    "widened",
]

KeyOf = Callable[[TP, Record], int | None]
"""The record's key, or None for a record without one (e.g. written before the restore)."""
Observer = Callable[[TP, int, PartitionFetch, list[int | None]], None]
"""Told of every window the search read: partition, fetch position, the answer, each record's key."""

BACK_MARGIN = 4
MAX_ROUNDS = 200
MAX_BARREN_ROUNDS = 8
"""Windows read without one keyed record before the searches of a partition the caller named
``barren`` give up (incomplete: the next strategy decides). A replica written without the header
would otherwise be read window after window until ``MAX_ROUNDS``: 200 rounds of 16 KB, 3.3 MB a
partition, to learn nothing."""
JobId = TypeVar("JobId", bound=Hashable)


@dataclass(frozen=True, slots=True)
class KeyedRecord:
    offset: int
    key: int


@dataclass(frozen=True, slots=True)
class SearchResult:
    """``found``: the first record with key >= wanted, or None when there is none ("beyond").

    ``below``: the last keyed record before it (None when ``found`` is the first keyed record of the
    partition, or the partition holds no keyed record at all). ``complete`` is False when the search
    gave up (fetch errors, no progress); then nothing else may be trusted.
    """

    found: KeyedRecord | None
    below: KeyedRecord | None
    complete: bool = True
    reason: str | None = None


@dataclass
class SearchStats:
    rounds: int = 0
    fetches: int = 0
    records_read: int = 0
    rounds_per_partition: dict[TP, int] = field(default_factory=dict)
    limits: dict[TP, int] = field(default_factory=dict)
    """The byte limits the partitions' reads grew to, and the batch sizes measured (``FetchRounds``)."""
    batch_bytes: dict[TP, int] = field(default_factory=dict)
    largest_batch: dict[TP, int] = field(default_factory=dict)
    """The largest whole batch each partition's windows held (``FetchRounds.largest_batch``)."""


@dataclass
class PartitionIndex:
    """What is known of one partition: keyed records by offset and fully read offset ranges."""

    bounds: LogBounds
    offsets: list[int] = field(default_factory=list)
    keys: list[int] = field(default_factory=list)
    covered: list[tuple[int, int]] = field(default_factory=list)  # merged [start, end) ranges read

    def add_window(self, start: int, end: int, records: list[KeyedRecord]) -> None:
        at = bisect.bisect_left(self.offsets, records[0].offset) if records else 0
        if records and (at == len(self.offsets) or self.offsets[at] > records[-1].offset):
            self.offsets[at:at] = [r.offset for r in records]  # reading forward, or into a gap between windows
            self.keys[at:at] = [r.key for r in records]
        elif records:
            by_offset = dict(zip(self.offsets, self.keys, strict=True))
            by_offset.update((r.offset, r.key) for r in records)
            self.offsets = sorted(by_offset)
            self.keys = [by_offset[o] for o in self.offsets]
        if end > start:
            self.covered.append((start, end))
            self.covered.sort()
            ranges: list[tuple[int, int]] = []
            for s, e in self.covered:
                if ranges and s <= ranges[-1][1]:
                    ranges[-1] = (ranges[-1][0], max(ranges[-1][1], e))
                else:
                    ranges.append((s, e))
            self.covered = ranges

    def is_covered(self, start: int, end: int) -> bool:
        """Whether every offset in [start, end) was read."""
        if end <= start:
            return True
        at = bisect.bisect_right(self.covered, (start, float("inf"))) - 1
        return at >= 0 and self.covered[at][0] <= start and self.covered[at][1] >= end

    def read_up_to(self, position: int) -> int:
        """The end of the last range read that ends at or before ``position`` (-1: none does)."""
        at = bisect.bisect_right(self.covered, (position, float("inf"))) - 1
        while at >= 0 and self.covered[at][1] > position:
            at -= 1
        return self.covered[at][1] if at >= 0 else -1

    def first_unread(self, start: int) -> int:
        """The first offset at or after ``start`` that was not read."""
        for s, e in self.covered:
            if s <= start < e:
                return e
        return start

    def slope(self) -> float:
        """Offsets per key unit between the first and last keyed records read (1 if unknown)."""
        if len(self.keys) >= 2 and self.keys[-1] > self.keys[0]:
            return (self.offsets[-1] - self.offsets[0]) / (self.keys[-1] - self.keys[0])
        return 1.0

    def count_at_most(self, offset: int, limit: int) -> tuple[int, int | None]:
        """How many read records from ``offset`` on have a key <= ``limit`` without a break, and where
        reading must go on to be sure (None when a record past the limit, or the log's end, ends it)."""
        at = bisect.bisect_left(self.offsets, offset)
        count = 0
        while at < len(self.offsets) and self.is_covered(offset, self.offsets[at] + 1):
            if self.keys[at] > limit:
                return count, None
            count += 1
            at += 1
        unread = self.first_unread(offset)
        return count, (unread if unread < self.bounds.end else None)

    def neighbours(self, wanted: int) -> tuple[KeyedRecord | None, KeyedRecord | None]:
        """Last known keyed record with key < wanted and first known with key >= wanted.

        Keys grow with offsets, so a bisection over the keys in offset order finds both.
        """
        at = bisect.bisect_left(self.keys, wanted)
        below = KeyedRecord(self.offsets[at - 1], self.keys[at - 1]) if at > 0 else None
        above = KeyedRecord(self.offsets[at], self.keys[at]) if at < len(self.keys) else None
        return below, above


@dataclass
class _Job:
    tp: TP
    wanted: int
    guess: int | None
    last_gap: int | None = None
    bracketed: bool = False
    slow_rounds: int = 0


def search_first_at_least(
    wanted: Mapping[JobId, tuple[TP, int, int | None]],
    bounds: Mapping[TP, LogBounds],
    key_of: KeyOf,
    fetch: Fetch,
    *,
    indexes: dict[TP, PartitionIndex] | None = None,
    observe: Observer | None = None,
    limits: Mapping[TP, int] | None = None,
    batches: Mapping[TP, int] | None = None,
    barren: set[TP] | None = None,
    abandon: Callable[[TP], str | None] | None = None,
) -> tuple[dict[JobId, SearchResult], SearchStats]:
    """Settle every search in ``wanted``: id -> (partition, wanted key, first guess of the offset or None).

    ``indexes`` may be shared between calls (e.g. one per strategy key) to reuse what was read.
    ``observe`` is told of every window read, with the keys the search parsed (a caller that checks
    what was read need not parse every record again). ``limits``: each partition's first byte limit,
    where an earlier read learned that its batches are larger than a point read's (``Context.limits``);
    ``batches``: the largest batch earlier reads saw of each (``Context.largest_batch``), so that the
    first window of a partition of small batches is already fitted to them (``FetchRounds._fitted``).
    ``barren``: partitions whose searches give up after ``MAX_BARREN_ROUNDS`` windows without a keyed
    record (those whose last records carry no key either: a replica written without it).
    ``abandon``: why a partition's searches stop after a window (None: they go on); the header strategy
    stops those whose headers already fall back, which it reads whole.
    """
    indexes = {} if indexes is None else indexes
    stats = SearchStats()
    jobs = {job_id: _Job(tp, value, guess) for job_id, (tp, value, guess) in wanted.items()}
    results: dict[JobId, SearchResult] = {}
    for tp in {job.tp for job in jobs.values()}:
        indexes.setdefault(tp, PartitionIndex(bounds[tp]))
    rounds = FetchRounds(
        fetch,
        ends={tp: i.bounds.end for tp, i in indexes.items()},
        limits=dict(limits or {}),
        largest_batch=dict(batches or {}),
    )
    unkeyed: dict[TP, int] = {}

    while jobs:
        chosen = _choose(jobs, indexes, results)
        positions = {tp: _next_position(indexes[tp], job, commit=True) for tp, job in chosen.items()}
        if not positions:
            break
        if rounds.rounds >= MAX_ROUNDS:
            for job_id in jobs:
                results[job_id] = SearchResult(None, None, False, f"no answer after {MAX_ROUNDS} fetch rounds")
            break
        for tp, outcome in rounds.round(positions).items():
            stats.rounds_per_partition[tp] = stats.rounds_per_partition.get(tp, 0) + 1
            if isinstance(outcome, Failed):
                _give_up(jobs, results, tp, outcome.reason)
                continue
            _take(tp, positions[tp], outcome, indexes[tp], key_of, observe)
            unkeyed[tp] = 0 if indexes[tp].keys else unkeyed.get(tp, 0) + 1
            if barren is not None and tp in barren and unkeyed[tp] >= MAX_BARREN_ROUNDS:
                _give_up(
                    jobs,
                    results,
                    tp,
                    f"no record with the key in the {MAX_BARREN_ROUNDS} windows read (written without it?)",
                )
            elif abandon is not None and (why := abandon(tp)) is not None:
                _give_up(jobs, results, tp, why)
    stats.rounds, stats.fetches, stats.records_read = rounds.rounds, rounds.fetches, rounds.records
    stats.limits, stats.batch_bytes, stats.largest_batch = rounds.limits, rounds.batch_bytes, rounds.largest_batch
    return results, stats


def _give_up(jobs: dict[JobId, _Job], results: dict[JobId, SearchResult], tp: TP, why: str) -> None:
    """Every search of ``tp`` ends unanswered, with why (the caller's next step decides them)."""
    for job_id in [j for j, job in jobs.items() if job.tp == tp]:
        results[job_id] = SearchResult(None, None, False, why)
        del jobs[job_id]


def _choose(
    jobs: dict[JobId, _Job], indexes: Mapping[TP, PartitionIndex], results: dict[JobId, SearchResult]
) -> dict[TP, _Job]:
    """Settle what the index already answers; per partition, the job whose next position is lowest:
    when many searches share a partition, one window settles every search whose answer lies in it."""
    chosen: dict[TP, tuple[int, _Job]] = {}
    for job_id, job in list(jobs.items()):
        index = indexes[job.tp]
        settled = _settle(index, job.wanted)
        if settled is not None:
            results[job_id] = settled
            del jobs[job_id]
            continue
        proposal = _next_position(index, job, commit=False)
        if job.tp not in chosen or proposal < chosen[job.tp][0]:
            chosen[job.tp] = (proposal, job)
    return {tp: job for tp, (_, job) in chosen.items()}


def _take(
    tp: TP,
    position: int,
    outcome: Served | AtEnd | Unserved,
    index: PartitionIndex,
    key_of: KeyOf,
    observe: Observer | None,
) -> None:
    """Add what one round showed of a partition to its index (an unserved round shows nothing but
    the log's end)."""
    if outcome.end > index.bounds.end:  # the log grew since the plan began: search it to its new end
        index.bounds = LogBounds(index.bounds.start, outcome.end)
    if isinstance(outcome, AtEnd):
        index.add_window(position, position + 1, [])  # past the end: nothing there
    if not isinstance(outcome, Served):
        return
    index_window(tp, widened(outcome.answer, position, index), index, key_of, observe)


def index_window(
    tp: TP, answer: PartitionFetch, index: PartitionIndex, key_of: KeyOf, observe: Observer | None
) -> None:
    """Add an answer's keyed records and the range it covered to ``index``, ``observe`` told of it:
    what a search does with each window, and a caller with a window read before the search began
    (the header strategy's probes) does with it, so the search does not ask for it again."""
    keys = [key_of(tp, record) for record in answer.records]
    keyed = [KeyedRecord(r.offset, k) for r, k in zip(answer.records, keys, strict=True) if k is not None]
    index.add_window(answer.fetch_offset, answer.read_to, keyed)
    if observe is not None:
        observe(tp, answer.fetch_offset, answer, keys)


def widened(answer: PartitionFetch, position: int, index: PartitionIndex) -> PartitionFetch:
    """The answer as if fetched from where its first batch starts, down to what was read before: the
    broker sent that batch whole, and a later search whose answer lies in it would ask for the same
    batch again (a large compressed batch holds thousands of offsets: 50 searches in 20 such batches
    read 1.25x the partition before). Records below the log's start are left out (deleted)."""
    if answer.earlier is None or answer.earlier_from >= position:
        return answer
    start = max(answer.earlier_from, index.bounds.start, answer.log_start_offset, index.read_up_to(position))
    if start >= position:
        return answer
    return replace(answer, fetch_offset=start, records=[*answer.earlier(start), *answer.records], earlier=None)


def _settle(index: PartitionIndex, wanted: int) -> SearchResult | None:
    below, above = index.neighbours(wanted)
    start = below.offset + 1 if below else index.bounds.start
    if above is not None:
        return SearchResult(above, below) if index.is_covered(start, above.offset) else None
    if index.is_covered(start, index.bounds.end):
        return SearchResult(None, below)
    return None


def _next_position(index: PartitionIndex, job: _Job, *, commit: bool) -> int:
    """Where to fetch next for ``job``: always an offset not read yet, so every round makes progress.

    Only a committed proposal (the one fetched) updates the job's record of past rounds.
    """
    below, above = index.neighbours(job.wanted)
    low = index.first_unread(below.offset + 1 if below else index.bounds.start)
    high = above.offset if above else index.bounds.end
    gap = high - low
    slow_rounds = job.slow_rounds
    if job.last_gap is not None:
        slow_rounds = slow_rounds + 1 if gap > job.last_gap // 2 else 0
    bracketed = below is not None and above is not None and above.key > below.key
    estimate: float
    if (job.bracketed and slow_rounds >= 1) or slow_rounds >= 2:
        estimate = low + gap / 2 + BACK_MARGIN  # the estimates do not halve the range: bisect
    elif bracketed:
        assert below is not None and above is not None
        estimate = below.offset + (job.wanted - below.key) * (above.offset - below.offset) / (above.key - below.key)
    elif below is None and above is None:
        estimate = job.guess if job.guess is not None else low
    else:
        anchor = below or above
        assert anchor is not None
        estimate = anchor.offset + (job.wanted - anchor.key) * index.slope()
    if commit:
        job.bracketed, job.last_gap, job.slow_rounds = bracketed, gap, slow_rounds
    position = max(low, min(int(estimate) - BACK_MARGIN, high - 1))
    position = index.first_unread(position)
    return position if position < high else low
