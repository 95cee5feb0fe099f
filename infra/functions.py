"""Functions: the one code asset, a function per handler (each with its own role and log group), and
what each may touch — the bucket and table as its step needs, the Kafka cluster it reads or writes —
and where it runs: in the network of that cluster (infra/network.py), or outside any VPC.

Which handler a function runs comes from ``offset_restore_handlers.wiring``, the list the state
machine's placeholders and the local runner also follow; what differs per function (its settings
and its grants) is written here, once per function.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from offset_restore.apply.locks import LAMBDA_TIMEOUT_S
from offset_restore.workflow.environment import (
    APPROVAL,
    APPROVAL_TIMEOUT_S,
    NAMESPACE,
    POWERTOOLS_METRICS_NAMESPACE,
    POWERTOOLS_SERVICE_NAME,
    RESTORE_BUCKET,
    SERVICE,
    SNAPSHOT_BUCKET,
    SOURCE,
    STACK_NAME,
    TABLE_NAME,
    TARGET,
    TOPIC_ARN,
)
from offset_restore_handlers.wiring import MEMORY_MB, SNAPSHOT_HANDLER, TASK_HANDLERS

from infra.bundling import lambda_code
from infra.config import ClusterConfig, EnvironmentConfig
from infra.network import Networks
from infra.retention import retention
from infra.storage import Storage

__all__ = ["FUNCTIONS_DIR", "KAFKA_READ", "KAFKA_WRITE", "RUNTIME", "Functions"]

FUNCTIONS_DIR = Path(__file__).resolve().parent.parent / "functions"
RUNTIME = lambda_.Runtime.PYTHON_3_12
KAFKA_READ = ("kafka-cluster:DescribeTopic", "kafka-cluster:ReadData", "kafka-cluster:DescribeGroup")
KAFKA_WRITE = ("kafka-cluster:AlterGroup", "kafka-cluster:DeleteGroup")
KAFKA_FENCE = ("kafka-cluster:DescribeTransactionalId", "kafka-cluster:AlterTransactionalId")
"""The target's write fence (offset_restore/kafka/fence.py): its transactional ids, ``offset-restore-*``."""


