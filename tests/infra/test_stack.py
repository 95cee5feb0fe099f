"""Synthesize every example environment (without bundling) and check what matters."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Match, Template

from app import build_app


@pytest.fixture(scope="module")
def app() -> App:
    return build_app({"skipBundling": "true"})


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
            "Handler": "handlers.snapshot.handler",
            "Runtime": "python3.12",
            "TracingConfig": {"Mode": "Active"},
            "VpcConfig": Match.object_like({"SubnetIds": ["subnet-0aaaaaaaaaaaaaaaa", "subnet-0bbbbbbbbbbbbbbbb"]}),
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


def _statements(t: Template) -> list[dict[str, Any]]:
    return [
        s
        for policy in t.find_resources("AWS::IAM::Policy").values()
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_msk_permissions_are_scoped_to_the_source_cluster(app: App) -> None:
    statements = _statements(template(app, "prod"))
    kafka = [s for s in statements if any(str(a).startswith("kafka-cluster:") for a in _list(s["Action"]))]
    cluster = "arn:aws:kafka:eu-west-1:222222222222:cluster/primary/11111111-2222-3333-4444-555555555555-2"
    by_action = {a: s["Resource"] for s in kafka for a in _list(s["Action"])}
    assert by_action == {
        "kafka-cluster:Connect": cluster,
        "kafka-cluster:DescribeCluster": cluster,
        "kafka-cluster:DescribeTopic": cluster.replace(":cluster/", ":topic/") + "/*",
        "kafka-cluster:ReadData": cluster.replace(":cluster/", ":topic/") + "/*",
        "kafka-cluster:DescribeGroup": cluster.replace(":cluster/", ":group/") + "/*",
    }
    assert not any(a == "*" or a.endswith(":*") for s in statements for a in _list(s["Action"]))


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
