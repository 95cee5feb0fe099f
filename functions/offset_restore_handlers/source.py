"""A migration's steps on the source cluster (``"mode": "migrate"``): whether the groups stopped there
(the state machine waits and asks again), the final snapshot once they have, and the last look right
before the commit."""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.workflow.observability import logger, metrics, tracer
from offset_restore.workflow.settings import SourceSettings
from offset_restore.workflow.states.source import last_look, take_final_snapshot, wait_on_source

from offset_restore_handlers.requests import SourceRequest, parse


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = SourceSettings.from_env()
    request = parse(SourceRequest, event, "source")
    logger.append_keys(restore_id=request.restore_id, action=request.action)
    look = request.look()
    if request.action == "snapshot":
        final = take_final_snapshot(look, settings, boto3.client("s3"))
        logger.info("final snapshot written", extra={"snapshot_id": final.snapshot.snapshot_id})
        if final.left_on_source:
            logger.warning("groups left on the source (members)", extra={"groups": sorted(final.left_on_source)})
        return final.output()
    if request.action == "recheck":
        held = last_look(look, settings, boto3.client("dynamodb"), boto3.client("s3"))
        if held:
            logger.warning("groups started again on the source: not moved", extra={"groups": sorted(held)})
        metrics.add_metric(name="GroupsStartedAgainOnSource", unit=MetricUnit.Count, value=len(held))
        return {"held": sorted(held)[:20], "held_count": len(held)}
    check = wait_on_source(look, settings, boto3.client("dynamodb"))
    metrics.add_metric(name="GroupsStillActiveOnSource", unit=MetricUnit.Count, value=len(check.still_active))
    return check.output()
