"""Synthesize every example environment (without bundling) and check what matters."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Match, Template

from app import build_app
from infra.stack import ASL_FILE
from tests.figures import record


def template(app: App, env: str) -> Template:
    stack = app.node.find_child(f"offset-restore-{env}")
    assert isinstance(stack, Stack)
    return Template.from_stack(stack)


def test_one_stack_per_environment(app: App) -> None:
    assert sorted(child.node.id for child in app.node.children if isinstance(child, Stack)) == [
        "offset-restore-dev",
        "offset-restore-prod",
    ]


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_bucket_is_encrypted_versioned_private_and_tls_only(app: App, env: str) -> None:
    t = template(app, env)
    t.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    Match.object_like({"ServerSideEncryptionByDefault": Match.object_like({"SSEAlgorithm": "aws:kms"})})
                ]
            },
            "VersioningConfiguration": {"Status": "Enabled"},
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
        },
    )
    t.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                )
            }
        },
    )
    t.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})


def test_snapshot_function_settings_and_schedule(app: App) -> None:
    t = template(app, "prod")
    t.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "offset_restore_handlers.snapshot.handler",
            "Runtime": "python3.12",
            "TracingConfig": {"Mode": "Active"},
            "VpcConfig": Match.object_like({"SubnetIds": ["subnet-0ffffffffffffffff", "subnet-01111111111111111"]}),
            "Environment": {
                "Variables": Match.object_like(
                    {
                        "SOURCE_CLUSTER_NAME": "prod-primary",
                        "SOURCE_SECURITY_PROTOCOL": "SASL_SSL",
                        "SOURCE_SASL_MECHANISM": "AWS_MSK_IAM",
                    }
                )
            },
        },
    )
    t.has_resource_properties("AWS::Events::Rule", {"ScheduleExpression": "rate(15 minutes)"})
    t.has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 90})


def _kafka_by_function(t: Template) -> dict[str, dict[str, set[str]]]:
    """For each function (by its logical id prefix), MSK action -> resources of its own role."""
    roles = {
        role_id: fn_id
        for fn_id, fn in t.find_resources("AWS::Lambda::Function").items()
        for role_id in [fn["Properties"]["Role"]["Fn::GetAtt"][0]]
    }
    found: dict[str, dict[str, set[str]]] = {}
    for policy in t.find_resources("AWS::IAM::Policy").values():
        for ref in policy["Properties"]["Roles"]:
            function = roles.get(ref["Ref"])
            if function is None:
                continue
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                for action in _list(statement["Action"]):
                    if str(action).startswith("kafka-cluster:"):
                        found.setdefault(function, {}).setdefault(action, set()).update(_list(statement["Resource"]))
    return found


def test_msk_permissions_are_scoped_per_function_and_cluster(app: App) -> None:
    t = template(app, "prod")
    source = "arn:aws:kafka:eu-west-1:222222222222:cluster/primary/11111111-2222-3333-4444-555555555555-2"
    target = "arn:aws:kafka:eu-central-1:222222222222:cluster/dr/66666666-7777-8888-9999-000000000000-3"

    def arns(cluster: str, kind: str) -> set[str]:
        return {cluster.replace(":cluster/", f":{kind}/") + "/*"} if kind != "cluster" else {cluster}

    kinds = ("Snapshot", "Translate", "CheckEmpty", "Commit", "Source", "Lock")
    by_function = {next(k for k in kinds if fn.startswith(k)): actions for fn, actions in _kafka_by_function(t).items()}
    assert by_function["Snapshot"] == {
        "kafka-cluster:Connect": arns(source, "cluster"),
        "kafka-cluster:DescribeCluster": arns(source, "cluster"),
        "kafka-cluster:DescribeTopic": arns(source, "topic"),
        "kafka-cluster:ReadData": arns(source, "topic"),
        "kafka-cluster:DescribeGroup": arns(source, "group"),
    }
    assert by_function["Translate"] == {
        "kafka-cluster:Connect": arns(target, "cluster"),
        "kafka-cluster:DescribeCluster": arns(target, "cluster"),
        "kafka-cluster:DescribeTopic": arns(target, "topic"),
        "kafka-cluster:ReadData": arns(target, "topic"),
    }
    fence = {target.replace(":cluster/", ":transactional-id/") + "/offset-restore-*"}
    lanes = {target.replace(":cluster/", ":group/") + "/offset-restore-*"}  # the confirming transactions' groups
    assert by_function["Lock"] == {  # keyed by the cluster id the target reports; then the cluster's fence
        "kafka-cluster:Connect": arns(target, "cluster"),
        "kafka-cluster:DescribeCluster": arns(target, "cluster"),
        "kafka-cluster:DescribeTransactionalId": fence,
        "kafka-cluster:AlterTransactionalId": fence,
        "kafka-cluster:AlterGroup": lanes,
    }
    assert by_function["Commit"]["kafka-cluster:AlterTransactionalId"] == fence  # writes under a lane of it
    assert not any("TransactionalId" in a for k in ("Translate", "Snapshot", "Source") for a in by_function[k])
    assert by_function["Source"] == by_function["Snapshot"]  # a migration's steps read the source, as the snapshot
    assert by_function["CheckEmpty"]["kafka-cluster:DescribeGroup"] == arns(target, "group")
    assert by_function["Commit"]["kafka-cluster:AlterGroup"] == arns(target, "group") | lanes
    assert "kafka-cluster:AlterGroup" not in by_function["Translate"] | by_function["Snapshot"] | by_function["Source"]
    statements = [
        s for p in t.find_resources("AWS::IAM::Policy").values() for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert not any(a == "*" or str(a).endswith(":*") for s in statements for a in _list(s["Action"]))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_a_bad_environment_is_named() -> None:
    with pytest.raises(SystemExit, match="unknown environment 'staging'"):
        build_app({"skipBundling": "true", "env": "staging"})
    bad = {
        "environments": {
            "x": {
                "account": "1",
                "region": "eu-west-1",
                "source": {"name": "s", "bootstrapServers": "b:1", "auth": "iam"},
                "target": {"name": "t", "bootstrapServers": "b:1", "auth": "plaintext"},
            }
        }
    }
    with pytest.raises(SystemExit, match=r"environment x in cdk\.json is invalid"):
        build_app({**bad, "skipBundling": "true"})


def test_the_whole_app_synthesizes_with_no_cdk_nag_finding() -> None:
    """AwsSolutions checks run as a validation plugin: any unacknowledged finding fails the synth."""
    app = build_app({"skipBundling": "true"})
    assembly = app.synth()
    assert {stack.stack_name for stack in assembly.stacks} == {"offset-restore-dev", "offset-restore-prod"}
    acknowledged = [reason for stack in app.node.children for reason in getattr(stack, "acknowledged", {}).values()]
    assert acknowledged and all(len(reason) > 20 for reason in acknowledged)
    record(
        "security",
        check="cdk-nag findings not acknowledged",
        found=0,
        note=f"{len(acknowledged)} acknowledged, each with a reason",
    )


# Statements on Resource "*": each kind needs a reason here, or the test below fails.
WILDCARD_REASONS = {
    frozenset({"xray:PutTraceSegments", "xray:PutTelemetryRecords"}): (
        "X-Ray has no resource-level permissions: tracing a function needs Resource '*'"
    ),
    frozenset(
        {"xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets"}
    ): "X-Ray tracing of the state machine: no resource-level permissions exist for these actions",
    frozenset(
        {
            "logs:CreateLogDelivery",
            "logs:GetLogDelivery",
            "logs:UpdateLogDelivery",
            "logs:DeleteLogDelivery",
            "logs:ListLogDeliveries",
            "logs:PutResourcePolicy",
            "logs:DescribeResourcePolicies",
            "logs:DescribeLogGroups",
        }
    ): "Step Functions log delivery: these CloudWatch Logs actions support only Resource '*' (AWS documents it)",
}


def test_every_statement_on_any_resource_has_a_recorded_reason(app: App) -> None:
    found = 0
    for env in ("dev", "prod"):
        for policy in template(app, env).find_resources("AWS::IAM::Policy").values():
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                if "*" in _list(statement["Resource"]):
                    found += 1
                    actions = frozenset(_list(statement["Action"]))
                    assert actions in WILDCARD_REASONS, f"{sorted(actions)} on Resource '*': scope it, or record why"
    record(
        "security",
        check="IAM statements on Resource '*' without a recorded reason",
        found=0,
        note=f"{found} with a reason, {len(WILDCARD_REASONS)} kinds",
    )


def test_plaintext_kafka_is_refused_outside_dev() -> None:
    context = json.loads((Path(__file__).parents[2] / "cdk.json").read_text())["context"]
    prod = json.loads(json.dumps(context["environments"]["prod"]))
    prod["target"] = {"name": "dr", "bootstrapServers": "b-1.dr:9092", "auth": "plaintext"}
    with pytest.raises(SystemExit, match="cluster dr uses auth 'plaintext': TLS is required outside the dev"):
        build_app({**context, "environments": {"prod": prod}, "skipBundling": "true"})
    assert build_app({**context, "skipBundling": "true"})  # dev keeps plaintext for local brokers


def test_cfn_lint_is_clean(tmp_path: Path) -> None:
    assembly = build_app({"skipBundling": "true"}).synth()
    templates = [stack.template_full_path for stack in assembly.stacks]
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    # W3005: CDK adds DependsOn on a function's role beside the GetAtt that already orders them.
    result = subprocess.run([str(cfn_lint), *templates, "--ignore-checks", "W3005"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_statelint_is_clean_on_the_definition(tmp_path: Path) -> None:
    text = ASL_FILE.read_text()
    concrete = re.sub(r"\$\{(\w+)FunctionArn\}", r"arn:aws:lambda:eu-west-1:123456789012:function:\1", text)
    path = tmp_path / "definition.json"
    path.write_text(concrete)
    statelint = Path(sys.executable).parent / "statelint"
    result = subprocess.run([str(statelint), str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_state_machine_gets_every_function_by_substitution(app: App) -> None:
    t = template(app, "prod")
    [machine] = t.find_resources("AWS::StepFunctions::StateMachine").values()
    assert set(machine["Properties"]["DefinitionSubstitutions"]) == {
        f"{name}FunctionArn" for name in re.findall(r"\$\{(\w+)FunctionArn\}", ASL_FILE.read_text())
    }
    assert machine["Properties"]["TracingConfiguration"] == {"Enabled": True}
    assert machine["Properties"]["StateMachineName"] == "offset-restore-prod"
    statements = [
        s for p in t.find_resources("AWS::IAM::Policy").values() for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    starts = [json.dumps(s["Resource"]) for s in statements if s["Action"] == "states:StartExecution"]
    assert any("stateMachine:offset-restore-prod" in resource for resource in starts)  # its distributed Map
    assert machine["Properties"]["LoggingConfiguration"]["Level"] == "ALL"


def test_alarm_rule_starts_a_run_with_an_input_built_from_the_event(app: App) -> None:
    t = template(app, "prod")
    t.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": {
                "source": ["aws.cloudwatch"],
                "detail-type": ["CloudWatch Alarm State Change"],
                "detail": {
                    "alarmName": ["prod-primary-kafka-down", "prod-primary-region-outage"],
                    "state": {"value": ["ALARM"]},
                },
            },
            "Targets": [
                Match.object_like(
                    {
                        "InputTransformer": Match.object_like(
                            {
                                "InputPathsMap": Match.object_like({"detail-alarmName": "$.detail.alarmName"}),
                                "InputTemplate": Match.string_like_regexp('"mode":"apply".*"source_stopped_at":<time>'),
                            }
                        )
                    }
                )
            ],
        },
    )
    t.has_resource_properties("AWS::Events::Rule", {"ScheduleExpression": "cron(0 6 ? * MON *)"})


def test_table_and_topic_are_encrypted_with_the_stack_key(app: App) -> None:
    t = template(app, "prod")
    t.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "SSESpecification": Match.object_like({"SSEEnabled": True, "SSEType": "KMS"}),
            "TimeToLiveSpecification": {"AttributeName": "ttl", "Enabled": True},
            "BillingMode": "PAY_PER_REQUEST",
        },
    )
    t.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": Match.any_value()})
    t.has_resource_properties("AWS::SNS::Subscription", {"Protocol": "email", "Endpoint": "kafka-oncall@example.com"})
    alarms = t.find_resources("AWS::CloudWatch::Alarm")
    assert {"RunFailedAlarm", "RunTimedOutAlarm"} <= {name[:-8] for name in alarms}  # the rest: test_monitoring.py
    t.resource_count_is("AWS::CloudWatch::Dashboard", 1)


def test_a_stopped_or_timed_out_execution_has_its_lock_released(app: App) -> None:
    """An execution stopped from the console (or timed out) never reaches ReleaseLock: a rule on its
    status change calls the Lock function with that execution as the owner."""
    t = template(app, "dev")
    rules = t.find_resources("AWS::Events::Rule", {"Properties": {"EventPattern": {"source": ["aws.states"]}}})
    assert len(rules) == 1
    (rule,) = rules.values()
    pattern = rule["Properties"]["EventPattern"]
    assert pattern["detail-type"] == ["Step Functions Execution Status Change"]
    assert sorted(pattern["detail"]["status"]) == ["ABORTED", "FAILED", "TIMED_OUT"]
    (target,) = rule["Properties"]["Targets"]
    transformer = target["InputTransformer"]
    template_text = transformer["InputTemplate"]
    assert '"action":"release"' in template_text and '"owner":<detail-executionArn>' in template_text
    assert transformer["InputPathsMap"]["detail-executionArn"] == "$.detail.executionArn"


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_outputs_name_what_the_cli_reads_by_stack(app: App, env: str) -> None:
    """`unlock --stack` and `start --stack` read these outputs (operations.STACK_OUTPUTS); the target
    cluster is the deployment's own, the one the Lock function keys its lock on."""
    from offset_restore.workflow.executions import STACK_OUTPUTS

    found = template(app, env).to_json()["Outputs"]
    assert set(STACK_OUTPUTS) <= set(found)
    config = json.loads(Path("cdk.json").read_text())["context"]["environments"][env]
    assert found["TargetClusterName"]["Value"] == config["target"]["name"]
    lock_env = [
        r["Properties"]["Environment"]["Variables"]
        for r in template(app, env).find_resources("AWS::Lambda::Function").values()
        if r["Properties"]["Handler"] == "offset_restore_handlers.lock.handler"
    ]
    assert lock_env and lock_env[0]["TARGET_CLUSTER_NAME"] == config["target"]["name"]
    assert found["LockTableName"]["Value"] == lock_env[0]["TABLE_NAME"]


