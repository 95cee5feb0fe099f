"""A migration's two steps on the source in the workflow (``"mode": "migrate"``): one look at whether the
groups stopped there — the state machine waits and asks again, as it does on the target — and the final
snapshot, taken once they have (or, with ``commit_empty``, without the ones that never stopped)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from offset_restore.apply.waiting import active_groups
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.migration.source import SourceGroups, leave_out, still_active_error
from offset_restore.snapshot.filters import NameFilter
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import SnapshotResult, run_snapshot
from offset_restore.stores.storage import BlobStore

__all__ = ["SourceCheck", "check_source", "final_snapshot"]


@dataclass(frozen=True)
class SourceCheck:
    groups: int
    still_active: list[str]
    started_at: float
    timed_out: bool

    @property
    def all_empty(self) -> bool:
        return not self.still_active

    def output(self) -> dict[str, object]:
        return {
            "groups": self.groups,
            "still_active": self.still_active,
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
    groups = sorted(g for g in source.list_group_ids() if selected(g))
    infos = source.describe_groups(groups) if groups else {}
    active = active_groups(groups, infos)
    timed_out = bool(active) and now - started_at >= timeout_s
    if timed_out and fail_on_timeout:
        raise still_active_error(active, timeout_s)
    return SourceCheck(len(groups), sorted(active), started_at, timed_out)


def final_snapshot(
    connection: ConnectionSettings,
    store: BlobStore,
    options: SnapshotOptions,
    still_active: list[str],
    *,
    connect: type[KafkaCluster] = KafkaCluster,
) -> SnapshotResult:
    """The snapshot the migration plans from, without the groups still active on the source."""
    final = replace(options, exclude_groups=leave_out(options.exclude_groups, still_active), groups_stopped=True)
    return run_snapshot(connection, store, final, connect=connect)
