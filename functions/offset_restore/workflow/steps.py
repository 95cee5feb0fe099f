"""The steps of the Step Functions workflow that are not snapshot, translate or apply themselves:
validate the execution input (docs/design.md §5.3), prepare work items, summarize the mappings (the report is
workflow/report.py)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, ValidationInfo, field_validator

from offset_restore.apply.commit_index import COMMIT_BATCH_GROUPS, IndexBuilder
from offset_restore.apply.model import WAIT_TIMEOUT_S, RewindScope
from offset_restore.errors import BadInputError
from offset_restore.formats.plan import PlanSummary, SummaryTally
from offset_restore.kafka.fence import FENCE_LANES
from offset_restore.snapshot.filters import DEFAULT_EXCLUDE_GROUPS, NameFilter, compile_pattern
from offset_restore.snapshot.model import GroupSnapshot, SnapshotManifest, parse_time, validate_name
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.in_flight import InFlight
from offset_restore.stores.keys import restore_object
from offset_restore.stores.mappings import MappingStore, entry_key
from offset_restore.stores.runs import RunRecord
from offset_restore.stores.storage import BlobStore
from offset_restore.translate.exposure import History
from offset_restore.translate.options import PLAN_DEFAULTS, PlanSettings
from offset_restore.translate.run import recreated_since, refuse_unknown_scopes, snapshot_history
from offset_restore.translate.work_items import WorkItem, split_work
from offset_restore.validation import describe

__all__ = [
    "ApprovalSettings",
    "RunInput",
    "Summary",
    "gate",
    "prepare_work",
    "resolved_input",
    "summarize",
    "validate_input",
]

WORK_ITEM_GROUP_PARTITIONS = 2_000
_DEFAULT_PARTITION_HEADER = PLAN_DEFAULTS.partition_header


class WaitSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    timeout_seconds: int = Field(default=WAIT_TIMEOUT_S, ge=0, le=86_400)
    interval_seconds: int = Field(default=15, ge=1, le=3_600)


class ApprovalSettings(BaseModel):
    """The approval gate of a run (docs/aws.md): whether it waits for a person after its plan and before
    it writes, and how long (then it ends with nothing written)."""

    model_config = ConfigDict(extra="forbid")

    required: StrictBool = False
    timeout_seconds: int = Field(default=3_600, ge=1, le=7 * 86_400)


class RunInput(PlanSettings):
    """The execution input of docs/design.md §5.3 with every default filled in: the plan's settings
    (``PlanSettings``, as the CLI's ``plan`` has them) and the run's own."""

    model_config = ConfigDict(extra="forbid")

    restore_id: str
    snapshot: Literal["latest"] | dict[str, str] = "latest"
    source_cluster: str
    target_cluster: str
    groups: str = ".*"
    exclude_groups: str | None = DEFAULT_EXCLUDE_GROUPS
    topics: str | None = None
    mode: Literal["plan", "apply", "rollback", "migrate"] = "plan"
    """``rollback`` puts back the previous offsets the commits of the run ``restore_id`` saved;
    ``migrate`` (the source is up) waits until the groups stop on the source, takes the final snapshot,
    translates until every entry is exact and applies (migration/steps.py)."""
    wait: WaitSettings = Field(default_factory=WaitSettings)
    on_wait_timeout: Literal["fail", "commit_empty"] = "fail"
    remove_static_members: StrictBool = False
    """Remove the static members (``group.instance.id``) of each group the wait on the target sees active, each
    once and recorded, instead of waiting until the session timeout they joined with ends (as the CLI's
    ``--remove-static-members``): never implicit, as a static member may be a consumer that still runs."""
    allow_rewind: StrictBool | str = False
    """Move back groups already past the mapped offset on the target: every group (true), none (false), or
    the groups this regex matches whole (as the CLI's ``--allow-rewind GROUP_REGEX``) — a decision made per
    group, so one group's fix does not rewind the others."""
    trigger: dict[str, Any] | None = None
    """What started the run (an alarm, a drill schedule), as the EventBridge rule describes it."""
    approval: ApprovalSettings = Field(default_factory=ApprovalSettings)
    """The gate before the commit: set by the deployment's policy (``gate``), or asked for by the input."""
    pending_retries: int = Field(default=3, ge=0, le=100)
    pending_interval_seconds: int = Field(default=60, ge=1, le=3_600)

    @field_validator("restore_id")
    @classmethod
    def _safe_id(cls, value: str) -> str:
        return validate_name(value, "restore_id")

    @field_validator("snapshot")
    @classmethod
    def _snapshot_choice(cls, value: Any) -> Any:
        if isinstance(value, dict):
            if set(value) == {"id"}:
                validate_name(value["id"], "snapshot id")
            elif set(value) == {"as_of"}:
                parse_time(value["as_of"])
            else:
                raise ValueError('snapshot must be "latest", {"id": ...} or {"as_of": ISO-8601}')
        return value

    @field_validator("allow_rewind")
    @classmethod
    def _rewind_scope(cls, value: bool | str) -> bool | str:
        if isinstance(value, str):
            if value.strip().lower() in ("", "true", "false"):
                raise ValueError(
                    f"give true, false or a regex of the groups to rewind, not the string {value!r} (a regex "
                    "matching no group would rewind none)"
                )
            try:
                compile_pattern(value, "allow_rewind")
            except BadInputError as error:
                raise ValueError(str(error)) from None
        return value

    @field_validator("groups", "exclude_groups", "topics")
    @classmethod
    def _regex(cls, value: str | None, info: ValidationInfo) -> str | None:
        try:
            compile_pattern(value, str(info.field_name))
        except BadInputError as error:
            raise ValueError(str(error)) from None
        return value


def gate(run: RunInput, event: Mapping[str, Any], policy: str, timeout_s: int) -> RunInput:
    """The run with the deployment's approval policy applied: ``always`` gates every apply and migrate,
    ``alarm`` those the failover alarm started (its rule's ``trigger`` names the alarm), ``never`` none
    (an input may still ask for the gate). An input that turns off a gate the policy sets is refused."""
    writes = run.mode in ("apply", "migrate")
    alarm = bool(isinstance(run.trigger, dict) and run.trigger.get("alarm"))
    if not (writes and (policy == "always" or (policy == "alarm" and alarm))):
        return run
    asked = event.get("approval")
    if isinstance(asked, dict) and asked.get("required") is False:
        started = "alarm-started runs" if policy == "alarm" else "every apply and migrate"
        raise BadInputError(
            f"invalid execution input: approval.required false, but this deployment gates {started} (its "
            "approval setting): leave approval out, or change the setting"
        )
    timeout = run.approval.timeout_seconds if isinstance(asked, dict) and "timeout_seconds" in asked else timeout_s
    return run.model_copy(update={"approval": ApprovalSettings(required=True, timeout_seconds=timeout)})


def validate_input(event: Mapping[str, Any], defaults: Mapping[str, Any]) -> RunInput:
    """Fill defaults (configuration first, then the execution's name as restore_id) and validate."""
    values = {k: v for k, v in event.items() if k != "execution_name" and v is not None}
    _refuse_another_target(values, defaults)
    for key, value in defaults.items():
        values.setdefault(key, value)
    if values.get("mode") == "rollback":
        _rollback_input(event, values)
    if values.get("mode") == "migrate" and "snapshot" in event:
        raise BadInputError("invalid execution input: mode migrate takes its own final snapshot: leave out snapshot")
    if "restore_id" not in values and event.get("execution_name"):
        values["restore_id"] = event["execution_name"]
    try:
        return RunInput.model_validate(values)
    except ValidationError as error:
        raise BadInputError(f"invalid execution input: {describe(error, limit=10)}") from None


def _refuse_another_target(values: Mapping[str, Any], defaults: Mapping[str, Any]) -> None:
    """A deployment writes to its own target only (its functions' TARGET_* settings): an input naming
    another cluster would be run against this one under the other's name. Refused before the lock."""
    given, own = values.get("target_cluster"), defaults.get("target_cluster")
    if given is not None and own and given != own:
        raise BadInputError(
            f"invalid execution input: target_cluster {given!r} is not this deployment's target ({own!r}): this "
            f"workflow writes only to {own!r}; start the workflow of the deployment whose target is {given!r}, or "
            "leave target_cluster out"
        )


def _rollback_input(event: Mapping[str, Any], values: dict[str, Any]) -> None:
    """A rollback names the run it undoes (an execution's own name names no applied run), and covers
    every group that run wrote unless the input narrows it: the default exclusion of internal groups
    does not apply (a group the run wrote is rolled back, whatever its name)."""
    if not event.get("restore_id"):
        raise BadInputError("invalid execution input: mode rollback needs restore_id: the run whose commits to undo")
    if "exclude_groups" not in event:
        values["exclude_groups"] = None


def prepare_work(
    run: RunInput, snapshots: SnapshotRepository, store: BlobStore, runs: RunRecord | None = None
) -> dict[str, Any]:
    """Resolve the snapshot, claim the restore id for this input (``runs``), select the groups and
    write the work items; returns their keys."""
    if run.snapshot == "latest":
        key, manifest = snapshots.latest(run.source_cluster)
    elif "id" in run.snapshot:
        key, manifest = snapshots.by_id(run.snapshot["id"], run.source_cluster)
    else:
        key, manifest = snapshots.as_of(parse_time(run.snapshot["as_of"]), run.source_cluster)
    refuse_unknown_scopes(run, manifest)
    if runs is not None:
        runs.claim(run.restore_id, resolved_input(run, manifest.snapshot_id))
    group_filter = NameFilter.parse(run.groups, run.exclude_groups, "groups")
    topic_filter = NameFilter.parse(run.topics, None, "topics")
    history = snapshot_history(snapshots, manifest, group_filter)
    recreated = recreated_since(snapshots, manifest)
    counts = {"groups": 0, "group_partitions": 0}

    def selected() -> Iterator[GroupSnapshot]:
        for group in snapshots.groups(key, manifest):
            if not group_filter(group.group):
                continue
            kept = [p for p in group.partitions if topic_filter(p.topic)]
            if kept:
                counts["groups"] += 1
                counts["group_partitions"] += len(kept)
                yield group.model_copy(update={"partitions": kept})

    keys = []
    # Work items are written as they fill, a few at once: memory holds those in flight, not the snapshot.
    with InFlight() as puts:
        for number, batch in enumerate(split_work(selected(), WORK_ITEM_GROUP_PARTITIONS)):
            keys.append(restore_object(run.restore_id, f"work/item-{number:05d}.json"))
            item = _work_item(run, manifest, history, batch, recreated).model_dump_json().encode()
            puts.submit(store.put, keys[-1], item, "application/json")
    return {
        "snapshot_id": manifest.snapshot_id,
        "snapshot_created_at": manifest.created_at.isoformat(),
        "work_items": keys,
        **counts,
    }


def _work_item(
    run: RunInput,
    manifest: SnapshotManifest,
    history: History | None,
    batch: list[GroupSnapshot],
    recreated: dict[str, str],
) -> WorkItem:
    """One Translate work item: the run's plan settings and the snapshot's facts beside its groups."""
    return WorkItem(
        **run.plan_settings().model_dump(),
        restore_id=run.restore_id,
        snapshot_id=manifest.snapshot_id,
        snapshot_completed_at=manifest.completed_at,
        snapshot_at=manifest.positions_at,
        history_at=history.at if history else None,
        history={g.group: dict(history.offsets[g.group]) for g in batch if g.group in history.offsets}
        if history
        else {},
        source_cluster=run.source_cluster,
        source_partitions=manifest.topic_partitions,
        source_recreated=recreated,
        groups=batch,
        until_exact=run.mode == "migrate",
        groups_stopped=manifest.groups_stopped,
    )


def resolved_input(run: RunInput, snapshot_id: str) -> dict[str, Any]:
    """What makes a restore this restore: a later run of the same id must resolve to the same."""
    return {
        "snapshot_id": snapshot_id,
        "source_cluster": run.source_cluster,
        "target_cluster": run.target_cluster,
        "groups": run.groups,
        "exclude_groups": run.exclude_groups,
        "topics": run.topics,
        "topic_map": dict(sorted(run.topic_map.items())),
        "strategies": list(run.strategies),
        "offset_header": run.offset_header,
        "order_check": run.order_check,
        "timestamp_margin_ms": run.timestamp_margin_ms,
        # Only when set: a restore first run before the option existed resolves as it did then.
        **({"partition_header": run.partition_header} if run.partition_header != _DEFAULT_PARTITION_HEADER else {}),
    }


class CommitLane(BaseModel):
    lane: int
    batches: list[int]


def commit_lanes(batches: int) -> list[CommitLane]:
    """Batch ``b`` in lane ``b % FENCE_LANES``: one transactional id has one transaction open at a time,
    so no two steps of a run write under one lane."""
    lanes = min(batches, FENCE_LANES)
    return [CommitLane(lane=k, batches=list(range(k, batches, FENCE_LANES))) for k in range(lanes)]


class Summary(BaseModel):
    summary: PlanSummary
    pending: int
    """The entries the workflow waits for: pending ones, and in a migration every entry not exact."""
    commit_lanes: list[CommitLane]
    """The commit batches (``COMMIT_BATCH_GROUPS`` groups each, in name order) by the lane of the fence
    that writes them: the Commit Map runs one step per lane, at most ``FENCE_LANES`` at once."""
    retries_left: int
    """How many more times the workflow may wait for a running restore to reach pending entries."""


def summarize(
    restore_id: str,
    mappings: MappingStore,
    retries_left: int,
    index: BlobStore | None = None,
    allow_rewind: RewindScope = False,
    until_exact: bool = False,
) -> Summary:
    """Count the mappings; with ``index``, also write the commit index the apply steps read. One pass
    over the mappings, none of them held. ``until_exact`` (a migration): entries mapped without proof
    wait as pending ones do — the target has not yet brought the records at their positions."""
    tally, builder = SummaryTally(), IndexBuilder(allow_rewind, exact_only=until_exact)
    for entry in mappings.iter_entries(restore_id):
        tally.add(entry)
        builder.add(entry, entry_key(restore_id, entry)["sk"]["S"] if index is not None else None)
    summary = tally.result()
    if index is not None:
        batches = builder.write(index)
    else:
        batches = (len(builder.candidates()) + COMMIT_BATCH_GROUPS - 1) // COMMIT_BATCH_GROUPS
    waiting = summary.awaiting_catch_up if until_exact else summary.pending
    return Summary(
        summary=summary,
        pending=waiting,
        commit_lanes=commit_lanes(batches),
        retries_left=max(0, retries_left - (1 if waiting else 0)),
    )
