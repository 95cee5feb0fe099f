"""Commit one batch of a restore's groups on the target (previous offsets saved first), and verify it."""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.apply_steps import commit_groups
from offset_restore.kafka_adapter import KafkaCluster
from offset_restore.mapping_store import MappingStore
from offset_restore.observability import logger, metrics, tracer
from offset_restore.settings import ApplySettings, read_secret

from handlers.requests import BatchRequest, parse


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = ApplySettings.from_env()
    request = parse(BatchRequest, event, "commit")
    logger.append_keys(restore_id=request.restore_id)
    with KafkaCluster(settings.target.connection(read_secret)) as target:
        result = commit_groups(
            request.restore_id,
            request.groups if request.groups is not None else (request.batch or 0),
            target,
            MappingStore(settings.table, boto3.client("dynamodb")),
            allow_rewind=request.allow_rewind,
        )
    metrics.add_metric(name="GroupsCommitted", unit=MetricUnit.Count, value=len(result.committed))
    metrics.add_metric(name="GroupsSkipped", unit=MetricUnit.Count, value=len(result.skipped))
    return result.model_dump(mode="json")
