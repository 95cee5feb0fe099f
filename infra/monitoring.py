"""Monitoring: alarms on failed and timed-out runs and on the scheduled snapshot (to the notification
topic), and a dashboard of runs, groups, snapshots and function errors.

The scheduled snapshot runs outside the state machine (an EventBridge rule invokes its function), so
the run alarms never see it: its errors, its silence and an empty result each have their own alarm.
A snapshot that stopped is a recovery point that grows older unnoticed until the failover needs it.
"""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from offset_restore.workflow.environment import LOCK_RELEASE_FAILED, NAMESPACE, REPORT_FAILED, SERVICE

from infra.config import EnvironmentConfig

__all__ = ["MAX_ALARM_WINDOW_MINUTES", "add_monitoring", "snapshot_window_minutes"]
"""The namespace and ``service`` dimension the functions' powertools Metrics emit under
(functions/offset_restore/workflow/observability.py)."""

MAX_ALARM_WINDOW_MINUTES = 24 * 60
"""CloudWatch evaluates at most one day of data per alarm (period x evaluation periods)."""

TOP_GROUPS_SHOWN = 20
"""Groups drawn on the "top groups by lag" graph (the snapshot emits per-group lag for as many)."""


def snapshot_window_minutes(config: EnvironmentConfig) -> int:
    """The period of the "no recent snapshot" alarm: the recovery point objective, capped at one day
    (an RPO longer than a day is watched as "no snapshot within a day")."""
    return min(config.rpo_minutes(), MAX_ALARM_WINDOW_MINUTES)


def add_monitoring(
    stack: Stack,
    env_name: str,
    config: EnvironmentConfig,
    machine: sfn.StateMachine,
    topic: sns.ITopic,
    functions: Iterable[lambda_.Function],
    snapshot: lambda_.Function,
) -> None:
    """Alarms and the dashboard on the stack's scope. Snapshot alarms only when the environment
    schedules snapshots: on-demand snapshots have no rhythm to miss."""
    action = cloudwatch_actions.SnsAction(topic)
    failed = machine.metric_failed(period=Duration.minutes(5))
    timed_out = machine.metric_timed_out(period=Duration.minutes(5))
    alarms = [
        _alarm(stack, "RunFailedAlarm", failed, action, description="A restore run failed."),
        _alarm(stack, "RunTimedOutAlarm", timed_out, action, description="A restore run timed out."),
        _alarm(
            stack,
            "ReportFailedAlarm",
            _metric(REPORT_FAILED),
            action,
            description="A run's report or its notification could not be written: the run ended with its work done, "
            "but nothing else says so; offset-restore status --restore-id ID shows its mappings.",
        ),
        _alarm(
            stack,
            "LockReleaseFailedAlarm",
            _metric(LOCK_RELEASE_FAILED),
            action,
            description="A run's lock could not be released: the next run on the target waits, then fails "
            "LockHeldError, until it expires or offset-restore unlock removes it.",
        ),
    ]
    if config.snapshot_schedule:
        alarms += _snapshot_alarms(stack, config, snapshot, action)
    dashboard = cloudwatch.Dashboard(stack, "Dashboard", dashboard_name=f"offset-restore-{env_name}")
    dashboard.add_widgets(
        cloudwatch.GraphWidget(title="Runs", left=[machine.metric_succeeded(), failed, timed_out]),
        cloudwatch.GraphWidget(
            title="Groups",
            left=[_metric(name) for name in ("GroupsCommitted", "GroupsSkipped", "EntriesPending", "EntriesUnmapped")],
        ),
        cloudwatch.GraphWidget(title="Lambda errors", left=[fn.metric_errors() for fn in functions]),
    )
    dashboard.add_widgets(*_snapshot_widgets(snapshot))
    dashboard.add_widgets(cloudwatch.AlarmStatusWidget(title="Alarms", alarms=alarms, width=24))


def _metric(name: str, statistic: str = "Sum", period: Duration | None = None) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name=name,
        dimensions_map={"service": SERVICE},
        statistic=statistic,
        period=period or Duration.minutes(5),
    )


