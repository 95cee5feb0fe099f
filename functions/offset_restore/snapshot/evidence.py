"""Collect record evidence around committed offsets, many partitions per fetch round.

For each wanted (partition, committed offset ``c``) we need the first record at or after ``c`` and the
``n`` records before it. Groups on the same partition and offset share one piece of evidence, and all
the offsets wanted on one partition are read in one forward pass: each round fetches every partition
that still needs records, from where its previous read stopped (or from the next window's start when
the windows are far apart). Only offsets, timestamps and fingerprints are kept, never payloads, and the
restore's offset header where a record carries it (its origin offset: what a failback maps back with).

A window that begins inside the millisecond of its next record (a bulk producer puts tens of records in
one) reaches back through that millisecond (``RUN_EVIDENCE_RECORDS``): the plan then finds every record of
the next record's time before the position by its identity, and needs no clock to tell it from a record
past the position that a restore moved earlier.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from offset_restore.kafka.model import TP, LogBounds
from offset_restore.reading.rounds import AtEnd, Fetch, FetchRounds, Served, read_forward
from offset_restore.snapshot.fingerprint import record_fingerprint
from offset_restore.snapshot.headers import int_header
from offset_restore.snapshot.model import RecordEvidence

__all__ = ["RUN_EVIDENCE_RECORDS", "Evidence", "EvidenceStats", "collect_evidence"]

RUN_EVIDENCE_RECORDS = 1_000
"""The most records a window reaches back through its next record's millisecond. Past it, the plan says
the position is not proven by identity (it resumes earlier, counted), as it did before windows reached back."""
_RUN_GROWTH = 8
"""Each pass reads windows this many times longer, up to ``RUN_EVIDENCE_RECORDS``: most runs are short."""


@dataclass(frozen=True, slots=True)
class Evidence:
    next: RecordEvidence | None
    before: tuple[RecordEvidence, ...]
    complete: bool


@dataclass
class EvidenceStats:
    rounds: int = 0
    records_read: int = 0
    incomplete: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass
class _PartitionWork:
    offsets: list[int]  # committed offsets still to serve, ascending
    bounds: LogBounds
    cursor: int = 0  # next offset to fetch
    seen: list[RecordEvidence] = field(default_factory=list)  # contiguous from the window start


def _window_start(offset: int, bounds: LogBounds, n: int) -> int:
    return max(bounds.start, min(offset, bounds.end) - n)


def collect_evidence(
    wanted: Mapping[TP, set[int]],
    bounds: Mapping[TP, LogBounds],
    n: int,
    fetch: Fetch,
    *,
    offset_header: str | None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[tuple[TP, int], Evidence], EvidenceStats]:
    """Evidence per (partition, committed offset), ``n`` records before each and more where the window
    begins inside the next record's millisecond (``RUN_EVIDENCE_RECORDS``); ``wanted`` partitions must have
    ``bounds``."""
    reading = _Reading(bounds, fetch, offset_header)
    result, stats = _collect(wanted, n, reading, progress)
    size = n
    while size < RUN_EVIDENCE_RECORDS and (inside := _inside_runs(result, size)):
        size = _longer(size)
        # A window lengthened from what the last pass read is as long as this pass's already.
        shorter = {tp: {o for o in offsets if len(result[(tp, o)].before) < size} for tp, offsets in inside.items()}
        longer, more = _collect({tp: offsets for tp, offsets in shorter.items() if offsets}, size, reading)
        result.update(longer)
        stats.rounds, stats.records_read = stats.rounds + more.rounds, stats.records_read + more.records_read
        stats.incomplete += more.incomplete
        stats.notes.extend(more.notes)
    return result, stats


def _inside_runs(result: Mapping[tuple[TP, int], Evidence], n: int) -> dict[TP, set[int]]:
    """The positions whose whole window of ``n`` lies in their next record's millisecond (or later):
    records before it may share that millisecond too."""
    inside: dict[TP, set[int]] = {}
    for (tp, offset), ev in result.items():
        if _inside(ev, n):
            inside.setdefault(tp, set()).add(offset)
    return inside


def _inside(ev: Evidence, n: int) -> bool:
    """Whether a window of ``n`` lies in its next record's millisecond (or later)."""
    return bool(
        n
        and ev.complete
        and ev.next is not None
        and len(ev.before) >= n
        and ev.before[0].timestamp >= ev.next.timestamp
    )


def _longer(n: int) -> int:
    """The window the next pass reads where one of ``n`` lies inside its next record's millisecond."""
    return max(n, min(RUN_EVIDENCE_RECORDS, n * _RUN_GROWTH))


@dataclass(frozen=True, slots=True)
class _Reading:
    """What every pass of one collection reads with."""

    bounds: Mapping[TP, LogBounds]
    fetch: Fetch
    offset_header: str | None


