"""The snapshot's alarms and dashboard in the synthesized template (infra/monitoring.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App
from aws_cdk.assertions import Template

from app import build_app
from tests.infra.test_stack import template


def alarms(t: Template) -> dict[str, dict[str, Any]]:
    """Alarms by logical id prefix (the part CDK does not hash)."""
    found = t.find_resources("AWS::CloudWatch::Alarm")
    return {logical[:-8]: resource["Properties"] for logical, resource in found.items()}


def context_with(**changes: Any) -> dict[str, Any]:
    context = json.loads((Path(__file__).parents[2] / "cdk.json").read_text())["context"]
    dev = {**context["environments"]["dev"], **changes}
    return {**context, "environments": {"dev": dev}, "skipBundling": "true"}


def only_dev(context: dict[str, Any]) -> Template:
    return template(build_app(context), "dev")


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_every_alarm_notifies_the_topic(app: App, env: str) -> None:
    found = alarms(template(app, env))
    assert set(found) == {
        "RunFailedAlarm",
        "RunTimedOutAlarm",
        "ReportFailedAlarm",
        "LockReleaseFailedAlarm",
        "SnapshotErrorsAlarm",
        "SnapshotAgeAlarm",
        "SnapshotZeroGroupsAlarm",
    }
    for props in found.values():
        assert len(props["AlarmActions"]) == 1 and "Ref" in props["AlarmActions"][0]


def test_snapshot_errors_alarm_on_the_snapshot_function(app: App) -> None:
    props = alarms(template(app, "prod"))["SnapshotErrorsAlarm"]
    assert (props["MetricName"], props["Namespace"], props["Statistic"]) == ("Errors", "AWS/Lambda", "Sum")
    assert (props["Threshold"], props["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")
    assert props["TreatMissingData"] == "notBreaching"
    function = props["Dimensions"][0]["Value"]["Ref"]
    assert "Snapshot" in function


def test_no_snapshot_within_the_rpo_alarms_and_missing_data_breaches(app: App) -> None:
    props = alarms(template(app, "prod"))["SnapshotAgeAlarm"]
    assert (props["Namespace"], props["MetricName"], props["Statistic"]) == ("OffsetRestore", "SnapshotsTaken", "Sum")
    assert props["Dimensions"] == [{"Name": "service", "Value": "offset-restore"}]
    assert props["Period"] == 30 * 60  # prod's RPO (snapshotMaxAgeMinutes 30: two of its 15-minute snapshots)
    assert (props["Threshold"], props["ComparisonOperator"]) == (1, "LessThanThreshold")
    assert (props["EvaluationPeriods"], props["TreatMissingData"]) == (1, "breaching")


def test_the_rpo_window_follows_the_configuration_and_is_capped_at_a_day() -> None:
    assert alarms(only_dev(context_with(snapshotMaxAgeMinutes=45)))["SnapshotAgeAlarm"]["Period"] == 45 * 60
    capped = alarms(only_dev(context_with(snapshotMaxAgeMinutes=3 * 24 * 60)))["SnapshotAgeAlarm"]
    assert capped["Period"] == 24 * 60 * 60
    assert "capped at one day" in capped["AlarmDescription"]


def test_a_snapshot_of_zero_groups_alarms(app: App) -> None:
    props = alarms(template(app, "dev"))["SnapshotZeroGroupsAlarm"]
    assert (props["MetricName"], props["Statistic"]) == ("SnapshotGroups", "Minimum")
    assert (props["Threshold"], props["ComparisonOperator"]) == (0, "LessThanOrEqualToThreshold")
    assert props["TreatMissingData"] == "ignore"  # the state of the latest snapshot holds until the next


def test_no_schedule_no_snapshot_alarms() -> None:
    found = alarms(only_dev(context_with(snapshotSchedule="")))
    assert set(found) == {"RunFailedAlarm", "RunTimedOutAlarm", "ReportFailedAlarm", "LockReleaseFailedAlarm"}


def test_the_dashboard_shows_snapshots_top_groups_and_alarm_states(app: App) -> None:
    dashboards = template(app, "prod").find_resources("AWS::CloudWatch::Dashboard")
    (dashboard,) = dashboards.values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for needle in (
        "SnapshotGroups",
        "SnapshotGroupPartitions",
        "SnapshotTotalLag",
        "SnapshotSeconds",
        "SnapshotAgeSeconds",
        "GroupLag",
        "Snapshot: errors",
        "SnapshotAgeAlarm",
        "SnapshotZeroGroupsAlarm",
        "SnapshotErrorsAlarm",
        "alarm",
    ):
        assert needle in body, needle
    assert "SORT(SEARCH(" in body


@pytest.mark.parametrize(
    ("schedule", "window_minutes"),
    [("rate(15 minutes)", 30), ("rate(1 hour)", 120), ("rate(1 day)", 1440), ("cron(0/15 * * * ? *)", 30),
     ("cron(*/5 * * * ? *)", 10), ("cron(0 */2 * * ? *)", 240), ("cron(0,20 * * * ? *)", 80)],
)  # fmt: skip
def test_the_rpo_follows_the_schedule_by_default_two_intervals(schedule: str, window_minutes: int) -> None:
    """Snapshots every 15 minutes page after two missed, not after eight (the old default of 2 hours)."""
    context = context_with(snapshotSchedule=schedule)
    context["environments"]["dev"].pop("snapshotMaxAgeMinutes", None)
    assert alarms(only_dev(context))["SnapshotAgeAlarm"]["Period"] == window_minutes * 60


def test_a_schedule_of_unknown_interval_needs_the_rpo_said() -> None:
    context = context_with(snapshotSchedule="cron(0 6 ? * MON *)")
    with pytest.raises(SystemExit, match=r"its interval is not known here; set snapshotMaxAgeMinutes"):
        only_dev(context)
    assert alarms(only_dev(context_with(snapshotSchedule="cron(0 6 ? * MON *)", snapshotMaxAgeMinutes=10_080)))


@pytest.mark.parametrize(("changes", "seconds"), [({}, 12 * 3600), ({"executionTimeoutMinutes": 90}, 90 * 60)])
def test_the_deployed_definition_times_out_as_configured(changes: dict[str, Any], seconds: int) -> None:
    """The definition the stack deploys (its staged asset) carries TimeoutSeconds — CDK's ``timeout``
    does not reach a definition read from a file: without it the timed-out alarm and the lock's release on
    TIMED_OUT never happen. Its function substitutions stay DefinitionSubstitutions."""
    assembly = build_app(context_with(**changes)).synth()
    (stack,) = assembly.stacks
    (machine,) = [r for r in stack.template["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    staged = Path(assembly.directory) / f"asset.{machine['Properties']['DefinitionS3Location']['Key']}"
    document = json.loads(staged.read_text())
    assert document["TimeoutSeconds"] == seconds and "DefinitionSubstitutions" in machine["Properties"]
    assert document["States"]["Commit"]["ItemProcessor"]["States"]["CommitBatch"]["Resource"] == "${CommitFunctionArn}"


@pytest.mark.parametrize(
    ("alarm", "metric"), [("ReportFailedAlarm", "ReportFailed"), ("LockReleaseFailedAlarm", "LockReleaseFailed")]
)
def test_a_report_not_written_and_a_lock_not_released_page(app: App, alarm: str, metric: str) -> None:
    """The counts the Report and Lock functions emit when they fail (a run that still ends, its work done,
    or a lock that may outlive its run) each page: not only the run's own notification, which may be the
    thing that failed."""
    props = alarms(template(app, "prod"))[alarm]
    assert (props["Namespace"], props["MetricName"], props["Statistic"]) == ("OffsetRestore", metric, "Sum")
    assert (props["Threshold"], props["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")
