"""The approval gate's task: the run waits here, on its task token, until someone approves or denies it
(``offset-restore approve`` / ``deny``) or the gate times out; this function asks and returns."""

from __future__ import annotations

import time
from typing import Any

import boto3
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.workflow.approval import open_gate
from offset_restore.workflow.observability import logger, tracer
from offset_restore.workflow.settings import GateSettings

from offset_restore_handlers.requests import GateRequest, parse


@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = GateSettings.from_env()
    request = parse(GateRequest, event, "gate")
    logger.append_keys(restore_id=request.run.get("restore_id"))
    asked = open_gate(
        request.run,
        request.token,
        request.execution,
        table=settings.table,
        target_cluster=settings.target_cluster,
        dynamodb=boto3.client("dynamodb"),
        sns=boto3.client("sns") if settings.topic_arn else None,
        topic_arn=settings.topic_arn,
        stack_name=settings.stack_name,
        now=time.time(),
    )
    logger.info("waiting for approval", extra={"expires_at": asked.expires_at})
    return {"asked_at": asked.asked_at, "expires_at": asked.expires_at}
