"""One migration for the CLI (``offset-restore migrate``): the source is up, so every group moves exactly.

The order is what makes it exact: (1) wait until the groups are empty on the source, so their
committed offsets are final; (2) take the snapshot then, so it holds those final positions and the records
around them; (3) plan until every entry is proven exact — until then the replica or the restore has not
brought the records at some committed position, and the plan is made again after a pause (bounded);
(4) apply: wait until the groups are empty on the target, commit, verify — only groups whose every entry
is exact. A target that did not catch up in time writes nothing, or (``commit_empty``) the exact groups,
the others named. Without ``execute`` nothing waits and nothing is committed: the groups still active on
the source are named and the apply previewed.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from offset_restore.apply.locks import TargetLock
from offset_restore.apply.model import ApplyOptions, ApplyReport, Progress
from offset_restore.apply.run import PlanFile, Sealing, run_apply
from offset_restore.apply.waiting import Polling, poll_until
from offset_restore.formats.plan import Plan
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.kafka.model import GroupInfo
from offset_restore.migration.final import final_snapshot
from offset_restore.migration.source import (
    StoppedOnSource,
    moved_since_snapshot,
    still_active_error,
    stopped_on_source,
)
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import SnapshotResult
from offset_restore.stores.storage import BlobStore, open_location
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.run import PlanResult, SnapshotChoice, create_plan, new_plan_location, run_plan

__all__ = ["Migration", "MigrationResult", "run_migration"]


@dataclass(frozen=True)
class Migration:
    """What a migration moves and how long it waits for each thing it waits for."""

    snapshot: SnapshotOptions
    plan: PlanOptions
    apply: ApplyOptions
    """``dry_run`` false: wait on the source, commit on the target; true: a preview."""
    catch_up_timeout_s: float = 900.0
    """How long to plan again while entries are not yet proven exact (the target still catching up)."""
    restore_id: str | None = None


@dataclass
class MigrationResult:
    source: StoppedOnSource
    left_on_source: dict[str, GroupInfo]
    """The groups with members on the source when the final snapshot was taken: not moved."""
    snapshot: SnapshotResult
    plan: PlanResult
    plans: int
    """How many times the plan was made (1: the target held every record the first time)."""
    caught_up_s: float
    preview: bool = False
    applied: tuple[Plan, ApplyReport] | None = None
    """None when the target did not catch up in time: nothing was written."""

    @property
    def caught_up(self) -> bool:
        return self.plan.summary.not_exact == 0


def run_migration(
    source_connection: ConnectionSettings,
    target_connection: ConnectionSettings,
    snapshots: str,
    plan_location: str,
    migration: Migration,
    *,
    lock: TargetLock | None = None,
    sealing: Sealing | None = None,
    progress: Progress | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    connect: Callable[[ConnectionSettings], KafkaCluster] = KafkaCluster,
) -> MigrationResult:
    selected, _ = migration.snapshot.group_filter(), migration.snapshot.topic_filter()  # bad regexes first
    destination = new_plan_location(plan_location)  # said before the wait, not after it
    show = progress or (lambda what, done, total: None)
    preview = migration.apply.dry_run
    options = migration.snapshot
    polling = Polling(
        0 if preview else migration.apply.wait_timeout_s,
        migration.apply.poll_interval_s,
        "waiting for the groups to stop on the source",
    )
    with connect(source_connection) as source:
        stopped = stopped_on_source(source, selected, polling, show, sleep, clock)
    if stopped.still_active and not preview and migration.apply.on_wait_timeout == "fail":
        raise still_active_error(stopped.still_active, polling.timeout_s)
    final = final_snapshot(
        source_connection,
        open_location(snapshots),
        options,
        stopped=not preview,
        refuse_active=not preview and migration.apply.on_wait_timeout == "fail",
        progress=progress,
        connect=connect,
    )
    snapshot = final.snapshot
    choice = SnapshotChoice(snapshots, snapshot.snapshot_id, cluster=snapshot.cluster)
    plan, plans, waited = _plan_until_proven(
        choice, target_connection, destination, migration, show, sleep, clock, connect
    )
    plan = plan.model_copy(update={"location": plan_location})
    if sealing is not None:
        sealing.seal_new(PlanFile(plan_location))  # sealed whole from the start, as plan's
    result = MigrationResult(stopped, final.left_on_source, snapshot, plan, plans, waited, preview)
    moves_what_is_exact = migration.apply.on_wait_timeout == "commit_empty"
    if result.caught_up or preview or moves_what_is_exact:
        # Right before each write, one more look at the source: a group whose consumer started again since
        # the final snapshot (during the re-plans, or while an operator looked) is not moved.
        with nullcontext() if preview else connect(source_connection) as source:
            result.applied = run_apply(
                plan_location,
                target_connection,
                replace(migration.apply, exact_only=True),
                target_name=migration.plan.target_cluster,
                lock=lock,
                progress=progress,
                sealing=sealing,
                connect=connect,
                hold=None if source is None else partial(moved_since_snapshot, source),
            )
    return result


def _plan_until_proven(
    choice: SnapshotChoice,
    target: ConnectionSettings,
    destination: tuple[BlobStore, str],
    migration: Migration,
    show: Progress,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
    connect: Callable[[ConnectionSettings], KafkaCluster],
) -> tuple[PlanResult, int, float]:
    """Plan, and while some entry is not exact and the catch-up timeout has not passed, pause and plan
    again (a preview plans once); entries no later plan can map (``PlanSummary.held``) are not waited for.
    The attempts are written to a scratch folder (a plan file is never overwritten) and the last one to
    ``destination``."""
    timeout = 0.0 if migration.apply.dry_run else migration.catch_up_timeout_s
    polling = Polling(timeout, migration.apply.poll_interval_s, "waiting for the target to hold every group's records")
    with tempfile.TemporaryDirectory(prefix="offset-restore-migrate-") as scratch:
        attempts: list[tuple[str, PlanResult]] = []

        def attempt() -> PlanResult:
            path = str(Path(scratch, f"plan-{len(attempts) + 1}.json"))
            restore_id = attempts[-1][1].restore_id if attempts else migration.restore_id  # one restore
            result = run_plan(choice, target, path, migration.plan, restore_id=restore_id, connect=connect)
            attempts.append((path, result))
            show(polling.what, result.summary.exact, result.summary.entries)
            return result

        result, plans, waited = poll_until(attempt, lambda r: not r.summary.awaiting_catch_up, polling, sleep, clock)
        store, key = destination
        with open(attempts[-1][0], "rb") as content:
            create_plan(store, key, content, f"{store.description}/{key}")
    return result, plans, waited
