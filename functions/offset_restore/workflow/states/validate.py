"""The ValidateInput state: the execution input (docs/design.md §5.3) with every default filled in and
checked, and the deployment's approval policy applied (``gate``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, ValidationInfo, field_validator

from offset_restore.apply.model import WAIT_TIMEOUT_S
from offset_restore.errors import BadInputError
from offset_restore.snapshot.filters import DEFAULT_EXCLUDE_GROUPS, compile_pattern
from offset_restore.snapshot.model import parse_time, validate_name
from offset_restore.translate.options import PlanSettings
from offset_restore.validation import describe
from offset_restore.workflow.settings import ValidateSettings

__all__ = ["ApprovalSettings", "RunInput", "WaitSettings", "gate", "validate_input", "validated_run"]


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
    translates until every entry is exact and applies (``workflow/states/source.py``, ``migration/final.py``)."""
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


def validated_run(event: Mapping[str, Any], settings: ValidateSettings, now: float) -> dict[str, Any]:
    """The ValidateInput state: the state's event (``input``, ``execution_name``) validated against the
    deployment's defaults, its approval policy applied, and the loop counters the state machine carries from
    state to state beside the run (JSONPath has no variables)."""
    raw = event.get("input")
    if not isinstance(raw, dict):
        raise BadInputError("invalid execution input: it must be a JSON object")
    name = event.get("execution_name")
    run = validate_input({**raw, "execution_name": name if isinstance(name, str) else None}, settings.defaults())
    run = gate(run, raw, settings.approval, settings.approval_timeout_s)
    return {
        **run.model_dump(mode="json"),
        "summary": {"retries_left": run.pending_retries},
        "check": {"started_at": None, "static_removed": []},
        "source_check": {"started_at": None},
        "started_at": now,
    }
