"""The snapshot Lambda handler in-process: real source broker, moto S3 and Secrets Manager."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from offset_restore.errors import BadInputError
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.storage import S3Store
from offset_restore.workflow.settings import ClusterSettings

from tests.helpers import LambdaContext, commit, produce, unique


@pytest.fixture
def lambda_env(snapshot_lambda_env: None) -> None:
    """The snapshot function's environment (tests/conftest.py)."""


def test_handler_writes_a_snapshot_to_the_bucket(lambda_env: None, s3: Any, source: KafkaCluster) -> None:
    from offset_restore_handlers.snapshot import handler

    topic, group = unique("lambda"), unique("lambda-group")
    source.create_topics({topic: 1})
    produce(source, topic, 0, 8)
    commit(source, group, {TP(topic, 0): 5})
    result = handler({"groups": group, "evidence_records": 2}, LambdaContext())
    assert result["cluster"] == "prod-source" and result["counts"]["group_partitions"] == 1
    repo = SnapshotRepository(S3Store("snapshots", "env/dev", s3))
    key, manifest = repo.by_id(result["snapshot_id"])
    entry = next(iter(repo.groups(key, manifest))).partitions[0]
    assert (entry.committed_offset, entry.lag, [e.offset for e in entry.before]) == (5, 3, [3, 4])


def test_a_bad_request_fails_with_a_clear_error_and_writes_nothing(lambda_env: None, s3: Any) -> None:
    from offset_restore_handlers.snapshot import handler

    with pytest.raises(BadInputError, match=r"invalid --groups regex '\('"):
        handler({"groups": "("}, LambdaContext())
    with pytest.raises(BadInputError, match="evidence_records"):
        handler({"evidence_records": 1000}, LambdaContext())
    assert s3.list_objects_v2(Bucket="snapshots").get("KeyCount", 0) == 0


def test_an_incomplete_environment_names_what_is_missing(
    lambda_env: None, s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from offset_restore_handlers.snapshot import handler

    monkeypatch.delenv("SOURCE_BOOTSTRAP_SERVERS")
    with pytest.raises(BadInputError, match="SOURCE_BOOTSTRAP_SERVERS: Field required"):
        handler({}, LambdaContext())


def test_scram_credentials_come_from_secrets_manager(aws: None) -> None:
    secrets = boto3.client("secretsmanager", region_name="eu-west-1")
    arn = secrets.create_secret(
        Name="AmazonMSK_offset_restore", SecretString=json.dumps({"username": "restore", "password": "s3cr3t-pw"})
    )["ARN"]
    cluster = ClusterSettings(
        name="prod", bootstrap_servers="b-1.msk:9096", sasl_mechanism="SCRAM-SHA-512", sasl_secret_arn=arn
    )
    connection = cluster.connection(lambda a: secrets.get_secret_value(SecretId=a)["SecretString"])
    assert connection.sasl_username == "restore" and connection.sasl_password is not None
    assert connection.sasl_password.get_secret_value() == "s3cr3t-pw"
    assert "s3cr3t-pw" not in repr(connection)
    secrets.put_secret_value(SecretId=arn, SecretString="not json")
    with pytest.raises(BadInputError, match="must be JSON with 'username' and 'password'"):
        cluster.connection(lambda a: secrets.get_secret_value(SecretId=a)["SecretString"])
