"""The SNS notification from the report's model (``report.notification``): the subject and message the
Report function publishes, word for word — checked against the function itself, run on moto with the
same run, mappings and error — and what it says of a run that left groups behind."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from offset_restore.devtools.local_aws import _Context
from offset_restore.formats.plan import PlanEntry
from offset_restore.stores.mappings import MappingStore
from offset_restore.workflow.report import ReportBuilder, notification
from offset_restore.workflow.report_model import Notification

from tests.unit.test_report_glance import ROWS

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
BUCKET = "restores"
RUN = {
    "restore_id": "r-1",
    "mode": "apply",
    "started_at": (T0 + timedelta(minutes=3)).timestamp(),
    "work": {"snapshot_id": "s-9", "snapshot_created_at": T0.isoformat()},
}
ERROR = {"Error": "States.Timeout", "Cause": "the commit took too long"}


def model(run: dict[str, Any], entries: list[PlanEntry], outcome: str, error: dict[str, Any] | None = None) -> Any:
    builder = ReportBuilder({**run, **({"error": error} if error else {})}, outcome)
    for entry in entries:
        builder.add(entry)
    list(builder.documents())
    assert builder.report is not None
    return builder.report


def test_the_notification_says_the_outcome_the_headline_the_snapshot_and_where_the_report_is() -> None:
    said = notification(model(RUN, ROWS, "applied"), BUCKET)
    assert said == Notification(
        "offset-restore applied, needs attention",
        "offset-restore r-1: applied, needs attention. 2 of 7 groups restored, safe to start; 3 of 9 partitions "
        "exact; needs attention: 30 records the groups will not read (lost before the backup, or never restored), "
        "1 ahead on the target (not rewound), 1 active on the target (not written), 1 pending (restore not there "
        "yet), 1 unmapped, 1 did not verify. Snapshot s-9: offsets as of 3 min before this run. Report: "
        "s3://restores/restores/r-1/report.html",
        "s3://restores/restores/r-1/report.html",
    )
    failed = notification(model({}, [], "failed", ERROR), BUCKET, ERROR)
    assert failed.subject == "offset-restore failed"
    assert failed.message == (
        "offset-restore unknown: failed. 0 of 0 groups restored, not yet safe to start: the run failed (read its "
        "error first); 0 of 0 partitions exact. "
        "Error: States.Timeout: the commit took too long Report: s3://restores/restores/unknown/report.html"
    )


@pytest.fixture
def report_function(table: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, str]:
    """The Report function's AWS on moto: the bucket, the table, the topic and a queue subscribed to it."""
    region = "eu-west-1"
    boto3.client("s3", region_name=region).create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    sns, sqs = boto3.client("sns", region_name=region), boto3.client("sqs", region_name=region)
    topic = sns.create_topic(Name="offset-restore")["TopicArn"]
    queue = sqs.create_queue(QueueName="notifications")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    for name, value in {"RESTORE_BUCKET": BUCKET, "TABLE_NAME": table, "TOPIC_ARN": topic}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    return sqs, queue


@pytest.mark.parametrize(
    ("run", "outcome", "error"),
    [(RUN, "applied", None), ({**RUN, "restore_id": "r-2"}, "failed", ERROR), ({}, "failed", ERROR)],
    ids=["applied", "failed", "before-validation"],
)
def test_the_report_function_publishes_what_notification_says(
    report_function: tuple[Any, str], table: str, run: dict[str, Any], outcome: str, error: dict[str, Any] | None
) -> None:
    from offset_restore_handlers import report as report_handler

    sqs, queue = report_function
    if run:
        MappingStore(table, boto3.client("dynamodb", region_name="eu-west-1")).save(run["restore_id"], ROWS)
    event = {"run": run, "outcome": outcome, **({"error": error} if error else {})}
    result = report_handler.handler(event, _Context(function_name="Report"))
    published = json.loads(sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1)["Messages"][0]["Body"])
    said = model(run, ROWS if run else [], outcome, error)
    expected = notification(said, BUCKET, error)
    assert (published["Subject"], published["Message"]) == (expected.subject, expected.message)
    assert (result["message"], result["report"]) == (expected.message, expected.location)
    assert result["outcome"] == said.outcome
