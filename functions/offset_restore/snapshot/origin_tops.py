"""The last restored record below a group that read past it (a failback's snapshot).

A cluster a restore wrote — the DR cluster after a failover — holds the restore's records, each with its
offset on the cluster it came from in the offset header, and after them the records produced on it since
(no header). A group that processed some of those has evidence without a header: the origin strategy then
needs the last restored record before it, whose header says where on the primary the group has read to.
That record is found by a search over each such partition, all partitions in shared fetch rounds: the
restored records are a prefix of the log, so the first record at or after a probe either carries the
header (the top is at or after it) or not (before it); each answer's whole batch narrows the range.

Only migrations ask for it (``SnapshotOptions.origin_search``): a scheduled snapshot of an ordinary
cluster would pay a probe per partition for nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from offset_restore.kafka.model import TP, LogBounds, Record
from offset_restore.reading.rounds import Failed, Fetch, FetchRounds, Served, Unserved
from offset_restore.snapshot.fingerprint import record_fingerprint
from offset_restore.snapshot.headers import int_header
from offset_restore.snapshot.model import RecordEvidence

__all__ = ["OriginTop", "find_origin_tops", "top_evidence"]


@dataclass
class _Range:
    """The partition's open range: the top is in [lo, hi) if anywhere; ``best`` the highest seen."""

    lo: int
    hi: int
    best: RecordEvidence | None = None
    own: Record | None = None
    """The lowest record seen without the header: the source's own, produced after the restore."""
    first: bool = True
    """The first probe, at the log start: a first record without the header means no restore here."""


@dataclass(frozen=True, slots=True)
class OriginTop:
    top: RecordEvidence
    """The last record below the group that carries the offset header."""
    own_since: int | None
    """The timestamp of the first record after it (the source's own, produced after the restore), when
    the search saw it: a target record as recent may be a copy of one brought back."""


def find_origin_tops(
    below: Mapping[TP, int], bounds: Mapping[TP, LogBounds], fetch: Fetch, *, offset_header: str
) -> tuple[dict[TP, OriginTop], int]:
    """Per partition, the last record below ``below[tp]`` that carries ``offset_header`` (partitions whose
    first record carries none, or that hold none, are left out); and the fetch rounds it took."""
    ranges = {tp: _Range(bounds[tp].start, min(c, bounds[tp].end)) for tp, c in below.items() if tp in bounds}
    ranges = {tp: r for tp, r in ranges.items() if r.lo < r.hi}
    rounds = FetchRounds(fetch, ends={tp: bounds[tp].end for tp in ranges})
    found: dict[TP, OriginTop] = {}
    while ranges:
        probes = {tp: r.lo if r.first else (r.lo + r.hi) // 2 for tp, r in ranges.items()}
        for tp, outcome in rounds.round(probes).items():
            r = ranges[tp]
            if isinstance(outcome, Unserved):
                continue  # asked again, with a larger limit
            if isinstance(outcome, Served) and _narrow(r, probes[tp], outcome.answer.records, offset_header):
                continue
            if r.best is not None and not isinstance(outcome, Failed):
                own = r.own if r.own is not None and r.own.offset == r.best.offset + 1 else None
                found[tp] = OriginTop(r.best, own.timestamp if own else None)
            del ranges[tp]
    return found, rounds.rounds


def _narrow(r: _Range, probe: int, records: Sequence[Record], header: str) -> bool:
    """Narrow ``r`` by the records read at ``probe``; False when the search of the partition is over."""
    seen = [x for x in records if probe <= x.offset < r.hi]
    if not seen:  # nothing from the probe up to hi (markers, compaction): the top is below the probe
        r.hi, r.first = probe, False
        return r.lo < r.hi
    plain = next((i for i, x in enumerate(seen) if int_header(x, header) is None), None)
    if plain is not None and (r.own is None or seen[plain].offset < r.own.offset):
        r.own = seen[plain]
    if plain == 0:  # the first record at or after the probe is the source's own: the top is below it
        if r.first:
            return False  # the log starts without the header: no restore on this partition
        r.hi = seen[0].offset
    else:
        last = seen[-1] if plain is None else seen[plain - 1]
        r.best = top_evidence(last, header)
        if plain is not None:
            return False  # the change from restored to own records is in this batch: found
        r.lo = last.offset + 1
    r.first = False
    return r.lo < r.hi


def top_evidence(record: Record, header: str) -> RecordEvidence:
    return RecordEvidence(
        offset=record.offset,
        timestamp=record.timestamp,
        fingerprint=record_fingerprint(record, header),
        origin_offset=int_header(record, header),
    )
