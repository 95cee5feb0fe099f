"""One fetch round: every partition asked of its leader, all requests sent before any is awaited.

What a round's answer means (served, at the end, unserved, failed) is decided in ``rounds.py``;
requests are built and batches decoded (read_committed) in ``protocol.py``. This is the I/O between.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Container, Mapping
from dataclasses import replace
from typing import Any

from offset_restore.kafka import protocol
from offset_restore.kafka.calls import pipelined
from offset_restore.kafka.model import TP, PartitionFetch
from offset_restore.kafka.topics import Topics

__all__ = ["Fetches"]

logger = logging.getLogger(__name__)


class Fetches(Topics):
    """Mixin of ``KafkaCluster``: fetch rounds. The attributes are set by ``KafkaCluster.__init__``."""

    fetch_max_wait_ms: int
    fetch_max_bytes: int
    fetched_bytes: int
    limit_ignoring: set[int]
    """Leaders seen to answer a partition over its byte limit (``protocol.over_limit``): each of their
    partitions is asked alone from then on, in this connection's life (``protocol.fetch_requests``)."""
    uncut_senders: set[int]
    """Leaders seen to send whole batches past a partition's limit (``protocol.whole_past_limit``): they
    never cut a batch at the limit, so every answer of theirs is marked ``PartitionFetch.uncut``."""

    def _ignores_limits(self, node: int, tp: TP, size: int, limit: int) -> None:
        self.limit_ignoring.add(node)
        logger.info(
            "broker %s sent %s bytes for %s asked at most %s: it ignores per-partition fetch limits, so each "
            "partition is asked of it alone from now on (more requests, no more bytes than asked)",
            node, size, tp, max(1, limit),
        )  # fmt: skip

    def fetch(
        self,
        positions: Mapping[TP, int],
        *,
        partition_max_bytes: int | Mapping[TP, int] = 256 * 1024,
        until: Mapping[TP, int] | None = None,
        leaders: Mapping[TP, int] | None = None,
        max_wait_ms: int | None = None,
        keep: Mapping[TP, Container[int]] | None = None,
    ) -> dict[TP, PartitionFetch]:
        """One fetch round: Fetch requests to every leader (as many per leader as the response limit
        ``fetch_max_bytes`` needs), sent together before any answer is awaited.

        ``until`` stops decoding a partition after its first record at or past that offset; ``keep`` returns
        only a partition's records at those offsets (``protocol.decode_partition``). Partitions
        without a leader (missing topic) come back with error ``UnknownTopicOrPartitionError``.
        """
        if not positions:
            return {}
        if leaders is None:
            leaders = self._leaders_of(positions)
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
        requests = protocol.fetch_requests(by_node, limits, self.fetch_max_bytes, wait_ms, self.limit_ignoring)
        manager, timeout = self._manager, self._request_ms + wait_ms

        async def send_all() -> list[tuple[Any, Any]]:
            return await pipelined(
                [(node, node, request) for node, request in requests],
                lambda node, request: manager.send(request, node_id=node, request_timeout_ms=timeout),
                read=lambda node, response: list(protocol.decode_fetch(response, positions, until, limits, keep)),
            )  # each response decoded as it arrives, while the broker sends the next

        try:
            decoded = self._run("fetching records", send_all)
        except BaseException:
            self._forget_leaders()
            raise
        for node, answers in decoded:
            for tp, answer in answers:
                self.fetched_bytes += answer.size
                if node not in self.limit_ignoring and protocol.over_limit(answer, limits[tp]):
                    self._ignores_limits(node, tp, answer.size, limits[tp])
                if protocol.whole_past_limit(answer, limits[tp]):
                    self.uncut_senders.add(node)
                result[tp] = replace(answer, uncut=True) if node in self.uncut_senders else answer
        for tp, offset in positions.items():
            result.setdefault(tp, PartitionFetch(offset, error="NoResponse", retriable=True))
        if any(answer.error is not None for answer in result.values()):
            self._forget_leaders()  # a leader moved, a topic went or a broker did not answer: ask again
        return result
