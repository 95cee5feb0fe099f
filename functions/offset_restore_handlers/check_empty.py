"""Which groups of a restore are still active on the target (the workflow's wait loop asks this)."""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.workflow.observability import logger, metrics, tracer
from offset_restore.workflow.settings import ApplySettings
from offset_restore.workflow.states.check_empty import poll_target

from offset_restore_handlers.requests import CheckRequest, parse


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = ApplySettings.from_env()
    request = parse(CheckRequest, event, "check-empty")
    logger.append_keys(restore_id=request.restore_id)
    result = poll_target(request.poll(), settings, boto3.client("dynamodb"), boto3.client("s3"))
    metrics.add_metric(name="GroupsStillActive", unit=MetricUnit.Count, value=len(result.active))
    return result.output()
