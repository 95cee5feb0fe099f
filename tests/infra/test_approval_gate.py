"""Issue 37's gate as deployed: the prod example gates the runs its failover alarm starts, the Validate
function carries the setting, the Gate function can record and ask, and the deployed definition waits on
a task token for it (with the input's timeout), the state machine allowed to invoke it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App
from aws_cdk.assertions import Template

from app import build_app
from tests.infra.test_monitoring import context_with
from tests.infra.test_stack import template


def variables(t: Template, handler: str) -> dict[str, Any]:
    (found,) = [
        fn["Properties"]["Environment"]["Variables"]
        for fn in t.find_resources("AWS::Lambda::Function").values()
        if fn["Properties"]["Handler"] == handler
    ]
    return dict(found)


@pytest.mark.parametrize(("env", "policy", "seconds"), [("prod", "alarm", "1800"), ("dev", "never", "3600")])
def test_the_validate_function_carries_the_environments_approval_setting(
    app: App, env: str, policy: str, seconds: str
) -> None:
    validate = variables(template(app, env), "offset_restore_handlers.validate.handler")
    assert (validate["APPROVAL"], validate["APPROVAL_TIMEOUT_S"]) == (policy, seconds)


def test_the_gate_function_records_asks_and_holds_the_lock(app: App) -> None:
    t = template(app, "prod")
    gate = variables(t, "offset_restore_handlers.gate.handler")
    assert {"TABLE_NAME", "TOPIC_ARN", "STACK_NAME", "TARGET_CLUSTER_NAME"} <= set(gate)
    assert gate["STACK_NAME"] == "offset-restore-prod"
    policies = json.dumps(t.find_resources("AWS::IAM::Policy"))
    assert "sns:Publish" in policies and "dynamodb:PutItem" in policies


def test_the_deployed_definition_waits_on_a_task_token_for_the_gate(app: App) -> None:
    assembly = app.synth()  # the module's app, synthesized once
    (stack,) = [s for s in assembly.stacks if s.stack_name == "offset-restore-prod"]
    (machine,) = [r for r in stack.template["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    staged = Path(assembly.directory) / f"asset.{machine['Properties']['DefinitionS3Location']['Key']}"
    states = json.loads(staged.read_text())["States"]
    wait = states["AwaitApproval"]
    assert wait["Resource"] == "arn:aws:states:::lambda:invoke.waitForTaskToken"
    assert wait["Parameters"]["FunctionName"] == "${GateFunctionArn}" and wait["Next"] == "CheckEmpty"
    assert wait["Parameters"]["Payload"]["token.$"] == "$$.Task.Token"
    assert wait["TimeoutSecondsPath"] == "$.approval.timeout_seconds"
    assert {c["Next"] for c in wait["Catch"]} == {"ReportNotApproved", "ReleaseOnFailure"}
    assert "GateFunctionArn" in machine["Properties"]["DefinitionSubstitutions"]
    invokes = [
        s
        for p in stack.template["Resources"].values()
        if p["Type"] == "AWS::IAM::Policy"
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if "lambda:InvokeFunction" in json.dumps(s["Action"]) and "Gate" in json.dumps(s["Resource"])
    ]
    assert invokes, "the state machine's role cannot invoke the Gate function"


def test_an_unknown_approval_setting_is_refused_at_synth() -> None:
    with pytest.raises(SystemExit, match="approval"):
        build_app(context_with(approval="sometimes"))


def test_a_gate_that_would_outlast_the_run_is_refused_at_synth() -> None:
    with pytest.raises(SystemExit, match=r"approvalTimeoutMinutes \(720\) must be below executionTimeoutMinutes"):
        build_app(context_with(approval="alarm", approvalTimeoutMinutes=720))
