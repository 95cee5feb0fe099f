"""Take or release the single-writer lock of the target cluster for a run; taking it also takes the
cluster's write fence for the run (its lanes are the step's output)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.apply.locks import TargetLock, release_ended, workflow_lock_ttl
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.workflow.approval import close_question
from offset_restore.workflow.environment import LOCK_RELEASE_FAILED
from offset_restore.workflow.executions import last_state
from offset_restore.workflow.observability import logger, metrics, tracer
from offset_restore.workflow.settings import LockSettings, read_secret

from offset_restore_handlers.requests import LockRequest, parse


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = LockSettings.from_env()
    request = parse(LockRequest, event, "lock")
    logger.append_keys(restore_id=request.restore_id)
    # The deployment's own target, whatever name the input gave (a typo must not make a second lock),
    # keyed by the id its brokers report (two names for one cluster are one lock); owned by the
    # execution, not the restore id (two executions of one id are two writers).
    name, owner = settings.target.name, request.owner or request.restore_id
    ttl = workflow_lock_ttl(request.interval_seconds)
    dynamodb = boto3.client("dynamodb")
    if request.action == "acquire":
        # The lock says who runs; the fence, taken once the lock is held, makes any older writer's later
        # write harmless (kafka/fence.py): every lane of it, which the run's commit steps write under.
        with KafkaCluster(settings.target.connection(read_secret)) as target:
            lock = TargetLock(settings.table, dynamodb, target.cluster_id, owner, ttl_s=ttl, name=name)
            lock.acquire()
            lanes = target.take_cluster_fence()
        fence = [dataclasses.asdict(lane) for lane in lanes] or None  # None: the deployment writes unfenced
        return {"lock": request.action, "target_cluster": name, "cluster_id": lock.cluster, "fence": fence}
    # A release needs no brokers (it must work while the target is down): the id the acquire recorded.
    lock = TargetLock.named(settings.table, dynamodb, name, owner, ttl_s=ttl)
    try:
        if request.ended:
            ended_in = last_state(boto3.client("stepfunctions"), owner)
            done = release_ended(lock, ended_in, cluster_fenced=not settings.target.unfenced)
            # A question of its approval gate still waiting ends with it (an answer would reach no one).
            where = ended_in or "a state its history does not show"
            why = f"it failed, was stopped or timed out in {where}; nothing was written"
            close_question(settings.table, dynamodb, request.restore_id, owner, why, time.time())
            logger.info("the lock of an ended execution", extra={"owner": owner, "done": done})
            return {"lock": done, "target_cluster": name}
        # An answer recorded and never delivered ends with its run (which went on without it).
        why = "the run went on without it: its gate timed out, or was answered from the console"
        close_question(settings.table, dynamodb, request.restore_id, owner, why, time.time(), waiting=False)
        lock.release()
    except Exception:
        # The release is retried by the state machine; each failure is counted, and the alarm on the
        # count says a lock may outlive its run (the next run would wait, then fail LockHeldError).
        metrics.add_metric(name=LOCK_RELEASE_FAILED, unit=MetricUnit.Count, value=1)
        raise
    return {"lock": request.action, "target_cluster": name}
