"""Write a run's report (JSON, Markdown, HTML) to the bucket and publish its summary to SNS."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.stores.keys import report_document
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import S3Store
from offset_restore.workflow.approval import with_approval_record
from offset_restore.workflow.environment import REPORT_FAILED
from offset_restore.workflow.observability import logger, metrics, tracer
from offset_restore.workflow.report import ReportBuilder, notification
from offset_restore.workflow.report_timeline import read_timeline
from offset_restore.workflow.settings import ReportSettings

from offset_restore_handlers.requests import ReportRequest, parse

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

CONTENT_TYPES = {"html": "text/html", "md": "text/markdown"}
"""A document's content type by its extension; anything else is JSON."""


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        return _report(event)
    except Exception:
        # A report or notification that cannot be written must not pass in silence: the run still ends
        # (its work is done), and the alarm on this count pages through CloudWatch, not the topic.
        metrics.add_metric(name=REPORT_FAILED, unit=MetricUnit.Count, value=1)
        raise


def _report(event: dict[str, Any]) -> dict[str, Any]:
    settings = ReportSettings.from_env()
    request = parse(ReportRequest, event, "report")
    restore_id = str(request.run.get("restore_id", "unknown"))
    logger.append_keys(restore_id=restore_id)
    run = {**request.run, **({"error": request.error} if request.error else {})}
    run = with_approval_record(run, settings.table, boto3.client("dynamodb"), request.execution)
    timeline = read_timeline(boto3.client("stepfunctions"), request.execution) if request.execution else []
    report = ReportBuilder(run, request.outcome, timeline)
    if request.run:
        for entry in MappingStore(settings.table, boto3.client("dynamodb")).iter_entries(restore_id):
            report.add(entry)
    _write_documents(report, restore_id, settings.bucket, boto3.client("s3"))
    # Read after the documents are built: the outcome is then the effective one ("applied, needs attention").
    assert report.report is not None
    note = notification(report.report, settings.bucket, request.error)
    if settings.topic_arn and request.notify:
        boto3.client("sns").publish(TopicArn=settings.topic_arn, Subject=note.subject, Message=note.message)
    _add_metrics(report, request.run)
    return {"outcome": report.outcome, "report": note.location, "message": note.message}


def _write_documents(report: ReportBuilder, restore_id: str, bucket: str, s3: S3Client) -> None:
    """Each document stored as it is built, then let go (a large run's report.json is big)."""
    store = S3Store(bucket, "", s3)
    for name, body in report.documents():
        kind = CONTENT_TYPES.get(name.rsplit(".", 1)[-1], "application/json")
        store.put(report_document(restore_id, name), body, kind)


def _add_metrics(report: ReportBuilder, run: dict[str, Any]) -> None:
    summary = report.summary
    metrics.add_metric(name="Runs", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="Pending", unit=MetricUnit.Count, value=summary.pending)
    metrics.add_metric(name="Unmapped", unit=MetricUnit.Count, value=summary.unmapped)
    if summary.mapped:
        metrics.add_metric(name="ExactRatio", unit=MetricUnit.Percent, value=100 * summary.exact / summary.mapped)
    if report.snapshot_age:
        metrics.add_metric(name="SnapshotAgeSeconds", unit=MetricUnit.Seconds, value=report.snapshot_age.seconds)
    if isinstance(run.get("started_at"), int | float):
        metrics.add_metric(name="RunSeconds", unit=MetricUnit.Seconds, value=time.time() - run["started_at"])
