"""Deployable next to a real MSK estate: each stack bound to its account and region, each Kafka
function in the network of the cluster it talks to, the VPC endpoints those functions need, and the
settings that cannot work refused at synth with the environment and the fix named."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Match, Template

from app import build_app
from infra.config import EnvironmentConfig

CONTEXT: dict[str, Any] = json.loads((Path(__file__).parents[2] / "cdk.json").read_text())["context"]
KAFKA_FUNCTIONS = ("Snapshot", "Source", "Lock", "Translate", "CheckEmpty", "Commit")
SCRAM_SECRET = "arn:aws:secretsmanager:eu-central-1:222222222222:secret:AmazonMSK_dr-AbCdEf"
SCRAM_KEY = "arn:aws:kms:eu-central-1:222222222222:key/0f0f0f0f-1111-2222-3333-444444444444"


def environment(name: str) -> dict[str, Any]:
    """A copy of an example environment of cdk.json, to change in one test."""
    return json.loads(json.dumps(CONTEXT["environments"][name]))


def only(name: str, raw: dict[str, Any]) -> App:
    return build_app({**CONTEXT, "environments": {name: raw}, "skipBundling": "true"})


def stack_of(app: App, name: str) -> Stack:
    stack = app.node.find_child(f"offset-restore-{name}")
    assert isinstance(stack, Stack)
    return stack


def vpc_configs(t: Template) -> dict[str, Any]:
    """Function name (Snapshot, Translate, ...) -> its VpcConfig, None outside any VPC."""
    return {
        logical.split("Function")[0]: fn["Properties"].get("VpcConfig")
        for logical, fn in t.find_resources("AWS::Lambda::Function").items()
    }


def endpoints(t: Template) -> dict[str, dict[str, Any]]:
    """Service (s3, dynamodb, secretsmanager) -> the endpoint's properties."""
    found = t.find_resources("AWS::EC2::VPCEndpoint")
    return {r["Properties"]["ServiceName"].rsplit(".", 1)[1]: r["Properties"] for r in found.values()}


@pytest.fixture(scope="module")
def app() -> App:
    return build_app({"skipBundling": "true"})


@pytest.mark.parametrize(
    ("name", "account", "region"), [("dev", "111111111111", "eu-west-1"), ("prod", "222222222222", "eu-central-1")]
)
def test_each_stack_is_bound_to_its_account_and_region(app: App, name: str, account: str, region: str) -> None:
    """With another profile's credentials, `cdk deploy -c env=prod` fails instead of deploying prod there."""
    stack = stack_of(app, name)
    assert (stack.account, stack.region) == (account, region)
    assert stack.environment == f"aws://{account}/{region}"


def test_the_dr_example_runs_the_workflow_in_the_target_region_and_snapshots_the_primary(app: App) -> None:
    """prod is the cross-region layout of docs/deploy.md: the stack (bucket, table, workflow, failover
    rule) in the DR cluster's region, the snapshot function there too, reading the primary's cluster."""
    config = EnvironmentConfig.model_validate(CONTEXT["environments"]["prod"], context={"name": "prod"})
    assert config.target.arn and config.source.arn
    assert stack_of(app, "prod").region == config.target.arn.split(":")[3] == "eu-central-1"
    assert config.source.arn.split(":")[3] == "eu-west-1"
    assert config.network_for(config.source) != config.network_for(config.target)
    t = Template.from_stack(stack_of(app, "prod"))
    snapshot = next(
        fn["Properties"]["Environment"]["Variables"]
        for fn in t.find_resources("AWS::Lambda::Function").values()
        if fn["Properties"]["Handler"].endswith(".snapshot.handler")
    )
    assert snapshot["SOURCE_BOOTSTRAP_SERVERS"].endswith(".kafka.eu-west-1.amazonaws.com:9098")
    assert {props["ServiceName"] for props in endpoints(t).values()} == {
        "com.amazonaws.eu-central-1.s3",
        "com.amazonaws.eu-central-1.dynamodb",
    }


def test_each_kafka_function_runs_in_the_network_of_the_cluster_it_talks_to(app: App) -> None:
    """prod: the snapshot and a migration's Source steps read the primary through the source network's
    subnets (routed to the peered primary VPC); the workflow's other Kafka functions reach the DR cluster
    through the environment's network."""
    found = vpc_configs(Template.from_stack(stack_of(app, "prod")))
    source = {
        "SubnetIds": ["subnet-0ffffffffffffffff", "subnet-01111111111111111"],
        "SecurityGroupIds": ["sg-02222222222222222"],
    }
    target = {
        "SubnetIds": ["subnet-0aaaaaaaaaaaaaaaa", "subnet-0bbbbbbbbbbbbbbbb"],
        "SecurityGroupIds": ["sg-0cccccccccccccccc"],
    }
    assert found["Snapshot"] == found["Source"] == source
    # The Lock function too: the lock is keyed by the cluster id the target's brokers report.
    on_target = ("Lock", "Translate", "CheckEmpty", "Commit")
    assert {name: found[name] for name in on_target} == dict.fromkeys(on_target, target)
    assert {name for name, config in found.items() if config is None} == {
        "Validate",
        "Gate",
        "Prepare",
        "Summarize",
        "Report",
    }