def test_the_code_asset_holds_what_the_handlers_import_and_nothing_else(tmp_path: Path) -> None:
    """The bundler copies the handlers' import closure: every handler imports from the asset alone
    (PYTHONPATH first, before the installed project), and the CLI, demo, local AWS (moto) and the
    test brokers are not in it."""
    from infra.bundling import LocalPipBundling
    from infra.stack import FUNCTIONS_DIR

    copied = {str(p) for p in LocalPipBundling(FUNCTIONS_DIR).copy_sources(tmp_path)}
    # The CLI and the devtools (demo, local AWS, the test brokers) are not: no file of those packages.
    assert not [name for name in copied if name.startswith(("offset_restore/cli/", "offset_restore/devtools/"))]
    assert "offset_restore/apply/rollback.py" in copied  # the workflow's rollback mode (issue 20) runs it
    assert "offset_restore/kafka/schemas/ConsumerGroupDescribeResponse.json" in copied
    assert "offset_restore/workflow/templates/report.html.j2" in copied  # report.html is drawn from it
    assert "offset_restore_handlers/wiring.py" not in copied  # read at deploy time, not at run time
    from offset_restore_handlers.wiring import SNAPSHOT_HANDLER, TASK_HANDLERS

    handlers = sorted({h.rsplit(".", 1)[0] for h in [*TASK_HANDLERS.values(), SNAPSHOT_HANDLER]})
    probe = (
        "import importlib, sys\n"
        f"for name in {handlers!r}: importlib.import_module(name)\n"
        "from offset_restore.workflow.report import render_report\n"  # the page's template, read from the asset
        "assert render_report({'restore_id': 'r'}, [], 'planned')['report.html'].startswith(b'<!doctype html>')\n"
        "ours = [m for n, m in sys.modules.items() if n.split('.')[0].startswith('offset_restore')]\n"
        f"outside = [m.__name__ for m in ours if not (m.__file__ or '').startswith({str(tmp_path)!r})]\n"
        "assert not outside, outside\n"
        "print(len(ours))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "eu-west-1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= len(handlers)
    size = sum((tmp_path / p).stat().st_size for p in copied)
    record("asset", files=len(copied), kilobytes=round(size / 1024))


STATEFUL_LOGICAL_IDS = {
    "Key961B73FD": "AWS::KMS::Key",
    "Bucket83908E77": "AWS::S3::Bucket",
    "TableCD117FA1": "AWS::DynamoDB::Table",
    "Notifications87298708": "AWS::SNS::Topic",
    "Workflow193EF7C1": "AWS::StepFunctions::StateMachine",
    "WorkflowLogs6DD5EEB0": "AWS::Logs::LogGroup",
    "SnapshotLogs46F7B051": "AWS::Logs::LogGroup",
    "CommitLogs1BC2AF62": "AWS::Logs::LogGroup",
}
"""Logical ids as deployed before the stack was split into capability modules. A changed id makes
CloudFormation replace the resource: a new table beside the retained one, and the offsets a run
recorded for rollback out of the deployment's reach."""


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_resources_that_hold_state_keep_their_logical_ids(app: App, env: str) -> None:
    resources = template(app, env).to_json()["Resources"]
    assert {k: resources[k]["Type"] for k in STATEFUL_LOGICAL_IDS if k in resources} == STATEFUL_LOGICAL_IDS


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_each_state_runs_the_handler_the_wiring_names(app: App, env: str) -> None:
    """The ASL's placeholders, the stack's functions and the local runner follow one list."""
    from offset_restore.devtools.local_aws import FUNCTIONS
    from offset_restore_handlers.wiring import SNAPSHOT_HANDLER, TASK_HANDLERS, arn_placeholder

    placeholders = set(re.findall(r"\$\{(\w+)\}", ASL_FILE.read_text()))
    assert placeholders == {arn_placeholder(name) for name in TASK_HANDLERS}
    assert FUNCTIONS == TASK_HANDLERS
    functions = template(app, env).find_resources("AWS::Lambda::Function")
    by_name = {
        next(name for name in [*TASK_HANDLERS, "Snapshot"] if logical.startswith(f"{name}Function")): r["Properties"][
            "Handler"
        ]
        for logical, r in functions.items()
    }
    assert by_name == {**TASK_HANDLERS, "Snapshot": SNAPSHOT_HANDLER}
    for handler in by_name.values():  # every handler named exists
        module, function = handler.rsplit(".", 1)
        assert callable(getattr(importlib.import_module(module), function))
