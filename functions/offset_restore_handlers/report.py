"""Write a run's report (JSON, Markdown, HTML) to the bucket and publish its summary to SNS."""

from __future__ import annotations

import os
import time
from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.stores.keys import restore_folder
from offset_restore.stores.storage import S3Store
from offset_restore.translate.mapping_store import MappingStore
from offset_restore.workflow.observability import logger, metrics, tracer
from offset_restore.workflow.report import ReportBuilder
from offset_restore.workflow.report_timeline import read_timeline
from offset_restore.workflow.settings import table_from_env

from offset_restore_handlers.requests import ReportRequest, parse


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = parse(ReportRequest, event, "report")
    restore_id = str(request.run.get("restore_id", "unknown"))
    logger.append_keys(restore_id=restore_id)
    run = {**request.run, **({"error": request.error} if request.error else {})}
    timeline = read_timeline(boto3.client("stepfunctions"), request.execution) if request.execution else []
    report = ReportBuilder(run, request.outcome, timeline)
    if request.run:
        for entry in MappingStore(table_from_env(), boto3.client("dynamodb")).iter_entries(restore_id):
            report.add(entry)
    store = S3Store(os.environ["RESTORE_BUCKET"], restore_folder(restore_id), boto3.client("s3"))
    for name, body in report.documents():
        kind = {"html": "text/html", "md": "text/markdown"}.get(name.rsplit(".", 1)[-1], "application/json")
        store.put(name, body, kind)
    summary, outcome = report.summary, report.outcome  # "applied, needs attention" when something was left
    text = (
        f"offset-restore {restore_id}: {outcome}. {report.glance()}."
        + (f" Snapshot {run['work'].get('snapshot_id')}: {report.snapshot_age.phrase}." if report.snapshot_age else "")
        + (f" Error: {request.error.get('Error')}: {request.error.get('Cause')}" if request.error else "")
        + f" Report: s3://{store.bucket}/restores/{restore_id}/report.html"
    )
    if os.environ.get("TOPIC_ARN"):
        boto3.client("sns").publish(TopicArn=os.environ["TOPIC_ARN"], Subject=f"offset-restore {outcome}", Message=text)
    metrics.add_metric(name="Runs", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="Pending", unit=MetricUnit.Count, value=summary.pending)
    metrics.add_metric(name="Unmapped", unit=MetricUnit.Count, value=summary.unmapped)
    if summary.mapped:
        metrics.add_metric(name="ExactRatio", unit=MetricUnit.Percent, value=100 * summary.exact / summary.mapped)
    if report.snapshot_age:
        metrics.add_metric(name="SnapshotAgeSeconds", unit=MetricUnit.Seconds, value=report.snapshot_age.seconds)
    if isinstance(request.run.get("started_at"), int | float):
        metrics.add_metric(name="RunSeconds", unit=MetricUnit.Seconds, value=time.time() - request.run["started_at"])
    return {
        "outcome": outcome,
        "report": f"s3://{store.bucket}/restores/{restore_id}/report.html",
        "message": text,
    }
