"""The per-environment stack. Today: the snapshot bucket, the snapshot function and its schedule.
The workflow issue adds the state machine, the table and the other functions to this stack."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import (
    BundlingOptions,
    DockerImage,
    Duration,
    RemovalPolicy,
    Stack,
)
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.bundling import LocalPipBundling
from infra.config import ClusterConfig, EnvironmentConfig

__all__ = ["FUNCTIONS_DIR", "OffsetRestoreStack"]

FUNCTIONS_DIR = Path(__file__).resolve().parent.parent / "functions"
RUNTIME = lambda_.Runtime.PYTHON_3_12


class OffsetRestoreStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, env_name: str, config: EnvironmentConfig) -> None:
        super().__init__(scope, construct_id)
        self.config = config
        self.key = kms.Key(self, "Key", enable_key_rotation=True, description=f"offset-restore {env_name}")
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.KMS,
            encryption_key=self.key,
            bucket_key_enabled=True,
            versioned=True,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-snapshots",
                    prefix="snapshots/",
                    expiration=Duration.days(config.snapshot_retention_days),
                    noncurrent_version_expiration=Duration.days(7),
                )
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.code = lambda_.Code.from_asset(
            str(FUNCTIONS_DIR),
            exclude=["**/__pycache__", "*.egg-info"],
            bundling=BundlingOptions(
                image=DockerImage.from_registry("local-bundling-only"),
                local=LocalPipBundling(FUNCTIONS_DIR, RUNTIME.name.removeprefix("python")),
            ),
        )
        self.snapshot_function = self._function(
            "Snapshot",
            "handlers.snapshot.handler",
            {**config.source.environment("SOURCE"), "SNAPSHOT_BUCKET": self.bucket.bucket_name},
            timeout=Duration.minutes(15),
        )
        self.bucket.grant_read_write(self.snapshot_function)
        self._grant_kafka_read(self.snapshot_function, config.source)
        if config.snapshot_schedule:
            events.Rule(
                self,
                "SnapshotSchedule",
                schedule=events.Schedule.expression(config.snapshot_schedule),
                targets=[targets.LambdaFunction(self.snapshot_function, event=events.RuleTargetInput.from_object({}))],
            )

    def _network(self) -> dict[str, object]:
        c = self.config
        if not c.vpc_id:
            return {}
        vpc = ec2.Vpc.from_vpc_attributes(
            self, "Vpc", vpc_id=c.vpc_id, availability_zones=c.availability_zones, private_subnet_ids=c.subnet_ids
        )
        return {
            "vpc": vpc,
            "vpc_subnets": ec2.SubnetSelection(
                subnets=[ec2.Subnet.from_subnet_id(self, f"Subnet{i}", s) for i, s in enumerate(c.subnet_ids)]
            ),
            "security_groups": [
                ec2.SecurityGroup.from_security_group_id(self, f"Sg{i}", g) for i, g in enumerate(c.security_group_ids)
            ],
        }

    def _function(self, name: str, handler: str, environment: dict[str, str], *, timeout: Duration) -> lambda_.Function:
        log_group = logs.LogGroup(
            self,
            f"{name}Logs",
            retention=_retention(self.config.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        return lambda_.Function(
            self,
            f"{name}Function",
            runtime=RUNTIME,
            architecture=lambda_.Architecture.X86_64,
            handler=handler,
            code=self.code,
            memory_size=1024,
            timeout=timeout,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            environment={
                **environment,
                "POWERTOOLS_SERVICE_NAME": "offset-restore",
                "POWERTOOLS_METRICS_NAMESPACE": "OffsetRestore",
            },
            **self._network(),  # type: ignore[arg-type]
        )

    def _grant_kafka_read(self, function: lambda_.Function, cluster: ClusterConfig) -> None:
        """MSK IAM actions to read groups, offsets and records, scoped to the cluster's ARNs."""
        if cluster.scram_secret_arn:
            function.add_to_role_policy(
                iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[cluster.scram_secret_arn])
            )
        if cluster.auth != "iam" or not cluster.arn:
            return
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["kafka-cluster:Connect", "kafka-cluster:DescribeCluster"], resources=[cluster.arn]
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["kafka-cluster:DescribeTopic", "kafka-cluster:ReadData"],
                resources=cluster.resource_arns("topic"),
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["kafka-cluster:DescribeGroup"], resources=cluster.resource_arns("group"))
        )


_RETENTION_DAYS = [
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
]


def _retention(days: int) -> logs.RetentionDays:
    """The shortest CloudWatch retention that keeps logs at least ``days`` (enum order = day order)."""
    members = [m for m in logs.RetentionDays if m.name != "INFINITE"]
    return next((m for d, m in zip(_RETENTION_DAYS, members, strict=True) if d >= days), members[-1])
