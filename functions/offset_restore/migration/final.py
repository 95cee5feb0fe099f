"""A migration's final snapshot, taken once the groups stopped on the source (or, with ``commit_empty``,
without the ones that never stopped): the CLI's ``migrate`` and the workflow's mode migrate both take it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from offset_restore.apply.model import Progress
from offset_restore.apply.waiting import WaitTimeoutError
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.kafka.model import GroupInfo
from offset_restore.migration.source import (
    active_on,
    active_phrase,
    leave_out,
    selected_groups,
)
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import SnapshotResult, run_snapshot
from offset_restore.stores.storage import BlobStore

__all__ = ["FinalSnapshot", "final_snapshot"]


@dataclass(frozen=True)
class FinalSnapshot:
    snapshot: SnapshotResult
    left_on_source: dict[str, GroupInfo]
    """The selected groups with members on the source when it was taken: left out of it, not moved."""

    def output(self, limit: int = 20) -> dict[str, object]:
        """What the state machine carries: the snapshot's id and the first names left out, counted (a
        run of thousands of groups keeps its state small)."""
        return {
            "snapshot_id": self.snapshot.snapshot_id,
            "group_partitions": self.snapshot.counts.group_partitions,
            "left_on_source": sorted(self.left_on_source)[:limit],
            "left_on_source_count": len(self.left_on_source),
        }


def final_snapshot(
    connection: ConnectionSettings,
    store: BlobStore,
    options: SnapshotOptions,
    *,
    stopped: bool = True,
    refuse_active: bool = False,
    progress: Progress | None = None,
    connect: Callable[[ConnectionSettings], KafkaCluster] = KafkaCluster,
) -> FinalSnapshot:
    """The snapshot the migration plans from: the selected groups are described once more right before
    it and those with members (still running, or a consumer started again since the wait) are left out
    by name, so every group in it had stopped (``groups_stopped``, unless ``stopped`` is false: a
    preview, which did not wait). ``refuse_active`` (``on_wait_timeout`` fail): one with members then
    fails the migration instead, nothing written."""
    with connect(connection) as source:
        active = active_on(source, selected_groups(source, options.group_filter()))
    if active and refuse_active:
        raise WaitTimeoutError(
            f"{len(active):,} groups have members on the source again right before the final snapshot: "
            f"{active_phrase(active)}; nothing was written (stop their consumers and run the migration again)"
        )
    left_out = leave_out(options.exclude_groups, list(active))
    final = replace(options, exclude_groups=left_out, groups_stopped=stopped, origin_search=True)
    return FinalSnapshot(run_snapshot(connection, store, final, progress=progress, connect=connect), dict(active))
