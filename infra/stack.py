"""The per-environment stack: bucket, table, topic, the functions (one code asset, each its own role),
the state machine from the ASL file, schedules, the failover alarm rule, a dashboard and alarms."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import (
    Acknowledgment,
    ArnFormat,
    BundlingOptions,
    CfnOutput,
    DockerImage,
    Duration,
    RemovalPolicy,
    Stack,
    Validations,
)
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.bundling import LocalPipBundling
from infra.config import ClusterConfig, EnvironmentConfig

__all__ = ["ASL_FILE", "FUNCTIONS_DIR", "KAFKA_READ", "KAFKA_WRITE", "OffsetRestoreStack"]

ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS_DIR = ROOT / "functions"
ASL_FILE = ROOT / "infra" / "statemachine" / "offset_restore.asl.json"
RUNTIME = lambda_.Runtime.PYTHON_3_12
KAFKA_READ = ("kafka-cluster:DescribeTopic", "kafka-cluster:ReadData", "kafka-cluster:DescribeGroup")
KAFKA_WRITE = ("kafka-cluster:AlterGroup", "kafka-cluster:DeleteGroup")


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
        self.table = dynamodb.Table(
            self,
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
        self.topic = sns.Topic(self, "Notifications", master_key=self.key, enforce_ssl=True)
        for address in config.notification_emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(address))
        self.code = lambda_.Code.from_asset(
            str(FUNCTIONS_DIR),
            exclude=["**/__pycache__", "*.egg-info"],
            bundling=BundlingOptions(
                image=DockerImage.from_registry("local-bundling-only"),
                local=LocalPipBundling(FUNCTIONS_DIR, RUNTIME.name.removeprefix("python")),
            ),
        )
        source_env = config.source.environment("SOURCE")
        target_env = config.target.environment("TARGET")
        table_env = {"TABLE_NAME": self.table.table_name}
        bucket_env = {"RESTORE_BUCKET": self.bucket.bucket_name}
        f = self._function
        self.snapshot_function = f("Snapshot", "snapshot", {**source_env, "SNAPSHOT_BUCKET": self.bucket.bucket_name})
        functions = {
            "Validate": f(
                "Validate",
                "validate",
                {"SOURCE_CLUSTER_NAME": config.source.name, "TARGET_CLUSTER_NAME": config.target.name},
            ),
            "Lock": f("Lock", "lock", {**table_env, "TARGET_CLUSTER_NAME": config.target.name}),
            "Prepare": f("Prepare", "prepare", {**table_env, **bucket_env}),
            "Translate": f("Translate", "translate", {**target_env, **table_env, **bucket_env}),
            "Summarize": f("Summarize", "summarize", {**table_env, **bucket_env}),
            "CheckEmpty": f("CheckEmpty", "check_empty", {**target_env, **table_env, **bucket_env}),
            "Commit": f("Commit", "commit", {**target_env, **table_env, **bucket_env}),
            "Report": f("Report", "report", {**table_env, **bucket_env, "TOPIC_ARN": self.topic.topic_arn}),
        }
        self.functions = functions
        self.bucket.grant_read_write(self.snapshot_function)
        self.bucket.grant_read_write(functions["Prepare"])
        self.bucket.grant_read(functions["Translate"])
        self.bucket.grant_read_write(functions["Summarize"])  # writes the commit index
        self.bucket.grant_read(functions["CheckEmpty"])
        self.bucket.grant_read(functions["Commit"])
        self.bucket.grant_read_write(functions["Report"])
        # Prepare records the run's input (META); CheckEmpty renews the run's lock at every poll.
        for name in ("Lock", "Prepare", "Translate", "CheckEmpty", "Commit"):
            self.table.grant_read_write_data(functions[name])
        for name in ("Summarize", "Report"):
            self.table.grant_read_data(functions[name])
        self.topic.grant_publish(functions["Report"])
        self._grant_kafka(self.snapshot_function, config.source, KAFKA_READ)
        self._grant_kafka(
            functions["Translate"], config.target, ("kafka-cluster:DescribeTopic", "kafka-cluster:ReadData")
        )
        self._grant_kafka(functions["CheckEmpty"], config.target, ("kafka-cluster:DescribeGroup",))
        self._grant_kafka(functions["Commit"], config.target, KAFKA_READ + KAFKA_WRITE)

        machine_logs = logs.LogGroup(
            self, "WorkflowLogs", retention=_retention(config.log_retention_days), removal_policy=RemovalPolicy.DESTROY
        )
        machine_name = f"offset-restore-{env_name}"
        self.state_machine = sfn.StateMachine(
            self,
            "Workflow",
            state_machine_name=machine_name,
            definition_body=sfn.DefinitionBody.from_file(str(ASL_FILE)),
            definition_substitutions={f"{name}FunctionArn": fn.function_arn for name, fn in functions.items()},
            logs=sfn.LogOptions(destination=machine_logs, level=sfn.LogLevel.ALL, include_execution_data=False),
            tracing_enabled=True,
            timeout=Duration.hours(12),
        )
        for fn in functions.values():
            fn.grant_invoke(self.state_machine)
        self._outputs(config)
        # The distributed Map (Translate) runs its items as child executions of this state machine.
        machine_arn = self.format_arn(
            service="states",
            resource="stateMachine",
            resource_name=machine_name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        children = self.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{machine_name}/*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(actions=["states:StartExecution"], resources=[machine_arn])
        )
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(actions=["states:DescribeExecution", "states:StopExecution"], resources=[children])
        )
        self._triggers(config)
        self._monitoring(env_name)
        self._acknowledge(config)

    def _outputs(self, config: EnvironmentConfig) -> None:
        """What the operator's CLI reads by stack name (``unlock --stack``, ``start --stack``): the names
        it would otherwise be asked to copy from the console in the middle of an incident."""
        outputs = {
            "LockTableName": self.table.table_name,
            "TargetClusterName": config.target.name,
            "StateMachineArn": self.state_machine.state_machine_arn,
            "BucketName": self.bucket.bucket_name,
        }
        for name, value in outputs.items():
            CfnOutput(self, name, value=value)

    def _acknowledge(self, config: EnvironmentConfig) -> None:
        """cdk-nag findings accepted on purpose, each with the reason a reviewer needs."""
        bucket = self.resolve(self.get_logical_id(self.bucket.node.default_child))  # type: ignore[arg-type]
        managed = "arn:<AWS::Partition>:iam::aws:policy/service-role"
        reasons = {
            "AwsSolutions-L1": "the functions run Python 3.12, the version the code asset is bundled for; the "
            "runtime and the bundling are upgraded together",
            "AwsSolutions-S1": "server access logs would need a second bucket; object access is audited with "
            "CloudTrail data events, and the bucket holds only snapshots, work items and reports",
            f"AwsSolutions-IAM4[Policy::{managed}/AWSLambdaBasicExecutionRole]": (
                "the AWS managed policy grants exactly what a function needs to write its own logs"
            ),
            f"AwsSolutions-IAM4[Policy::{managed}/AWSLambdaVPCAccessExecutionRole]": (
                "the AWS managed policy grants exactly the network interfaces a function in a VPC needs"
            ),
            "AwsSolutions-IAM5[Resource::*]": "X-Ray PutTraceSegments/PutTelemetryRecords and the CloudWatch Logs "
            "delivery APIs of the state machine accept no resource but *",
            f"AwsSolutions-IAM5[Resource::<{bucket}.Arn>/*]": "objects of this deployment's own bucket",
            "AwsSolutions-IAM5[Action::kms:ReEncrypt*]": "CDK's grant on this stack's own key",
            "AwsSolutions-IAM5[Action::kms:GenerateDataKey*]": "CDK's grant on this stack's own key",
            "AwsSolutions-IAM5[Action::s3:GetObject*]": "CDK's read grant, limited to this deployment's bucket",
            "AwsSolutions-IAM5[Action::s3:GetBucket*]": "CDK's read grant, limited to this deployment's bucket",
            "AwsSolutions-IAM5[Action::s3:List*]": "CDK's read grant, limited to this deployment's bucket",
            "AwsSolutions-IAM5[Action::s3:DeleteObject*]": "CDK's write grant, limited to this deployment's bucket",
            "AwsSolutions-IAM5[Action::s3:Abort*]": "CDK's write grant (multipart uploads), limited to this bucket",
        }
        reasons[
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:"
            f"execution:offset-restore-{self.node.id.removeprefix('offset-restore-')}/*]"
        ] = "the child executions of this state machine's own distributed Map"
        for name, fn in self.functions.items():
            logical = self.resolve(self.get_logical_id(fn.node.default_child))  # type: ignore[arg-type]
            reasons[f"AwsSolutions-IAM5[Resource::<{logical}.Arn>:*]"] = (
                f"the state machine invokes the versions of its own {name} function"
            )
        for cluster in (config.source, config.target):
            if cluster.arn:
                for kind in ("topic", "group"):
                    reasons[f"AwsSolutions-IAM5[Resource::{cluster.resource_arns(kind)[0]}]"] = (
                        f"every {kind} of cluster {cluster.name} only: which consumer groups and topics a "
                        "restore covers is decided per run, not at deploy time"
                    )
        self.acknowledged = reasons
        Validations.of(self).acknowledge(
            *(Acknowledgment(id=f"AwsSolutions::{rule}", reason=reason) for rule, reason in reasons.items())
        )

    def _triggers(self, config: EnvironmentConfig) -> None:
        # A stopped, timed-out or failed execution never reaches its own ReleaseLock: release its lock
        # here (the Lock function releases only what that execution holds).
        events.Rule(
            self,
            "ReleaseLockOnStop",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=["Step Functions Execution Status Change"],
                detail={
                    "status": ["ABORTED", "TIMED_OUT", "FAILED"],
                    "stateMachineArn": [self.state_machine.state_machine_arn],
                },
            ),
            targets=[
                targets.LambdaFunction(
                    self.functions["Lock"],
                    event=events.RuleTargetInput.from_object(
                        {
                            "action": "release",
                            "restore_id": events.EventField.from_path("$.detail.name"),
                            "target_cluster": config.target.name,
                            "owner": events.EventField.from_path("$.detail.executionArn"),
                        }
                    ),
                )
            ],
        )
        if config.snapshot_schedule:
            events.Rule(
                self,
                "SnapshotSchedule",
                schedule=events.Schedule.expression(config.snapshot_schedule),
                targets=[targets.LambdaFunction(self.snapshot_function, event=events.RuleTargetInput.from_object({}))],
            )
        if config.drill_schedule:
            events.Rule(
                self,
                "DrillSchedule",
                schedule=events.Schedule.expression(config.drill_schedule),
                targets=[
                    targets.SfnStateMachine(
                        self.state_machine,
                        input=events.RuleTargetInput.from_object(
                            {"mode": "plan", "trigger": {"drill": True, "time": events.EventField.time}}
                        ),
                    )
                ],
            )
        if config.failover_alarm_names:
            events.Rule(
                self,
                "FailoverAlarm",
                event_pattern=events.EventPattern(
                    source=["aws.cloudwatch"],
                    detail_type=["CloudWatch Alarm State Change"],
                    detail={"alarmName": config.failover_alarm_names, "state": {"value": ["ALARM"]}},
                ),
                targets=[
                    targets.SfnStateMachine(
                        self.state_machine,
                        input=events.RuleTargetInput.from_object(
                            {
                                "mode": config.failover_mode,
                                "wait": {"timeout_seconds": config.wait_timeout_seconds, "interval_seconds": 15},
                                "on_wait_timeout": "commit_empty",
                                "trigger": {
                                    "alarm": events.EventField.from_path("$.detail.alarmName"),
                                    "time": events.EventField.time,
                                },
                            }
                        ),
                    )
                ],
            )

    def _monitoring(self, env_name: str) -> None:
        failed = self.state_machine.metric_failed(period=Duration.minutes(5))
        timed_out = self.state_machine.metric_timed_out(period=Duration.minutes(5))
        for name, metric in (("RunFailed", failed), ("RunTimedOut", timed_out)):
            alarm = cloudwatch.Alarm(
                self,
                f"{name}Alarm",
                metric=metric,
                threshold=1,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            alarm.add_alarm_action(cloudwatch_actions.SnsAction(self.topic))
        dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=f"offset-restore-{env_name}")
        dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Runs", left=[self.state_machine.metric_succeeded(), failed, timed_out]),
            cloudwatch.GraphWidget(
                title="Groups",
                left=[
                    cloudwatch.Metric(
                        namespace="OffsetRestore", metric_name=name, dimensions_map={"service": "offset-restore"}
                    )
                    for name in ("GroupsCommitted", "GroupsSkipped", "EntriesPending", "EntriesUnmapped")
                ],
            ),
            cloudwatch.GraphWidget(title="Lambda errors", left=[fn.metric_errors() for fn in self.functions.values()]),
        )

    def _network(self) -> dict[str, object]:
        c = self.config
        if not c.vpc_id:
            return {}
        if not hasattr(self, "_vpc"):
            self._vpc = ec2.Vpc.from_vpc_attributes(
                self, "Vpc", vpc_id=c.vpc_id, availability_zones=c.availability_zones, private_subnet_ids=c.subnet_ids
            )
            self._subnets = [ec2.Subnet.from_subnet_id(self, f"Subnet{i}", s) for i, s in enumerate(c.subnet_ids)]
            self._groups = [
                ec2.SecurityGroup.from_security_group_id(self, f"Sg{i}", g) for i, g in enumerate(c.security_group_ids)
            ]
        return {
            "vpc": self._vpc,
            "vpc_subnets": ec2.SubnetSelection(subnets=self._subnets),
            "security_groups": self._groups,
        }

    def _function(self, name: str, module: str, environment: dict[str, str]) -> lambda_.Function:
        log_group = logs.LogGroup(
            self,
            f"{name}Logs",
            retention=_retention(self.config.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        needs_kafka = any(key.endswith("_BOOTSTRAP_SERVERS") for key in environment)
        return lambda_.Function(
            self,
            f"{name}Function",
            runtime=RUNTIME,
            architecture=lambda_.Architecture.X86_64,
            handler=f"offset_restore_handlers.{module}.handler",
            code=self.code,
            memory_size=1024 if needs_kafka else 512,
            timeout=Duration.minutes(15) if needs_kafka or name == "Prepare" else Duration.minutes(2),
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            environment={
                **environment,
                "POWERTOOLS_SERVICE_NAME": "offset-restore",
                "POWERTOOLS_METRICS_NAMESPACE": "OffsetRestore",
            },
            **(self._network() if needs_kafka else {}),  # type: ignore[arg-type]
        )

    def _grant_kafka(self, function: lambda_.Function, cluster: ClusterConfig, actions: tuple[str, ...]) -> None:
        """MSK IAM actions scoped to the cluster's own ARNs (its topics and its groups)."""
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
        topic_actions = [a for a in actions if a in ("kafka-cluster:DescribeTopic", "kafka-cluster:ReadData")]
        group_actions = [a for a in actions if a not in topic_actions]
        if topic_actions:
            function.add_to_role_policy(
                iam.PolicyStatement(actions=topic_actions, resources=cluster.resource_arns("topic"))
            )
        if group_actions:
            function.add_to_role_policy(
                iam.PolicyStatement(actions=group_actions, resources=cluster.resource_arns("group"))
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
