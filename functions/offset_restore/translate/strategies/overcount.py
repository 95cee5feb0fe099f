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
partition is read whole, as before), or the reads cost ``GAP_SHARE`` of the partition. Windows grow
4x while they land on holes only, so one aborted transaction of 1,000 records costs a few reads, not
one per 16 KB.
"""

from __future__ import annotations

from collections.abc import Mapping

from offset_restore.kafka.model import ONE_BATCH, TP, LogBounds
from offset_restore.kafka.rounds import POINT_READ_BYTES, Served, Unserved
from offset_restore.translate.context import Context
from offset_restore.translate.header_reads import HeaderReads
from offset_restore.translate.restore_order import disorder_in, overcounted_gap

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
    at = {tp: gap for tp in tps if (gap := overcounted_gap(*reads.observed[tp].merged())) is not None}
    rounds = ctx.rounds()
    rounds.fit = False  # the gap reads size their windows themselves
    first = {tp: rounds.limits.get(tp, POINT_READ_BYTES) for tp in at}  # a large batch's ONE_BATCH kept
    limits = dict(first)
    spent = _Spent()
    for _ in range(MAX_GAP_ROUNDS):
        if not at:
            break
        rounds.limits.update({tp: limits[tp] for tp in at})
        for tp, outcome in rounds.round(at).items():
            if isinstance(outcome, Unserved):
                limits[tp] = rounds.limits[tp]  # the limit the round grew it to: asked so next
                continue
            if not isinstance(outcome, Served):
                del at[tp]  # failed: read whole at last
                continue
            answer = outcome.answer
            keys = [reads.key_of(tp, record) for record in answer.records]
            reads.observe(tp, at[tp], answer, keys)
            holes_only = all(key is None for key in keys)
            limits[tp] = _grown(limits[tp]) if holes_only else first[tp]
            if spent.over(tp, answer.size, answer.read_to - at[tp], ctx.bounds[tp]):
                del at[tp]  # cheaper read whole: its problem stays
        for tp in list(at):
            log, ranges = reads.observed[tp].merged()
            gap = overcounted_gap(log, ranges)
            if gap is not None:
                at[tp] = gap
                continue
            del at[tp]
            problem = disorder_in(log, ranges)
            if problem is None:
                del problems[tp]
            else:
                problems[tp] = problem
    ctx.learn({}, rounds.batch_bytes)
    ctx.record("header (gaps)", rounds.rounds, rounds.fetches, rounds.records, {})
    return problems


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
