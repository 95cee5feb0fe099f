"""The functions' settings: read through their models only, when a handler runs, under the names the
deployment has always used; a missing or bad variable is named. Also the two things the handlers
no longer build themselves: the report's keys and the commit step's idempotency."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Annotated, Any

import boto3
import pytest
from offset_restore.errors import BadInputError
from offset_restore.stores.keys import report_document, report_page
from offset_restore.workflow import environment
from offset_restore.workflow.idempotency import commit_idempotency
from offset_restore.workflow.settings import (
    ApplySettings,
    FunctionSettings,
    LockSettings,
    PrepareSettings,
    ReportSettings,
    SnapshotSettings,
    SummarizeSettings,
    TranslateSettings,
    ValidateSettings,
    Variable,
)
from offset_restore_handlers.wiring import SNAPSHOT_HANDLER, TASK_HANDLERS

from tests.helpers import LambdaContext

HANDLERS_DIR = Path(__file__).resolve().parents[2] / "functions" / "offset_restore_handlers"
TARGET = {"TARGET_CLUSTER_NAME": "dr", "TARGET_BOOTSTRAP_SERVERS": "broker:9092"}
EVERY_VARIABLE = [
    "TABLE_NAME",
    "RESTORE_BUCKET",
    "SNAPSHOT_BUCKET",
    "SNAPSHOT_PREFIX",
    "TOPIC_ARN",
    "DEFAULT_MODE",
    "KAFKA_CONNECT_TIMEOUT_S",
    "KAFKA_RETRIES",
    *(
        f"{prefix}_{name}"
        for prefix in ("SOURCE", "TARGET")
        for name in ("CLUSTER_NAME", "BOOTSTRAP_SERVERS", "SECURITY_PROTOCOL", "SASL_MECHANISM", "SASL_SECRET_ARN")
    ),
]


def test_no_handler_reads_the_environment_itself() -> None:
    for path in sorted(HANDLERS_DIR.glob("*.py")):
        text = path.read_text()
        assert not re.search(r"\bos\.(environ|getenv)\b|^import os$|^from os import", text, re.M), path.name


def test_the_variables_keep_the_names_deployments_have() -> None:
    """A deployed function's configuration (and an operator's overrides) uses these strings."""
    names = {
        environment.TABLE_NAME,
        environment.RESTORE_BUCKET,
        environment.SNAPSHOT_BUCKET,
        environment.SNAPSHOT_PREFIX,
        environment.TOPIC_ARN,
        environment.DEFAULT_MODE,
        environment.KAFKA_CONNECT_TIMEOUT_S,
        environment.KAFKA_RETRIES,
        *(
            getattr(cluster, name)
            for cluster in (environment.SOURCE, environment.TARGET)
            for name in ("name", "bootstrap_servers", "security_protocol", "sasl_mechanism", "sasl_secret_arn")
        ),
    }
    assert names == set(EVERY_VARIABLE)
    assert (environment.POWERTOOLS_SERVICE_NAME, environment.POWERTOOLS_METRICS_NAMESPACE) == (
        "POWERTOOLS_SERVICE_NAME",
        "POWERTOOLS_METRICS_NAMESPACE",
    )
    assert (environment.SERVICE, environment.NAMESPACE) == ("offset-restore", "OffsetRestore")


@pytest.mark.parametrize(
    ("model", "named"),
    [
        (ReportSettings, ["RESTORE_BUCKET, TABLE_NAME not set"]),
        (LockSettings, ["TABLE_NAME not set", "TARGET_CLUSTER_NAME", "TARGET_BOOTSTRAP_SERVERS"]),
        (PrepareSettings, ["RESTORE_BUCKET, TABLE_NAME not set"]),
        (SummarizeSettings, ["TABLE_NAME not set"]),
        (ApplySettings, ["TABLE_NAME not set", "TARGET_CLUSTER_NAME", "TARGET_BOOTSTRAP_SERVERS"]),
        (TranslateSettings, ["RESTORE_BUCKET, TABLE_NAME not set", "TARGET_BOOTSTRAP_SERVERS"]),
        (SnapshotSettings, ["SNAPSHOT_BUCKET not set", "SOURCE_CLUSTER_NAME", "SOURCE_BOOTSTRAP_SERVERS"]),
    ],
)
def test_every_missing_variable_is_named_at_once(model: type[FunctionSettings], named: list[str]) -> None:
    with pytest.raises(BadInputError, match="the function's environment is incomplete or invalid") as raised:
        model.from_env({"TABLE_NAME": ""})  # empty is not set
    for text in named:
        assert text in str(raised.value)


def test_a_bad_value_is_named_by_its_variable() -> None:
    with pytest.raises(BadInputError, match=r"KAFKA_RETRIES: Input should be a valid integer"):
        ApplySettings.from_env({**TARGET, "TABLE_NAME": "t", "KAFKA_RETRIES": "many"})
    with pytest.raises(BadInputError, match=r"TARGET_SECURITY_PROTOCOL: Input should be"):
        ApplySettings.from_env({**TARGET, "TABLE_NAME": "t", "TARGET_SECURITY_PROTOCOL": "TLS"})


def test_what_each_model_reads() -> None:
    report = ReportSettings.from_env({"RESTORE_BUCKET": "b", "TABLE_NAME": "t", "TOPIC_ARN": "arn:topic"})
    assert (report.bucket, report.table, report.topic_arn) == ("b", "t", "arn:topic")
    assert ReportSettings.from_env({"RESTORE_BUCKET": "b", "TABLE_NAME": "t"}).topic_arn is None
    prepare = PrepareSettings.from_env({"RESTORE_BUCKET": "b", "TABLE_NAME": "t", "SNAPSHOT_PREFIX": "env/dev"})
    assert (prepare.bucket, prepare.table, prepare.snapshot_prefix) == ("b", "t", "env/dev")
    assert PrepareSettings.from_env({"RESTORE_BUCKET": "b", "TABLE_NAME": "t"}).snapshot_prefix == ""
    lock = LockSettings.from_env({**TARGET, "TABLE_NAME": "t"})  # the acquire asks the brokers for the id
    assert (lock.table, lock.target.name, lock.target.bootstrap_servers) == ("t", "dr", "broker:9092")
    validate = ValidateSettings.from_env(
        {"SOURCE_CLUSTER_NAME": "src", "TARGET_CLUSTER_NAME": "", "DEFAULT_MODE": "plan"}
    )
    assert validate.defaults() == {"source_cluster": "src", "mode": "plan"}
    apply = ApplySettings.from_env({**TARGET, "TABLE_NAME": "t", "TARGET_SECURITY_PROTOCOL": "PLAINTEXT"})
    assert (apply.target.name, apply.target.bootstrap_servers, apply.bucket) == ("dr", "broker:9092", None)
    assert apply.restore_folder("r-1", s3=None) is None  # type: ignore[arg-type]  # no bucket, no client used
    snapshot = SnapshotSettings.from_env(
        {"SOURCE_CLUSTER_NAME": "src", "SOURCE_BOOTSTRAP_SERVERS": "b:9092", "SNAPSHOT_BUCKET": "s"}
    )
    assert (snapshot.source.name, snapshot.bucket, snapshot.prefix) == ("src", "s", "")


def test_a_field_that_does_not_say_where_it_is_read_from_is_refused() -> None:
    with pytest.raises(TypeError, match="settings field retention must say where it is read from"):

        class Unmarked(FunctionSettings):
            retention: str | None = None

    class Marked(FunctionSettings):
        retention: Annotated[str | None, Variable("RETENTION")] = None

    assert Marked.from_env({"RETENTION": "3"}).retention == "3"


HANDLERS = {**TASK_HANDLERS, "Snapshot": SNAPSHOT_HANDLER}
REQUIRED = {
    "Lock": "TABLE_NAME not set",
    "Prepare": "RESTORE_BUCKET, TABLE_NAME not set",
    "Translate": "RESTORE_BUCKET, TABLE_NAME not set",
    "Summarize": "TABLE_NAME not set",
    "CheckEmpty": "TABLE_NAME not set",
    "Commit": "TABLE_NAME not set",
    "Report": "RESTORE_BUCKET, TABLE_NAME not set",
    "Snapshot": "SNAPSHOT_BUCKET not set",
    "Source": "SNAPSHOT_BUCKET, TABLE_NAME, TARGET_CLUSTER_NAME, RESTORE_BUCKET not set",
    "Gate": "TABLE_NAME, TARGET_CLUSTER_NAME not set",
}


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_a_handler_reads_its_settings_when_it_runs(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Imported with an empty environment (as the asset's probe does), a handler fails only when
    called, naming what is missing, before any AWS call; the settings are not cached from a call to
    the next."""
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    for variable in EVERY_VARIABLE:
        monkeypatch.delenv(variable, raising=False)
    module, function = HANDLERS[name].rsplit(".", 1)
    handler: Any = getattr(importlib.import_module(module), function)
    with pytest.raises(BadInputError, match=re.escape(REQUIRED[name])):
        handler({}, LambdaContext())
    monkeypatch.setenv("TABLE_NAME", "t")
    if "TABLE_NAME" in REQUIRED[name]:
        with pytest.raises(BadInputError) as again:
            handler({}, LambdaContext())
        assert "TABLE_NAME" not in str(again.value)


