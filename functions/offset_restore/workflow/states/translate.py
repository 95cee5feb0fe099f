"""The Translate state: one work item (a batch of group-partitions in S3) translated on the target and
each entry recorded in DynamoDB."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from pydantic import BaseModel, ValidationError

from offset_restore.errors import BadInputError
from offset_restore.formats.plan import PlanSummary
from offset_restore.heap import full_collections_rare
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import BlobStore
from offset_restore.translate.checkpoints import CheckpointReader
from offset_restore.translate.exposure import History
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.translation import translation
from offset_restore.translate.work_items import WorkItem
from offset_restore.validation import describe

logger = logging.getLogger(__name__)

__all__ = ["WorkItemResult", "translate_work_item"]


def _history(item: WorkItem) -> History | None:
    """The snapshot history a work item carries (``prepare_work``), as the translation reads it."""
    if item.groups_stopped:
        return History(item.history_at or item.snapshot_at or datetime.now(UTC), stopped=True)
    return History(item.history_at, item.history) if item.history_at is not None else None


class WorkItemResult(BaseModel):
    restore_id: str
    work_item: str
    entries: int
    written: int
    unchanged: int
    summary: PlanSummary


@full_collections_rare()
def translate_work_item(
    store: BlobStore,
    key: str,
    connection: ConnectionSettings,
    mappings: MappingStore,
    *,
    target_cluster: str | None = None,
    checkpoints: CheckpointReader | None = None,
    connect: Callable[[ConnectionSettings], KafkaCluster] = KafkaCluster,
) -> WorkItemResult:
    """Translate one work item from the store and record each entry in DynamoDB (idempotent)."""
    try:
        item = WorkItem.model_validate_json(store.get(key))
    except ValidationError as error:
        raise BadInputError(f"work item {store.description}/{key} is invalid: {describe(error)}") from None
    options = PlanOptions.of(item, target_cluster=target_cluster)
    with connect(connection) as target:
        done = translation(
            item.groups,
            target,
            options,
            snapshot_completed_at=item.snapshot_completed_at,
            snapshot_at=item.snapshot_at,
            history=_history(item),
            checkpoints=checkpoints,
            source_partitions=item.source_partitions,
            source_recreated=item.source_recreated,
        )
    entries = list(done.entries())
    counts = mappings.put(item.restore_id, entries, until_exact=item.until_exact)
    return WorkItemResult(
        restore_id=item.restore_id,
        work_item=key,
        entries=len(entries),
        written=counts["written"],
        unchanged=counts["unchanged"],
        summary=PlanSummary.of(entries),
    )