def _collect(
    wanted: Mapping[TP, set[int]], n: int, reading: _Reading, progress: Callable[[int, int], None] | None = None
) -> tuple[dict[tuple[TP, int], Evidence], EvidenceStats]:
    """One pass: ``n`` records before each position, and its next record."""
    bounds, fetch, offset_header = reading.bounds, reading.fetch, reading.offset_header
    result: dict[tuple[TP, int], Evidence] = {}
    work = _start(wanted, bounds, n, result)
    total = sum(len(offsets) for offsets in wanted.values())
    rounds = FetchRounds(fetch, ends={tp: job.bounds.end for tp, job in work.items()})

    def take(tp: TP, outcome: Served | AtEnd) -> int | None:
        job = work[tp]
        if isinstance(outcome, AtEnd):
            _serve(tp, job, n, True, result)
            return None
        answer = outcome.answer
        job.seen.extend(
            RecordEvidence(
                offset=r.offset,
                timestamp=r.timestamp,
                fingerprint=record_fingerprint(r, offset_header),
                origin_offset=int_header(r, offset_header) if offset_header else None,
            )
            for r in answer.records
        )
        job.cursor = answer.read_to
        _serve(tp, job, n, False, result)
        if not job.offsets:
            return None
        _trim(job, n)
        return job.cursor

    stats = EvidenceStats()
    starts = {tp: job.cursor for tp, job in work.items()}
    until = {tp: job.offsets[-1] for tp, job in work.items()}
    while starts:
        failed = read_forward(
            rounds,
            starts,
            take,
            until=until,
            after_round=(lambda: progress(len(result), total)) if progress else None,
            reach=lambda tp: rounds.run_end(tp, _spans(work[tp], n)),
        )
        # Records deleted while we read (retention, DeleteRecords): go on from the new log start.
        moved = {tp: f.log_start for tp, f in failed.items() if f.log_start is not None}
        starts = {tp: start for tp, start in moved.items() if start > work[tp].cursor}
        for tp, failure in failed.items():
            if tp in starts:
                work[tp].cursor = starts[tp]
            else:
                stats.notes.append(f"{tp}: {failure.reason}")
                _give_up(tp, work[tp], n, result, stats)
    stats.rounds, stats.records_read = rounds.rounds, rounds.records
    return result, stats


def _start(
    wanted: Mapping[TP, set[int]], bounds: Mapping[TP, LogBounds], n: int, result: dict[tuple[TP, int], Evidence]
) -> dict[TP, _PartitionWork]:
    """One job per partition with a record to read; an empty log settles its offsets at once."""
    work: dict[TP, _PartitionWork] = {}
    for tp, offsets in wanted.items():
        b = bounds[tp]
        pending = sorted(offsets)
        if b.end <= b.start:  # committed at or beyond the end with nothing before: no record to describe
            result.update({(tp, offset): Evidence(None, (), True) for offset in pending})
            continue
        work[tp] = _PartitionWork(offsets=pending, bounds=b, cursor=_window_start(pending[0], b, n))
    return work


def _serve(tp: TP, job: _PartitionWork, n: int, exhausted: bool, result: dict[tuple[TP, int], Evidence]) -> None:
    """Emit every pending window that the records seen so far settle. A window inside its next record's
    millisecond is given the next pass's longer window at once where this pass read all of it already (a
    dense stretch of positions: the next pass would read the same records again)."""
    offsets_seen = [r.offset for r in job.seen]
    longer = _longer(n)
    done = 0
    for offset in job.offsets:
        at = bisect.bisect_left(offsets_seen, offset)
        if at == len(offsets_seen) and not exhausted:
            break
        window = _window(job, offsets_seen, offset, at, n)
        if longer > n and _inside(window, n) and offsets_seen[0] <= _window_start(offset, job.bounds, longer):
            window = _window(job, offsets_seen, offset, at, longer)
        result[(tp, offset)] = window
        done += 1
    del job.offsets[:done]


def _window(job: _PartitionWork, offsets_seen: list[int], offset: int, at: int, n: int) -> Evidence:
    """The evidence of ``offset`` (its next record at ``at`` in what was seen) with a window of ``n``."""
    first = bisect.bisect_left(offsets_seen, _window_start(offset, job.bounds, n))
    nxt = job.seen[at] if at < len(offsets_seen) else None
    return Evidence(nxt, tuple(job.seen[max(first, at - n) : at]), True)


def _spans(job: _PartitionWork, n: int) -> Iterator[tuple[int, int]]:
    """The records each pending offset's evidence needs: its window and the offset itself."""
    for offset in job.offsets:
        yield _window_start(offset, job.bounds, n), offset + 1


def _trim(job: _PartitionWork, n: int) -> None:
    """Jump ahead when the next window starts past what was read; keep only what it needs, and what the next
    pass's longer window would (``_serve``) where it was read."""
    start = _window_start(job.offsets[0], job.bounds, n)
    if start > job.cursor:
        job.cursor = start
        job.seen = []
    else:
        keep = _window_start(job.offsets[0], job.bounds, _longer(n))
        del job.seen[: bisect.bisect_left([r.offset for r in job.seen], keep)]


def _give_up(tp: TP, job: _PartitionWork, n: int, result: dict[tuple[TP, int], Evidence], stats: EvidenceStats) -> None:
    """Keep what was read for the windows still open, marked incomplete."""
    offsets_seen = [r.offset for r in job.seen]
    for offset in job.offsets:
        at = bisect.bisect_left(offsets_seen, offset)
        first = bisect.bisect_left(offsets_seen, _window_start(offset, job.bounds, n))
        nxt = job.seen[at] if at < len(offsets_seen) else None
        result[(tp, offset)] = Evidence(nxt, tuple(job.seen[max(first, at - n) : at]), False)
        stats.incomplete += 1
    job.offsets.clear()
