"""Monitoring: alarms on failed and timed-out runs (to the notification topic) and a dashboard of
runs, groups and function errors."""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn

__all__ = ["add_monitoring"]


def add_monitoring(
    stack: Stack, env_name: str, machine: sfn.StateMachine, topic: sns.ITopic, functions: Iterable[lambda_.Function]
) -> None:
    """Alarms and the dashboard on the stack's scope."""
    failed = machine.metric_failed(period=Duration.minutes(5))
    timed_out = machine.metric_timed_out(period=Duration.minutes(5))
    for name, metric in (("RunFailed", failed), ("RunTimedOut", timed_out)):
        alarm = cloudwatch.Alarm(
            stack,
            f"{name}Alarm",
            metric=metric,
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(cloudwatch_actions.SnsAction(topic))
    dashboard = cloudwatch.Dashboard(stack, "Dashboard", dashboard_name=f"offset-restore-{env_name}")
    dashboard.add_widgets(
        cloudwatch.GraphWidget(title="Runs", left=[machine.metric_succeeded(), failed, timed_out]),
        cloudwatch.GraphWidget(
            title="Groups",
            left=[
                cloudwatch.Metric(
                    namespace="OffsetRestore", metric_name=name, dimensions_map={"service": "offset-restore"}
                )
                for name in ("GroupsCommitted", "GroupsSkipped", "EntriesPending", "EntriesUnmapped")
            ],
        ),
        cloudwatch.GraphWidget(title="Lambda errors", left=[fn.metric_errors() for fn in functions]),
    )
