"""Scheduled and on-demand snapshots of the source cluster into the deployment's bucket.

Every successful snapshot emits its totals (what the "no snapshot within the RPO" and "zero groups"
alarms watch) and the lag of the groups that lag most (snapshot/health.py); a failure raises, which
the function's Errors alarm sees.
"""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.snapshot.health import MetricBlob, group_metrics, total_metrics
from offset_restore.workflow.observability import NAMESPACE, SERVICE, logger, metrics, tracer
from offset_restore.workflow.settings import SnapshotSettings
from offset_restore.workflow.states.snapshot import scheduled_snapshot


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = SnapshotSettings.from_env()
    result = scheduled_snapshot(event, settings, boto3.client("s3"))
    for name, unit, value in total_metrics(result.counts, result.duration_s).metrics:
        metrics.add_metric(name=name, unit=MetricUnit(unit), value=value)
    for blob in group_metrics(result.top_lag):
        _emit(blob)
    if result.counts.groups == 0:
        logger.warning("snapshot holds no consumer group", extra={"listed_groups": result.listed_groups})
    logger.info("snapshot written", extra={"snapshot_id": result.snapshot_id, "manifest": result.manifest})
    return result.model_dump(mode="json")


def _emit(blob: MetricBlob) -> None:
    """One EMF document per dimension combination: the handler's Metrics holds one set per flush."""
    emf = EphemeralMetrics(namespace=NAMESPACE, service=SERVICE)
    for name, value in blob.dimensions.items():
        emf.add_dimension(name=name, value=value)
    for name, unit, number in blob.metrics:
        emf.add_metric(name=name, unit=MetricUnit(unit), value=number)
    emf.flush_metrics()
