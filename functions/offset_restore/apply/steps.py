"""Apply in AWS, one state-machine step at a time, with the mappings in DynamoDB instead of a plan
file: which groups are still active, commit a batch of groups, verify a batch, and roll a run back
from the previous offsets its commits saved there."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from offset_restore.apply.commit import apply_plan
from offset_restore.apply.commit_index import (
    COMMIT_BATCH_GROUPS,
    commit_candidates,
    read_batch,
    read_groups,
    writable_and_waiting,
)
from offset_restore.apply.fit import check_entries_fit
from offset_restore.apply.model import (
    ApplyOptions,
    ApplyReport,
    ApplyTarget,
    Progress,
    RewindScope,
    WriteCheck,
    rewind_options,
)
from offset_restore.apply.rollback import RollbackTarget, rollback_plan
from offset_restore.apply.waiting import (
    WaitTimeoutError,
    active_groups,
    remove_static_members,
    static_hint,
    still_active,
)
from offset_restore.errors import BadInputError
from offset_restore.formats.plan import ClusterRef, Plan, PlanEntry
from offset_restore.snapshot.filters import NameFilter
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import BlobStore

__all__ = ["CommitResult", "EmptyCheck", "check_empty", "commit_groups", "rollback_run", "step_result"]


NAMES_IN_OUTPUT = 20
"""Group names a step returns per list; the counts are whole. A state's payload is limited to 256 KB
and a large estate has tens of thousands of groups: the full lists live in DynamoDB and the report."""
STATIC_REMOVED_KEPT = 500
"""Static members removed that the state carries from poll to poll (each removed once): a few hundred
names stay far inside Step Functions' 256 KB state; past them a member may be removed once more."""
WORKFLOW_STATIC_OPTION = '"remove_static_members": true in the input'
"""How a timed-out wait names the workflow's way to end a wait on static members (the CLI names its option)."""


def _first(names: Sequence[str]) -> list[str]:
    return list(names[:NAMES_IN_OUTPUT])


class EmptyCheck(BaseModel):
    empty: list[str]
    active: list[str]
    waiting: list[str]
    """Groups with pending entries: they wait whole until the restore reaches them."""
    started_at: float | None = None
    """When the wait began (epoch seconds): the workflow passes it back on every poll."""
    timed_out: bool = False
    static_removed: list[str] = []
    """Every static member the wait removed so far (``remove_static_members``): passed back on every poll, so
    each is removed once, and reported."""

    @property
    def all_empty(self) -> bool:
        return not self.active

    def output(self) -> dict[str, Any]:
        """What the step returns to the state machine: bounded whatever the number of groups."""
        return {
            "empty": _first(self.empty),
            "active": _first(self.active),
            "waiting": _first(self.waiting),
            "counts": {"empty": len(self.empty), "active": len(self.active), "waiting": len(self.waiting)},
            "started_at": self.started_at,
            "timed_out": self.timed_out,
            "all_empty": self.all_empty,
            "static_removed": self.static_removed[:STATIC_REMOVED_KEPT],
        }


class CommitResult(BaseModel):
    committed: list[str]
    unchanged: list[str]
    skipped: dict[str, str]
    failed: dict[str, str]
    offsets_committed: int
    verified: int
    verify_failed: list[str]

    @classmethod
    def merged(cls, results: Iterable[CommitResult]) -> CommitResult:
        """One result of several batches written one after another."""
        whole = cls(
            committed=[], unchanged=[], skipped={}, failed={}, offsets_committed=0, verified=0, verify_failed=[]
        )
        for result in results:
            whole.committed += result.committed
            whole.unchanged += result.unchanged
            whole.skipped.update(result.skipped)
            whole.failed.update(result.failed)
            whole.offsets_committed += result.offsets_committed
            whole.verified += result.verified
            whole.verify_failed += result.verify_failed
        return whole

    def output(self) -> dict[str, Any]:
        """What the step returns: bounded whatever the batch size (see ``NAMES_IN_OUTPUT``)."""
        return {
            "committed": _first(self.committed),
            "unchanged": _first(self.unchanged),
            "skipped": dict(sorted(self.skipped.items())[:NAMES_IN_OUTPUT]),
            "failed": dict(sorted(self.failed.items())[:NAMES_IN_OUTPUT]),
            "offsets_committed": self.offsets_committed,
            "verified": self.verified,
            "verify_failed": _first(self.verify_failed),
            "counts": {
                "committed": len(self.committed),
                "unchanged": len(self.unchanged),
                "skipped": len(self.skipped),
                "failed": len(self.failed),
                "offsets_committed": self.offsets_committed,
                "verified": self.verified,
                "verify_failed": len(self.verify_failed),
            },
        }


