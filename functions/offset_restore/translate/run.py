"""One plan run, shared by the CLI and the handlers: find the snapshot, read the target, write the plan."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO

from pydantic import BaseModel

from offset_restore.errors import AlreadyExistsError, BadInputError, OffsetRestoreError
from offset_restore.formats.plan import ClusterRef as _ClusterRef
from offset_restore.formats.plan import Plan, PlanSummary, csv_unsafe, new_restore_id
from offset_restore.heap import full_collections_rare
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.snapshot.filters import NameFilter
from offset_restore.snapshot.live import Progress, Snapshot
from offset_restore.snapshot.model import GroupSnapshot, SnapshotManifest, default_cluster_name, validate_name
from offset_restore.snapshot.store import MANIFEST, SnapshotRepository, StoredGroups
from offset_restore.stores.storage import BlobStore, open_location
from offset_restore.translate.checkpoints import CheckpointReader
from offset_restore.translate.document import PlanDocument, ProblemKind
from offset_restore.translate.exposure import History, history_of
from offset_restore.translate.options import STRATEGIES, PlanOptions, PlanSettings, Strategy
from offset_restore.translate.plan import collect_positions
from offset_restore.translate.positions import TranslateStats
from offset_restore.translate.translation import translation

logger = logging.getLogger(__name__)

__all__ = [
    "PlanResult",
    "SnapshotChoice",
    "create_plan",
    "find_snapshot",
    "load_snapshot",
    "new_plan_location",
    "parse_strategies",
    "parse_topic_map",
    "recreated_since",
    "refuse_unknown_scopes",
    "run_plan",
    "snapshot_history",
    "split_location",
]


@dataclass(frozen=True)
class SnapshotChoice:
    """Which snapshot: a manifest file, or in a location the latest / an id / the newest as of a time."""

    location: str
    snapshot_id: str | None = None
    as_of: datetime | None = None
    cluster: str | None = None


def find_snapshot(
    choice: SnapshotChoice, open_store: Callable[[str], BlobStore] = open_location
) -> tuple[SnapshotRepository, str, SnapshotManifest]:
    """The chosen snapshot's repository, manifest key and manifest (its groups not read yet)."""
    if choice.location.rstrip("/").endswith(MANIFEST):
        folder, _, name = choice.location.rstrip("/").rpartition("/")
        repository = SnapshotRepository(open_store(folder or "."))
        return repository, name, repository.manifest(name)
    repository = SnapshotRepository(open_store(choice.location))
    if choice.snapshot_id:
        key, manifest = repository.by_id(choice.snapshot_id, choice.cluster)
    elif choice.as_of:
        key, manifest = repository.as_of(choice.as_of, choice.cluster)
    else:
        key, manifest = repository.latest(choice.cluster)
    return repository, key, manifest


def refuse_unknown_scopes(settings: PlanSettings, manifest: SnapshotManifest) -> None:
    """A ``restore_complete`` that names nothing of the snapshot is refused before anything is read or
    written: it would leave the partition meant waiting, with no word why."""
    problems = settings.unknown_scopes(manifest.topic_partitions)
    if problems:
        raise BadInputError(
            f"restore_complete (--restore-complete): {'; '.join(problems[:5])}; give source topics as the snapshot "
            f"{manifest.snapshot_id} names them (topic or topic/partition); nothing was read or written"
        )


