"""Which groups of a restore are still active on the target (the workflow's wait loop asks this)."""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.apply.locks import TargetLock, workflow_lock_ttl
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.stores.mappings import MappingStore
from offset_restore.workflow.observability import logger, metrics, tracer
from offset_restore.workflow.settings import ApplySettings, read_secret
from offset_restore.workflow.states.check_empty import check_empty

from offset_restore_handlers.requests import CheckRequest, parse


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = ApplySettings.from_env()
    request = parse(CheckRequest, event, "check-empty")
    logger.append_keys(restore_id=request.restore_id)
    dynamodb = boto3.client("dynamodb")
    with KafkaCluster(settings.target.connection(read_secret)) as target:
        if request.owner:  # every poll renews the run's lock: a long wait never lets it lapse
            ttl = workflow_lock_ttl(request.interval_seconds)
            owner, name = request.owner, settings.target.name
            TargetLock(settings.table, dynamodb, target.cluster_id, owner, ttl_s=ttl, name=name).renew()
        result = check_empty(
            request.restore_id,
            target,
            MappingStore(settings.table, dynamodb),
            started_at=request.started_at,
            timeout_s=request.timeout_seconds,
            fail_on_timeout=request.on_wait_timeout == "fail",
            index=settings.restore_folder(request.restore_id, boto3.client("s3")),
            remove_static=request.remove_static_members,
            static_removed=request.static_removed,
        )
    metrics.add_metric(name="GroupsStillActive", unit=MetricUnit.Count, value=len(result.active))
    return result.output()
