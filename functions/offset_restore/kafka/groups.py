"""Consumer groups: listing, describing (ConsumerGroupDescribe for KIP-848 groups), deleting, and a
live member for the demo.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import kafka.errors as kafka_errors
from kafka import KafkaConsumer

from offset_restore.kafka import internals, protocol
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.kafka.coordinators import one_request
from offset_restore.kafka.model import SHARE_GROUP, TP, GroupInfo
from offset_restore.kafka.schemas import ConsumerGroupDescribeRequest, StreamsGroupDescribeRequest
from offset_restore.kafka.share_groups import ShareGroups

__all__ = ["Groups", "group_member"]


class Groups(ShareGroups):
    """Mixin of ``KafkaCluster``: consumer groups."""

    def list_group_ids(self) -> list[str]:
        """Every group the brokers list, of every kind, sorted (a share group's start offsets stand for its
        committed offsets: ``list_groups`` tells this connection which those are)."""
        return sorted(self.list_groups())

    def list_groups(self) -> dict[str, str]:
        """Every group the brokers know, with its kind (``protocol.group_kinds``); the share groups among them
        are read and written as such from now on (``ShareGroups``)."""
        kinds = protocol.group_kinds(self._listed())
        self.treat_as_share_groups(g for g, kind in kinds.items() if kind == SHARE_GROUP)
        return kinds

    def _listed(self) -> list[dict[str, Any]]:
        """ListGroups' answers from every broker, as kafka-python gives them (id, protocol type, state, type)."""
        return list(self._call("listing groups", self._admin.list_groups))

    def describe_groups(self, group_ids: Sequence[str], batch_size: int = 500) -> dict[str, GroupInfo]:
        """State and member count per group, in batched DescribeGroups requests.

        Authorized-operation bits are neither asked for nor decoded: some brokers set bits that
        kafka-python's enum does not know.
        """
        build = one_request(protocol.describe_groups_request)
        result = self._described("describing consumer groups", group_ids, batch_size, build, protocol_type="")
        unknown = [g for g, info in result.items() if info.error == "GroupIdNotFoundError"]
        if unknown and self._supports(ConsumerGroupDescribeRequest.API_KEY):
            result.update(self._new_protocol_groups(unknown, batch_size))
        return result

    def _new_protocol_groups(self, unknown: Sequence[str], batch_size: int) -> dict[str, GroupInfo]:
        """Groups the classic DescribeGroups did not find. Kafka 4 answers it for a group of the new consumer
        protocol (KIP-848), or of a Kafka Streams application's streams protocol (KIP-1071), as
        GROUP_ID_NOT_FOUND / Dead even while it has members: those are asked the way they know. A group no
        request describes (a broker without StreamsGroupDescribe) is taken as the brokers list it
        (``protocol.listed_groups``): not found is never read as empty."""
        kinds = (
            (ConsumerGroupDescribeRequest, protocol.consumer_group_describe_request, "consumer", "KIP-848"),
            (StreamsGroupDescribeRequest, protocol.streams_group_describe_request, "streams", "KIP-1071"),
        )
        found: dict[str, GroupInfo] = {}
        for schema, request, kind, kip in kinds:
            still = [g for g in unknown if g not in found]
            if still and self._supports(schema.API_KEY):
                operation = f"describing {kind} groups ({kip})"
                answered = self._described(operation, still, batch_size, one_request(request), protocol_type=kind)
                found.update({g: info for g, info in answered.items() if info.error is None})
        still = [g for g in unknown if g not in found]
        if still:
            found.update(protocol.listed_groups(self._listed(), still))
        return found

    def _described(
        self, operation: str, group_ids: Sequence[str], batch_size: int, build: Any, *, protocol_type: str
    ) -> dict[str, GroupInfo]:
        answers = self._per_coordinator(operation, group_ids, batch_size, build)
        return {
            info.group_id: info
            for _, response in answers
            for info in protocol.described_groups(response, protocol_type)
        }

    def _supports(self, api_key: int) -> bool:
        return internals.api_supported(self._admin, api_key)

    def delete_groups(
        self, held: Mapping[str, Collection[TP]], before_request: Callable[[], object] | None = None
    ) -> dict[str, str | None]:
        """Delete groups (their committed offsets); ``held``: each group with the offsets it holds, which size
        the requests (``protocol.deletion_batches``); ``before_request``: asked before each request is sent.
        Per group the error name or None."""
        result: dict[str, str | None] = {}
        for batch in protocol.deletion_batches(held):
            if before_request is not None:
                before_request()
            # Not retried: a second attempt after a lost answer would report the deleted group as missing.
            answer = self._call("deleting consumer groups", self._admin.delete_groups, batch, retry=False)
            said = {group: answer.get(group, "no answer for the group") for group in batch}
            result.update({group: (None if error == "OK" else str(error)) for group, error in said.items()})
        return result

    def remove_static_members(self, group_id: str, instance_ids: Sequence[str], reason: str) -> dict[str, str | None]:
        """Remove static members from a group by their ``group.instance.id`` (LeaveGroup v3+, as Kafka's
        RemoveMembersFromConsumerGroup does); per instance id the error name or None. A member whose consumer
        still runs joins again at its next heartbeat."""
        members = protocol.remove_static_members_request(instance_ids, reason)
        answer = self._call("removing static members", self._admin.remove_group_members, group_id, members)
        return {
            instance_id: (None if error is kafka_errors.NoError else error.__name__)
            for instance_id, error in answer.items()
        }


@contextmanager
def group_member(settings: ConnectionSettings, group: str, topic: str, timeout_s: float = 60) -> Iterator[None]:
    """A live consumer in ``group`` (for the demo: an application still connected on the target).

    It joins, reads nothing it commits, and leaves when the block ends. The block starts only once the
    member holds an assignment (the group is Stable with it), else ``TimeoutError``: a demo that goes on
    with a member still joining shows a wait that never happens.
    """
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=[server.strip() for server in settings.bootstrap_servers.split(",")],
        group_id=group,
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
        client_id=settings.client_id,
    )
    try:
        deadline = time.monotonic() + timeout_s
        while not consumer.assignment():
            if time.monotonic() > deadline:
                raise TimeoutError(f"a consumer did not join group {group} within {timeout_s:g} s")
            # One poll long enough for a whole join: kafka-python 3.0.12 loses an assignment whose
            # SyncGroup answer arrives after a poll gave up waiting (seen on Apache Kafka: the member
            # stays in the group while assignment() stays empty, and the group rebalances without it).
            consumer.poll(timeout_ms=3000, max_records=1)
        yield
    finally:
        consumer.close()
