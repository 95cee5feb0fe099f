"""Write a run's report to the bucket and publish its summary to SNS (``workflow/states/report.py``)."""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.workflow.environment import REPORT_FAILED
from offset_restore.workflow.observability import logger, metrics, tracer
from offset_restore.workflow.settings import ReportSettings
from offset_restore.workflow.states.report import ReportClients, write_report

from offset_restore_handlers.requests import ReportRequest, parse


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        settings = ReportSettings.from_env()
        request = parse(ReportRequest, event, "report")
        logger.append_keys(restore_id=str(request.run.get("restore_id", "unknown")))
        clients = ReportClients(
            boto3.client("dynamodb"), boto3.client("s3"), boto3.client("stepfunctions"), boto3.client("sns")
        )
        reported = write_report(request.step(), settings, clients)
    except Exception:
        # A report or notification that cannot be written must not pass in silence: the run still ends
        # (its work is done), and the alarm on this count pages through CloudWatch, not the topic.
        metrics.add_metric(name=REPORT_FAILED, unit=MetricUnit.Count, value=1)
        raise
    for name, unit, value in reported.metrics:
        metrics.add_metric(name=name, unit=MetricUnit(unit), value=value)
    return reported.output