def test_the_environment_network_is_still_the_default_of_both_clusters(app: App) -> None:
    """dev sets only the environment-level vpcId/subnetIds/...: every Kafka function is in it."""
    found = vpc_configs(Template.from_stack(stack_of(app, "dev")))
    assert {found[name]["SubnetIds"][0] for name in KAFKA_FUNCTIONS} == {"subnet-0d1d1d1d1d1d1d1d1"}


def test_a_per_cluster_network_overrides_the_environment_one_for_that_cluster_only() -> None:
    raw = environment("dev")
    raw["target"]["network"] = {
        "vpcId": "vpc-0e0e0e0e0e0e0e0e0",
        "availabilityZones": ["eu-west-1c"],
        "subnetIds": ["subnet-0e1e1e1e1e1e1e1e1"],
        "securityGroupIds": ["sg-0e2e2e2e2e2e2e2e2"],
    }
    found = vpc_configs(Template.from_stack(stack_of(only("dev", raw), "dev")))
    assert found["Snapshot"]["SubnetIds"] == ["subnet-0d1d1d1d1d1d1d1d1", "subnet-0d2d2d2d2d2d2d2d2"]
    assert found["Source"] == found["Snapshot"]
    for name in ("Translate", "CheckEmpty", "Commit"):
        assert found[name] == {"SubnetIds": ["subnet-0e1e1e1e1e1e1e1e1"], "SecurityGroupIds": ["sg-0e2e2e2e2e2e2e2e2"]}


def test_gateway_endpoints_are_created_once_per_vpc_on_every_route_table(app: App) -> None:
    """prod's two networks share a VPC: one S3 and one DynamoDB endpoint, routed in the route tables of
    both; no Secrets Manager endpoint, as neither cluster uses SCRAM."""
    found = endpoints(Template.from_stack(stack_of(app, "prod")))
    assert set(found) == {"s3", "dynamodb"}
    for service, props in found.items():
        assert props["ServiceName"] == f"com.amazonaws.eu-central-1.{service}"
        assert props["VpcEndpointType"] == "Gateway"
        assert props["VpcId"] == "vpc-0123456789abcdef0"
        assert props["RouteTableIds"] == [
            "rtb-03333333333333333",
            "rtb-04444444444444444",
            "rtb-0dddddddddddddddd",
            "rtb-0eeeeeeeeeeeeeeee",
        ]


def test_a_scram_cluster_gets_a_secrets_manager_endpoint_reachable_from_its_functions() -> None:
    raw = environment("prod")
    raw["target"].update(
        {
            "bootstrapServers": "b-1.dr.def456.c3.kafka.eu-central-1.amazonaws.com:9096",
            "auth": "scram",
            "scramSecretArn": SCRAM_SECRET,
            "scramSecretKeyArn": SCRAM_KEY,
        }
    )
    app = only("prod", raw)
    app.synth()  # cdk-nag runs on the app's synth: the endpoint and its group add no finding
    t = Template.from_stack(stack_of(app, "prod"))
    found = endpoints(t)
    assert set(found) == {"s3", "dynamodb", "secretsmanager"}
    interface = found["secretsmanager"]
    assert interface["VpcEndpointType"] == "Interface" and interface["PrivateDnsEnabled"] is True
    assert interface["SubnetIds"] == ["subnet-0aaaaaaaaaaaaaaaa", "subnet-0bbbbbbbbbbbbbbbb"]  # the target's network
    [group] = t.find_resources("AWS::EC2::SecurityGroup").values()
    assert group["Properties"]["VpcId"] == "vpc-0123456789abcdef0"
    assert sorted(
        (r["FromPort"], r["ToPort"], r["SourceSecurityGroupId"]) for r in group["Properties"]["SecurityGroupIngress"]
    ) == [
        (443, 443, "sg-02222222222222222"),
        (443, 443, "sg-0cccccccccccccccc"),
    ]
    t.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Action": "kms:Decrypt",
                                "Resource": SCRAM_KEY,
                                "Condition": {
                                    "StringEquals": {"kms:ViaService": "secretsmanager.eu-central-1.amazonaws.com"}
                                },
                            }
                        )
                    ]
                )
            }
        },
    )


