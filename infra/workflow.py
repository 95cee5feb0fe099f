"""Workflow: the state machine from the ASL file, each Task state's function substituted by name,
with its log group, and the rights its distributed Map needs to run child executions."""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Mapping
from pathlib import Path

from aws_cdk import ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from offset_restore_handlers.wiring import arn_placeholder

from infra.config import EnvironmentConfig
from infra.retention import retention

__all__ = ["ASL_FILE", "definition", "state_machine"]

ASL_FILE = Path(__file__).resolve().parent / "statemachine" / "offset_restore.asl.json"


def definition(config: EnvironmentConfig) -> str:
    """The ASL file with the environment's execution timeout (``TimeoutSeconds``): CDK's ``timeout``
    does not reach a definition read from a file, and without it a run never times out."""
    document = json.loads(ASL_FILE.read_text())
    document["TimeoutSeconds"] = config.execution_timeout_minutes * 60
    return json.dumps(document, indent=2)


def definition_file(config: EnvironmentConfig) -> Path:
    """``definition`` in a file of its own (named by its content), which CDK stages as the definition's
    asset as it did the ASL file (its substitutions stay DefinitionSubstitutions)."""
    text = definition(config)
    folder = Path(tempfile.gettempdir()) / "offset-restore-asl"
    folder.mkdir(exist_ok=True)
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.asl.json"
    if not path.exists():
        path.write_text(text)
    return path


def state_machine(
    stack: Stack, env_name: str, config: EnvironmentConfig, tasks: Mapping[str, lambda_.Function]
) -> sfn.StateMachine:
    """The workflow of one environment; ``tasks`` by the names the ASL's placeholders use."""
    machine_logs = logs.LogGroup(
        stack, "WorkflowLogs", retention=retention(config.log_retention_days), removal_policy=RemovalPolicy.DESTROY
    )
    machine_name = f"offset-restore-{env_name}"
    machine = sfn.StateMachine(
        stack,
        "Workflow",
        state_machine_name=machine_name,
        definition_body=sfn.DefinitionBody.from_file(str(definition_file(config))),
        definition_substitutions={arn_placeholder(name): fn.function_arn for name, fn in tasks.items()},
        logs=sfn.LogOptions(destination=machine_logs, level=sfn.LogLevel.ALL, include_execution_data=False),
        tracing_enabled=True,
    )
    for fn in tasks.values():
        fn.grant_invoke(machine)
    # The distributed Map (Translate) runs its items as child executions of this state machine.
    machine_arn = stack.format_arn(
        service="states",
        resource="stateMachine",
        resource_name=machine_name,
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    children = stack.format_arn(
        service="states",
        resource="execution",
        resource_name=f"{machine_name}/*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    machine.add_to_role_policy(iam.PolicyStatement(actions=["states:StartExecution"], resources=[machine_arn]))
    machine.add_to_role_policy(
        iam.PolicyStatement(actions=["states:DescribeExecution", "states:StopExecution"], resources=[children])
    )
    # The report's timeline: the history of the run that writes it (a name, not a reference: the state
    # machine's definition already refers to the function).
    runs = stack.format_arn(
        service="states",
        resource="execution",
        resource_name=f"{machine_name}:*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    tasks["Report"].add_to_role_policy(iam.PolicyStatement(actions=["states:GetExecutionHistory"], resources=[runs]))
    # The release of an ended execution's lock: whether it ended in a writing state (then a fence).
    tasks["Lock"].add_to_role_policy(iam.PolicyStatement(actions=["states:GetExecutionHistory"], resources=[runs]))
    return machine
