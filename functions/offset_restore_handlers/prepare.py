"""Resolve the snapshot and write the work items of a run to the bucket; returns their keys."""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.workflow.observability import logger, tracer
from offset_restore.workflow.settings import PrepareSettings
from offset_restore.workflow.states.prepare import prepare_state

from offset_restore_handlers.requests import PrepareRequest, parse


@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = PrepareSettings.from_env()
    request = parse(PrepareRequest, event, "prepare")
    logger.append_keys(restore_id=request.run.get("restore_id"))
    return prepare_state(request.run, settings, boto3.client("s3"), boto3.client("dynamodb"))
