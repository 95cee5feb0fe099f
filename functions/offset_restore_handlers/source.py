"""A migration's steps on the source cluster (``"mode": "migrate"``): whether the groups stopped there
(the state machine waits and asks again), the final snapshot once they have, and the last look right
before the commit."""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.apply.locks import TargetLock, workflow_lock_ttl
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.migration.final import final_snapshot
from offset_restore.snapshot.filters import NameFilter
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import S3Store
from offset_restore.workflow.observability import logger, metrics, tracer
from offset_restore.workflow.settings import SourceSettings, read_secret
from offset_restore.workflow.states.source import check_source, recheck_source

from offset_restore_handlers.requests import SourceRequest, parse


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = SourceSettings.from_env()
    request = parse(SourceRequest, event, "source")
    logger.append_keys(restore_id=request.restore_id, action=request.action)
    connection = settings.source.connection(read_secret)
    if request.action == "snapshot":
        options = SnapshotOptions(
            groups=request.groups,
            exclude_groups=request.exclude_groups,
            topics=request.topics,
            cluster=settings.source.name,
        )
        store = S3Store(settings.bucket, settings.prefix, boto3.client("s3"))
        final = final_snapshot(connection, store, options, refuse_active=request.on_wait_timeout == "fail")
        logger.info("final snapshot written", extra={"snapshot_id": final.snapshot.snapshot_id})
        if final.left_on_source:
            logger.warning("groups left on the source (members)", extra={"groups": sorted(final.left_on_source)})
        return final.output()
    dynamodb = boto3.client("dynamodb")
    if request.owner:  # every look renews the run's lock: a long wait never lets it lapse
        ttl = workflow_lock_ttl(request.interval_seconds)
        # The source's network cannot reach the target: the lock under the id its acquire recorded.
        TargetLock.named(settings.table, dynamodb, settings.target_cluster, request.owner, ttl).renew()
    if request.action == "recheck":
        index = settings.restore_folder(request.restore_id, boto3.client("s3"))
        with KafkaCluster(connection) as source:
            held = recheck_source(source, MappingStore(settings.table, dynamodb), request.restore_id, index)
        if held:
            logger.warning("groups started again on the source: not moved", extra={"groups": sorted(held)})
        metrics.add_metric(name="GroupsStartedAgainOnSource", unit=MetricUnit.Count, value=len(held))
        return {"held": sorted(held)[:20], "held_count": len(held)}
    with KafkaCluster(connection) as source:
        check = check_source(
            source,
            NameFilter.parse(request.groups, request.exclude_groups, "groups"),
            started_at=request.started_at,
            timeout_s=request.timeout_seconds,
            fail_on_timeout=request.on_wait_timeout == "fail",
        )
    metrics.add_metric(name="GroupsStillActiveOnSource", unit=MetricUnit.Count, value=len(check.still_active))
    return check.output()