class Functions:
    """``tasks``: the workflow's functions by the name the state machine uses; ``snapshot``: the
    scheduled snapshot."""

    def __init__(self, stack: Stack, config: EnvironmentConfig, storage: Storage) -> None:
        self.stack, self.config = stack, config
        self.networks = Networks(stack, config)
        self.code = lambda_code(FUNCTIONS_DIR, RUNTIME.name.removeprefix("python"))
        source_env = config.source.environment(SOURCE)
        target_env = config.target.environment(TARGET)
        table_env = {TABLE_NAME: storage.table.table_name}
        bucket_env = {RESTORE_BUCKET: storage.bucket.bucket_name}
        # The names are workflow.environment's, the ones the functions' settings models read.
        environments = {
            "Validate": {
                SOURCE.name: config.source.name,
                TARGET.name: config.target.name,
                APPROVAL: config.approval,
                APPROVAL_TIMEOUT_S: str(config.approval_timeout_minutes * 60),
            },
            # The approval gate: its question in the table, the lock it holds while it waits, the topic it asks on.
            "Gate": {
                **table_env,
                TARGET.name: config.target.name,
                TOPIC_ARN: storage.topic.topic_arn,
                STACK_NAME: stack.stack_name,
            },
            # The lock is keyed by the id the target's brokers report: its acquire connects to them.
            "Lock": {**target_env, **table_env},
            "Prepare": {**table_env, **bucket_env},
            "Translate": {**target_env, **table_env, **bucket_env},
            "Summarize": {**table_env, **bucket_env},
            "CheckEmpty": {**target_env, **table_env, **bucket_env},
            "Commit": {**target_env, **table_env, **bucket_env},
            "Report": {**table_env, **bucket_env, TOPIC_ARN: storage.topic.topic_arn},
            # A migration's steps on the source: in its network, writing where the Snapshot function writes.
            "Source": {
                **source_env,
                **table_env,
                **bucket_env,  # the restore's commit index: the last look's held groups
                SNAPSHOT_BUCKET: storage.bucket.bucket_name,
                TARGET.name: config.target.name,
            },
        }
        self.snapshot = self._function(
            "Snapshot", SNAPSHOT_HANDLER, {**source_env, SNAPSHOT_BUCKET: storage.bucket.bucket_name}
        )
        self.tasks = {
            name: self._function(name, handler, environments[name]) for name, handler in TASK_HANDLERS.items()
        }
        self._grant_storage(storage)
        self._grant_kafka(self.snapshot, config.source, KAFKA_READ)
        self._grant_kafka(self.tasks["Source"], config.source, KAFKA_READ)
        self._grant_kafka(
            self.tasks["Translate"], config.target, ("kafka-cluster:DescribeTopic", "kafka-cluster:ReadData")
        )
        self._grant_kafka(self.tasks["Lock"], config.target, KAFKA_FENCE)  # the cluster's id, then its fence
        self._grant_kafka(self.tasks["CheckEmpty"], config.target, ("kafka-cluster:DescribeGroup",))
        self._grant_kafka(self.tasks["Commit"], config.target, KAFKA_READ + KAFKA_WRITE + KAFKA_FENCE)
        self.endpoints = self.networks.add_endpoints()

    def _grant_storage(self, storage: Storage) -> None:
        tasks, bucket, table = self.tasks, storage.bucket, storage.table
        bucket.grant_read_write(self.snapshot)
        bucket.grant_read_write(tasks["Prepare"])
        bucket.grant_read(tasks["Translate"])
        bucket.grant_read_write(tasks["Summarize"])  # writes the commit index
        bucket.grant_read(tasks["CheckEmpty"])
        bucket.grant_read(tasks["Commit"])
        bucket.grant_read_write(tasks["Report"])
        bucket.grant_read_write(tasks["Source"])  # the final snapshot
        # Prepare records the run's input (META); CheckEmpty and Source renew the run's lock at every poll.
        for name in ("Lock", "Prepare", "Translate", "CheckEmpty", "Commit", "Source", "Gate"):
            table.grant_read_write_data(tasks[name])
        for name in ("Summarize", "Report"):
            table.grant_read_data(tasks[name])
        storage.topic.grant_publish(tasks["Report"])
        storage.topic.grant_publish(tasks["Gate"])

    def _network(self, environment: dict[str, str]) -> dict[str, object]:
        """The network of the cluster the function talks to: the snapshot and a migration's Source steps
        read only the source, the workflow's other Kafka functions only the target; the others run outside
        any VPC."""
        for variables, cluster in ((SOURCE, self.config.source), (TARGET, self.config.target)):
            if variables.bootstrap_servers in environment:
                return self.networks.function_options(cluster)
        return {}

    def _function(self, name: str, handler: str, environment: dict[str, str]) -> lambda_.Function:
        log_group = logs.LogGroup(
            self.stack,
            f"{name}Logs",
            retention=retention(self.config.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        needs_kafka = any(v.bootstrap_servers in environment for v in (SOURCE, TARGET))
        return lambda_.Function(
            self.stack,
            f"{name}Function",
            runtime=RUNTIME,
            architecture=lambda_.Architecture.X86_64,
            handler=handler,
            code=self.code,
            memory_size=MEMORY_MB[name],
            timeout=Duration.seconds(LAMBDA_TIMEOUT_S) if needs_kafka or name == "Prepare" else Duration.minutes(2),
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            environment={
                **environment,
                POWERTOOLS_SERVICE_NAME: SERVICE,
                POWERTOOLS_METRICS_NAMESPACE: NAMESPACE,
            },
            **self._network(environment),  # type: ignore[arg-type]
        )

    def _grant_kafka(self, function: lambda_.Function, cluster: ClusterConfig, actions: tuple[str, ...]) -> None:
        """MSK IAM actions scoped to the cluster's own ARNs (its topics and its groups)."""
        self._grant_secrets(function, cluster)
        if cluster.auth != "iam" or not cluster.arn:
            return
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["kafka-cluster:Connect", "kafka-cluster:DescribeCluster"], resources=[cluster.arn]
            )
        )
        topic_actions = [a for a in actions if a in ("kafka-cluster:DescribeTopic", "kafka-cluster:ReadData")]
        fence_actions = [a for a in actions if a in KAFKA_FENCE]
        group_actions = [a for a in actions if a not in topic_actions and a not in fence_actions]
        if fence_actions:
            function.add_to_role_policy(
                iam.PolicyStatement(
                    actions=fence_actions, resources=cluster.resource_arns("transactional-id", "offset-restore-*")
                )
            )
            # Taking the fence confirms each lane with an empty transaction (AddOffsetsToTxn, READ on a group
            # named as the lane: MSK's AlterGroup); it adds no offsets to that group.
            function.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["kafka-cluster:AlterGroup"], resources=cluster.resource_arns("group", "offset-restore-*")
                )
            )
        if topic_actions:
            function.add_to_role_policy(
                iam.PolicyStatement(actions=topic_actions, resources=cluster.resource_arns("topic"))
            )
        if group_actions:
            function.add_to_role_policy(
                iam.PolicyStatement(actions=group_actions, resources=cluster.resource_arns("group"))
            )

    @staticmethod
    def _grant_secrets(function: lambda_.Function, cluster: ClusterConfig) -> None:
        """The cluster's secrets (SCRAM credentials, a client certificate), and their keys for decryption
        through Secrets Manager (of the secret's region) only."""
        for secret, key in (
            (cluster.scram_secret_arn, cluster.scram_secret_key_arn),
            (cluster.tls_secret_arn, cluster.tls_secret_key_arn),
        ):
            if not secret:
                continue
            read = iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[secret])
            function.add_to_role_policy(read)
            if key:
                region = secret.split(":")[3]
                function.add_to_role_policy(
                    iam.PolicyStatement(
                        actions=["kms:Decrypt"],
                        resources=[key],
                        conditions={"StringEquals": {"kms:ViaService": f"secretsmanager.{region}.amazonaws.com"}},
                    )
                )
