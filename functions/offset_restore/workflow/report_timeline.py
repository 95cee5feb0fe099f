"""The run's timeline for its report (pure): from the execution's history, the phases it went through
and how long each took — above all how long it waited, and for whom — so that "the run took 14
minutes" reads as "12 of them waiting for billing-service to stop".

The history is Step Functions' own (GetExecutionHistory, read by the Report step); consecutive states
of one phase are merged, and the CheckEmpty and SourceStopped polls say which groups were still active (on
the target, or a migration's on the source).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["PHASES", "Phase", "phases_of", "read_timeline"]

PHASES = {
    "ValidateInput": "start",
    "AcquireLock": "start",
    "RunChoice": "start",
    "SourceStopped": "waiting for groups to stop on the source",
    "SourceChoice": "waiting for groups to stop on the source",
    "WaitForSource": "waiting for groups to stop on the source",
    "FinalSnapshot": "final snapshot",
    "UseFinalSnapshot": "final snapshot",
    "NotCaughtUp": "translate",
    "Prepare": "translate",
    "Translate": "translate",
    "TranslateItem": "translate",
    "Summarize": "translate",
    "PendingChoice": "translate",
    "WaitForRestore": "waiting for the restore",
    "ModeChoice": "translate",
    "GateChoice": "translate",
    "ReportForApproval": "waiting for approval",
    "AwaitApproval": "waiting for approval",
    "CheckEmpty": "waiting for groups",
    "EmptyChoice": "waiting for groups",
    "WaitForEmpty": "waiting for groups",
    "BeforeCommit": "commit",
    "SourceRecheck": "commit",
    "Commit": "commit",
    "CommitBatch": "commit",
    "Rollback": "rollback",
    "ReportPlan": "report",
    "ReportApply": "report",
    "ReportRollback": "report",
    "ReportNotApproved": "report",
}
"""Each state's phase (a state not named here is its own phase)."""
NAMED = 5
ACTIVE = {"CheckEmpty": ("check", "active"), "SourceStopped": ("source_check", "still_active")}
"""The polls whose output names the groups still active: where in the state it does."""


@dataclass
class Phase:
    name: str
    start_s: float
    """Seconds from the run's start."""
    seconds: float = 0.0
    waited_for: list[str] = field(default_factory=list)
    """Groups still active at the polls of a wait (the first few)."""
    static_removed: list[str] = field(default_factory=list)
    """Static members the wait removed (``remove_static_members``), as ``group: group.instance.id``."""

    def label(self) -> str:
        said = f"{self.name} {self.seconds:.1f} s"
        said += f" ({', '.join(self.waited_for)})" if self.waited_for else ""
        return said + (f"; static members removed: {', '.join(self.static_removed)}" if self.static_removed else "")


def phases_of(events: Iterable[Mapping[str, Any]], until: datetime | None = None) -> list[Phase]:
    """The phases in order; a phase lasts until the next one starts (the last one until ``until``,
    or its own start)."""
    phases: list[Phase] = []
    started: datetime | None = None
    for event in events:
        at = _time(event.get("timestamp"))
        if at is None:
            continue
        started = started or at
        entered = event.get("stateEnteredEventDetails")
        if entered:
            name = PHASES.get(entered.get("name", ""), entered.get("name", "?"))
            if not phases or phases[-1].name != name:
                if phases:
                    phases[-1].seconds = round((at - started).total_seconds() - phases[-1].start_s, 3)
                phases.append(Phase(name, round((at - started).total_seconds(), 3)))
        exited = event.get("stateExitedEventDetails")
        if exited and exited.get("name") in ACTIVE and phases:
            _note_active(phases[-1], exited.get("output"), *ACTIVE[exited["name"]])
    if phases and started is not None and until is not None:
        phases[-1].seconds = round(max(0.0, (until - started).total_seconds() - phases[-1].start_s), 3)
    return phases


def _note_active(phase: Phase, output: Any, result: str, names: str) -> None:
    try:
        polled = json.loads(output).get(result, {})
        active, removed = polled.get(names, []), polled.get("static_removed", [])
    except (TypeError, ValueError, AttributeError):
        return
    for group in active:
        if group not in phase.waited_for and len(phase.waited_for) < NAMED:
            phase.waited_for.append(str(group))
    phase.static_removed = [str(r) for r in removed] if isinstance(removed, list) else phase.static_removed


def _time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return None
    return None


def read_timeline(sfn: Any, execution_arn: str) -> list[Phase]:
    """The execution's phases until now, read with ``sfn`` (a Step Functions client); none when the
    history cannot be read — a report without its timeline beats no report."""
    from datetime import UTC

    def events() -> Iterable[Mapping[str, Any]]:  # page by page: a long wait has thousands of events
        pages = sfn.get_paginator("get_execution_history").paginate(executionArn=execution_arn)
        for page in pages:
            yield from page["events"]

    try:
        return phases_of(events(), until=datetime.now(UTC))
    except Exception:
        return []