def test_no_endpoint_is_created_unless_asked() -> None:
    raw = environment("prod")
    raw["createVpcEndpoints"] = False
    raw["source"]["network"]["createVpcEndpoints"] = False
    Template.from_stack(stack_of(only("prod", raw), "prod")).resource_count_is("AWS::EC2::VPCEndpoint", 0)


def test_a_public_broker_needs_no_network() -> None:
    raw = environment("prod")
    for key in ("vpcId", "availabilityZones", "subnetIds", "securityGroupIds", "routeTableIds", "createVpcEndpoints"):
        raw.pop(key)
    raw["target"] = {"name": "prod-dr", "bootstrapServers": "kafka.dr.example.com:9093", "auth": "tls"}
    found = vpc_configs(Template.from_stack(stack_of(only("prod", raw), "prod")))
    assert found["Translate"] is None and found["Snapshot"] is not None


def test_the_recovery_point_objective_is_a_setting() -> None:
    raw = environment("dev")  # snapshots every hour: two intervals unless said
    assert EnvironmentConfig.model_validate(raw, context={"name": "dev"}).rpo_minutes() == 120
    raw["snapshotMaxAgeMinutes"] = 30
    assert EnvironmentConfig.model_validate(raw, context={"name": "dev"}).rpo_minutes() == 30


# Refusals: what cannot work once deployed fails the synth, naming the environment and the fix.


@pytest.mark.parametrize(
    "servers", ["10.0.2.10:9092", "172.20.1.5:9092", "192.168.7.7:9092", "10.0.2.10:9092,kafka.example.com:9092"]
)
def test_private_brokers_without_a_network_are_refused(servers: str) -> None:
    raw = environment("dev")
    for key in ("vpcId", "availabilityZones", "subnetIds", "securityGroupIds", "routeTableIds", "createVpcEndpoints"):
        raw.pop(key)
    raw["source"] = {"name": "dev-primary", "bootstrapServers": "kafka.example.com:9092", "auth": "plaintext"}
    raw["target"]["bootstrapServers"] = servers
    with pytest.raises(SystemExit, match=r"environment dev in cdk\.json is invalid") as refused:
        only("dev", raw)
    assert (
        "put the functions in the cluster's VPC: set network (vpcId, subnetIds, securityGroupIds) for cluster dev-dr"
        in str(refused.value)
    )


def test_msk_brokers_without_a_network_are_refused() -> None:
    """MSK broker names resolve to the cluster's private addresses: they are VPC-only."""
    raw = environment("prod")
    for key in ("vpcId", "availabilityZones", "subnetIds", "securityGroupIds", "routeTableIds", "createVpcEndpoints"):
        raw.pop(key)
    with pytest.raises(SystemExit, match=r"set network .* for cluster prod-dr"):
        only("prod", raw)


@pytest.mark.parametrize(
    ("port", "auth", "message"),
    [
        (9096, "iam", "MSK serves auth 'scram' on port 9096, not 'iam': set auth 'scram', or use port 9098 for 'iam'"),
        (9098, "tls", "MSK serves auth 'iam' on port 9098, not 'tls': set auth 'iam', or use port 9094 for 'tls'"),
        (
            9094,
            "scram",
            "MSK serves auth 'tls' on port 9094, not 'scram': set auth 'tls', or use port 9096 for 'scram'",
        ),
    ],
)
def test_an_auth_msk_does_not_serve_on_the_port_is_refused(port: int, auth: str, message: str) -> None:
    raw = environment("prod")
    raw["target"].update(
        {
            "bootstrapServers": f"b-1.dr.def456.c3.kafka.eu-central-1.amazonaws.com:{port}",
            "auth": auth,
            "scramSecretArn": SCRAM_SECRET,
        }
    )
    with pytest.raises(SystemExit, match=r"environment prod in cdk\.json is invalid") as refused:
        only("prod", raw)
    assert f"cluster prod-dr: {message}" in str(refused.value)


def test_msk_public_endpoints_need_no_network_and_have_their_own_ports() -> None:
    raw = environment("prod")
    for key in ("vpcId", "availabilityZones", "subnetIds", "securityGroupIds", "routeTableIds", "createVpcEndpoints"):
        raw.pop(key)
    raw["target"]["bootstrapServers"] = "b-1-public.dr.def456.c3.kafka.eu-central-1.amazonaws.com:9198"
    found = vpc_configs(Template.from_stack(stack_of(only("prod", raw), "prod")))
    assert found["Commit"] is None
    raw["target"]["bootstrapServers"] = "b-1-public.dr.def456.c3.kafka.eu-central-1.amazonaws.com:9194"
    with pytest.raises(
        SystemExit, match="MSK serves auth 'tls' on port 9194, not 'iam': set auth 'tls', or use port 9198"
    ):
        only("prod", raw)


def test_a_self_managed_broker_may_serve_any_auth_on_any_port() -> None:
    raw = environment("dev")
    raw["target"] = {"name": "dev-dr", "bootstrapServers": "10.0.2.10:9094", "auth": "plaintext"}
    assert only("dev", raw)