def _plan(restore_id: str, target: str, entries: list[PlanEntry], offset_header: str | None = None) -> Plan:
    return Plan(
        restore_id=restore_id,
        snapshot_id="",
        created_at=datetime.now(UTC),
        source=ClusterRef(cluster=""),
        target=ClusterRef(cluster=target),
        entries=entries,
        offset_header=offset_header,
    )


def check_empty(
    restore_id: str,
    target: ApplyTarget,
    mappings: MappingStore,
    *,
    started_at: float | None = None,
    timeout_s: float | None = None,
    fail_on_timeout: bool = False,
    now: float | None = None,
    index: BlobStore | None = None,
    remove_static: bool = False,
    static_removed: Sequence[str] = (),
) -> EmptyCheck:
    """Which groups are still active. With a wait start and timeout, also whether the wait is over;
    ``fail_on_timeout`` raises ``WaitTimeoutError`` then, naming the active groups and their members. With the
    restore's commit ``index`` the groups come from it, not from every mapping in the table. ``remove_static``:
    the static members of active groups are removed, each once (``static_removed`` lists the earlier polls')."""
    now = time.time() if now is None else now
    started_at = now if started_at is None else started_at
    if index is not None:
        listed = read_groups(index)
        waiting, writable = listed.waiting, listed.writable
    else:
        writable, waiting = writable_and_waiting(mappings.iter_entries(restore_id))
    infos = target.describe_groups(writable) if writable else {}
    found = active_groups(writable, infos)
    removed = [*static_removed, *(remove_static_members(target, found, static_removed) if remove_static else ())]
    active = list(found)
    timed_out = bool(active) and timeout_s is not None and now - started_at >= timeout_s
    if timed_out and fail_on_timeout:
        raise WaitTimeoutError(
            f"{len(active)} groups still have members after {timeout_s:g} s: {still_active(found, limit=10)}; "
            f"nothing was written{static_hint(found, WORKFLOW_STATIC_OPTION)}"
        )
    return EmptyCheck(
        empty=[g for g in writable if g not in active],
        active=active,
        waiting=waiting,
        started_at=started_at,
        timed_out=timed_out,
        static_removed=removed,
    )


def step_result(report: ApplyReport) -> CommitResult:
    """What a commit or rollback step returns, from its report."""
    return CommitResult(
        committed=report.groups_committed,
        unchanged=report.groups_unchanged,
        skipped=report.groups_skipped,
        failed=report.groups_failed,
        offsets_committed=report.offsets_committed,
        verified=report.verified,
        verify_failed=report.verify_failed,
    )


def commit_groups(
    restore_id: str,
    groups: Sequence[str] | int,
    target: ApplyTarget,
    mappings: MappingStore,
    *,
    allow_rewind: RewindScope,
    index: BlobStore | None = None,
    offset_header: str | None = None,
    before_write: WriteCheck | None = None,
    hold: Mapping[str, str] | None = None,
) -> CommitResult:
    """Commit (and verify) a batch of groups, named or by the workflow's batch number; active ones
    are skipped, the previous offsets are saved to DynamoDB before the first write. Running a batch
    again commits nothing twice. With the restore's commit ``index`` a numbered batch reads only its
    own mappings, by key. ``hold``: groups not to write, with why (a migration's last look at the
    source), checked right before each write."""
    if isinstance(groups, int) and index is not None:
        batch = read_batch(index, groups)
        selected = set(batch.groups)
        everything = mappings.entries_by_keys(restore_id, batch.keys)
    else:
        everything = mappings.entries(restore_id)
        if isinstance(groups, int):
            candidates = commit_candidates(everything, allow_rewind)
            selected = set(candidates[groups * COMMIT_BATCH_GROUPS : (groups + 1) * COMMIT_BATCH_GROUPS])
        else:
            selected = set(groups)
    # With the restore's offset header, the records next to each mapped offset are checked by the source
    # offset they carry as well as by their timestamp, just before the write (and in verification).
    plan = _plan(restore_id, target.cluster_id, [e for e in everything if e.group in selected], offset_header)
    check_entries_fit([e for e in plan.entries if e.status == "mapped"], target)  # apply_plan checks revived ones
    options = ApplyOptions(wait_timeout_s=0, on_wait_timeout="commit_empty", **rewind_options(allow_rewind))
    held = (lambda batch: {g: hold[g] for g in batch if g in hold}) if hold else None
    report = apply_plan(
        plan, target, options, lambda p: mappings.save(restore_id, p.entries), before_write=before_write, hold=held
    )
    return step_result(report)


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

    plan = _plan(restore_id, target.cluster_id, written)
    return plan, rollback_plan(plan, target, save, wait=options, before_write=before_write, progress=progress)


def _state(entry: PlanEntry) -> tuple[object, ...]:
    return entry.status, entry.outcome, entry.reason, entry.verified, entry.previous_recorded
