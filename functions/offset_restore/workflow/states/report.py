"""The Report state: a run's report (JSON, Markdown, HTML) written to the bucket, its summary published to
SNS, and the numbers the run's metrics carry."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from offset_restore.stores.keys import report_document
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import S3Store
from offset_restore.workflow.approval import with_approval_record
from offset_restore.workflow.report import ReportBuilder, notification
from offset_restore.workflow.report_timeline import read_timeline
from offset_restore.workflow.settings import ReportSettings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

__all__ = ["CONTENT_TYPES", "ReportClients", "ReportStep", "Reported", "write_report"]

CONTENT_TYPES = {"html": "text/html", "md": "text/markdown"}
"""A document's content type by its extension; anything else is JSON."""


@dataclass(frozen=True)
class ReportStep:
    """One report of a run: its state, how it ended (``outcome``, ``error``), its execution (whose history
    gives the timeline) and whether to notify (not for the plan's report before the approval gate, whose
    question is the notification)."""

    run: dict[str, Any]
    outcome: str
    error: dict[str, Any] | None = None
    execution: str | None = None
    notify: bool = True


@dataclass(frozen=True)
class ReportClients:
    dynamodb: DynamoDBClient
    s3: S3Client
    stepfunctions: Any
    """A Step Functions client (the execution's history)."""
    sns: Any


@dataclass
class Reported:
    """The step's output, and the run's metrics (name, unit, value) for the handler to emit."""

    output: dict[str, Any]
    metrics: list[tuple[str, str, float]] = field(default_factory=list)


def write_report(step: ReportStep, settings: ReportSettings, clients: ReportClients) -> Reported:
    """Build the report from the run's entries, store each document, publish the summary."""
    restore_id = str(step.run.get("restore_id", "unknown"))
    run = {**step.run, **({"error": step.error} if step.error else {})}
    run = with_approval_record(run, settings.table, clients.dynamodb, step.execution)
    timeline = read_timeline(clients.stepfunctions, step.execution) if step.execution else []
    report = ReportBuilder(run, step.outcome, timeline)
    if step.run:
        for entry in MappingStore(settings.table, clients.dynamodb).iter_entries(restore_id):
            report.add(entry)
    _write_documents(report, restore_id, settings.bucket, clients.s3)
    # Read after the documents are built: the outcome is then the effective one ("applied, needs attention").
    assert report.report is not None
    note = notification(report.report, settings.bucket, step.error)
    if settings.topic_arn and step.notify:
        clients.sns.publish(TopicArn=settings.topic_arn, Subject=note.subject, Message=note.message)
    output = {"outcome": report.outcome, "report": note.location, "message": note.message}
    return Reported(output, _metrics(report, step.run))


def _write_documents(report: ReportBuilder, restore_id: str, bucket: str, s3: S3Client) -> None:
    """Each document stored as it is built, then let go (a large run's report.json is big)."""
    store = S3Store(bucket, "", s3)
    for name, body in report.documents():
        kind = CONTENT_TYPES.get(name.rsplit(".", 1)[-1], "application/json")
        store.put(report_document(restore_id, name), body, kind)


def _metrics(report: ReportBuilder, run: dict[str, Any]) -> list[tuple[str, str, float]]:
    summary = report.summary
    found: list[tuple[str, str, float]] = [
        ("Runs", "Count", 1),
        ("Pending", "Count", summary.pending),
        ("Unmapped", "Count", summary.unmapped),
    ]
    if summary.mapped:
        found.append(("ExactRatio", "Percent", 100 * summary.exact / summary.mapped))
    if report.snapshot_age:
        found.append(("SnapshotAgeSeconds", "Seconds", report.snapshot_age.seconds))
    if isinstance(run.get("started_at"), int | float):
        found.append(("RunSeconds", "Seconds", time.time() - run["started_at"]))
    return found
