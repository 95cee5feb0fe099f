"""Count a run's mappings after translation: pending entries, and the commit batches to run."""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.stores.mappings import MappingStore
from offset_restore.workflow.observability import logger, tracer
from offset_restore.workflow.settings import SummarizeSettings
from offset_restore.workflow.states.summarize import Selected, summarize

from offset_restore_handlers.requests import SummarizeRequest, parse


@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = SummarizeSettings.from_env()
    request = parse(SummarizeRequest, event, "summarize")
    logger.append_keys(restore_id=request.restore_id)
    s3 = boto3.client("s3")
    work = settings.work_items(s3)
    result = summarize(
        request.restore_id,
        MappingStore(settings.table, boto3.client("dynamodb")),
        request.retries_left,
        index=settings.restore_folder(request.restore_id, s3),
        allow_rewind=request.allow_rewind,
        until_exact=request.mode == "migrate",
        selected=Selected(request.work_items, work) if work is not None and request.work_items is not None else None,
    )
    return result.model_dump(mode="json")
