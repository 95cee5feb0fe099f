"""A migration's looks at the source (``"mode": "migrate"``): whether the groups stopped there — the state
machine waits and asks again, as it does on the target — and, right before the commit, which of them run
again there or moved since the final snapshot (the final snapshot itself is ``migration/final.py``)."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from offset_restore.apply.commit_index import read_groups, write_held_on_source
from offset_restore.apply.locks import TargetLock, workflow_lock_ttl
from offset_restore.formats.plan import PlanEntry
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.migration.final import FinalSnapshot, final_snapshot
from offset_restore.migration.source import (
    SourceGroups,
    SourceOffsets,
    active_on,
    moved_since_snapshot,
    selected_groups,
    still_active_error,
)
from offset_restore.snapshot.filters import NameFilter
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import BlobStore, S3Store
from offset_restore.workflow.settings import SourceSettings, read_secret

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

__all__ = [
    "SourceCheck",
    "SourceLook",
    "check_source",
    "last_look",
    "recheck_source",
    "take_final_snapshot",
    "wait_on_source",
]


@dataclass(frozen=True)
class SourceCheck:
    groups: int
    still_active: list[str]
    started_at: float
    timed_out: bool

    @property
    def all_empty(self) -> bool:
        return not self.still_active

    def output(self, limit: int = 20) -> dict[str, object]:
        """At most ``limit`` names (the state stays small); the final snapshot looks again itself."""
        return {
            "groups": self.groups,
            "still_active": self.still_active[:limit],
            "still_active_count": len(self.still_active),
            "all_empty": self.all_empty,
            "started_at": self.started_at,
            "timed_out": self.timed_out,
        }


def check_source(
    source: SourceGroups,
    selected: NameFilter,
    *,
    started_at: float | None,
    timeout_s: float,
    fail_on_timeout: bool,
    now: float | None = None,
) -> SourceCheck:
    """Which selected groups still have members on the source; past the timeout either raise
    ``WaitTimeoutError`` naming them (nothing was written) or say the wait is over."""
    now = time.time() if now is None else now
    started_at = now if started_at is None else started_at
    groups = selected_groups(source, selected)
    active = active_on(source, groups)
    timed_out = bool(active) and now - started_at >= timeout_s
    if timed_out and fail_on_timeout:
        raise still_active_error(active, timeout_s)
    return SourceCheck(len(groups), sorted(active), started_at, timed_out)


def recheck_source(source: SourceOffsets, mappings: MappingStore, restore_id: str, index: BlobStore) -> dict[str, str]:
    """A migration's last look at the source, right before the workflow's commit: the groups the commit
    would write (the commit index's) that run again there or whose committed offsets moved since the final
    snapshot (``moved_since_snapshot``), with why; written beside the index, where the commit steps read
    them and leave them unwritten."""
    writable = set(read_groups(index).writable)
    entries: dict[str, list[PlanEntry]] = defaultdict(list)
    for entry in mappings.iter_entries(restore_id):  # page by page; only the writable groups' entries kept
        if entry.group in writable and entry.status == "mapped":
            entries[entry.group].append(entry)
    held = moved_since_snapshot(source, entries)
    write_held_on_source(index, held)
    return held


@dataclass(frozen=True)
class SourceLook:
    """One look at the source, as the state's input gives it: the groups and topics the run moves, the wait's
    start and timeout, what a timeout does, and the run's lock (``owner``: the execution holding it; None: a
    call outside the state machine, which renews none)."""

    restore_id: str
    groups: str = ".*"
    exclude_groups: str | None = None
    topics: str | None = None
    started_at: float | None = None
    timeout_s: float = 900
    fail_on_timeout: bool = True
    owner: str | None = None
    interval_seconds: float = 15


def wait_on_source(
    look: SourceLook,
    settings: SourceSettings,
    dynamodb: DynamoDBClient,
    secret_reader: Callable[[str], str] = read_secret,
) -> SourceCheck:
    """One look whether the groups stopped on the source (``check_source``), the run's lock renewed first."""
    _renew(look, settings, dynamodb)
    with KafkaCluster(settings.source.connection(secret_reader)) as source:
        return check_source(
            source,
            NameFilter.parse(look.groups, look.exclude_groups, "groups"),
            started_at=look.started_at,
            timeout_s=look.timeout_s,
            fail_on_timeout=look.fail_on_timeout,
        )


def take_final_snapshot(
    look: SourceLook, settings: SourceSettings, s3: S3Client, secret_reader: Callable[[str], str] = read_secret
) -> FinalSnapshot:
    """The final snapshot (``migration/final.py``), where the Snapshot function writes its snapshots; one
    group running again refuses it when a timeout fails the run."""
    options = SnapshotOptions(
        groups=look.groups, exclude_groups=look.exclude_groups, topics=look.topics, cluster=settings.source.name
    )
    store = S3Store(settings.bucket, settings.prefix, s3)
    return final_snapshot(settings.source.connection(secret_reader), store, options, refuse_active=look.fail_on_timeout)


def last_look(
    look: SourceLook,
    settings: SourceSettings,
    dynamodb: DynamoDBClient,
    s3: S3Client,
    secret_reader: Callable[[str], str] = read_secret,
) -> dict[str, str]:
    """The last look right before the commit (``recheck_source``), the run's lock renewed first."""
    _renew(look, settings, dynamodb)
    index = settings.restore_folder(look.restore_id, s3)
    with KafkaCluster(settings.source.connection(secret_reader)) as source:
        return recheck_source(source, MappingStore(settings.table, dynamodb), look.restore_id, index)


def _renew(look: SourceLook, settings: SourceSettings, dynamodb: DynamoDBClient) -> None:
    """Every look renews the run's lock (a long wait never lets it lapse), under the id its acquire
    recorded: the source's network cannot reach the target."""
    if look.owner:
        ttl = workflow_lock_ttl(look.interval_seconds)
        TargetLock.named(settings.table, dynamodb, settings.target_cluster, look.owner, ttl).renew()
