"""Translate one work item (a batch of group-partitions in S3) and record the mappings in DynamoDB."""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.errors import BadInputError
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import S3Store
from offset_restore.translate.checkpoints import DynamoCheckpoints
from offset_restore.validation import describe
from offset_restore.workflow.observability import logger, metrics, tracer
from offset_restore.workflow.settings import TranslateSettings, read_secret
from offset_restore.workflow.states.translate import translate_work_item
from pydantic import BaseModel, ConfigDict, ValidationError


class TranslateRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    restore_id: str
    work_item: str
    """The work item's key in the restore bucket."""


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = TranslateSettings.from_env()
    try:
        request = TranslateRequest.model_validate(event)
    except ValidationError as error:
        raise BadInputError(f"invalid translate request: {describe(error)}") from None
    logger.append_keys(restore_id=request.restore_id)
    dynamodb = boto3.client("dynamodb")
    result = translate_work_item(
        S3Store(settings.bucket, "", boto3.client("s3")),
        request.work_item,
        settings.target.connection(read_secret),
        MappingStore(settings.table, dynamodb),
        target_cluster=settings.target.name,
        checkpoints=DynamoCheckpoints(settings.table, dynamodb),
    )
    metrics.add_metric(name="EntriesTranslated", unit=MetricUnit.Count, value=result.entries)
    metrics.add_metric(name="EntriesPending", unit=MetricUnit.Count, value=result.summary.pending)
    metrics.add_metric(name="EntriesUnmapped", unit=MetricUnit.Count, value=result.summary.unmapped)
    return result.model_dump(mode="json")
