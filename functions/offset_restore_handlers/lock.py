"""Take or release the single-writer lock of the target cluster for a run."""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.apply.locks import TargetLock, release_ended, workflow_lock_ttl
from offset_restore.workflow.environment import LOCK_RELEASE_FAILED
from offset_restore.workflow.executions import last_state
from offset_restore.workflow.observability import logger, metrics, tracer
from offset_restore.workflow.settings import LockSettings

from offset_restore_handlers.requests import LockRequest, parse


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = LockSettings.from_env()
    request = parse(LockRequest, event, "lock")
    logger.append_keys(restore_id=request.restore_id)
    # The deployment's own target, whatever name the input gave (a typo must not make a second lock);
    # owned by the execution, not the restore id (two executions of one id are two writers).
    cluster = settings.target_cluster or request.target_cluster
    owner = request.owner or request.restore_id
    ttl = workflow_lock_ttl(request.interval_seconds)
    lock = TargetLock(settings.table, boto3.client("dynamodb"), cluster, owner, ttl_s=ttl)
    if request.action == "acquire":
        lock.acquire()
        return {"lock": request.action, "target_cluster": cluster}
    try:
        if request.ended:
            done = release_ended(lock, last_state(boto3.client("stepfunctions"), owner))
            logger.info("the lock of an ended execution", extra={"owner": owner, "done": done})
            return {"lock": done, "target_cluster": cluster}
        lock.release()
    except Exception:
        # The release is retried by the state machine; each failure is counted, and the alarm on the
        # count says a lock may outlive its run (the next run would wait, then fail LockHeldError).
        metrics.add_metric(name=LOCK_RELEASE_FAILED, unit=MetricUnit.Count, value=1)
        raise
    return {"lock": request.action, "target_cluster": cluster}