def snapshot_history(
    repository: SnapshotRepository, manifest: SnapshotManifest, wanted: Callable[[str], bool]
) -> History | None:
    """The positions of the ``wanted`` groups in the snapshot before ``manifest`` (the groups' commit
    rates, translate/exposure.py), or None when there is none — or when it cannot be read (damaged,
    expired): an estimate never blocks a failover; its entries then say their exposure is unknown."""
    if manifest.groups_stopped:  # a migration's: the groups stopped before it, no rate is needed
        return History(manifest.positions_at, stopped=True)
    try:
        previous = repository.previous(manifest)
        if previous is None:
            return None
        key, before = previous
        recreated = {t for t, was in before.topic_ids.items() if manifest.topic_ids.get(t, was) != was}
        if recreated:
            logger.warning(
                "topics deleted and created again between snapshots %s and %s: %s (their earlier positions are "
                "another log's: no commit rates there)",
                before.snapshot_id,
                manifest.snapshot_id,
                ", ".join(sorted(recreated)),
            )
        groups = (g for g in repository.positions(key, before) if wanted(g.group))
        return history_of(groups, before.positions_at, leave_out=recreated)
    except OffsetRestoreError as error:
        logger.warning("the snapshot before %s cannot be read (%s): no commit rates", manifest.snapshot_id, error)
        return None


def recreated_since(repository: SnapshotRepository, manifest: SnapshotManifest) -> dict[str, str]:
    """The source topics deleted and created again after ``manifest`` was taken, as the newest snapshot of
    its cluster records their ids, each with why its positions are not mapped: they are positions in the
    old topic's log, and a restore of the new one holds other records at those offsets. Nothing when the
    snapshots record no ids, or the newest cannot be read (it never blocks a failover)."""
    if not manifest.topic_ids:
        return {}
    try:
        _, newest = repository.latest(manifest.cluster)
    except OffsetRestoreError:
        return {}
    if newest.snapshot_id == manifest.snapshot_id:
        return {}
    return {
        topic: (
            f"topic {topic} was deleted and created again on the source after snapshot {manifest.snapshot_id} "
            f"(topic id {was} there, {newest.topic_ids[topic]} in the newer snapshot {newest.snapshot_id}): these "
            "positions are in the old topic's log, and a restore of the new one holds other records at those "
            f"offsets; plan from a snapshot of the topic as it is now (--snapshot-id {newest.snapshot_id})"
        )
        for topic, was in sorted(manifest.topic_ids.items())
        if newest.topic_ids.get(topic, was) != was
    }


def load_snapshot(choice: SnapshotChoice, open_store: Callable[[str], BlobStore] = open_location) -> Snapshot:
    repository, key, manifest = find_snapshot(choice, open_store)
    return repository.load(key, manifest)


def parse_topic_map(pairs: Sequence[str]) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for pair in pairs:
        source, sep, target = pair.partition("=")
        if not sep or not source or not target:
            raise BadInputError(f"--topic-map {pair!r} is not SRC_TOPIC=TGT_TOPIC")
        if source in mapping and mapping[source] != target:
            raise BadInputError(f"--topic-map maps {source} twice ({mapping[source]}, {target})")
        mapping[source] = target
    targets: dict[str, str] = {}
    for source, target in mapping.items():
        if target in targets:
            raise BadInputError(f"--topic-map maps both {targets[target]} and {source} to {target}")
        targets[target] = source
    return mapping


def parse_strategies(text: str) -> tuple[Strategy, ...]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in STRATEGIES]
    if unknown or not names:
        raise BadInputError(f"--strategies {text!r}: choose from {','.join(STRATEGIES)}")
    if len(set(names)) != len(names):
        raise BadInputError(f"--strategies {text!r} names a strategy twice")
    return tuple(name for name in names)  # type: ignore[misc]


