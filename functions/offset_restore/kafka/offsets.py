"""Offsets as the cluster holds them: groups' committed offsets (read and deleted) and each log's
start and end.

Writing committed offsets is ``commits.py``: it has its own retries and connections.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import kafka.errors as kafka_errors
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import OffsetSpec
from kafka.protocol.consumer import IsolationLevel

from offset_restore.errors import ClusterError
from offset_restore.kafka import internals, protocol
from offset_restore.kafka.fetches import Fetches
from offset_restore.kafka.model import TP, CommittedOffset, LogBounds
from offset_restore.kafka.share_groups import ShareGroups

__all__ = ["Offsets"]


class Offsets(ShareGroups, Fetches):
    """Mixin of ``KafkaCluster``: committed offsets and log bounds (a log's end is a fetch's high
    watermark, so this builds on fetch rounds). A share group's start offsets stand for its committed
    offsets (``share_groups.py``)."""

    def committed_offsets(
        self, group_ids: Sequence[str], batch_size: int = 250
    ) -> dict[str, dict[TP, CommittedOffset]]:
        """Committed offsets of many groups: one OffsetFetch (v8, multi-group) per batch.

        Partitions without a commit (offset -1) are left out. An error on a group names the group.
        A share group's are its start offsets (``ShareGroups.share_start_offsets``).
        """
        group_ids, share = self._of_kind(group_ids)

        def build(batch: Sequence[str]) -> list[tuple[str | None, Any]]:
            # One multi-group request on brokers with OffsetFetch v8, else one request per group.
            return internals.offset_fetch_requests(self._admin, batch)

        result: dict[str, dict[TP, CommittedOffset]] = {}
        for tag, response in self._per_coordinator("reading committed offsets", group_ids, batch_size, build):
            result.update(protocol.committed_offsets(tag, response))
        if share:
            result.update(self.share_start_offsets(share))
        return result

    def delete_offsets(self, group_id: str, partitions: Sequence[TP]) -> dict[TP, str | None]:
        """Delete one group's committed offsets on some partitions (OffsetDelete; the group must be
        empty); per partition the error name or None. Not retried, like ``delete_groups``. A share group's
        start offsets are removed (``ShareGroups.delete_share_start_offsets``)."""
        if not partitions:
            return {}
        if group_id in self.share_group_ids:
            return self.delete_share_start_offsets(group_id, partitions)
        kafka_tps = [KafkaTopicPartition(tp.topic, tp.partition) for tp in partitions]
        try:
            answer = self._call(
                "deleting committed offsets", self._admin.delete_group_offsets, group_id, kafka_tps, retry=False
            )
        except ClusterError as error:  # e.g. a broker without OffsetDelete: every partition failed, saying why
            return dict.fromkeys(partitions, str(error))
        return {
            TP(tp.topic, tp.partition): (
                None if error is kafka_errors.NoError else getattr(error, "__name__", str(error))
            )
            for tp, error in answer.items()
        }

    def offsets_at_times(self, times: Mapping[TP, int]) -> dict[TP, int | None]:
        """Per partition, the earliest offset whose record's timestamp is at least the time given
        (ListOffsets by timestamp), or None when no record is that recent. A broker that does not
        look timestamps up answers an offset too early (the local one: the log start), never too late."""
        return {tp: (found[0] if found else None) for tp, found in self.records_at_times(times).items()}

    def records_at_times(self, times: Mapping[TP, int]) -> dict[TP, tuple[int, int] | None]:
        """``offsets_at_times`` with the timestamp of the record found: (offset, timestamp), or None."""
        if not times:
            return {}
        asked = {KafkaTopicPartition(tp.topic, tp.partition): int(t) for tp, t in times.items()}
        answer = self._call("reading offsets by time", self._admin.list_partition_offsets, asked)
        return {
            TP(k.topic, k.partition): ((v.offset, v.timestamp) if v.offset >= 0 else None) for k, v in answer.items()
        }

    def log_bounds(self, partitions: Iterable[TP]) -> dict[TP, LogBounds]:
        """Log start and end of many partitions in three requests per leader.

        The end is a fetch's high watermark: some brokers answer ListOffsets LATEST with the first
        offset of the last batch plus one, so its answer is only where the fetch starts.
        """
        tps = sorted(set(partitions))
        if not tps:
            return {}
        kafka_tps = [KafkaTopicPartition(tp.topic, tp.partition) for tp in tps]
        earliest = self._call(
            "reading log start offsets",
            self._admin.list_partition_offsets,
            dict.fromkeys(kafka_tps, OffsetSpec.EARLIEST),
        )
        latest = self._call(  # read_committed: the end is the last stable offset, as every read sees it
            "reading log end offsets",
            self._admin.list_partition_offsets,
            dict.fromkeys(kafka_tps, OffsetSpec.LATEST),
            isolation_level=IsolationLevel.READ_COMMITTED,
        )
        hints = {TP(tp.topic, tp.partition): max(0, latest[tp].offset) for tp in kafka_tps}
        # Only the high watermark is wanted: every partition reports it, records or not, so do not
        # wait for data (some brokers read partitions one by one until the wait is over).
        fetched = self.fetch(hints, partition_max_bytes=1, until=hints, max_wait_ms=1)
        bounds: dict[TP, LogBounds] = {}
        for ktp in kafka_tps:
            tp = TP(ktp.topic, ktp.partition)
            start = earliest[ktp].offset
            end = max(hints[tp], fetched[tp].high_watermark)
            bounds[tp] = LogBounds(start=start, end=max(start, end))
        return bounds