def test_every_handler_but_validate_needs_some_variable() -> None:
    assert set(REQUIRED) == set(HANDLERS) - {"Validate"}


def test_the_report_keys_are_in_the_restore_folder() -> None:
    assert report_page("r-1") == "restores/r-1/report.html"
    assert report_document("r-1", "report.json") == "restores/r-1/report.json"


def test_a_commit_retried_with_its_input_gets_the_first_answer(table: str) -> None:
    """The records are the project table's items (``IDEMPOTENCY#commit``, ``commit#<hash>``)."""
    dynamodb = boto3.client("dynamodb")
    idempotency = commit_idempotency(table, dynamodb, LambdaContext())  # type: ignore[arg-type]
    calls: list[int] = []

    def work() -> dict[str, Any]:
        calls.append(1)
        return {"committed": [f"g-{len(calls)}"]}

    first = idempotency.once(work, key={"restore_id": "r-1", "execution": "e1"})
    assert idempotency.once(work, key={"restore_id": "r-1", "execution": "e1"}) == first == {"committed": ["g-1"]}
    assert idempotency.once(work, key={"restore_id": "r-1", "execution": "e2"}) == {"committed": ["g-2"]}
    items = dynamodb.query(
        TableName=table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "IDEMPOTENCY#commit"}},
    )["Items"]
    assert len(items) == 2 and all(item["sk"]["S"].startswith("commit#") for item in items)
    assert all(item["status"]["S"] == "COMPLETED" and "ttl" in item for item in items)
