"""Commit one batch of a restore's groups on the target (previous offsets saved first), and verify it;
or, in the workflow's rollback mode, put back the previous offsets a run's commits saved.

A retry of the same batch within one execution (a Lambda or Map retry) returns the first answer
(powertools Idempotency, records in the project's table); a new execution commits again, which
changes nothing that is already in place.
"""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.apply.commit import ApplyOptions
from offset_restore.apply.steps import commit_groups, rollback_run, step_result
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.snapshot.filters import NameFilter
from offset_restore.stores.keys import COMMIT_IDEMPOTENCY_PK
from offset_restore.stores.runs import RunRecord
from offset_restore.translate.mapping_store import MappingStore
from offset_restore.workflow.observability import logger, metrics, tracer
from offset_restore.workflow.settings import ApplySettings, read_secret

from offset_restore_handlers.requests import BatchRequest, parse


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = ApplySettings.from_env()
    request = parse(BatchRequest, event, "commit")
    logger.append_keys(restore_id=request.restore_id)
    dynamodb = boto3.client("dynamodb")
    runs = RunRecord(settings.table, dynamodb)
    persistence = DynamoDBPersistenceLayer(
        table_name=settings.table,
        key_attr="pk",
        sort_key_attr="sk",
        static_pk_value=COMMIT_IDEMPOTENCY_PK,
        expiry_attr="ttl",
        boto3_client=dynamodb,
    )
    config = IdempotencyConfig(expires_after_seconds=12 * 3600)
    config.register_lambda_context(context)

    @idempotent_function(data_keyword_argument="batch", persistence_store=persistence, config=config)
    def commit_batch(batch: dict[str, Any]) -> dict[str, Any]:
        with KafkaCluster(settings.target.connection(read_secret)) as target:
            runs.committed_to(request.restore_id, target.cluster_id)  # what a rollback checks its brokers by
            result = commit_groups(
                request.restore_id,
                request.groups if request.groups is not None else (request.batch or 0),
                target,
                MappingStore(settings.table, dynamodb),
                allow_rewind=request.allow_rewind,
                index=settings.restore_folder(request.restore_id, boto3.client("s3")),
                offset_header=runs.resolved(request.restore_id).get("offset_header"),
            )
        return result.output()

    if request.rollback:  # not cached: a rollback reads the target's offsets now, so a retry is safe
        answer = roll_back(settings, request, dynamodb, runs)
    else:
        answer = commit_batch(batch=request.model_dump(mode="json"))
    metrics.add_metric(name="GroupsCommitted", unit=MetricUnit.Count, value=len(answer["committed"]))
    metrics.add_metric(name="GroupsSkipped", unit=MetricUnit.Count, value=len(answer["skipped"]))
    metrics.add_metric(name="PartitionsVerified", unit=MetricUnit.Count, value=answer["verified"])
    return answer


def roll_back(settings: ApplySettings, request: BatchRequest, dynamodb: Any, runs: RunRecord) -> dict[str, Any]:
    """The run's previous offsets put back (``apply.steps.rollback_run``); active groups are left and
    named, not waited for — run the rollback again once they are empty."""
    groups = NameFilter.parse(request.groups_regex, request.exclude_groups, "groups")
    options = ApplyOptions(wait_timeout_s=0, on_wait_timeout="commit_empty", allow_rewind=request.allow_rewind)
    with KafkaCluster(settings.target.connection(read_secret)) as target:
        mappings = MappingStore(settings.table, dynamodb)
        _, cluster_id = runs.target_of(request.restore_id)
        _, report = rollback_run(request.restore_id, target, mappings, options, groups, cluster_id=cluster_id)
    return step_result(report).output()
