"""Scheduled and on-demand snapshots of the source cluster into the deployment's bucket."""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.errors import BadInputError
from offset_restore.snapshot.filters import DEFAULT_EXCLUDE_GROUPS
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.stores.storage import S3Store
from offset_restore.workflow.observability import logger, metrics, tracer
from offset_restore.workflow.settings import SnapshotSettings, read_secret
from pydantic import BaseModel, ConfigDict, Field, ValidationError


class SnapshotRequest(BaseModel):
    """The event: filters as in the CLI; an EventBridge schedule may send ``{}``."""

    model_config = ConfigDict(extra="ignore")

    groups: str | None = None
    exclude_groups: str | None = DEFAULT_EXCLUDE_GROUPS
    topics: str | None = None
    evidence_records: int = Field(default=3, ge=0, le=100)
    snapshot_id: str | None = None


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = SnapshotSettings.from_env()
    try:
        request = SnapshotRequest.model_validate(event or {})
        options = SnapshotOptions(cluster=settings.source.name, **request.model_dump())
    except (ValidationError, ValueError) as error:
        raise BadInputError(f"invalid snapshot request: {error}") from None
    store = S3Store(settings.bucket, settings.prefix, boto3.client("s3"))
    result = run_snapshot(settings.source.connection(read_secret), store, options)
    metrics.add_metric(name="SnapshotGroups", unit=MetricUnit.Count, value=result.counts.groups)
    metrics.add_metric(name="SnapshotGroupPartitions", unit=MetricUnit.Count, value=result.counts.group_partitions)
    metrics.add_metric(name="SnapshotSeconds", unit=MetricUnit.Seconds, value=result.duration_s)
    logger.info("snapshot written", extra={"snapshot_id": result.snapshot_id, "manifest": result.manifest})
    return result.model_dump(mode="json")
