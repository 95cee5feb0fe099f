"""Where a failback's groups stand on the cluster a restore came from, whatever order the restore wrote.

A cluster a restore wrote (the DR after a failover) holds the restore's records, each with its offset on
the origin cluster in the offset header. A group at position ``c`` there processed exactly the origin
records whose copies lie before ``c``. Parallel restore workers write out of order (origin 0..49, 60..69,
50..59, ...), and a chunk may be written twice: the last record before ``c`` then says nothing of the
records before it. So each such partition is read whole, the first copy of each origin record kept (16
bytes a record, and a set of the origin offsets seen while reading): an origin record was processed by a
group at ``c`` exactly when its first copy lies before ``c``. For every position the snapshot records the
first origin record the group may not have processed — ``origin_floor``: the lowest origin offset whose
first copy lies at or after ``c``, when it is below the highest one before ``c``, else one past that
highest — and how many origin records it processed at or past it (``origin_twice``: read again from
there). A restore in order has ``origin_floor`` one past the last record's origin and ``origin_twice`` 0.
Origin offsets no copy carries (records never restored, transaction markers) are not looked for: the
floor never stops at them. The same read gives each position the last restored record before it
(``origin_top``) without assuming the restored records form a prefix of the log: records the source
produced itself may come before the restore, or between its records (producers writing while it ran).

Only a failback's snapshot asks (``SnapshotOptions.origin_search``), and only partitions where a record the
evidence read carries the header are read."""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from offset_restore.kafka.model import TP, LogBounds, Record
from offset_restore.reading.rounds import AtEnd, Fetch, FetchRounds, Served, read_forward
from offset_restore.snapshot.headers import int_header
from offset_restore.snapshot.origin_tops import OriginTop, top_evidence

__all__ = ["OriginFloor", "OriginLog", "read_origin_logs"]

WHOLE_READ_BYTES = 1 << 20
"""A partition's byte limit in each round of the whole read."""


@dataclass(frozen=True, slots=True)
class OriginFloor:
    floor: int
    """The first origin record the group may not have processed."""
    twice: int
    """Copies before the position whose origin offset is at or past ``floor``: read again from there."""


def _longs() -> array[int]:
    return array("q")


@dataclass
class OriginLog:
    """One partition's first copy of each origin record, in log order: its offset and origin offset."""

    offsets: array[int] = field(default_factory=_longs)
    origins: array[int] = field(default_factory=_longs)
    tops: dict[int, OriginTop] = field(default_factory=dict)
    """Per position asked (``read_origin_logs``' ``positions``): the last record before it that carries the
    header, and when the first record after that one without it was produced (None: not before the position)."""
    _seen: set[int] = field(default_factory=set)
    _prefix_max: array[int] = field(default_factory=_longs)
    _suffix_min: array[int] = field(default_factory=_longs)

    def add(self, offset: int, origin: int) -> None:
        """A record carrying ``origin`` at ``offset`` (read in log order); a later copy is not kept."""
        if origin in self._seen:
            return
        self._seen.add(origin)
        self.offsets.append(offset)
        self.origins.append(origin)

    def _index(self) -> None:
        if len(self._prefix_max) == len(self.origins):
            return
        highest, lowest = -1, 2**63 - 1
        self._prefix_max = array("q", [highest := max(highest, o) for o in self.origins])
        suffix = [lowest := min(lowest, o) for o in reversed(self.origins)]
        self._suffix_min = array("q", reversed(suffix))

    def floor_at(self, c: int) -> OriginFloor | None:
        """Where a group at position ``c`` may first not have processed an origin record (None: no copy
        before ``c`` carries an origin offset)."""
        self._index()
        i = bisect.bisect_left(self.offsets, c)  # first copies [0, i) lie before c: processed
        if i == 0:
            return None
        highest = self._prefix_max[i - 1]
        if i < len(self.origins) and self._suffix_min[i] <= highest:
            floor = self._suffix_min[i]
            return OriginFloor(floor, sum(1 for o in self.origins[:i] if o >= floor))
        return OriginFloor(highest + 1, 0)


@dataclass
class _Tops:
    """The last record carrying the header so far, and the first without it after that one, while a
    partition is read in order; handed to each position as the read passes it."""

    positions: list[int]
    header: str
    last: Record | None = None
    own: Record | None = None
    at: int = 0

    def see(self, record: Record, origin: int | None, tops: dict[int, OriginTop]) -> None:
        self.passed(record.offset, tops)
        if origin is not None:
            self.last, self.own = record, None
        elif self.last is not None and self.own is None:
            self.own = record

    def passed(self, offset: int, tops: dict[int, OriginTop]) -> None:
        """Every position at or below ``offset`` gets the top as it stands (records before it only)."""
        while self.at < len(self.positions) and self.positions[self.at] <= offset:
            if self.last is not None:
                since = self.own.timestamp if self.own is not None else None
                tops[self.positions[self.at]] = OriginTop(top_evidence(self.last, self.header), since)
            self.at += 1


def read_origin_logs(
    positions: Mapping[TP, Iterable[int]], bounds: Mapping[TP, LogBounds], fetch: Fetch, *, offset_header: str
) -> tuple[dict[TP, OriginLog], dict[TP, str], int]:
    """Each partition of ``positions`` read whole, its records' origin offsets kept and the top below each
    position found; the partitions whose read failed (with why: their positions get no floor); and the
    fetch rounds it took."""
    start = {tp: bounds[tp].start for tp in positions if tp in bounds and bounds[tp].end > bounds[tp].start}
    logs: dict[TP, OriginLog] = {tp: OriginLog() for tp in start}
    cursors = {tp: _Tops(sorted(set(positions[tp])), offset_header) for tp in start}

    def take(tp: TP, outcome: Served | AtEnd) -> int | None:
        log, cursor = logs[tp], cursors[tp]
        if isinstance(outcome, AtEnd):
            cursor.passed(2**63 - 1, log.tops)
            return None
        for record in outcome.answer.records:
            origin = int_header(record, offset_header)
            cursor.see(record, origin, log.tops)
            if origin is not None:
                log.add(record.offset, origin)
        if outcome.answer.read_to < bounds[tp].end:
            return outcome.answer.read_to
        cursor.passed(2**63 - 1, log.tops)
        return None

    rounds = FetchRounds(fetch, ends={tp: bounds[tp].end for tp in start}, partition_bytes=WHOLE_READ_BYTES)
    failed = read_forward(rounds, start, take)
    for tp in failed:
        logs.pop(tp, None)
    return logs, {tp: f.reason for tp, f in failed.items()}, rounds.rounds
