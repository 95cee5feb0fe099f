"""The Commit state as one call: a batch of a restore's groups committed on the target (previous offsets
saved first) and verified, once per execution; or, in the workflow's rollback mode, the previous offsets
the run's commits saved put back.

The handler parses the state's input into a ``CommitStep`` and returns what this gives: the step's output
(``CommitResult.output()``: names bounded, counts whole), the same for a first attempt, its retries and a
rollback."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from offset_restore.apply.commit import apply_plan
from offset_restore.apply.commit_index import (
    COMMIT_BATCH_GROUPS,
    commit_candidates,
    read_batch,
    read_held_on_source,
)
from offset_restore.apply.fit import check_entries_fit
from offset_restore.apply.locks import FENCE_PREFIX, Lease, LockLostError, TargetLock
from offset_restore.apply.model import (
    ApplyOptions,
    ApplyReport,
    ApplyTarget,
    RewindScope,
    WriteCheck,
    rewind_options,
)
from offset_restore.apply.table import rollback_run, table_plan
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.fence import Fence
from offset_restore.snapshot.filters import NameFilter
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.runs import RunRecord
from offset_restore.stores.storage import BlobStore
from offset_restore.workflow.idempotency import Idempotency
from offset_restore.workflow.settings import ApplySettings, read_secret
from offset_restore.workflow.states.output import NAMES_IN_OUTPUT, first_names

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

__all__ = [
    "CommitBatches",
    "CommitResult",
    "CommitStep",
    "RollbackSelection",
    "commit_groups",
    "commit_step",
    "step_result",
]


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
            "committed": first_names(self.committed),
            "unchanged": first_names(self.unchanged),
            "skipped": dict(sorted(self.skipped.items())[:NAMES_IN_OUTPUT]),
            "failed": dict(sorted(self.failed.items())[:NAMES_IN_OUTPUT]),
            "offsets_committed": self.offsets_committed,
            "verified": self.verified,
            "verify_failed": first_names(self.verify_failed),
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
    plan = table_plan(restore_id, target.cluster_id, [e for e in everything if e.group in selected], offset_header)
    check_entries_fit([e for e in plan.entries if e.status == "mapped"], target)  # apply_plan checks revived ones
    options = ApplyOptions(wait_timeout_s=0, on_wait_timeout="commit_empty", **rewind_options(allow_rewind))
    held = (lambda batch: {g: hold[g] for g in batch if g in hold}) if hold else None
    report = apply_plan(
        plan, target, options, lambda p: mappings.save(restore_id, p.entries), before_write=before_write, hold=held
    )
    return step_result(report)


@dataclass(frozen=True)
class RollbackSelection:
    """The rollback mode's groups: those of the run that match ``groups_regex`` and not ``exclude_groups``."""

    groups_regex: str | None = None
    exclude_groups: str | None = None


@dataclass(frozen=True)
class CommitBatches:
    """The numbers of the workflow's commit batches one lane of the Commit Map writes, one after another."""

    numbers: tuple[int, ...]


@dataclass(frozen=True)
class CommitStep:
    """One Commit state's work. ``selection``: the groups by name, the workflow's commit batches of one
    lane, or a rollback. ``retry_key``: what tells a retry of the state from a new call — its whole
    input, the execution's id included."""

    restore_id: str
    selection: Sequence[str] | CommitBatches | RollbackSelection
    allow_rewind: RewindScope
    retry_key: Mapping[str, Any]
    owner: str | None = None
    """The execution holding the target's lock; None: no lock is checked (a call outside the workflow)."""
    lock_ttl_s: int = 1200
    fence: Fence | None = None
    """The lane of the target's fence the run's AcquireLock took that this step writes under; None: the
    step takes the cluster's whole fence itself (a call outside the state machine)."""


