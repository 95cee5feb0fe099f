"""Gaps between the search's windows that hold more offsets than the source had records there: read
into until what they hold is known, instead of reading the partition whole.

A transactional restore leaves what a read_committed read never returns: the records of each aborted
transaction (a restore tool that retried) and a marker per transaction. Between two windows the
search read far apart, those offsets look like "more records than the source had", which is also
what a chunk written twice looks like — and there a search can land on the wrong copy, so the order
check must not simply believe it. Read, an aborted transaction is a hole like a compacted one (offsets
covered, no record); a chunk written twice is headers that fall back. So each such gap is bisected:
a window in its middle splits it, the halves still over-counted are read again, until no gap is
(the check passes, nothing read whole), a read shows disorder, or ``MAX_GAP_ROUNDS`` pass (then the
partition is read whole, as before), or the reads cost ``GAP_SHARE`` of the partition.

Each aborted transaction is first looked for by its marker (``marker_walk.py``: the markers found through
the broker's time index, each read alone, an abort marker's answer naming where its transaction began):
one found is read by its first and last batches, no window spent landing in it (the benchmark's
transactional restore on Apache Kafka: gap reads 367 -> about 136). Where none is found, as before:
an aborted transaction is not read through: a read that lands in one learns the transaction's first
offset (the broker's answer lists it), the next read takes its first batch, and the span from there
to the furthest batch of it read is proven to hold that transaction alone (``aborted_spans.py``,
from the producer's sequence numbers) and counted as read; the read after aims at the transaction's
last batch, where the gap's excess says it ends. An aborted transaction of up to 1,000 records
costs two or three batches, not every one it holds (the benchmark's transactional restore: gap reads
32.2 -> 6.3 MB, docs/benchmarks.md). Windows that land on holes with no such proof (compaction)
grow 4x. The holes believed in what is still unread are measured outside the aborted transactions
and count the markers read (a read of one batch ends before the marker after it).
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Mapping
from dataclasses import replace

from offset_restore.kafka.model import ONE_BATCH, TP, LogBounds, PartitionFetch
from offset_restore.reading.rounds import POINT_READ_BYTES, Served, Unserved
from offset_restore.translate.aborted_spans import outside, proven_spans, unread_starts
from offset_restore.translate.context import Context
from offset_restore.translate.header_reads import HeaderReads
from offset_restore.translate.restore_order import disorder_in, first_unread, hole_rate_of, middle_unread, overcounted
from offset_restore.translate.resume_points import PartitionLog
from offset_restore.translate.strategies.marker_walk import walk_markers

__all__ = ["MAX_GAP_ROUNDS", "read_overcounted_gaps"]

MAX_GAP_ROUNDS = 256
"""Rounds of gap reads before a partition still over-counted is read whole."""
MAX_GAP_WINDOW = 1024 * 1024
GAP_SHARE = 0.5
"""The most the gap reads of a partition may cost, as a share of reading it whole (priced from the gap
reads' own bytes per offset): past it the partition is read whole, as before. A broker that ignores
per-partition limits (the local one) sends megabytes for each window, and one read tells."""


def read_overcounted_gaps(tps: Mapping[TP, str], reads: HeaderReads, ctx: Context) -> dict[TP, str]:
    """For each partition of ``tps`` (with the disorder found), read its over-counted gaps; returns
    the partitions still in disorder, with why (the others passed the order check)."""
    problems = dict(tps)
    proofs = {tp: _Proofs() for tp in tps}
    walked = walk_markers([tp for tp in tps if _aim(reads, tp, proofs[tp]) is not None], reads, ctx)
    for tp, spans in walked.items():
        proofs[tp].walked = spans
    at = {tp: gap for tp in tps if (gap := _aim(reads, tp, proofs[tp])) is not None}
    rounds = ctx.rounds()
    first = {tp: rounds.limits.get(tp, POINT_READ_BYTES) for tp in at}  # a large batch's ONE_BATCH kept
    limits = dict(first)
    spent = _Spent()
    for _ in range(MAX_GAP_ROUNDS):
        if not at:
            break
        rounds.limits.update({tp: limits[tp] for tp in at})
        stops = {tp: stop for tp in at if (stop := _next_read(proofs[tp].ranges, at[tp])) is not None}
        for tp, outcome in rounds.round(at, stops=stops).items():
            if isinstance(outcome, Unserved):
                limits[tp] = rounds.limits[tp]  # the limit the round grew it to: asked so next
                continue
            if not isinstance(outcome, Served):
                del at[tp]  # failed: read whole at last
                continue
            answer = _widened(outcome.answer, at[tp], proofs[tp].ranges)  # read when it was aimed
            keys = [reads.key_of(tp, record) for record in answer.records]
            reads.observe(tp, answer.fetch_offset, answer, keys)
            holes_only = all(key is None for key in keys) and not answer.aborted  # no proof: read on
            limits[tp] = _grown(limits[tp]) if holes_only else first[tp]
            if spent.over(tp, answer.size, answer.read_to - at[tp], ctx.bounds[tp]):
                del at[tp]  # cheaper read whole: its problem stays
        for tp in list(at):
            gap = _aim(reads, tp, proofs[tp])
            if gap is not None:
                at[tp] = gap
                continue
            del at[tp]
            problem = disorder_in(*_read(reads, tp, proofs[tp]))
            if problem is None:
                del problems[tp]
            else:
                problems[tp] = problem
    ctx.learned.learn({}, rounds.batch_bytes)
    ctx.record("header (gaps)", rounds.rounds, rounds.fetches, rounds.records, {})
    return problems


def _next_read(ranges: list[tuple[int, int]], position: int) -> int | None:
    """Where the first range read after ``position`` begins (None: none): a gap read grown past holes
    stops there where the broker sends whole batches (``FetchRounds.round``'s ``stops``), not reading
    a batch it read already (a 64 KB read after a marker brought one again, on the local broker)."""
    at = bisect.bisect_right(ranges, (position, sys.maxsize))
    return ranges[at][0] if at < len(ranges) else None


class _Proofs:
    """The spans of aborted transactions proven in one partition so far, counted as read."""

    def __init__(self) -> None:
        self.added: set[tuple[int, int]] = set()
        self.ranges: list[tuple[int, int]] = []
        """The ranges read when the partition's next read was aimed (``_read``): what that read adds to."""
        self.walked: list[tuple[int, int]] = []
        """The markers read alone (``marker_walk``): left out of the share of holes, for they were read
        for being markers (a thousand of them beside 2,500 offsets of windows made it 7%)."""

    def add(self, reads: HeaderReads, tp: TP) -> None:
        """Count as read every span the partition's aborted batches now prove (``proven_spans``)."""
        for span in proven_spans(reads.aborted.get(tp, ())):
            if span not in self.added:
                self.added.add(span)
                reads.observed[tp].add(*span, [])


def _read(reads: HeaderReads, tp: TP, proofs: _Proofs) -> tuple[PartitionLog, list[tuple[int, int]], float]:
    """What was read of the partition, its proven spans counted as read, and the share of holes it
    showed outside its aborted transactions (``outside``): of short holes between records read, or
    of the transaction markers read, whichever is more (a read of one batch ends before the marker
    after it, so a marker is rarely between two records read, and every transaction has one)."""
    proofs.add(reads, tp)
    log, ranges = reads.observed[tp].merged()
    proofs.ranges = ranges
    aborted = [(b.base_offset, b.next_offset) for b in reads.aborted.get(tp, ())]
    kept = outside(ranges, [*aborted, *proofs.added, *proofs.walked])
    read = sum(end - start for start, end in kept)
    markers = sum(1 for m in reads.markers.get(tp, ()) if any(start <= m < end for start, end in kept))
    return log, ranges, max(hole_rate_of(log, kept), markers / read if read else 0.0)


def _aim(reads: HeaderReads, tp: TP, proofs: _Proofs) -> int | None:
    """Where to read next in the partition's first over-counted gap (None: it has none): the first
    batch of an aborted transaction seen in it, else where a span proven in it is estimated to end
    (its last batch: the gap's excess on from the span), else the gap's middle."""
    log, ranges, rate = _read(reads, tp, proofs)
    gap = overcounted(log, ranges, rate)
    if gap is None:
        return None
    for start, marker in sorted(reads.ended.get(tp, ())):  # found by its marker: its first batch, then its last
        for offset in (start, marker - 1):
            if gap.low < offset < gap.high and first_unread(offset, offset + 1, ranges) is not None:
                return offset
    for start in unread_starts(reads.aborted.get(tp, ())):
        if gap.low < start < gap.high and first_unread(start, start + 1, ranges) is not None:
            return start
    for _, end in sorted(proofs.added):
        if gap.low < end < gap.high and first_unread(end, end + 1, ranges) is not None:
            # the excess as the rest of this transaction (its marker and the holes allowed are in the
            # excess too: short of its last offset, inside its last batch); past it (more transactions,
            # or markers) the read splits the gap, and the part before has this transaction's excess alone
            aimed = first_unread(min(gap.high - 1, end + max(0, gap.excess - 1)), gap.high, ranges)
            if aimed is not None:
                return aimed
    return middle_unread(gap, ranges)


def _widened(answer: PartitionFetch, position: int, ranges: list[tuple[int, int]]) -> PartitionFetch:
    """The answer from where its first batch starts, down to what was read before: the broker sent
    that batch whole, and the records of it before the position tell where a transaction ends."""
    if answer.earlier is None or answer.earlier_from >= position:
        return answer
    start = max([answer.earlier_from, *(end for _, end in ranges if end <= position)])
    if start >= position:
        return answer
    return replace(answer, fetch_offset=start, records=[*answer.earlier(start), *answer.records], earlier=None)


def _grown(limit: int) -> int:
    """The next window over what showed only holes (an aborted transaction goes on): 4x, to 1 MB."""
    return limit if limit == ONE_BATCH else min(MAX_GAP_WINDOW, 4 * limit)


class _Spent:
    """What the gap reads of each partition cost, beside what reading it whole would."""

    def __init__(self) -> None:
        self.bytes: dict[TP, int] = {}
        self.offsets: dict[TP, int] = {}

    def over(self, tp: TP, size: int, covered: int, bounds: LogBounds) -> bool:
        """Add one answer; whether the partition's gap reads now cost more than ``GAP_SHARE`` of it."""
        self.bytes[tp] = self.bytes.get(tp, 0) + size
        self.offsets[tp] = self.offsets.get(tp, 0) + max(1, covered)
        whole = (bounds.end - bounds.start) * self.bytes[tp] / self.offsets[tp]
        return self.bytes[tp] > GAP_SHARE * whole
