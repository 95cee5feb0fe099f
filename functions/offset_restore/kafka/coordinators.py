"""Requests about groups go to each group's coordinator, and a coordinator can move.

Describing groups, reading their committed offsets and committing all send batches of groups to
their coordinators the same way (``_per_coordinator``). When a broker answers that it no longer
coordinates a group, kafka-python's cached coordinators are dropped so the retry asks
FindCoordinator again instead of meeting the same wrong broker.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kafka import KafkaAdminClient

from offset_restore.kafka import internals, protocol
from offset_restore.kafka.calls import Calls, pipelined

__all__ = ["Coordinators", "one_request"]


def one_request(request: Callable[[Sequence[str]], Any]) -> Callable[[Sequence[str]], list[tuple[None, Any]]]:
    """A batch of groups as ``Coordinators._per_coordinator`` sends it: one request, to the batch's coordinator."""
    return lambda batch: [(None, request(batch))]


class Coordinators(Calls):
    """Mixin of ``KafkaCluster``: requests to group coordinators, over this connection or a commit
    lane (``commits.py``)."""

    _lanes: list[KafkaAdminClient]

    def _per_coordinator(
        self,
        operation: str,
        group_ids: Sequence[str],
        batch_size: int,
        build: Any,
        *,
        answers: list[tuple[Any, Any]] | None = None,
        retry: bool = True,
        lane: KafkaAdminClient | None = None,
        timeout_ms: int | None = None,
    ) -> list[tuple[Any, Any]]:
        """Send the ``(tag, request)`` pairs of ``build(batch)`` for batches of groups to their
        coordinators; returns ``(tag, response)`` pairs in any order (also into ``answers`` as they
        arrive, so a caller keeps what was answered before a failure).

        Up to ``IN_FLIGHT`` requests per coordinator are outstanding at once, so the broker works on
        the next batch while this process decodes the last one.
        """
        admin = lane or self._admin
        manager, timeout = internals.manager(admin), timeout_ms or self._request_ms

        async def send_all() -> list[tuple[Any, Any]]:
            coordinators = await internals.find_coordinators(admin, group_ids)
            by_node: dict[int, list[str]] = defaultdict(list)
            for group_id in group_ids:
                by_node[coordinators[group_id]].append(group_id)
            queue = [
                (node, tag, request)
                for node, members in by_node.items()
                for batch in protocol.chunks(members, batch_size)
                for tag, request in build(batch)
            ]
            answered = await pipelined(
                [(tag, node, request) for node, tag, request in queue],
                lambda node, request: manager.send(request, node_id=node, request_timeout_ms=timeout),
                [] if answers is None else answers,
            )
            if answers is None:  # a caller keeping answers (the commit) looks at each group itself
                moved = next((e for e in (protocol.coordinator_moved(r) for _, r in answered) if e is not None), None)
                if moved is not None:
                    self._forget_coordinators(group_ids)
                    raise moved()  # retriable: the whole call again, after a back-off
            return answered

        if not group_ids:
            return []
        return list(self._call(operation, manager.run, send_all, retry=retry))

    def _forget_coordinators(self, group_ids: Iterable[str]) -> None:
        """Drop kafka-python's cached coordinators (of every connection), so the next attempt asks
        FindCoordinator again."""
        for admin in (self._admin, *self._lanes):
            internals.forget_coordinators(admin, group_ids)
