"""The Prepare state: the snapshot resolved, the restore id claimed for this input, the groups selected
and written as Translate work items."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from offset_restore.errors import BadInputError
from offset_restore.snapshot.filters import NameFilter
from offset_restore.snapshot.model import GroupSnapshot, SnapshotManifest, parse_time
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.in_flight import InFlight
from offset_restore.stores.keys import restore_object
from offset_restore.stores.runs import RunRecord
from offset_restore.stores.storage import BlobStore, S3Store
from offset_restore.translate.exposure import History
from offset_restore.translate.options import PLAN_DEFAULTS
from offset_restore.translate.run import recreated_since, refuse_unknown_scopes, snapshot_history
from offset_restore.translate.work_items import WorkItem, split_work
from offset_restore.validation import describe
from offset_restore.workflow.settings import PrepareSettings
from offset_restore.workflow.states.validate import RunInput

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

__all__ = ["WORK_ITEM_GROUP_PARTITIONS", "prepare_state", "prepare_work", "resolved_input"]


WORK_ITEM_GROUP_PARTITIONS = 2_000
_DEFAULT_PARTITION_HEADER = PLAN_DEFAULTS.partition_header


def prepare_work(
    run: RunInput, snapshots: SnapshotRepository, store: BlobStore, runs: RunRecord | None = None
) -> dict[str, Any]:
    """Resolve the snapshot, claim the restore id for this input (``runs``), select the groups and
    write the work items; returns their keys."""
    if run.snapshot == "latest":
        key, manifest = snapshots.latest(run.source_cluster)
    elif "id" in run.snapshot:
        key, manifest = snapshots.by_id(run.snapshot["id"], run.source_cluster)
    else:
        key, manifest = snapshots.as_of(parse_time(run.snapshot["as_of"]), run.source_cluster)
    refuse_unknown_scopes(run, manifest)
    if runs is not None:
        runs.claim(run.restore_id, resolved_input(run, manifest.snapshot_id))
    group_filter = NameFilter.parse(run.groups, run.exclude_groups, "groups")
    topic_filter = NameFilter.parse(run.topics, None, "topics")
    history = snapshot_history(snapshots, manifest, group_filter)
    recreated = recreated_since(snapshots, manifest)
    counts = {"groups": 0, "group_partitions": 0}

    def selected() -> Iterator[GroupSnapshot]:
        for group in snapshots.groups(key, manifest):
            if not group_filter(group.group):
                continue
            kept = [p for p in group.partitions if topic_filter(p.topic)]
            if kept:
                counts["groups"] += 1
                counts["group_partitions"] += len(kept)
                yield group.model_copy(update={"partitions": kept})

    keys = []
    # Work items are written as they fill, a few at once: memory holds those in flight, not the snapshot.
    with InFlight() as puts:
        for number, batch in enumerate(split_work(selected(), WORK_ITEM_GROUP_PARTITIONS)):
            keys.append(restore_object(run.restore_id, f"work/item-{number:05d}.json"))
            item = _work_item(run, manifest, history, batch, recreated).model_dump_json().encode()
            puts.submit(store.put, keys[-1], item, "application/json")
    return {
        "snapshot_id": manifest.snapshot_id,
        "snapshot_created_at": manifest.created_at.isoformat(),
        "work_items": keys,
        **counts,
    }


def _work_item(
    run: RunInput,
    manifest: SnapshotManifest,
    history: History | None,
    batch: list[GroupSnapshot],
    recreated: dict[str, str],
) -> WorkItem:
    """One Translate work item: the run's plan settings and the snapshot's facts beside its groups."""
    return WorkItem(
        **run.plan_settings().model_dump(),
        restore_id=run.restore_id,
        snapshot_id=manifest.snapshot_id,
        snapshot_completed_at=manifest.completed_at,
        snapshot_at=manifest.positions_at,
        history_at=history.at if history else None,
        history={g.group: dict(history.offsets[g.group]) for g in batch if g.group in history.offsets}
        if history
        else {},
        source_cluster=run.source_cluster,
        source_partitions=manifest.topic_partitions,
        source_recreated=recreated,
        groups=batch,
        until_exact=run.mode == "migrate",
        groups_stopped=manifest.groups_stopped,
    )


def resolved_input(run: RunInput, snapshot_id: str) -> dict[str, Any]:
    """What makes a restore this restore: a later run of the same id must resolve to the same."""
    return {
        "snapshot_id": snapshot_id,
        "source_cluster": run.source_cluster,
        "target_cluster": run.target_cluster,
        "groups": run.groups,
        "exclude_groups": run.exclude_groups,
        "topics": run.topics,
        "topic_map": dict(sorted(run.topic_map.items())),
        "strategies": list(run.strategies),
        "offset_header": run.offset_header,
        "order_check": run.order_check,
        "timestamp_margin_ms": run.timestamp_margin_ms,
        # Only when set: a restore first run before the option existed resolves as it did then.
        **({"partition_header": run.partition_header} if run.partition_header != _DEFAULT_PARTITION_HEADER else {}),
    }


def prepare_state(
    run_fields: Mapping[str, Any], settings: PrepareSettings, s3: S3Client, dynamodb: DynamoDBClient
) -> dict[str, Any]:
    """The Prepare state: the run as ValidateInput gave it (its loop counters left out), its snapshots where
    the Snapshot function writes them (one bucket, the same prefix), then ``prepare_work``."""
    try:
        run = RunInput.model_validate({k: v for k, v in run_fields.items() if k in RunInput.model_fields})
    except ValidationError as error:
        raise BadInputError(f"invalid prepare request: {describe(error)}") from None
    snapshots = SnapshotRepository(S3Store(settings.bucket, settings.snapshot_prefix, s3))
    return prepare_work(run, snapshots, S3Store(settings.bucket, "", s3), RunRecord(settings.table, dynamodb))
