"""The typed inputs of the apply-step handlers; a bad input names the step and the field."""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from aws_lambda_powertools.utilities import parser
from offset_restore.apply.locks import workflow_lock_ttl
from offset_restore.errors import BadInputError
from offset_restore.kafka.fence import FENCE_LANES, Fence
from offset_restore.validation import describe
from offset_restore.workflow.states.check_empty import EmptyPoll
from offset_restore.workflow.states.commit import CommitBatches, CommitStep, RollbackSelection
from offset_restore.workflow.states.lock import LockStep
from offset_restore.workflow.states.report import ReportStep
from offset_restore.workflow.states.source import SourceLook
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, model_validator

__all__ = [
    "ApplyRequest",
    "BatchRequest",
    "CheckRequest",
    "GateRequest",
    "LockRequest",
    "PrepareRequest",
    "ReportRequest",
    "SourceRequest",
    "SummarizeRequest",
    "parse",
]

Model = TypeVar("Model", bound=BaseModel)


class ApplyRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    restore_id: str = Field(min_length=1)


class FenceLane(BaseModel):
    """One transactional id of the target's fence, as the run's AcquireLock state took it."""

    model_config = ConfigDict(extra="forbid")

    transactional_id: str = Field(min_length=1)
    producer_id: int = Field(ge=0)
    epoch: int = Field(ge=0)


class BatchRequest(ApplyRequest):
    """Either the groups themselves, or the numbers of the workflow's commit batches one lane of the
    Commit Map writes; or, with ``rollback``, the run's groups that match ``groups_regex`` (and not
    ``exclude_groups``)."""

    groups: list[str] | None = Field(default=None, min_length=1)
    batches: list[int] | None = Field(default=None, min_length=1)
    lane: int = Field(default=0, ge=0, lt=FENCE_LANES)
    """The lane of the fence these batches write under: no two steps of a run write under one at once."""
    fence: list[FenceLane] | None = Field(default=None, min_length=1)
    """The fence the run's AcquireLock took (every lane); None: the step takes the cluster's fence itself
    (a call outside the state machine), which fences any run writing meanwhile."""
    allow_rewind: StrictBool | str = False
    """Every group (true), none, or the groups a regex matches (the execution input's ``allow_rewind``)."""
    execution: str | None = None
    """The execution's id: a retry within one execution is recognised, a new execution is not."""
    owner: str | None = None
    """The execution holding the target's lock (the state machine gives it): the batch renews the lock
    before it writes, and writes only while the lease holds by the clock. None: no lock (a direct call)."""
    interval_seconds: float = Field(default=15, ge=0)
    """The run's wait interval: the lock's lease is ``workflow_lock_ttl`` of it, as CheckEmpty renews it."""
    rollback: bool = False
    groups_regex: str | None = None
    exclude_groups: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_batch_of_an_earlier_version(cls, data: Any) -> Any:
        """An execution started before an upgrade runs the state machine it started with, and calls this
        code with one ``batch`` number and no fence: that batch, and the step takes the fence itself."""
        if isinstance(data, dict) and "batch" in data and "batches" not in data and isinstance(data["batch"], int):
            return {**data, "batches": [data["batch"]]}
        return data

    @model_validator(mode="after")
    def _one_selection(self) -> BatchRequest:
        if self.rollback:
            if self.groups is not None or self.batches is not None:
                raise ValueError("a rollback selects groups with groups_regex, not groups or batches")
        elif (self.groups is None) == (self.batches is None):
            raise ValueError("give either groups or batches")
        if self.fence is not None and self.lane >= len(self.fence):
            raise ValueError(f"lane {self.lane} is not in the fence's {len(self.fence)} lanes")
        return self

    def step(self) -> CommitStep:
        """The library's view of this input (``workflow.states.commit``); the whole input, the execution's
        id included, is what tells a retry of the state from a new call."""
        selection: list[str] | CommitBatches | RollbackSelection
        if self.rollback:
            selection = RollbackSelection(self.groups_regex, self.exclude_groups)
        else:
            selection = self.groups if self.groups is not None else CommitBatches(tuple(self.batches or ()))
        lane = self.fence[self.lane] if self.fence is not None else None
        return CommitStep(
            self.restore_id,
            selection,
            self.allow_rewind,
            retry_key=self.model_dump(mode="json"),
            owner=self.owner,
            lock_ttl_s=workflow_lock_ttl(self.interval_seconds),
            fence=Fence(**lane.model_dump()) if lane is not None else None,
        )


