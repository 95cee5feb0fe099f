"""Shared fixtures: two real local brokers (source and target) for the session, moto for AWS."""

from __future__ import annotations

import logging
import os
import tempfile

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
# The key that seals plan files' previous offsets (apply/seal.py): the session's own, not the user's.
os.environ.setdefault("OFFSET_RESTORE_PLAN_KEY", os.path.join(tempfile.mkdtemp(prefix="plan-key-"), "plan.key"))
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from offset_restore.devtools.brokers import started
from offset_restore.devtools.local_aws import create_table
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.workflow.observability import metrics

from tests.helpers import Brokers, broker_kind

logging.getLogger("kafka").setLevel(logging.CRITICAL)


@pytest.fixture(autouse=True)
def _no_metrics_left_over() -> None:
    """Each test starts with the handlers' metrics empty: one run with metrics disabled (the workflow
    tests' handlers) leaves what it added unflushed in the process-wide ``Metrics``, and the next
    handler that flushes would print it too (a test file run after them in one process saw 16
    snapshots' totals in one document)."""
    metrics.clear_metrics()


@pytest.fixture(scope="session")
def brokers() -> Iterator[Brokers]:
    with started(broker_kind(), "source", "target") as (source, target):
        yield Brokers(source=source, target=target)


@pytest.fixture
def source(brokers: Brokers) -> Iterator[KafkaCluster]:
    with KafkaCluster(brokers.source_settings) as cluster:
        yield cluster


@pytest.fixture
def target(brokers: Brokers) -> Iterator[KafkaCluster]:
    with KafkaCluster(brokers.target_settings) as cluster:
        yield cluster


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")


@pytest.fixture
def aws(aws_env: None) -> Iterator[None]:
    with mock_aws():
        yield


@pytest.fixture
def s3(aws: None) -> Any:
    client = boto3.client("s3", region_name=os.environ["AWS_DEFAULT_REGION"])
    client.create_bucket(Bucket="snapshots", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    return client


@pytest.fixture
def table(aws: None) -> str:
    """The project's one DynamoDB table (docs/design.md §5.4): partition key ``pk``, sort key ``sk``."""
    return create_table(boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"]))


@pytest.fixture
def snapshot_lambda_env(brokers: Brokers, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scheduled snapshot function's environment, pointed at the session's source broker."""
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("SOURCE_CLUSTER_NAME", "prod-source")
    monkeypatch.setenv("SOURCE_BOOTSTRAP_SERVERS", brokers.source.bootstrap_servers)
    monkeypatch.setenv("SOURCE_SECURITY_PROTOCOL", "PLAINTEXT")
    monkeypatch.setenv("SNAPSHOT_BUCKET", "snapshots")
    monkeypatch.setenv("SNAPSHOT_PREFIX", "env/dev")
    monkeypatch.setenv("KAFKA_CONNECT_TIMEOUT_S", "5")
