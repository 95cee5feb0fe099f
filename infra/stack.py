"""The per-environment stack, composed of its capabilities, each in its own module: storage (key,
bucket, table, topic), functions (one code asset, each function its own role), the workflow (the
state machine from the ASL file), triggers (schedules, the failover alarm, the lock release) and
monitoring (alarms, dashboard). What stays here is what spans them: the outputs the operator's CLI
reads and the cdk-nag findings accepted.

The capability modules add their resources to the stack's own scope rather than to nested
constructs: a resource's CloudFormation logical id is derived from its construct path, so nesting
would rename every resource of a deployed stack, and CloudFormation would create a new bucket and
table beside the retained old ones — a later rollback would not find the offsets a run recorded. A
test pins the logical ids of the resources that hold state.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, CfnOutput, Environment, Stack, Token, Validations
from constructs import Construct

from infra.config import EnvironmentConfig
from infra.functions import FUNCTIONS_DIR, KAFKA_READ, KAFKA_WRITE, Functions
from infra.monitoring import add_monitoring
from infra.storage import Storage
from infra.triggers import add_triggers
from infra.workflow import ASL_FILE, state_machine

__all__ = ["ASL_FILE", "FUNCTIONS_DIR", "KAFKA_READ", "KAFKA_WRITE", "OffsetRestoreStack"]


class OffsetRestoreStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env_name: str,
        config: EnvironmentConfig,
        env: Environment | None = None,
    ) -> None:
        super().__init__(scope, construct_id, env=env)
        self.config = config
        self.storage = Storage(self, env_name, config)
        self.functions = Functions(self, config, self.storage)
        self.state_machine = state_machine(self, env_name, config, self.functions.tasks)
        self._outputs(config)
        add_triggers(self, config, self.state_machine, self.functions.tasks["Lock"], self.functions.snapshot)
        add_monitoring(
            self,
            env_name,
            config,
            self.state_machine,
            self.storage.topic,
            self.functions.tasks.values(),
            self.functions.snapshot,
        )
        self._acknowledge(config)

    def _outputs(self, config: EnvironmentConfig) -> None:
        """What the operator's CLI reads by stack name (``unlock --stack``, ``start --stack``): the names
        it would otherwise be asked to copy from the console in the middle of an incident."""
        outputs = {
            "LockTableName": self.storage.table.table_name,
            "TargetClusterName": config.target.name,
            "StateMachineArn": self.state_machine.state_machine_arn,
            "BucketName": self.storage.bucket.bucket_name,
        }
        for name, value in outputs.items():
            CfnOutput(self, name, value=value)

    def _acknowledge(self, config: EnvironmentConfig) -> None:
        """cdk-nag findings accepted on purpose, each with the reason a reviewer needs."""
        bucket = self.resolve(self.get_logical_id(self.storage.bucket.node.default_child))  # type: ignore[arg-type]
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
        region = "<AWS::Region>" if Token.is_unresolved(self.region) else self.region
        account = "<AWS::AccountId>" if Token.is_unresolved(self.account) else self.account
        reasons[
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:{region}:{account}:"
            f"execution:offset-restore-{self.node.id.removeprefix('offset-restore-')}/*]"
        ] = "the child executions of this state machine's own distributed Map"
        reasons[
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:{region}:{account}:"
            f"execution:offset-restore-{self.node.id.removeprefix('offset-restore-')}:*]"
        ] = "the Report step reads the history of the runs of this state machine only (the report's timeline)"
        for name, fn in self.functions.tasks.items():
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
                for kind in ("transactional-id", "group"):
                    fence = cluster.resource_arns(kind, "offset-restore-*")[0]  # type: ignore[arg-type]
                    reasons[f"AwsSolutions-IAM5[Resource::{fence}]"] = (
                        f"the write fence of cluster {cluster.name} only: its transactional ids (and the groups its "
                        "empty confirming transactions name) are offset-restore-<the Kafka cluster id the brokers "
                        "report>[-<lane>], which is not known at deploy time"
                    )
        self.acknowledged = reasons
        Validations.of(self).acknowledge(
            *(Acknowledgment(id=f"AwsSolutions::{rule}", reason=reason) for rule, reason in reasons.items())
        )
