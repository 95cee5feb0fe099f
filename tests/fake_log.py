"""One in-memory log for the unit tests of every reader (the search, the snapshot's evidence, a failback's
origin tops): per partition, records in batches, answering a fetch round as a broker does.

What an answer holds, as the readers meet it on a real broker:

- the batch holding the position comes **whole**: its records before the position are not in ``records``
  but decoded when a reader asks (``PartitionFetch.earlier``, from ``earlier_from``);
- then whole batches after it, as many as the partition's byte limit buys (``broker="apache"``: batches
  that fit the limit; the first is sent even when larger, but only to the request's first partition —
  the others get nothing, an unserved answer), or until the limit is reached (``"uncut"``: the local
  broker, Tansu; answers marked ``uncut``), or the rest of the log (``"unlimited"``: limits ignored);
- ``ONE_BATCH`` (a limit of 0) brings the one batch holding the position;
- ``per_fetch``: a broker that sends at least that many records from the position (to the end of the
  batch they end in) whatever the limit — what the older fakes each did their own way;
- ``until`` cuts the answer after its first record at or past it (as the decoder stops);
- a position below the log start fails with ``OffsetOutOfRangeError``, naming the start; past the last
  record the answer is empty and moves the position to the high watermark.

Everything asked and sent is counted: ``rounds``, ``positions_seen``, ``limits_seen``, ``sent`` (partition,
batch number) and ``sent_bytes``.

``FakeTarget`` is a whole target cluster over one such log, as the plan asks of one: its topics, each
partition's bounds, the first record at or after a time (ListOffsets) and the log's fetches.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from offset_restore.kafka.model import (
    ONE_BATCH,
    POINT_READ_BYTES,
    TP,
    FetchedRecord,
    LogBounds,
    PartitionFetch,
    PartitionIdentity,
)

__all__ = ["Broker", "FakeLog", "FakeTarget"]

Broker = Literal["apache", "uncut", "unlimited"]


class FakeLog:
    def __init__(
        self,
        records: Mapping[TP, Sequence[FetchedRecord]],
        *,
        batch: int = 1,
        record_bytes: int = 100,
        per_fetch: int | None = None,
        broker: Broker = "apache",
        high_watermarks: Mapping[TP, int] | None = None,
    ) -> None:
        self.records = {tp: list(log) for tp, log in records.items()}
        self._offsets = {tp: [r.offset for r in log] for tp, log in self.records.items()}
        self.batch, self.record_bytes, self.per_fetch, self.broker = batch, record_bytes, per_fetch, broker
        self.high_watermarks = dict(high_watermarks or {})
        self.deleted_below: dict[TP, int] = {}
        """A log start moved inside a batch (DeleteRecords): the broker still sends the batch from its base."""
        self.rounds = 0
        self.positions_seen: list[dict[TP, int]] = []
        self.limits_seen: list[dict[TP, int]] = []
        self.sent: list[tuple[TP, int]] = []
        self.sent_bytes = 0

    def bounds(self, tp: TP) -> LogBounds:
        offsets = self._offsets[tp]
        start = offsets[0] if offsets else 0
        end = self.high_watermarks.get(tp, offsets[-1] + 1 if offsets else 0)
        return LogBounds(max(start, self.deleted_below.get(tp, start)), end)

    def every_bounds(self) -> dict[TP, LogBounds]:
        return {tp: self.bounds(tp) for tp in self.records}

    def __call__(
        self,
        positions: Mapping[TP, int],
        until: Mapping[TP, int] | None = None,
        limits: Mapping[TP, int] | None = None,
        wait_ms: int | None = None,
    ) -> dict[TP, PartitionFetch]:
        self.rounds += 1
        self.positions_seen.append(dict(positions))
        self.limits_seen.append(dict(limits or {}))
        return {
            tp: self._answer(tp, position, (until or {}).get(tp), (limits or {}).get(tp, POINT_READ_BYTES), i == 0)
            for i, (tp, position) in enumerate(positions.items())
        }

    def _answer(self, tp: TP, position: int, until: int | None, limit: int, first: bool) -> PartitionFetch:
        bounds = self.bounds(tp)
        if position < bounds.start:
            return PartitionFetch(position, error="OffsetOutOfRangeError", log_start_offset=bounds.start)
        log, at = self.records[tp], bisect.bisect_left(self._offsets[tp], position)
        if at >= len(log):
            return PartitionFetch(position, [], bounds.end, bounds.start, next_offset=max(position, bounds.end))
        batches = self._batches(len(log), at, limit, first)
        if not batches:
            return PartitionFetch(position, [], bounds.end, bounds.start)  # unserved: its batch is too large
        head, past = batches[0] * self.batch, min(len(log), (batches[-1] + 1) * self.batch)
        records = log[at:past]
        if until is not None:
            cut = next((i for i, r in enumerate(records) if r.offset >= until), None)
            records = records if cut is None else records[: cut + 1]
        size = (past - head) * self.record_bytes
        self.sent += [(tp, n) for n in batches]
        self.sent_bytes += size
        earlier = log[head:at]
        return PartitionFetch(
            position,
            records,
            bounds.end,
            bounds.start,
            next_offset=records[-1].offset + 1,
            size=size,
            bytes_per_offset=float(self.record_bytes),
            largest_batch_bytes=self.batch * self.record_bytes,
            uncut=self.broker == "uncut",
            earlier_from=log[head].offset if head < at else -1,
            earlier=(lambda start: [r for r in earlier if r.offset >= start]) if head < at else None,
        )

    def _batches(self, records: int, at: int, limit: int, first: bool) -> list[int]:
        """The numbers of the batches an answer from record index ``at`` holds (none: left unserved)."""
        batch_bytes, n = self.batch * self.record_bytes, at // self.batch
        last = (records - 1) // self.batch
        if self.per_fetch is not None:
            return list(range(n, min(last, (at + self.per_fetch - 1) // self.batch) + 1))
        if self.broker == "unlimited":
            return list(range(n, last + 1))
        if limit == ONE_BATCH:
            return [n]
        if self.broker == "uncut":
            count = max(1, -(-limit // batch_bytes))  # whole batches until the limit is reached
        else:
            count = limit // batch_bytes
            if not count:
                return [n] if first else []
        return list(range(n, min(last, n + count - 1) + 1))


class FakeTarget:
    """A target cluster over ``log`` (``TargetCluster``): every fetch the plan makes is the log's answer."""

    cluster_id = "fake"

    def __init__(self, log: FakeLog) -> None:
        self.log = log

    def topic_partitions(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for tp in self.log.records:
            counts[tp.topic] = max(counts.get(tp.topic, 0), tp.partition + 1)
        return counts

    def log_bounds(self, partitions: Iterable[TP]) -> dict[TP, LogBounds]:
        return {tp: self.log.bounds(tp) for tp in partitions}

    def partition_identities(self, partitions: Iterable[TP]) -> dict[TP, PartitionIdentity]:
        return {}  # as a broker that gives no topic ids

    def records_at_times(self, times: Mapping[TP, int]) -> dict[TP, tuple[int, int] | None]:
        """As Kafka's ListOffsets by timestamp: the earliest record at least that recent (offset, time)."""
        return {
            tp: next(((r.offset, r.timestamp) for r in self.log.records[tp] if r.timestamp >= t), None)
            for tp, t in times.items()
        }

    def offsets_at_times(self, times: Mapping[TP, int]) -> dict[TP, int | None]:
        return {tp: (found[0] if found else None) for tp, found in self.records_at_times(times).items()}

    def fetch(
        self,
        positions: Mapping[TP, int],
        *,
        partition_max_bytes: int | Mapping[TP, int] = POINT_READ_BYTES,
        until: Mapping[TP, int] | None = None,
        max_wait_ms: int | None = None,
    ) -> dict[TP, PartitionFetch]:
        limits = (
            dict.fromkeys(positions, partition_max_bytes)
            if isinstance(partition_max_bytes, int)
            else dict(partition_max_bytes)
        )
        return self.log(positions, until, limits, max_wait_ms)
