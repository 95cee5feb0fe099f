"""Resolve the snapshot and write the work items of a run to the bucket; returns their keys."""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.errors import BadInputError
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.runs import RunRecord
from offset_restore.stores.storage import S3Store
from offset_restore.validation import describe
from offset_restore.workflow.observability import logger, tracer
from offset_restore.workflow.settings import PrepareSettings
from offset_restore.workflow.states.prepare import prepare_work
from offset_restore.workflow.states.validate import RunInput
from pydantic import ValidationError

from offset_restore_handlers.requests import PrepareRequest, parse


@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = PrepareSettings.from_env()
    request = parse(PrepareRequest, event, "prepare")
    try:
        run = RunInput.model_validate({k: v for k, v in request.run.items() if k in RunInput.model_fields})
    except ValidationError as error:
        raise BadInputError(f"invalid prepare request: {describe(error)}") from None
    logger.append_keys(restore_id=run.restore_id)
    s3 = boto3.client("s3")
    # The snapshots where the Snapshot function writes them: one bucket, the same prefix.
    snapshots = SnapshotRepository(S3Store(settings.bucket, settings.snapshot_prefix, s3))
    runs = RunRecord(settings.table, boto3.client("dynamodb"))
    return prepare_work(run, snapshots, S3Store(settings.bucket, "", s3), runs)
