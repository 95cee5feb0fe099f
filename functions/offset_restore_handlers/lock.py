"""Take or release the single-writer lock of the target cluster for a run (``workflow/states/lock.py``)."""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.workflow.environment import LOCK_RELEASE_FAILED
from offset_restore.workflow.observability import logger, metrics, tracer
from offset_restore.workflow.settings import LockSettings
from offset_restore.workflow.states.lock import acquire_lock, release_lock

from offset_restore_handlers.requests import LockRequest, parse


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = LockSettings.from_env()
    request = parse(LockRequest, event, "lock")
    logger.append_keys(restore_id=request.restore_id)
    step = request.step()
    if request.action == "acquire":
        return acquire_lock(step, settings, boto3.client("dynamodb"))
    try:
        released = release_lock(step, settings, boto3.client("dynamodb"), boto3.client("stepfunctions"))
    except Exception:
        # The release is retried by the state machine; each failure is counted, and the alarm on the
        # count says a lock may outlive its run (the next run would wait, then fail LockHeldError).
        metrics.add_metric(name=LOCK_RELEASE_FAILED, unit=MetricUnit.Count, value=1)
        raise
    logger.info("lock released", extra={"owner": step.owner, "done": released["lock"]})
    return released