class PlanResult(BaseModel):
    restore_id: str
    snapshot_id: str
    source_cluster: str
    target_cluster: str
    location: str
    csv: str | None
    summary: PlanSummary
    duration_s: float
    requests: dict[str, int]
    fetch_rounds: dict[str, int]
    median_rounds_per_partition: dict[str, float]
    out_of_order: dict[str, str]
    """Target partitions found out of order (read whole), with why, as in the plan."""
    problems: list[ProblemKind]
    """The first kinds of pending or unmapped entries, counted (the plan holds them all)."""
    reshaped: dict[str, str] = {}
    """Source topics whose shape changed in the restore, with why, as in the plan."""
    csv_left_out: list[str] = []
    """The first groups ``--csv`` leaves out because an entry holds them (as apply would)."""
    csv_left_out_count: int = 0
    csv_formulas: list[str] = []
    """The first groups whose CSV lines a spreadsheet would run as formulas (an id or topic beginning with
    ``=``, ``+``, ``-`` or ``@``); kafka-consumer-groups reads them as names."""
    csv_formula_count: int = 0
    csv_unmapped_topics: dict[str, int] = {}
    """Target topics whose group-partitions are not in the CSV while the rest of their groups are (as
    apply writes them), with how many: unmapped (missing on the target, or placed by no strategy)."""
    fresher_from_mm2: int = 0
    """Group-partitions resumed from a MirrorMaker 2 checkpoint newer than the snapshot (translate/mm2.py)."""
    created_at: datetime | None = None
    """The plan's own time (its ``created_at``)."""
    snapshot_positions_at: datetime | None = None
    """When the snapshot read the positions the plan starts from (its ``as_of`` for a restored
    ``__consumer_offsets``, else when it was taken): with ``created_at``, the recovery point."""


@full_collections_rare()
def run_plan(
    choice: SnapshotChoice,
    connection: ConnectionSettings,
    output: str,
    options: PlanOptions,
    *,
    groups: str | None = None,
    restore_id: str | None = None,
    csv_path: str | None = None,
    checkpoints: CheckpointReader | None = None,
    progress: Progress | None = None,
    connect: Callable[[ConnectionSettings], KafkaCluster] = KafkaCluster,
) -> PlanResult:
    """Everything is checked before the first Kafka request; the plan is written only when complete.

    The snapshot's groups are read from the store twice (positions, before the first Kafka request,
    then entries) and the entries written as they are made (``PlanDocument``), so memory holds one
    compact position per distinct committed offset and not the groups' documents or the plan's
    (docs/benchmarks.md, plan memory).
    """
    restore_id = restore_id or new_restore_id()
    validate_or_refuse(restore_id)
    group_filter = NameFilter.parse(groups, None, "groups")
    plan_store, plan_key = new_plan_location(output)
    plan_store.check_writable()
    repository, key, manifest = find_snapshot(choice)
    refuse_unknown_scopes(options, manifest)
    history = snapshot_history(repository, manifest, group_filter)
    selected: Iterable[GroupSnapshot] = StoredGroups(repository, key, manifest, group_filter)
    checked = _checked_for_csv(selected, options.topic_map) if csv_path else selected
    positions = collect_positions(checked, options)  # every items file read and checked: no Kafka yet
    started = time.perf_counter()
    with connect(connection) as target:
        done = translation(
            selected,
            target,
            options,
            snapshot_completed_at=manifest.completed_at,
            snapshot_at=manifest.positions_at,
            history=history,
            positions=positions,
            checkpoints=checkpoints,
            progress=progress,
            source_partitions=manifest.topic_partitions,
            source_recreated=recreated_since(repository, manifest),
        )
        requests = dict(sorted(target.requests_by_api().items()))
        target_name = options.target_cluster or default_cluster_name(target.cluster_id)
        target_id = target.cluster_id
    target_ref = _ClusterRef(cluster=target_name, bootstrap_servers=connection.bootstrap_servers, cluster_id=target_id)
    header = _plan_header(restore_id, manifest, target_ref, options, done.stats, history.at if history else None)
    with PlanDocument(csv=bool(csv_path)) as document:
        for entry in done.entries():
            document.add(entry)
        plan, content = document.finish(header)
        with content:
            create_plan(plan_store, plan_key, content, output)
        if csv_path:
            csv_store, csv_key = split_location(csv_path)
            csv_store.put_file(csv_key, document.csv_file(), "text/csv")
    medians = {name: _median(list(per.values())) for name, per in done.stats.rounds_per_partition.items() if per}
    return PlanResult(
        restore_id=restore_id,
        snapshot_id=plan.snapshot_id,
        source_cluster=plan.source.cluster,
        target_cluster=plan.target.cluster,
        location=output,
        csv=csv_path,
        summary=plan.summary,
        duration_s=round(time.perf_counter() - started, 3),
        requests=requests,
        fetch_rounds=done.stats.fetch_rounds,
        median_rounds_per_partition=medians,
        out_of_order=plan.out_of_order,
        problems=list(document.problems.values()),
        reshaped=plan.reshaped,
        csv_left_out=document.csv_left_out,
        csv_left_out_count=document.csv_left_out_count,
        csv_formulas=document.csv_formulas,
        csv_formula_count=document.csv_formula_count,
        csv_unmapped_topics=dict(sorted(document.csv_unmapped_topics.items())) if csv_path else {},
        fresher_from_mm2=len(done.fresher),
        created_at=plan.created_at,
        snapshot_positions_at=manifest.as_of or manifest.created_at,
    )


