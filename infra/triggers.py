"""Triggers: what starts or ends work without an operator — the release of a stopped run's lock,
the snapshot schedule, the plan-mode drill schedule and the failover alarm."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn

from infra.config import EnvironmentConfig

__all__ = ["add_triggers"]


def add_triggers(
    stack: Stack,
    config: EnvironmentConfig,
    machine: sfn.StateMachine,
    lock: lambda_.Function,
    snapshot: lambda_.Function,
) -> None:
    """Event rules on the stack's scope."""
    _release_lock_on_stop(stack, machine, lock, config.target.name)
    _schedules(stack, config, machine, snapshot)
    _failover_alarm(stack, config, machine)


def _release_lock_on_stop(stack: Stack, machine: sfn.StateMachine, lock: lambda_.Function, target: str) -> None:
    # A stopped, timed-out or failed execution never reaches its own ReleaseLock: release its lock
    # here (the Lock function releases only what that execution holds) — or, when it ended in a writing
    # state, turn it into a fence until that state's Lambda must have ended (a stopped execution's task
    # keeps running).
    events.Rule(
        stack,
        "ReleaseLockOnStop",
        event_pattern=events.EventPattern(
            source=["aws.states"],
            detail_type=["Step Functions Execution Status Change"],
            detail={
                "status": ["ABORTED", "TIMED_OUT", "FAILED"],
                "stateMachineArn": [machine.state_machine_arn],
            },
        ),
        targets=[
            targets.LambdaFunction(
                lock,
                event=events.RuleTargetInput.from_object(
                    {
                        "action": "release",
                        "restore_id": events.EventField.from_path("$.detail.name"),
                        "target_cluster": target,
                        "owner": events.EventField.from_path("$.detail.executionArn"),
                        "ended": True,
                    }
                ),
            )
        ],
    )


def _schedules(stack: Stack, config: EnvironmentConfig, machine: sfn.StateMachine, snapshot: lambda_.Function) -> None:
    """The scheduled snapshot and the plan-mode drill, when the environment sets them."""
    if config.snapshot_schedule:
        events.Rule(
            stack,
            "SnapshotSchedule",
            schedule=events.Schedule.expression(config.snapshot_schedule),
            targets=[targets.LambdaFunction(snapshot, event=events.RuleTargetInput.from_object({}))],
        )
    if config.drill_schedule:
        events.Rule(
            stack,
            "DrillSchedule",
            schedule=events.Schedule.expression(config.drill_schedule),
            targets=[
                targets.SfnStateMachine(
                    machine,
                    input=events.RuleTargetInput.from_object(
                        {"mode": "plan", "trigger": {"drill": True, "time": events.EventField.time}}
                    ),
                )
            ],
        )


def _failover_alarm(stack: Stack, config: EnvironmentConfig, machine: sfn.StateMachine) -> None:
    """A run started by the failover alarm going into ALARM, in the environment's failover mode."""
    if config.failover_alarm_names:
        events.Rule(
            stack,
            "FailoverAlarm",
            event_pattern=events.EventPattern(
                source=["aws.cloudwatch"],
                detail_type=["CloudWatch Alarm State Change"],
                detail={"alarmName": config.failover_alarm_names, "state": {"value": ["ALARM"]}},
            ),
            targets=[
                targets.SfnStateMachine(
                    machine,
                    input=events.RuleTargetInput.from_object(
                        {
                            "mode": config.failover_mode,
                            "wait": {"timeout_seconds": config.wait_timeout_seconds, "interval_seconds": 15},
                            "on_wait_timeout": "commit_empty",
                            # The alarm fired after the source stopped: what live groups processed after
                            # the snapshot is counted up to then, however long the run takes.
                            "source_stopped_at": events.EventField.time,
                            "trigger": {
                                "alarm": events.EventField.from_path("$.detail.alarmName"),
                                "time": events.EventField.time,
                            },
                        }
                    ),
                )
            ],
        )
