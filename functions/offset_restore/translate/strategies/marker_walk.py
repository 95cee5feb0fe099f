"""Transaction markers found through the broker's time index and read alone: where each aborted
transaction of a partition begins and ends, for a few hundred bytes, before the gap reads.

Between the search's windows an aborted transaction is over-counted offsets somewhere in a gap. Found
by bisection, each cost two or three windows of committed records before a read landed in it (189 of
the 367 gap reads of the benchmark's transactional restore on Apache Kafka). A restore keeps its
records' timestamps (a backup's, a replica's: older than the restore) while the coordinator stamps
each transaction's marker with the time it wrote it, so past the newest record read, the first offset
as recent as a time (ListOffsets by timestamp) is a marker, and the next one is the first as recent
as that marker's time plus one millisecond: the partition's markers one by one, one ListOffsets round
each, every partition in the same request. Each marker not read yet is then read alone
(``TINY_READ_BYTES``: a marker batch is 78 bytes, and Apache Kafka cuts the batch after it): an
abort marker's answer lists the first offset of its transaction (``PartitionFetch.aborted_ends``). The
gap reads then take that transaction's first and last batches, which prove it whole
(``aborted_spans.py``), instead of looking for it.

Only a place to read: nothing is believed from a marker's offset alone. Where the time index points at
records instead (a restore that gave its records new timestamps: the read of one is empty, or whole if
it came first), and on a broker that does not look timestamps up (the local one answers the log start),
the partition's walk stops and its gaps are read as before.
"""

from __future__ import annotations

from collections.abc import Collection

from offset_restore.errors import OffsetRestoreError
from offset_restore.kafka.model import TP
from offset_restore.reading.rounds import FetchRounds, Served
from offset_restore.translate.context import Context
from offset_restore.translate.header_reads import HeaderReads
from offset_restore.translate.restore_order import first_unread

__all__ = ["MAX_WALK_ROUNDS", "TINY_READ_BYTES", "walk_markers"]

TINY_READ_BYTES = 128
"""A read of one marker: its batch (61 bytes of header and a control record) and the first bytes of the
next batch, which Apache Kafka cuts there and the decoder leaves out."""
MAX_WALK_ROUNDS = 128
"""Markers walked per partition at most (a ListOffsets round and a read each): past them, its gaps are
read as before."""


def walk_markers(tps: Collection[TP], reads: HeaderReads, ctx: Context) -> dict[TP, list[tuple[int, int]]]:
    """Walk the markers of ``tps`` after the newest record read of each, reading each one not read yet
    (what the answers show is kept in ``reads``: ``HeaderReads.ended``, the markers, the ranges read).
    Returns the ranges the markers read alone covered, per partition: read for being markers, they are
    no sample of the holes a partition holds."""
    walking = {tp: stamp + 1 for tp in tps if (stamp := _newest(reads, tp)) is not None}
    ranges = {tp: reads.observed[tp].merged()[1] for tp in walking}
    rounds = FetchRounds(
        ctx.fetch(),
        ends={tp: ctx.bounds[tp].end for tp in walking},
        partition_bytes=TINY_READ_BYTES,
        max_unserved=1,  # empty: the offset is a record's, cut whole (Apache Kafka), not a marker's
        fit=False,
    )
    walked: dict[TP, list[tuple[int, int]]] = {tp: [] for tp in walking}
    for _ in range(MAX_WALK_ROUNDS):
        if not walking:
            break
        try:
            found = ctx.target.records_at_times(walking)
        except OffsetRestoreError:
            break  # the gaps are read as before
        positions: dict[TP, int] = {}
        for tp in list(walking):
            hit, bounds = found.get(tp), ctx.bounds[tp]
            if hit is None or not bounds.start < hit[0] < bounds.end:
                del walking[tp]  # past the last marker, or a broker that answers the log start
                continue
            walking[tp] = hit[1] + 1
            if first_unread(hit[0], hit[0] + 1, ranges[tp]) is not None:
                positions[tp] = hit[0]
        for tp, outcome in rounds.round(positions).items():
            if not isinstance(outcome, Served):
                walking.pop(tp, None)
                continue
            answer = outcome.answer
            reads.observe(tp, answer.fetch_offset, answer, [reads.key_of(tp, r) for r in answer.records])
            if positions[tp] not in answer.markers or answer.size > TINY_READ_BYTES:
                walking.pop(tp, None)  # records, not a marker; or a broker that sends past a limit
            else:
                walked[tp].append((answer.fetch_offset, answer.read_to))
    ctx.record("header (markers)", rounds.rounds, rounds.fetches, rounds.records, {})
    return walked


def _newest(reads: HeaderReads, tp: TP) -> int | None:
    """The newest timestamp of the records read of ``tp`` (None: none read)."""
    observed = reads.observed.get(tp)
    if observed is None:
        return None
    log, _ = observed.merged()
    return max(log.timestamps) if len(log) else None