def _alarm(
    stack: Stack,
    construct_id: str,
    metric: cloudwatch.IMetric,
    action: cloudwatch.IAlarmAction,
    *,
    description: str,
    threshold: float = 1,
    comparison: cloudwatch.ComparisonOperator = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    missing: cloudwatch.TreatMissingData = cloudwatch.TreatMissingData.NOT_BREACHING,
) -> cloudwatch.Alarm:
    alarm = cloudwatch.Alarm(
        stack,
        construct_id,
        metric=metric,
        threshold=threshold,
        evaluation_periods=1,
        comparison_operator=comparison,
        treat_missing_data=missing,
        alarm_description=description,
    )
    alarm.add_alarm_action(action)
    return alarm


def _snapshot_alarms(
    stack: Stack, config: EnvironmentConfig, snapshot: lambda_.Function, action: cloudwatch.IAlarmAction
) -> list[cloudwatch.Alarm]:
    """Errors of the snapshot function; no successful snapshot within the RPO; a snapshot of no group."""
    window = snapshot_window_minutes(config)
    errors = snapshot.metric_errors(period=Duration.minutes(5), statistic="Sum")
    # Every successful snapshot emits SnapshotsTaken=1 when it completes: no datapoint within the
    # window means the newest snapshot is older than the RPO (stopped, failing, or never started).
    taken = _metric("SnapshotsTaken", "Sum", Duration.minutes(window))
    # The minimum over a snapshot's datapoint: 0 when it found no group. Missing data keeps the
    # state (IGNORE), so the alarm says what the latest snapshot found until the next one.
    groups = _metric("SnapshotGroups", "Minimum", Duration.minutes(5))
    return [
        _alarm(stack, "SnapshotErrorsAlarm", errors, action, description="The snapshot function failed."),
        _alarm(
            stack,
            "SnapshotAgeAlarm",
            taken,
            action,
            description=_age_description(config),
            comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            missing=cloudwatch.TreatMissingData.BREACHING,
        ),
        _alarm(
            stack,
            "SnapshotZeroGroupsAlarm",
            groups,
            action,
            description="The latest snapshot found no consumer group: a failover would restore nothing.",
            threshold=0,
            comparison=cloudwatch.ComparisonOperator.LESS_THAN_OR_EQUAL_TO_THRESHOLD,
            missing=cloudwatch.TreatMissingData.IGNORE,
        ),
    ]


def _age_description(config: EnvironmentConfig) -> str:
    window, rpo = snapshot_window_minutes(config), config.rpo_minutes()
    cap = f" of {rpo} minutes, capped at one day" if window < rpo else ""
    return (
        f"No successful snapshot within {window} minutes (the recovery point objective{cap}): the positions "
        "a failover would restore are getting old."
    )


def _snapshot_widgets(snapshot: lambda_.Function) -> list[cloudwatch.IWidget]:
    hourly = Duration.hours(1)
    top = (
        f"SORT(SEARCH('{{{NAMESPACE},group,service}} MetricName=\"GroupLag\"', 'Maximum', 3600), "
        f"MAX, DESC, {TOP_GROUPS_SHOWN})"
    )
    return [
        cloudwatch.GraphWidget(
            title="Snapshot: groups and group-partitions",
            left=[_metric(name, "Maximum", hourly) for name in ("SnapshotGroups", "SnapshotGroupPartitions")],
            right=[_metric("SnapshotWithEvidence", "Maximum", hourly)],
        ),
        cloudwatch.GraphWidget(title="Snapshot: total lag", left=[_metric("SnapshotTotalLag", "Maximum", hourly)]),
        cloudwatch.GraphWidget(
            title="Snapshot: duration and count",
            left=[_metric("SnapshotSeconds", "Maximum", hourly)],
            right=[_metric("SnapshotsTaken", "Sum", hourly)],
        ),
        cloudwatch.GraphWidget(
            title="Runs: age of the snapshot used (drills show the recovery point a failover would get)",
            left=[_metric("SnapshotAgeSeconds", "Maximum", hourly)],
        ),
        cloudwatch.GraphWidget(
            title="Snapshot: errors",
            left=[snapshot.metric_errors(period=hourly), snapshot.metric_invocations(period=hourly)],
        ),
        cloudwatch.GraphWidget(
            title=f"Snapshot: top {TOP_GROUPS_SHOWN} groups by lag",
            left=[cloudwatch.MathExpression(expression=top, using_metrics={}, label="", period=hourly)],
            width=24,
        ),
    ]
