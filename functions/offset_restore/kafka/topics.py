"""The cluster and its topics: its id, each topic's partitions and their leaders, creating topics and
moving a log's start.

Leaders come from one Metadata request (built and decoded in ``protocol.py``); a fetch round sends
each partition's request to them, from the last answer while it names every partition asked
(``_leaders_of``) and asks again once a partition's answer shows that it moved or failed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import NewTopic

from offset_restore.errors import ClusterError
from offset_restore.kafka import internals, protocol
from offset_restore.kafka.calls import Calls
from offset_restore.kafka.model import TP, PartitionIdentity

__all__ = ["Topics"]


class Topics(Calls):
    """Mixin of ``KafkaCluster``: the cluster and its topics."""

    @property
    def cluster_id(self) -> str:
        return str(internals.cluster_id(self._admin) or "unknown-cluster")

    def _metadata(self) -> Any:
        request = protocol.metadata_request()

        async def send() -> Any:
            return await self._manager.send(request, request_timeout_ms=self._request_ms)

        return self._run("reading cluster metadata", send)

    _known_leaders: dict[TP, int] | None
    """The leaders of the last Metadata answer (None: none kept); set by ``KafkaCluster.__init__``."""

    def _leaders(self) -> tuple[dict[str, int], dict[TP, int]]:
        """Partition counts of every non-internal topic, and the leader of each partition (kept for
        ``_leaders_of``)."""
        counts, leaders = protocol.topics_and_leaders(self._metadata())
        self._known_leaders = leaders
        return counts, leaders

    def _leaders_of(self, partitions: Iterable[TP]) -> dict[TP, int]:
        """The leaders of ``partitions``, from the last Metadata answer when it names each with a
        leader, else from a new one. A Metadata answer lists every topic of the cluster (asking for
        named topics makes some brokers create them): asked before each fetch, it cost a header-less
        plan 0.5 MB of its 6.6 MB on a cluster of 400 partitions, and grows with the cluster, not the
        restore. ``_forget_leaders`` makes the next call ask again."""
        known = self._known_leaders
        if known is None or any(known.get(tp, -1) < 0 for tp in partitions):
            known = self._leaders()[1]
        return known

    def _forget_leaders(self) -> None:
        """A partition's answer failed (a leader moved, a topic went, a broker did not answer): the
        next ``_leaders_of`` reads the cluster's metadata again."""
        self._known_leaders = None

    def topic_partitions(self) -> dict[str, int]:
        """Every non-internal topic with its partition count."""
        return self._leaders()[0]

    def partition_identities(self, partitions: Iterable[TP]) -> dict[TP, PartitionIdentity]:
        """Topic id and leader epoch of each partition the brokers report them for (one Metadata request)."""
        wanted = set(partitions)
        if not wanted:
            return {}
        return {tp: i for tp, i in protocol.partition_identities(self._metadata()).items() if tp in wanted}

    def create_topics(self, partitions_by_topic: Mapping[str, int]) -> None:
        """Create the topics and return once the broker answering metadata names every new partition
        with a leader. The controller acknowledges a topic before the brokers' metadata caches hold
        it; a commit sent in between is refused with UNKNOWN_TOPIC_OR_PARTITION."""
        new = [NewTopic(name, count, 1) for name, count in partitions_by_topic.items()]
        if not new:
            return
        self._call("creating topics", self._admin.create_topics, new, timeout_ms=self._request_ms, retry=False)
        wanted = [TP(name, p) for name, count in partitions_by_topic.items() for p in range(count)]
        deadline = time.monotonic() + self._request_ms / 1000
        while not all(self._leaders()[1].get(tp, -1) >= 0 for tp in wanted):
            if time.monotonic() > deadline:
                named = ", ".join(sorted(partitions_by_topic))
                raise ClusterError(f"creating topics on {self.settings.bootstrap_servers}: no leader yet for {named}")
            time.sleep(0.05)

    def delete_records(self, before: Mapping[TP, int]) -> None:
        """Move each partition's log start to the offset given (a retention loss, for tests and the
        comparison; a restore never deletes records)."""
        asked = {KafkaTopicPartition(tp.topic, tp.partition): offset for tp, offset in before.items()}
        self._call("deleting records", self._admin.delete_records, asked, timeout_ms=self._request_ms, retry=False)