class CheckRequest(ApplyRequest):
    started_at: float | None = None
    timeout_seconds: float = Field(default=900, ge=0)
    on_wait_timeout: str = "fail"
    remove_static_members: bool = False
    static_removed: list[str] = Field(default_factory=list, max_length=10_000)
    """The static members earlier polls removed (``group: group.instance.id``): each is removed once."""
    owner: str | None = None
    """The execution holding the target's lock: each poll renews it (a run may wait for hours)."""
    interval_seconds: float = Field(default=15, ge=0)

    def poll(self) -> EmptyPoll:
        """The library's view of this input (``workflow.states.check_empty``)."""
        return EmptyPoll(
            self.restore_id,
            started_at=self.started_at,
            timeout_s=self.timeout_seconds,
            fail_on_timeout=self.on_wait_timeout == "fail",
            remove_static=self.remove_static_members,
            static_removed=self.static_removed,
            owner=self.owner,
            interval_seconds=self.interval_seconds,
        )


class SourceRequest(ApplyRequest):
    """A migration's step on the source: ``check_empty`` (one look), ``snapshot`` (the final one) or
    ``recheck`` (the last look, right before the commit)."""

    action: Literal["check_empty", "snapshot", "recheck"]
    groups: str = ".*"
    exclude_groups: str | None = None
    topics: str | None = None
    started_at: float | None = None
    timeout_seconds: float = Field(default=900, ge=0)
    on_wait_timeout: str = "fail"
    owner: str | None = None
    interval_seconds: float = Field(default=15, ge=0)

    def look(self) -> SourceLook:
        """The library's view of this input (``workflow.states.source``)."""
        return SourceLook(
            self.restore_id,
            groups=self.groups,
            exclude_groups=self.exclude_groups,
            topics=self.topics,
            started_at=self.started_at,
            timeout_s=self.timeout_seconds,
            fail_on_timeout=self.on_wait_timeout == "fail",
            owner=self.owner,
            interval_seconds=self.interval_seconds,
        )


class LockRequest(ApplyRequest):
    action: Literal["acquire", "release"]
    target_cluster: str = Field(min_length=1)
    owner: str | None = None
    """The execution (its ARN): two executions of one restore id are two writers. Default: restore_id."""
    interval_seconds: float = Field(default=15, ge=0)
    ended: bool = False
    """A release for an execution that ended without reaching its ReleaseLock (the stop rule's): fenced
    instead when it was writing (``apply.locks.release_ended``)."""

    def step(self) -> LockStep:
        """The library's view of this input (``workflow.states.lock``); the owner defaults to the restore id."""
        return LockStep(self.restore_id, self.owner or self.restore_id, self.interval_seconds, self.ended)


class SummarizeRequest(ApplyRequest):
    retries_left: int = Field(default=0, ge=0)
    allow_rewind: StrictBool | str = False
    """Whether the run rewinds groups ahead on the target: their ahead entries are then commit work."""
    mode: str = "plan"
    """The run's mode: a migration waits until every entry is exact."""
    work_items: list[str] | None = None
    """Prepare's work item keys: every group-partition they hold must have an entry. None: not checked
    (an execution started by a state machine before it passed them)."""


class PrepareRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    run: dict[str, Any]
    """The validated execution input, as the Validate state returned it."""


class ReportRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    run: dict[str, Any]
    outcome: str
    error: dict[str, Any] | None = None
    execution: str | None = None
    """The execution's ARN: its history gives the report's timeline."""
    notify: bool = True
    """False: the report only (the plan's, before the approval gate, whose question is the notification)."""

    def step(self) -> ReportStep:
        """The library's view of this input (``workflow.states.report``)."""
        return ReportStep(self.run, self.outcome, self.error, self.execution, self.notify)


class GateRequest(BaseModel):
    """The approval gate's task (a ``waitForTaskToken`` invocation): the run's state and its token."""

    model_config = ConfigDict(extra="ignore")

    run: dict[str, Any]
    token: str = Field(min_length=1)
    execution: str = Field(min_length=1)


def parse(model: type[Model], event: dict[str, Any], step: str) -> Model:
    """powertools Parser on the step's model; a bad event becomes a ``BadInputError`` naming the step."""
    try:
        return parser.parse(event=event, model=model)
    except ValidationError as error:
        raise BadInputError(f"invalid {step} request: {describe(error)}") from None
