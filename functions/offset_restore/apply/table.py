"""Apply from a run's mappings in DynamoDB (the workflow's, in place of a plan file): the plan of a batch of
them, and the rollback of a run from the previous offsets its commits saved there — what the CLI's
``rollback --stack`` and the workflow's rollback mode both run."""

from __future__ import annotations

from datetime import UTC, datetime

from offset_restore.apply.model import (
    ApplyOptions,
    ApplyReport,
    Progress,
    WriteCheck,
)
from offset_restore.apply.rollback import RollbackTarget, rollback_plan
from offset_restore.errors import BadInputError
from offset_restore.formats.plan import ClusterRef, Plan, PlanEntry
from offset_restore.snapshot.filters import NameFilter
from offset_restore.stores.mappings import MappingStore

__all__ = ["rollback_run", "table_plan"]


def table_plan(restore_id: str, target: str, entries: list[PlanEntry], offset_header: str | None = None) -> Plan:
    """A plan of a run's mapped entries as apply and rollback take it: the run's mappings stand for its file."""
    return Plan(
        restore_id=restore_id,
        snapshot_id="",
        created_at=datetime.now(UTC),
        source=ClusterRef(cluster=""),
        target=ClusterRef(cluster=target),
        entries=entries,
        offset_header=offset_header,
    )


def rollback_run(
    restore_id: str,
    target: RollbackTarget,
    mappings: MappingStore,
    options: ApplyOptions,
    groups: NameFilter | None = None,
    *,
    cluster_id: str | None = None,
    before_write: WriteCheck = lambda: None,
    progress: Progress | None = None,
) -> tuple[Plan, ApplyReport]:
    """Roll back what a workflow run committed (or the ``groups`` of it): the previous offsets its
    Commit steps saved in DynamoDB before each write are put back under the same rules as a plan
    file's rollback (apply/rollback.py: only empty groups, never progress made since, never an offset
    the run did not write), and the entries saved as they change — so a run applied from the console
    or by an alarm can be undone as surely as one applied from a plan file. A preview
    (``options.dry_run``) saves nothing. ``cluster_id``: the cluster the run committed to, as recorded;
    these brokers must be that cluster (names can be typed wrong, ids cannot). ``before_write``: the
    lock's check, called before each write."""
    if cluster_id is not None and cluster_id != target.cluster_id:
        raise BadInputError(
            f"restore {restore_id} was committed to the cluster with id {cluster_id}, but these brokers are "
            f"cluster {target.cluster_id}: another cluster; nothing written"
        )
    wanted, seen = groups or NameFilter(), 0
    written: list[PlanEntry] = []
    for entry in mappings.iter_entries(restore_id):  # one page at a time; only what was written is kept
        seen += 1
        if entry.previous_recorded and wanted(entry.group):
            written.append(entry)
    if not seen:
        raise BadInputError(f"no mappings for restore {restore_id} in table {mappings.table}: nothing to roll back")
    before = {id(e): _state(e) for e in written}

    def save(plan: Plan) -> None:  # only the entries the rollback changed
        mappings.save(restore_id, [e for e in plan.entries if _state(e) != before[id(e)]])
        before.update({id(e): _state(e) for e in plan.entries})

    plan = table_plan(restore_id, target.cluster_id, written)
    return plan, rollback_plan(plan, target, save, wait=options, before_write=before_write, progress=progress)


def _state(entry: PlanEntry) -> tuple[object, ...]:
    return entry.status, entry.outcome, entry.reason, entry.verified, entry.previous_recorded