def _plan_header(
    restore_id: str,
    manifest: SnapshotManifest,
    target: _ClusterRef,
    options: PlanOptions,
    stats: TranslateStats,
    history_at: datetime | None,
) -> Plan:
    """The plan document without its entries (``PlanDocument`` writes them as they are made)."""
    return Plan(
        restore_id=restore_id,
        snapshot_id=manifest.snapshot_id,
        created_at=datetime.now(UTC),
        source=_ClusterRef(cluster=manifest.cluster),
        target=target,
        entries=[],
        strategies=list(options.strategies),
        offset_header=options.offset_header,
        topic_map=dict(options.topic_map),
        order_check=options.order_check if "header" in options.strategies else None,
        out_of_order={str(tp): why for tp, why in sorted(stats.out_of_order.items())},
        reshaped={topic: r.why for topic, r in sorted(stats.reshaped.items())},
        recovery_point=manifest.positions_at,
        history_at=history_at,
    )


def _checked_for_csv(groups: Iterable[GroupSnapshot], topic_map: Mapping[str, str]) -> Iterator[GroupSnapshot]:
    """``groups`` as they stream by, ``--csv`` refused at the first name it cannot carry safely
    (before anything is written: the check runs in the pass that precedes the first Kafka request)."""
    for group in groups:
        names = [("group", group.group)] + [("topic", topic_map.get(p.topic, p.topic)) for p in group.partitions]
        for kind, name in names:
            why = csv_unsafe(name)
            if why:
                raise BadInputError(
                    f"--csv: {kind} {name!r} (of group {group.group!r}) {why}, which kafka-consumer-groups "
                    "--from-file would split into other groups' lines; leave out --csv (the plan holds every "
                    "entry) or leave the group out with --groups"
                )
        yield group


def validate_or_refuse(restore_id: str) -> None:
    try:
        validate_name(restore_id, "restore id")
    except ValueError as error:
        raise BadInputError(str(error)) from None


def new_plan_location(location: str) -> tuple[BlobStore, str]:
    """Where a new plan goes, refused when a plan is there already: apply records into a plan, so one is
    never overwritten."""
    store, key = split_location(location)
    if store.exists(key):
        raise BadInputError(f"{location} already exists: a plan is never overwritten (apply records into it)")
    return store, key


def create_plan(store: BlobStore, key: str, content: IO[bytes], location: str) -> None:
    """Write a new plan where none is: refused, and this plan not written, when another run created one
    there since this run checked the place free (its previous offsets, which apply records into it, stay)."""
    try:
        store.create_file(key, content, "application/json")
    except AlreadyExistsError:
        raise AlreadyExistsError(
            f"{location} was written by another run while this one planned: this plan was not written, and the "
            "other is kept as it is (apply may have recorded previous offsets into it); plan again with another "
            "--output"
        ) from None


def split_location(location: str) -> tuple[BlobStore, str]:
    """A file's location as its folder's store and its name there."""
    folder, _, name = location.rstrip("/").rpartition("/")
    if not name:
        raise BadInputError(f"{location!r} names no file")
    return open_location(folder or "."), name


def _median(values: list[int]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return float(ordered[middle]) if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
