"""Verify a batch of committed groups again: offsets read back, records at the new offsets."""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.apply_steps import verify_batch
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
    request = parse(BatchRequest, event, "verify")
    logger.append_keys(restore_id=request.restore_id)
    with KafkaCluster(settings.target.connection(read_secret)) as target:
        result = verify_batch(
            request.restore_id, request.groups or [], target, MappingStore(settings.table, boto3.client("dynamodb"))
        )
    metrics.add_metric(name="PartitionsVerified", unit=MetricUnit.Count, value=result.verified)
    return result.output()
