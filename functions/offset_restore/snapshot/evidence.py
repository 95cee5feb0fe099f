"""Collect record evidence around committed offsets, many partitions per fetch round.

For each wanted (partition, committed offset ``c``) we need the first record at or after ``c`` and the
``n`` records before it. Groups on the same partition and offset share one piece of evidence, and all
the offsets wanted on one partition are read in one forward pass: each round fetches every partition
that still needs records, from where its previous read stopped (or from the next window's start when
the windows are far apart). Only offsets, timestamps and fingerprints are kept, never payloads.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from offset_restore.kafka.model import TP, LogBounds, PartitionFetch
from offset_restore.snapshot.fingerprint import fingerprint
from offset_restore.snapshot.model import RecordEvidence

__all__ = ["Evidence", "EvidenceStats", "collect_evidence"]

Fetcher = Callable[[Mapping[TP, int], Mapping[TP, int]], Mapping[TP, PartitionFetch]]
"""(fetch offsets, last offset wanted) -> one fetch round's result per partition."""

MAX_STALLED_ROUNDS = 10


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
    stalled: int = 0


def _window_start(offset: int, bounds: LogBounds, n: int) -> int:
    return max(bounds.start, min(offset, bounds.end) - n)


def collect_evidence(
    wanted: Mapping[TP, set[int]],
    bounds: Mapping[TP, LogBounds],
    n: int,
    fetch: Fetcher,
    *,
    offset_header: str | None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[tuple[TP, int], Evidence], EvidenceStats]:
    """Evidence per (partition, committed offset); ``wanted`` partitions must have ``bounds``."""
    stats = EvidenceStats()
    result: dict[tuple[TP, int], Evidence] = {}
    work = _start(wanted, bounds, n, result)
    total = sum(len(offsets) for offsets in wanted.values())
    while work:
        stats.rounds += 1
        # Partitions the broker left empty last round (its response was full) go first.
        positions = {tp: job.cursor for tp, job in sorted(work.items(), key=lambda item: -item[1].stalled)}
        until = {tp: max(job.offsets[-1], job.cursor) for tp, job in work.items()}
        answers = fetch(positions, until)
        for tp in list(work):
            if not _advance(tp, work[tp], answers.get(tp), n, offset_header, result, stats):
                del work[tp]
        if progress is not None:
            progress(len(result), total)
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


def _advance(
    tp: TP,
    job: _PartitionWork,
    answer: PartitionFetch | None,
    n: int,
    offset_header: str | None,
    result: dict[tuple[TP, int], Evidence],
    stats: EvidenceStats,
) -> bool:
    """Take one round's answer for a partition: keep its records, settle the windows they close,
    move the cursor. False when the partition is done (or given up)."""
    if answer is not None and answer.error == "OffsetOutOfRangeError" and answer.log_start_offset > job.cursor:
        job.cursor = answer.log_start_offset  # retention moved the log start while we read
        return True
    if answer is None or answer.error:
        stats.notes.append(f"{tp}: fetch at {job.cursor} failed ({answer.error if answer else 'no answer'})")
        _give_up(tp, job, n, result, stats)
        return False
    end = max(job.bounds.end, answer.high_watermark)
    job.seen.extend(
        RecordEvidence(
            offset=r.offset,
            timestamp=r.timestamp,
            fingerprint=fingerprint(r.key, r.value, r.headers, exclude_header=offset_header),
        )
        for r in answer.records
    )
    stats.records_read += len(answer.records)
    if answer.read_to > job.cursor:
        job.cursor, job.stalled = answer.read_to, 0
    elif job.cursor < end:
        job.stalled += 1
    exhausted = job.cursor >= end or (not answer.records and job.cursor >= answer.high_watermark >= 0)
    _serve(tp, job, n, exhausted, result)
    if job.stalled >= MAX_STALLED_ROUNDS:
        stats.notes.append(f"{tp}: no records returned at offset {job.cursor} below the end {end}")
        _give_up(tp, job, n, result, stats)
    if not job.offsets:
        return False
    _trim(job, n)
    return True


def _serve(tp: TP, job: _PartitionWork, n: int, exhausted: bool, result: dict[tuple[TP, int], Evidence]) -> None:
    """Emit every pending window that the records seen so far settle."""
    offsets_seen = [r.offset for r in job.seen]
    done = 0
    for offset in job.offsets:
        at = bisect.bisect_left(offsets_seen, offset)
        if at == len(offsets_seen) and not exhausted:
            break
        first = bisect.bisect_left(offsets_seen, _window_start(offset, job.bounds, n))
        nxt = job.seen[at] if at < len(offsets_seen) else None
        result[(tp, offset)] = Evidence(nxt, tuple(job.seen[max(first, at - n) : at]), True)
        done += 1
    del job.offsets[:done]


def _trim(job: _PartitionWork, n: int) -> None:
    """Jump ahead when the next window starts past what was read; keep only what it needs."""
    start = _window_start(job.offsets[0], job.bounds, n)
    if start > job.cursor:
        job.cursor = start
        job.seen = []
    else:
        del job.seen[: bisect.bisect_left([r.offset for r in job.seen], start)]


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