def test_an_arn_of_another_region_than_the_brokers_is_refused() -> None:
    raw = environment("prod")
    raw["target"]["arn"] = raw["target"]["arn"].replace(":eu-central-1:", ":eu-west-1:")
    with pytest.raises(
        SystemExit,
        match=re.escape(
            "broker b-1.dr.def456.c3.kafka.eu-central-1.amazonaws.com is in eu-central-1 but the arn names eu-west-1"
        ),
    ):
        only("prod", raw)


def test_endpoints_without_route_tables_are_refused() -> None:
    raw = environment("prod")
    raw.pop("routeTableIds")
    with pytest.raises(SystemExit, match="network vpc-0123456789abcdef0: createVpcEndpoints needs routeTableIds"):
        only("prod", raw)
    raw = environment("prod")
    raw["source"]["network"].pop("routeTableIds")
    with pytest.raises(
        SystemExit,
        match=r"environment prod in cdk\.json is invalid[\s\S]*source\.network[\s\S]*"
        r"createVpcEndpoints needs routeTableIds",
    ):
        only("prod", raw)


def test_a_network_of_another_region_than_the_stack_is_refused() -> None:
    """A VPC id is usable only in its own region: the primary's VPC cannot hold a function of the DR stack."""
    raw = environment("prod")
    raw["source"]["network"]["availabilityZones"] = ["eu-west-1a", "eu-west-1b"]
    with pytest.raises(SystemExit, match=r"network vpc-0123456789abcdef0 .* is not in the stack's region eu-central-1"):
        only("prod", raw)


def test_none_turns_a_schedule_off_and_null_cannot_be_relied_on() -> None:
    """The CDK drops null context values (a null snapshotSchedule arrives as no key: the hourly
    default), so "none" is how a schedule is turned off; the snapshot rule and its alarms go with it."""
    raw = environment("dev")
    raw["snapshotSchedule"], raw["drillSchedule"] = "none", "None"
    config = EnvironmentConfig.model_validate(raw, context={"name": "dev"})
    assert config.snapshot_schedule is None and config.drill_schedule is None
    t = Template.from_stack(stack_of(only("dev", raw), "dev"))
    assert not t.find_resources("AWS::Events::Rule", {"Properties": {"ScheduleExpression": "rate(1 hour)"}})
    assert not [a for a in t.find_resources("AWS::CloudWatch::Alarm").values() if "Snapshot" in json.dumps(a)]
    raw["snapshotSchedule"] = None
    t = Template.from_stack(stack_of(only("dev", raw), "dev"))  # what null turns into: the default
    assert t.find_resources("AWS::Events::Rule", {"Properties": {"ScheduleExpression": "rate(1 hour)"}})


TLS_SECRET = "arn:aws:secretsmanager:eu-central-1:222222222222:secret:dr-client-certificate-AbCdEf"


def test_a_mutual_tls_cluster_hands_its_functions_the_client_certificate_secret_and_nothing_more() -> None:
    """auth tls on MSK's port 9094 with tlsSecretArn: the target's functions get the secret's ARN under
    the name their settings read, may read that secret alone, and reach Secrets Manager from the VPC;
    the source's functions get neither. A client certificate on another auth is refused at synth."""
    raw = environment("prod")
    raw["target"].update(
        {
            "bootstrapServers": "b-1.dr.def456.c3.kafka.eu-central-1.amazonaws.com:9094",
            "auth": "tls",
            "tlsSecretArn": TLS_SECRET,
        }
    )
    app = only("prod", raw)
    t = Template.from_stack(stack_of(app, "prod"))
    by_handler = {
        fn["Properties"]["Handler"].split(".")[1]: fn["Properties"]["Environment"]["Variables"]
        for fn in t.find_resources("AWS::Lambda::Function").values()
    }
    for name in ("lock", "translate", "check_empty", "commit"):
        found = by_handler[name]
        assert found["TARGET_TLS_SECRET_ARN"] == TLS_SECRET and found["TARGET_SECURITY_PROTOCOL"] == "SSL", name
    assert "TARGET_TLS_SECRET_ARN" not in by_handler["snapshot"]
    readers = [
        s["Resource"]
        for p in t.find_resources("AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s["Action"] == "secretsmanager:GetSecretValue"
    ]
    assert readers and set(readers) == {TLS_SECRET}
    assert "secretsmanager" in endpoints(t)
    raw["target"].update({"bootstrapServers": "b-1.dr.def456.c3.kafka.eu-central-1.amazonaws.com:9098", "auth": "iam"})
    with pytest.raises(SystemExit, match="'tlsSecretArn' \\(a client certificate\\) is for auth 'tls'"):
        only("prod", raw)
