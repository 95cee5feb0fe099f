"""One fetch round: every partition asked of its leader, all requests sent before any is awaited.

What a round's answer means (served, at the end, unserved, failed) is decided in ``rounds.py``;
requests are built and batches decoded (read_committed) in ``protocol.py``. This is the I/O between.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from offset_restore.kafka import protocol
from offset_restore.kafka.calls import pipelined
from offset_restore.kafka.model import TP, PartitionFetch
from offset_restore.kafka.topics import Topics

__all__ = ["Fetches"]


class Fetches(Topics):
    """Mixin of ``KafkaCluster``: fetch rounds. The attributes are set by ``KafkaCluster.__init__``."""

    fetch_max_wait_ms: int
    fetch_max_bytes: int
    fetched_bytes: int

    def fetch(
        self,
        positions: Mapping[TP, int],
        *,
        partition_max_bytes: int | Mapping[TP, int] = 256 * 1024,
        until: Mapping[TP, int] | None = None,
        leaders: Mapping[TP, int] | None = None,
        max_wait_ms: int | None = None,
    ) -> dict[TP, PartitionFetch]:
        """One fetch round: Fetch requests to every leader (as many per leader as the response limit
        ``fetch_max_bytes`` needs), sent together before any answer is awaited.

        ``until`` stops decoding a partition after its first record at or past that offset. Partitions
        without a leader (missing topic) come back with error ``UnknownTopicOrPartitionError``.
        """
        if not positions:
            return {}
        if leaders is None:
            leaders = self._leaders()[1]
        by_node: dict[int, list[tuple[TP, int]]] = defaultdict(list)
        result: dict[TP, PartitionFetch] = {}
        for tp, offset in positions.items():
            node = leaders.get(tp)
            if node is None:
                result[tp] = PartitionFetch(offset, error="UnknownTopicOrPartitionError")
            elif node < 0:  # an election under way
                result[tp] = PartitionFetch(offset, error="LeaderNotAvailableError", retriable=True)
            else:
                by_node[node].append((tp, offset))
        wait_ms = self.fetch_max_wait_ms if max_wait_ms is None else max_wait_ms
        limits = (
            dict.fromkeys(positions, partition_max_bytes)
            if isinstance(partition_max_bytes, int)
            else partition_max_bytes
        )
        requests = protocol.fetch_requests(by_node, limits, self.fetch_max_bytes, wait_ms)
        manager, timeout = self._manager, self._request_ms + wait_ms

        async def send_all() -> list[Any]:
            answered = await pipelined(
                [(None, node, request) for node, request in requests],
                lambda node, request: manager.send(request, node_id=node, request_timeout_ms=timeout),
            )
            return [response for _, response in answered]

        for response in self._run("fetching records", send_all):
            for tp, answer in protocol.decode_fetch(response, positions, until):
                result[tp] = answer
                self.fetched_bytes += answer.size
        for tp, offset in positions.items():
            result.setdefault(tp, PartitionFetch(offset, error="NoResponse", retriable=True))
        return result