def commit_step(
    step: CommitStep,
    settings: ApplySettings,
    dynamodb: DynamoDBClient,
    s3: S3Client,
    idempotency: Idempotency,
    secret_reader: Callable[[str], str] = read_secret,
) -> dict[str, Any]:
    """The step's output. A commit returns its first answer to a retry (``idempotency``); a rollback
    is not cached: it reads the target's offsets now, so running it again is safe, and an active group
    it left is rolled back by running it again once the group is empty."""
    runs = RunRecord(settings.table, dynamodb)
    mappings = MappingStore(settings.table, dynamodb)
    selection = step.selection
    if isinstance(selection, RollbackSelection):
        return _roll_back(step, selection, settings, dynamodb, secret_reader, mappings, runs)

    def commit() -> dict[str, Any]:
        with KafkaCluster(settings.target.connection(secret_reader)) as target:
            lease = RunLease.of(step, settings, dynamodb, target.cluster_id)
            lease.take()
            target.hold_fence(step.fence)
            runs.committed_to(step.restore_id, target.cluster_id)  # what a rollback checks its brokers by
            batches = selection.numbers if isinstance(selection, CommitBatches) else [selection]
            index = settings.restore_folder(step.restore_id, s3)
            header = runs.resolved(step.restore_id).get("offset_header")
            held = read_held_on_source(index) if index is not None else {}  # a migration's last look at the source
            result = CommitResult.merged(
                commit_groups(
                    step.restore_id, batch, target, mappings, allow_rewind=step.allow_rewind, index=index,
                    offset_header=header, before_write=lease.check, hold=held,
                )
                for batch in batches
            )  # fmt: skip
        return {**result.output(), **lease.after(result.committed)}

    return idempotency.once(commit, key=step.retry_key)


@dataclass
class RunLease:
    """The run's lock around one step's writes: renewed first (a batch whose execution no longer holds
    it writes nothing: ``LockLostError``), then each write sent only while the lease holds by the clock
    (``Lease``), and checked again after — a lock lost meanwhile fails the batch, naming what it wrote.
    Without an owner (a call outside the state machine) it checks nothing."""

    lock: TargetLock | None
    lease: Lease | None

    @classmethod
    def of(cls, step: CommitStep, settings: ApplySettings, dynamodb: DynamoDBClient, cluster_id: str) -> RunLease:
        """The lease of the lock of the cluster these brokers are (``cluster_id``, as they report it)."""
        if not step.owner:
            return cls(None, None)
        name = settings.target.name
        lock = TargetLock(settings.table, dynamodb, cluster_id, step.owner, ttl_s=step.lock_ttl_s, name=name)
        return cls(lock, Lease(step.lock_ttl_s))

    def take(self) -> None:
        if self.lock is not None and self.lease is not None:
            self.lease.renewed(self.lock.renew)

    def check(self) -> float | None:
        """Before each write: raises when the lease is too short; else the seconds the write may take."""
        if self.lock is not None and self.lease is not None:
            return self.lease.check(self.lock.label)
        return None

    def after(self, written: Sequence[str]) -> dict[str, str]:
        """Nothing when the lock is still the run's after its writes; otherwise LockLostError naming what
        the batch wrote (its entries are saved as they are on the target): the run then fails visibly —
        its error, its report and its notification say the lock was lost and what was written under it."""
        if self.lock is None:
            return {}
        try:
            self.lock.renew()
        except LockLostError as error:
            held = self.lock.holder()
            if held is not None and held[0] == f"{FENCE_PREFIX}{self.lock.owner}":
                return {}  # the execution was stopped and its lock fenced for this very Lambda: its writes are covered
            named = ", ".join(written[:20]) + (f" and {len(written) - 20} more" if len(written) > 20 else "")
            raise LockLostError(f"{error}; this batch wrote {len(written)} groups first: {named or 'none'}") from None
        return {}


def _roll_back(
    step: CommitStep,
    selection: RollbackSelection,
    settings: ApplySettings,
    dynamodb: DynamoDBClient,
    secret_reader: Callable[[str], str],
    mappings: MappingStore,
    runs: RunRecord,
) -> dict[str, Any]:
    """The run's previous offsets put back (``apply.table.rollback_run``); active groups are left and
    named, not waited for."""
    groups = NameFilter.parse(selection.groups_regex, selection.exclude_groups, "groups")
    options = ApplyOptions(wait_timeout_s=0, on_wait_timeout="commit_empty", **rewind_options(step.allow_rewind))
    with KafkaCluster(settings.target.connection(secret_reader)) as target:
        lease = RunLease.of(step, settings, dynamodb, target.cluster_id)
        lease.take()
        target.hold_fence(step.fence)
        _, cluster_id = runs.target_of(step.restore_id)
        _, report = rollback_run(
            step.restore_id, target, mappings, options, groups, cluster_id=cluster_id, before_write=lease.check
        )
    result = step_result(report)
    return {**result.output(), **lease.after(result.committed)}
