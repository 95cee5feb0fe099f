"""No secret in logs, errors, reports or documents: a SCRAM password (from Secrets Manager, and from
the environment for the CLI) and an IAM session token are planted, every path that could print them
is taken — failures included, with every logger at DEBUG — and everything captured is scanned."""

from __future__ import annotations

import io
import json
import logging
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from offset_restore.cli.main import main
from offset_restore.errors import OffsetRestoreError
from offset_restore.formats.plan import PlanEntry
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.workflow.report import render_report
from offset_restore.workflow.settings import ClusterSettings
from offset_restore_handlers.snapshot import handler  # as Lambda does: the handler module is loaded before any call

from tests.figures import record
from tests.helpers import Brokers, LambdaContext
from tests.integration.test_apply import Restored

pytestmark = pytest.mark.integration

PASSWORD = f"pw-{uuid.uuid4().hex}"
TOKEN = f"IQoJb3JpZ2luX2VjEtoken{uuid.uuid4().hex}"


@pytest.fixture
def everything_logged(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    kafka = logging.getLogger("kafka")
    level = kafka.level
    kafka.setLevel(logging.DEBUG)
    caplog.set_level(logging.DEBUG)
    yield caplog
    kafka.setLevel(level)


def cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), out, err)
    return status, out.getvalue() + err.getvalue()


def test_no_secret_reaches_logs_errors_reports_or_documents(
    brokers: Brokers,
    source: Any,
    target: Any,
    aws_env: None,
    monkeypatch: pytest.MonkeyPatch,
    everything_logged: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    monkeypatch.setenv("KAFKA_PASSWORD", PASSWORD)
    texts: list[tuple[str, str]] = []
    with mock_aws():
        arn = boto3.client("secretsmanager").create_secret(
            Name="kafka-scram", SecretString=json.dumps({"username": "svc", "password": PASSWORD})
        )["ARN"]
        boto3.client("s3").create_bucket(
            Bucket="snapshots", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
        )
        for name, value in {
            "POWERTOOLS_TRACE_DISABLED": "true",
            "SOURCE_CLUSTER_NAME": "prod-source",
            "SOURCE_BOOTSTRAP_SERVERS": brokers.source.bootstrap_servers,
            "SOURCE_SECURITY_PROTOCOL": "SASL_SSL",
            "SOURCE_SASL_MECHANISM": "SCRAM-SHA-512",
            "SOURCE_SASL_SECRET_ARN": arn,
            "SNAPSHOT_BUCKET": "snapshots",
            "KAFKA_CONNECT_TIMEOUT_S": "2",
        }.items():
            monkeypatch.setenv(name, value)
        # The Lambda path: the password comes from Secrets Manager; TLS to a plaintext port fails.
        with pytest.raises(OffsetRestoreError) as raised:
            handler({}, LambdaContext())
        texts.append(("handler exception", "".join(traceback.format_exception(raised.value))))
        settings = ClusterSettings(
            name="prod", bootstrap_servers="b:1", sasl_mechanism="SCRAM-SHA-512", sasl_secret_arn=arn
        )
        connection = settings.connection(
            lambda a: boto3.client("secretsmanager").get_secret_value(SecretId=a)["SecretString"]
        )
        texts.append(("settings repr", repr(connection) + str(connection) + connection.model_dump_json()))

    # The CLI path: the password from the environment, on a failing and on successful runs.
    status, output = cli(
        "snapshot",
        "--bootstrap-servers",
        brokers.source.bootstrap_servers,
        "--security-protocol",
        "SASL_SSL",
        "--sasl-mechanism",
        "SCRAM-SHA-512",
        "--sasl-username",
        "svc",
        "--sasl-password-env",
        "KAFKA_PASSWORD",
        "--connect-timeout",
        "2",
        "--output",
        str(tmp_path / "refused"),
    )
    assert status != 0
    texts.append(("cli refusal", output))
    scene = Restored(brokers, source, target, tmp_path / "run", {"a": {0: 50, 1: 5}, "b": {0: 100}})
    for command in (
        [
            "snapshot",
            "--bootstrap-servers",
            brokers.source.bootstrap_servers,
            "--output",
            str(tmp_path / "snaps"),
            "--groups",
            "|".join(scene.groups.values()),
            "--json",
        ],
        [
            "apply",
            "--plan",
            str(scene.plan_path),
            "--bootstrap-servers",
            brokers.target.bootstrap_servers,
            "--json",
            "--execute",
        ],
    ):
        status, output = cli(*command)
        assert status == 0, output
        texts.append((command[0], output))
    plan = json.loads(scene.plan_path.read_text())
    for name, body in render_report(
        {"input": {"mode": "apply"}}, [PlanEntry(**e) for e in plan["entries"]], "applied"
    ).items():
        texts.append((f"report {name}", body.decode()))

    captured = capsys.readouterr()
    texts.append(("stdout/stderr", captured.out + captured.err))
    texts.append(
        (
            "log records",
            "\n".join(f"{r.name} {r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in everything_logged.records),
        )
    )
    texts.extend(
        (str(path), path.read_bytes().decode(errors="replace")) for path in tmp_path.rglob("*") if path.is_file()
    )
    leaks = [where for where, text in texts if PASSWORD in text or TOKEN in text]
    scanned = sum(len(text) for _, text in texts)
    record(
        "security",
        check="secrets found in logs, errors, reports and documents",
        found=len(leaks),
        note=f"{scanned:,} characters from {len(texts)} sources scanned",
    )
    assert scanned > 10_000 and len(everything_logged.records) > 50
    leaking = {r.name for r in everything_logged.records if PASSWORD in r.getMessage() or TOKEN in r.getMessage()}
    assert not leaks, (leaks, leaking)


def test_a_password_is_never_taken_from_the_command_line_nor_echoed(capsys: pytest.CaptureFixture[str]) -> None:
    secret = "hunter2!typed-by-mistake"
    status, output = cli("snapshot", "--bootstrap-servers", "b:1", "--sasl-password", secret, "--output", "o")
    output += capsys.readouterr().err
    assert status == 2 and "unrecognized arguments: --sasl-password (values are not shown)" in output
    assert secret not in output
    status, output = cli("snapshot", "--bootstrap-servers", "b:1", "--sasl-password-env", secret, "--output", "o")
    assert status == 2 and "takes the NAME of an environment variable" in output and secret not in output
    with pytest.raises(ValueError, match="needs a username and a password"):
        ConnectionSettings(
            bootstrap_servers="b:1", security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512", sasl_username="svc"
        )
