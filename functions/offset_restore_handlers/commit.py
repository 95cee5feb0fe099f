"""Commit one batch of a restore's groups on the target (previous offsets saved first), and verify it;
or, in the workflow's rollback mode, put back the previous offsets a run's commits saved.

A retry of the same batch within one execution (a Lambda or Map retry) returns the first answer
(powertools Idempotency, set up by ``workflow.idempotency``, records in the project's table); a new
execution commits again, which changes nothing that is already in place. Both flows are
``workflow.states.commit``.
"""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.workflow.idempotency import commit_idempotency
from offset_restore.workflow.observability import logger, metrics, tracer
from offset_restore.workflow.settings import ApplySettings
from offset_restore.workflow.states.commit import commit_step

from offset_restore_handlers.requests import BatchRequest, parse


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = ApplySettings.from_env()
    request = parse(BatchRequest, event, "commit")
    logger.append_keys(restore_id=request.restore_id)
    dynamodb = boto3.client("dynamodb")
    idempotency = commit_idempotency(settings.table, dynamodb, context)
    answer = commit_step(request.step(), settings, dynamodb, boto3.client("s3"), idempotency)
    metrics.add_metric(name="GroupsCommitted", unit=MetricUnit.Count, value=len(answer["committed"]))
    metrics.add_metric(name="GroupsSkipped", unit=MetricUnit.Count, value=len(answer["skipped"]))
    metrics.add_metric(name="PartitionsVerified", unit=MetricUnit.Count, value=answer["verified"])
    return answer
