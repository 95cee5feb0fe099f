"""One snapshot run, shared by the CLI and the Lambda handler: connect, read, write, summarize."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from offset_restore.errors import BadInputError
from offset_restore.heap import full_collections_rare
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.kafka.model import TP
from offset_restore.reading.rounds import fetch_from
from offset_restore.snapshot.export import read_export
from offset_restore.snapshot.filters import DEFAULT_EXCLUDE_GROUPS
from offset_restore.snapshot.health import GroupLag, LagTally
from offset_restore.snapshot.live import (
    Progress,
    Snapshot,
    SnapshotOptions,
    SnapshotStream,
    count_groups,
    stream_snapshot,
)
from offset_restore.snapshot.model import SnapshotCounts, SnapshotManifest, default_cluster_name
from offset_restore.snapshot.offsets_topic import OffsetsTopicReader, snapshot_from_commits
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.storage import BlobStore

__all__ = ["SnapshotResult", "check_selection", "run_snapshot", "run_snapshot_from_export"]


class SnapshotResult(BaseModel):
    snapshot_id: str
    cluster: str
    source: str
    location: str
    manifest: str
    counts: SnapshotCounts
    duration_s: float
    requests: dict[str, int]
    timings: dict[str, float]
    notes: list[str]
    listed_groups: int | None = None
    """Groups on the source before the filters (null when the source does not say: an export)."""
    top_lag: list[GroupLag] = Field(default_factory=list)
    """The groups that lag most, largest first (snapshot/health.py: what the metrics show per group)."""


@full_collections_rare()
def run_snapshot(
    connection: ConnectionSettings,
    store: BlobStore,
    options: SnapshotOptions,
    *,
    offsets_topic: str | None = None,
    as_of: datetime | None = None,
    progress: Progress | None = None,
    connect: Callable[[ConnectionSettings], KafkaCluster] = KafkaCluster,
) -> SnapshotResult:
    """Validate everything that can be validated before connecting, then snapshot and write.

    Bad filters, ids or an unusable location fail before any Kafka request or write; filters that
    match nothing fail after reading, before writing.
    """
    _check_before_reading(store, options)
    started = time.perf_counter()
    tally = LagTally()
    listed: int | None = None
    with connect(connection) as cluster:
        snapshot: Snapshot | SnapshotStream
        if offsets_topic is None:
            snapshot = stream_snapshot(cluster, options, progress=progress)
            listed = snapshot.listed_groups
            where = f"cluster {snapshot.manifest.cluster}"
            check_selection(options, snapshot.selected_groups, snapshot.selected_group_partitions, listed, where)
            snapshot.groups = tally.watch(snapshot.groups)
        else:
            snapshot = _from_offsets_topic(cluster, options, offsets_topic, as_of, progress)
            _check_snapshot(options, snapshot, f"offsets topic {offsets_topic}", tally)
        repository = SnapshotRepository(store)
        manifest_key = repository.write(snapshot)
        requests = dict(sorted(cluster.requests_by_api().items()))
    result = _result(snapshot.manifest, manifest_key, store, started, requests, snapshot.timings)
    return result.model_copy(update={"listed_groups": listed, "top_lag": tally.top()})


def check_selection(
    options: SnapshotOptions, groups: int, group_partitions: int, listed: int | None, where: str
) -> None:
    """A filter that matched nothing is a mistake (a typo, a renamed group), not an empty source: it
    fails, naming the filter, and nothing is written. Without a filter an empty selection is a fact
    about the source, written like any snapshot (the caller says it loudly)."""
    given = _filters_given(options)
    if not given:
        return
    if groups == 0:
        among = f"none of the {listed:,} groups on {where}" if listed is not None else f"no group in {where}"
        raise BadInputError(f"{given} matched {among}: nothing written (patterns match whole names)")
    if options.topics is not None and group_partitions == 0:
        raise BadInputError(
            f"--topics {options.topics!r} matched no topic that the {groups:,} selected groups on {where} commit on: "
            "nothing written (patterns match whole names)"
        )


def _filters_given(options: SnapshotOptions) -> str:
    """The filters the user set, as they would type them ('' when none narrows the default)."""
    given = [("--groups", options.groups), ("--topics", options.topics)]
    if options.exclude_groups not in (None, DEFAULT_EXCLUDE_GROUPS):
        given.append(("--exclude-groups", options.exclude_groups))
    return " ".join(f"{flag} {value!r}" for flag, value in given if value is not None)


def _check_snapshot(options: SnapshotOptions, snapshot: Snapshot, where: str, tally: LagTally) -> None:
    """``check_selection`` for a snapshot read whole (no cluster listing to count), then tally it."""
    counts = snapshot.manifest.counts
    check_selection(options, counts.groups, counts.group_partitions, None, where)
    for group in snapshot.groups:
        tally.add(group)


def _check_before_reading(store: BlobStore, options: SnapshotOptions) -> None:
    """The filters compile and the destination takes this snapshot (a new id, a writable location)."""
    options.group_filter()
    options.topic_filter()
    if options.cluster and options.snapshot_id:
        SnapshotRepository(store).check_new(options.snapshot_id, options.cluster)
    else:
        store.check_writable()


def _result(
    manifest: SnapshotManifest,
    key: str,
    store: BlobStore,
    started: float,
    requests: dict[str, int],
    timings: dict[str, float],
) -> SnapshotResult:
    return SnapshotResult(
        snapshot_id=manifest.snapshot_id,
        cluster=manifest.cluster,
        source=manifest.source,
        location=store.description,
        manifest=key,
        counts=manifest.counts,
        duration_s=round(time.perf_counter() - started, 3),
        requests=requests,
        timings=timings,
        notes=manifest.notes,
    )


def run_snapshot_from_export(
    path: str, store: BlobStore, options: SnapshotOptions, *, group: str | None = None, as_of: datetime | None = None
) -> SnapshotResult:
    """A snapshot of the positions in a ``kafka-consumer-groups`` file (snapshot/export.py): no cluster is
    asked (the source may be gone), so there is no evidence, and ``--cluster`` names it. Its positions are as
    of ``as_of``, else the file's modification time: a plan's age of the offsets is the file's, not this run's."""
    if not options.cluster:
        raise BadInputError("--from-export needs --cluster: the name of the cluster the export was taken from")
    _check_before_reading(store, options)
    started, created_at = time.perf_counter(), datetime.now(UTC)
    positions_at, said_when = _export_time(path, as_of, created_at)
    export = read_export(path, group=group)
    manifest, groups = snapshot_from_commits(
        export.commits, group_filter=options.group_filter(), topic_filter=options.topic_filter(),
        cluster=options.cluster, snapshot_id=options.snapshot_id, created_at=created_at, as_of=positions_at,
        source="export",
    )  # fmt: skip
    form = "--describe output" if export.described else "an --export file"
    notes = [
        f"from {Path(path).name}, kafka-consumer-groups {form} of {said_when}: no evidence (the header, "
        "checkpoint and mm2 strategies place it)"
    ]
    if export.left_out:
        notes.append(
            f"kafka-consumer-groups left out {len(export.left_out)} group(s), not in this snapshot: "
            + ", ".join(export.left_out[:20])
            + (f" and {len(export.left_out) - 20} more" if len(export.left_out) > 20 else "")
            + " (its --describe output holds groups with members too)"
        )
    manifest = manifest.model_copy(
        update={"counts": count_groups(groups), "filters": options.filters(), "notes": notes}
    )
    snapshot, tally = Snapshot(manifest=manifest, groups=groups), LagTally()
    _check_snapshot(options, snapshot, f"export {Path(path).name}", tally)
    manifest_key = SnapshotRepository(store).write(snapshot)
    result = _result(manifest, manifest_key, store, started, {}, {})
    return result.model_copy(update={"top_lag": tally.top()})


def _export_time(path: str, as_of: datetime | None, now: datetime) -> tuple[datetime, str]:
    """When an export's positions were read, and how that is known: ``--as-of``, else the file's modification
    time (a copy that lost it shows the copy's time: give ``--as-of``); never later than now."""
    if as_of is not None:
        if as_of > now:
            raise BadInputError(f"--as-of {as_of:%Y-%m-%dT%H:%M:%SZ} is in the future: give when the export was taken")
        return as_of, f"{as_of:%Y-%m-%dT%H:%M:%SZ} (--as-of)"
    try:
        modified = datetime.fromtimestamp(Path(path).stat().st_mtime, UTC)
    except OSError as error:
        raise BadInputError(f"--from-export {path}: {error.strerror or error}") from None
    modified = min(modified, now)
    return modified, f"{modified:%Y-%m-%dT%H:%M:%SZ} (the file's modification time; --as-of gives another)"


def _from_offsets_topic(
    cluster: KafkaCluster,
    options: SnapshotOptions,
    topic: str,
    as_of: datetime | None,
    progress: Progress | None,
) -> Snapshot:
    created_at = datetime.now(UTC)
    partitions = cluster.topic_partitions().get(topic)
    if partitions is None:
        raise BadInputError(
            f"topic {topic} (--from-offsets-topic) does not exist on {cluster.settings.bootstrap_servers}"
        )
    bounds = cluster.log_bounds(TP(topic, p) for p in range(partitions))
    reader = OffsetsTopicReader(as_of_ms=int(as_of.timestamp() * 1000) if as_of else None)

    reader.read(
        topic,
        bounds,
        fetch_from(cluster),
        progress=(lambda done, total: progress("records", done, total)) if progress else None,
    )
    manifest, groups = snapshot_from_commits(
        reader.commits.values(),
        group_filter=options.group_filter(),
        topic_filter=options.topic_filter(),
        cluster=options.cluster or default_cluster_name(cluster.cluster_id),
        snapshot_id=options.snapshot_id,
        created_at=created_at,
        as_of=as_of,
    )
    counts = count_groups(groups).model_copy(
        update={"offsets_topic_records": reader.records, "offsets_topic_corrupt": reader.corrupt}
    )
    notes = [f"offsets topic {topic}: {reader.corrupt} corrupt records skipped", *reader.corrupt_examples]
    other = ", ".join(f"type {kind}: {count}" for kind, count in sorted(reader.other.items()))
    manifest = manifest.model_copy(
        update={
            "counts": counts,
            "filters": options.filters(),
            "notes": [
                *(notes if reader.corrupt_examples or reader.corrupt else []),
                *([f"offsets topic {topic}: records that are not offset commits skipped ({other})"] if other else []),
            ],
        }
    )
    return Snapshot(manifest=manifest, groups=groups)
