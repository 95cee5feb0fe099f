"""Take or release the single-writer lock of the target cluster for a run."""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.locks import TargetLock
from offset_restore.observability import logger, tracer
from offset_restore.settings import table_from_env

from handlers.requests import LockRequest, parse


@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = parse(LockRequest, event, "lock")
    logger.append_keys(restore_id=request.restore_id)
    lock = TargetLock(table_from_env(), boto3.client("dynamodb"), request.target_cluster, request.restore_id)
    if request.action == "acquire":
        lock.acquire()
    else:
        lock.release()
    return {"lock": request.action, "target_cluster": request.target_cluster}
