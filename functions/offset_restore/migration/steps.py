"""A migration's two steps on the source in the workflow (``"mode": "migrate"``): one look at whether the
groups stopped there — the state machine waits and asks again, as it does on the target — and the final
snapshot, taken once they have (or, with ``commit_empty``, without the ones that never stopped)."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace

from offset_restore.apply.commit_index import read_groups, write_held_on_source
from offset_restore.apply.model import Progress
from offset_restore.apply.waiting import WaitTimeoutError
from offset_restore.formats.plan import PlanEntry
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.kafka.model import GroupInfo
from offset_restore.migration.source import (
    SourceGroups,
    SourceOffsets,
    active_on,
    active_phrase,
    leave_out,
    moved_since_snapshot,
    selected_groups,
    still_active_error,
)
from offset_restore.snapshot.filters import NameFilter
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import SnapshotResult, run_snapshot
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import BlobStore

__all__ = ["FinalSnapshot", "SourceCheck", "check_source", "final_snapshot", "recheck_source"]


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
