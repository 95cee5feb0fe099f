"""The names of the Lambda functions' environment variables, written once: the settings models read
them (``workflow.settings``), the stack sets them (``infra/functions.py``, ``infra/config.py``), and a
test checks that every variable a function's settings read is one its stack sets
(tests/infra/test_function_environments.py). A name typed twice drifts apart silently: the function
then falls back to a default, or fails only once deployed.

Plain strings, not an enum: the stack hands them to CDK (jsii), which wants ``str`` keys.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "APPROVAL",
    "APPROVAL_TIMEOUT_S",
    "DEFAULT_MODE",
    "KAFKA_CONNECT_TIMEOUT_S",
    "KAFKA_RETRIES",
    "LEFT_TO_DEFAULTS",
    "LOCK_RELEASE_FAILED",
    "NAMESPACE",
    "POWERTOOLS_METRICS_NAMESPACE",
    "POWERTOOLS_SERVICE_NAME",
    "REPORT_FAILED",
    "RESTORE_BUCKET",
    "SERVICE",
    "SNAPSHOT_BUCKET",
    "SNAPSHOT_PREFIX",
    "SOURCE",
    "STACK_NAME",
    "TABLE_NAME",
    "TARGET",
    "TOPIC_ARN",
    "ClusterVariables",
]

TABLE_NAME = "TABLE_NAME"
"""The project's one DynamoDB table: mappings, runs, the lock, the commit step's idempotency records."""
RESTORE_BUCKET = "RESTORE_BUCKET"
"""The bucket of the restores' folders (work items, commit index, reports); snapshots are in it too."""
SNAPSHOT_BUCKET = "SNAPSHOT_BUCKET"
"""Where the scheduled snapshot writes (the deployment's one bucket, as ``RESTORE_BUCKET``)."""
SNAPSHOT_PREFIX = "SNAPSHOT_PREFIX"
"""The snapshots' prefix in their bucket; the Snapshot and Prepare functions must agree on it."""
TOPIC_ARN = "TOPIC_ARN"
"""The notification topic the Report function publishes each run's summary to."""
DEFAULT_MODE = "DEFAULT_MODE"
"""The mode of an execution whose input names none (Validate)."""
APPROVAL = "APPROVAL"
"""Which runs wait for a person's approval before they write (Validate): ``never``, ``alarm`` (the runs the
failover alarm starts) or ``always`` (every apply and migrate)."""
STACK_NAME = "STACK_NAME"
"""The deployment's stack, named in what the approval gate asks (``--stack``)."""
APPROVAL_TIMEOUT_S = "APPROVAL_TIMEOUT_S"
"""How long the gate waits for an answer before the run ends with nothing written (Validate)."""
KAFKA_CONNECT_TIMEOUT_S = "KAFKA_CONNECT_TIMEOUT_S"
"""The Kafka clients' connect and request timeout, in seconds."""
KAFKA_RETRIES = "KAFKA_RETRIES"
"""Attempts after the first for a Kafka request that failed on a reset, a timeout or a moved coordinator."""

POWERTOOLS_SERVICE_NAME = "POWERTOOLS_SERVICE_NAME"
POWERTOOLS_METRICS_NAMESPACE = "POWERTOOLS_METRICS_NAMESPACE"
SERVICE = "offset-restore"
NAMESPACE = "OffsetRestore"
"""The values of the two powertools variables: the ``service`` and namespace the functions log and
emit metrics under (``workflow.observability``), which the stack also sets on every function."""


@dataclass(frozen=True)
class ClusterVariables:
    """The variables of one cluster, all under one prefix (``SOURCE_BOOTSTRAP_SERVERS``, ...)."""

    prefix: str

    @property
    def name(self) -> str:
        return f"{self.prefix}_CLUSTER_NAME"

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.prefix}_BOOTSTRAP_SERVERS"

    @property
    def security_protocol(self) -> str:
        return f"{self.prefix}_SECURITY_PROTOCOL"

    @property
    def sasl_mechanism(self) -> str:
        return f"{self.prefix}_SASL_MECHANISM"

    @property
    def sasl_secret_arn(self) -> str:
        return f"{self.prefix}_SASL_SECRET_ARN"

    @property
    def unfenced(self) -> str:
        """``true``: write without the cluster's fence (a cluster that does not apply transactional commits)."""
        return f"{self.prefix}_UNFENCED"

    @property
    def tls_secret_arn(self) -> str:
        """Mutual TLS: the secret of the client certificate, its key and (optionally) the CAs."""
        return f"{self.prefix}_TLS_SECRET_ARN"


SOURCE = ClusterVariables("SOURCE")
TARGET = ClusterVariables("TARGET")

LEFT_TO_DEFAULTS = frozenset(
    {
        KAFKA_CONNECT_TIMEOUT_S,
        KAFKA_RETRIES,
        SNAPSHOT_PREFIX,
        DEFAULT_MODE,
        APPROVAL,
        APPROVAL_TIMEOUT_S,
        SOURCE.sasl_secret_arn,
        TARGET.sasl_secret_arn,
        SOURCE.tls_secret_arn,
        TARGET.tls_secret_arn,
        SOURCE.unfenced,
        TARGET.unfenced,
    }
)
"""Variables a function reads, has a default for, and that the stack may leave unset: tuning an
operator can set on a function, the SCRAM secret (set only for a cluster with SCRAM auth), and writing
unfenced (set only for a cluster configured so). Every
other variable a function's settings read, the stack must set on that function."""


REPORT_FAILED = "ReportFailed"
"""The metric the Report function counts when a report or its notification cannot be written (the stack's
ReportFailedAlarm watches it: the run itself still ends, its work done)."""
LOCK_RELEASE_FAILED = "LockReleaseFailed"
"""The metric the Lock function counts when a release fails (LockReleaseFailedAlarm: a lock that may
outlive its run)."""
