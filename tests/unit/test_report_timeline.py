"""The report's timeline: phases from an execution's history, how long each took, and whom a wait
waited for (from the CheckEmpty polls' outputs); drawn as an SVG row per phase."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from offset_restore.workflow.report_charts import timeline_chart
from offset_restore.workflow.report_timeline import phases_of

T0 = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)


def entered(name: str, second: float) -> dict[str, object]:
    return {"timestamp": T0 + timedelta(seconds=second), "stateEnteredEventDetails": {"name": name}}


def exited(name: str, second: float, output: dict[str, object]) -> dict[str, object]:
    return {
        "timestamp": T0 + timedelta(seconds=second),
        "stateExitedEventDetails": {"name": name, "output": json.dumps(output)},
    }


def check_exited(second: float, active: list[str]) -> dict[str, object]:
    return exited("CheckEmpty", second, {"check": {"active": active}})


HISTORY = [
    entered("ValidateInput", 0),
    entered("AcquireLock", 0.2),
    entered("RunChoice", 0.3),
    entered("Prepare", 0.4),
    entered("Translate", 1.0),
    entered("Summarize", 3.0),
    entered("PendingChoice", 3.1),
    entered("ModeChoice", 3.2),
    entered("CheckEmpty", 3.3),
    check_exited(3.5, ["billing"]),
    entered("EmptyChoice", 3.5),
    entered("WaitForEmpty", 3.6),
    entered("CheckEmpty", 63.6),
    check_exited(63.8, ["billing", "ledger"]),
    entered("EmptyChoice", 63.8),
    entered("WaitForEmpty", 63.9),
    entered("CheckEmpty", 123.9),
    check_exited(124.0, []),
    entered("EmptyChoice", 124.0),
    entered("Commit", 124.1),
    entered("ReportApply", 126.1),
]


def test_phases_merge_states_and_say_whom_a_wait_waited_for() -> None:
    phases = phases_of(HISTORY, until=T0 + timedelta(seconds=127.1))
    assert [(p.name, p.start_s, p.seconds) for p in phases] == [
        ("start", 0.0, 0.4),
        ("translate", 0.4, 2.9),  # ModeChoice decides right after the translation
        ("waiting for groups", 3.3, 120.8),
        ("commit", 124.1, 2.0),
        ("report", 126.1, 1.0),
    ]
    assert phases[2].waited_for == ["billing", "ledger"]
    assert phases[2].label() == "waiting for groups 120.8 s (billing, ledger)"


def test_a_history_without_times_gives_no_phases_and_no_chart() -> None:
    assert phases_of([{"stateEnteredEventDetails": {"name": "ValidateInput"}}]) == []
    assert timeline_chart("t", "The run", []) == ""


def test_the_chart_has_a_row_per_phase() -> None:
    svg = timeline_chart("t", "The run", phases_of(HISTORY, until=T0 + timedelta(seconds=127.1)))
    assert svg.count("<rect class='phase'") == 5 and "(127.1 s)" in svg and "(billing, ledger)" in svg


def test_a_migration_says_how_long_it_waited_for_the_source_and_for_whom() -> None:
    def source_exited(second: float, active: list[str]) -> dict[str, object]:
        return exited("SourceStopped", second, {"source_check": {"still_active": active, "all_empty": not active}})

    history = [
        entered("ValidateInput", 0),
        entered("RunChoice", 0.2),
        entered("SourceStopped", 0.3),
        source_exited(0.5, ["payments"]),
        entered("SourceChoice", 0.5),
        entered("WaitForSource", 0.6),
        entered("SourceStopped", 15.6),
        source_exited(15.8, []),
        entered("FinalSnapshot", 15.9),
        entered("UseFinalSnapshot", 17.0),
        entered("Prepare", 17.1),
    ]
    phases = phases_of(history, until=T0 + timedelta(seconds=18))
    assert [(p.name, p.seconds) for p in phases] == [
        ("start", 0.3),
        ("waiting for groups to stop on the source", 15.6),
        ("final snapshot", 1.2),
        ("translate", 0.9),
    ]
    assert phases[1].waited_for == ["payments"]


def test_the_static_members_a_wait_removed_are_in_its_phase() -> None:
    removed = ["billing: pod-1", "billing: pod-2"]
    history = [
        entered("CheckEmpty", 0),
        exited("CheckEmpty", 0.2, {"check": {"active": ["billing"], "static_removed": removed}}),
        entered("WaitForEmpty", 0.3),
        entered("CheckEmpty", 1.3),
        exited("CheckEmpty", 1.4, {"check": {"active": [], "static_removed": removed}}),
        entered("Commit", 1.5),
    ]
    wait = phases_of(history, until=T0 + timedelta(seconds=2))[0]
    assert wait.static_removed == removed
    assert wait.label() == "waiting for groups 1.5 s (billing); static members removed: billing: pod-1, billing: pod-2"
