"""Every use of kafka-python's private API, in one place, each with why no public call does.

kafka-python (``>=3.0,<3.1``, pinned in pyproject.toml) is the client library; these few reach into
its admin client where it has no public call for what a restore needs. A kafka-python upgrade that
renames one of them fails ``tests/unit/test_protocol.py::test_the_kafka_python_internals_we_use_exist``
by name, not a restore in the middle of an incident.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kafka import KafkaAdminClient
from kafka.net.compat import KafkaNetClient
from kafka.protocol.metadata import CoordinatorType

__all__ = [
    "api_supported",
    "client_without_metrics",
    "cluster_id",
    "find_coordinators",
    "find_transaction_coordinator",
    "forget_coordinators",
    "forget_transaction_coordinator",
    "manager",
    "offset_fetch_requests",
    "offset_fetch_version",
]


def manager(admin: KafkaAdminClient) -> Any:
    """The admin client's connection manager: ``run`` (a coroutine on the client's I/O thread) and
    ``send`` (one request to one broker, answered as a future) are how every request here is
    pipelined; the admin client's public calls send one request and wait for it."""
    return admin._manager


def cluster_id(admin: KafkaAdminClient) -> str | None:
    """The cluster id from the metadata the client already holds (no public accessor)."""
    return admin._manager.cluster.cluster_id


async def find_coordinators(admin: KafkaAdminClient, group_ids: Sequence[str]) -> dict[str, int]:
    """Group -> coordinator node id, with kafka-python's cache and batched FindCoordinator."""
    return await admin._find_coordinator_ids(list(group_ids))


def forget_coordinators(admin: KafkaAdminClient, group_ids: Iterable[str]) -> None:
    """Drop cached coordinators so the next call asks FindCoordinator again: after NOT_COORDINATOR a
    cached answer would send the retry to the same wrong broker."""
    cached = admin._manager.cluster._coordinators
    for group_id in group_ids:
        cached.pop((CoordinatorType.GROUP, group_id), None)


def offset_fetch_requests(admin: KafkaAdminClient, group_ids: Sequence[str]) -> list[tuple[str | None, Any]]:
    """OffsetFetch requests for these groups: one multi-group request (v8+) tagged None, or one per
    group tagged with its id, as the broker's versions allow (kafka-python decides the version)."""
    return list(admin._list_group_offsets_requests(dict.fromkeys(group_ids)))


def api_supported(admin: KafkaAdminClient, api_key: int) -> bool:
    """Whether the brokers announced this request in ApiVersions (known after the first call)."""
    versions = admin._manager.broker_version_data
    return versions is not None and api_key in (versions.api_versions or {})


def client_without_metrics(**configs: Any) -> KafkaNetClient:
    """kafka-python's network client without its per-request metric sensors (a tenth of the cost
    of a small request); nothing here reads them. ``kafka.net.compat`` is public but undocumented."""
    return KafkaNetClient(**{**configs, "metrics": None})


async def find_transaction_coordinator(admin: KafkaAdminClient, transactional_id: str) -> int:
    """The node coordinating ``transactional_id`` (``find_transaction_coordinators``)."""
    return (await find_transaction_coordinators(admin, [transactional_id]))[transactional_id]


async def find_transaction_coordinators(admin: KafkaAdminClient, transactional_ids: Sequence[str]) -> dict[str, int]:
    """The node coordinating each transactional id (FindCoordinator of the TRANSACTION kind, batched and
    cached): the admin client finds them only for its own transaction calls."""
    found = await admin._find_coordinator_ids(list(transactional_ids), key_type=CoordinatorType.TRANSACTION)
    return {tid: int(found[tid]) for tid in transactional_ids}


def forget_transaction_coordinator(admin: KafkaAdminClient, transactional_id: str) -> None:
    """``forget_coordinators`` for a transactional id."""
    admin._manager.cluster._coordinators.pop((CoordinatorType.TRANSACTION, transactional_id), None)


def offset_fetch_version(admin: KafkaAdminClient) -> int:
    """The highest OffsetFetch version both ends speak (known after the first call)."""
    from kafka.protocol.consumer import OffsetFetchRequest

    return int(admin._manager.broker_version_data.api_version(OffsetFetchRequest))
