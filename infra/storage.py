"""Storage: the deployment's key, bucket (snapshots, plans, reports), table (restores, locks) and
notification topic — everything that holds state across runs, so everything retained."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions

from infra.config import EnvironmentConfig

__all__ = ["Storage"]


class Storage:
    """Adds its resources to the stack's own scope (see infra/stack.py for why not a nested construct)."""

    def __init__(self, stack: Stack, env_name: str, config: EnvironmentConfig) -> None:
        self.key = kms.Key(stack, "Key", enable_key_rotation=True, description=f"offset-restore {env_name}")
        self.bucket = s3.Bucket(
            stack,
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
        self.table = dynamodb.Table(
            stack,
            "Table",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
            encryption_key=self.key,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute="ttl",
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.topic = sns.Topic(stack, "Notifications", master_key=self.key, enforce_ssl=True)
        for address in config.notification_emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(address))
