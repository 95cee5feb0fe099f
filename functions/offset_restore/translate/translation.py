"""One translation of a snapshot's groups, assembled the same way for the CLI's ``plan`` and the
workflow's translate step: the two paths read the same settings and apply the same rules, so the
automated failover answers as the operator's command does (it once lacked the newer-checkpoint rule).

The order: MirrorMaker 2's checkpoints are read when the mm2 strategy is asked for; a checkpoint
emitted after the snapshot completed moves its group-partition to the checkpoint's position (the newer
position wins, translate/mm2.py); then every position is decided by the strategies (translate/plan.py)
and the entries are made, those moved by a newer checkpoint settled against the target's log.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property

from offset_restore.errors import BadInputError
from offset_restore.formats.plan import PlanEntry
from offset_restore.heap import collections_paused
from offset_restore.kafka.model import TP, LogBounds
from offset_restore.snapshot.model import GroupSnapshot
from offset_restore.translate.checkpoints import CheckpointReader
from offset_restore.translate.context import TargetCluster
from offset_restore.translate.exposure import GroupMotion, History, aware, motion_of
from offset_restore.translate.mm2 import Fresher, MirrorCheckpoints, fresher_groups, settle
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.plan import collect_positions, decide_positions, plan_entries
from offset_restore.translate.positions import Decision, Position, PositionKey, TranslateStats
from offset_restore.translate.strategies.mm2 import load_mirror_checkpoints

__all__ = ["Translation", "translate", "translation"]

Progress = Callable[[str, int, int], None]


@dataclass
class Translation:
    """What the strategies decided for a snapshot's groups, and how to make the plan's entries of it
    (after the target is closed: making them reads no Kafka)."""

    groups: Iterable[GroupSnapshot]
    """The groups as translated: with the positions newer checkpoints moved (iterable again)."""
    options: PlanOptions
    decisions: dict[PositionKey, Decision]
    stats: TranslateStats
    fresher: dict[tuple[str, str, int], Fresher] = field(default_factory=dict)
    """Group-partitions a MirrorMaker 2 checkpoint newer than the snapshot moved."""
    fresh_bounds: dict[TP, LogBounds] = field(default_factory=dict)
    snapshot_at: datetime | None = None
    """When the snapshot read the positions (T): what its entries are exact as of."""
    history: History | None = None
    """The snapshot before it, for each group's commit rate (``translate/exposure.py``)."""
    planned_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def entries(self) -> Iterator[PlanEntry]:
        """The plan's entries, one group after another (the groups are read again), each saying whether
        its group was live at T and what it may read again for what it processed after."""
        settler = self._settler()
        for group in self.groups:
            motion = self._motion(group) if self.snapshot_at is not None else None
            for entry in plan_entries(
                [group],
                self.decisions,
                self.options,
                settler,
                reshaped=self.stats.reshaped,
                target_topic_ids=self.stats.target_topic_ids,
            ):
                yield entry if motion is None else self._exposed(entry, motion)

    def _motion(self, group: GroupSnapshot) -> GroupMotion:
        assert self.snapshot_at is not None
        return motion_of(group, self.snapshot_at, self.history, self._moved.get(group.group))

    @cached_property
    def _moved(self) -> dict[str, dict[str, int]]:
        """Per group, the snapshot's own offsets of the partitions a newer checkpoint moved."""
        moved: dict[str, dict[str, int]] = defaultdict(dict)
        for (group, topic, partition), newer in self.fresher.items():
            moved[group][f"{topic}/{partition}"] = newer.snapshot_offset
        return moved

    def _exposed(self, entry: PlanEntry, motion: GroupMotion) -> PlanEntry:
        """``entry`` with its group's liveness and exposure; an entry a newer checkpoint moved is exposed
        only from that checkpoint's time (the newer position wins)."""
        assert self.snapshot_at is not None
        since = self.snapshot_at
        newer = self.fresher.get((entry.group, entry.topic, entry.partition))
        if newer is not None and entry.source_offset == newer.checkpoint.upstream:  # settle used the checkpoint
            since = datetime.fromtimestamp(newer.checkpoint.emitted_ms / 1000, UTC)
        entry.live_at_snapshot = motion.live
        exposure = motion.exposure(f"{entry.topic}/{entry.partition}", since, self._until)
        end = self.stats.target_ends.get(entry.target)
        if exposure is not None and end is not None and entry.target_offset is not None:
            exposure = min(exposure, max(0, end - entry.target_offset))  # none read again that is not there
        entry.exposure = exposure
        return entry

    @cached_property
    def _until(self) -> datetime:
        """Up to when a live group is counted to have read on after the snapshot: the plan, or when the
        source stopped (``source_stopped_at``) if that came first."""
        stopped = self.options.source_stopped_at
        return self.planned_at if stopped is None else min(self.planned_at, stopped)

    def _settler(self) -> Callable[[PlanEntry], PlanEntry] | None:
        if not self.fresher:
            return None

        def settled(entry: PlanEntry) -> PlanEntry:
            newer = self.fresher.get((entry.group, entry.topic, entry.partition))
            return entry if newer is None else settle(entry, newer, self.fresh_bounds.get(entry.target))

        return settled


def translation(
    groups: Iterable[GroupSnapshot],
    target: TargetCluster,
    options: PlanOptions,
    *,
    snapshot_completed_at: datetime | None,
    snapshot_at: datetime | None = None,
    history: History | None = None,
    positions: dict[PositionKey, Position] | None = None,
    checkpoints: CheckpointReader | None = None,
    progress: Progress | None = None,
    source_partitions: Mapping[str, int] | None = None,
    source_recreated: Mapping[str, str] | None = None,
) -> Translation:
    """Decide every position of ``groups`` (re-iterable: a stored snapshot is read again for the
    entries) on ``target``. ``positions``: already collected from ``groups`` (the CLI collects them
    before its first Kafka request, so a bad items file fails before any); collected again when a
    newer checkpoint moves some. ``snapshot_completed_at`` None: no checkpoint counts as newer.
    ``snapshot_at``: when the snapshot read the positions (T; None: entries say nothing of liveness);
    ``history``: the snapshot before it (None: no rate, a live group's exposure unknown)."""
    _refuse_a_stop_before(options.source_stopped_at, snapshot_at)
    mm2 = load_mirror_checkpoints(target, options) if "mm2" in options.strategies else None
    fresher: dict[tuple[str, str, int], Fresher] = {}
    if isinstance(mm2, MirrorCheckpoints) and snapshot_completed_at and mm2.newer_than(snapshot_completed_at):
        groups = _Fresher(groups, mm2, snapshot_completed_at, options.topic_map, fresher)
        positions = None
    if positions is None:
        positions = collect_positions(groups, options)
    decisions, stats = decide_positions(
        positions,
        target,
        options,
        checkpoints=checkpoints,
        mm2=mm2,
        progress=progress,
        source_partitions=source_partitions,
        source_recreated=source_recreated,
    )
    bounds = _bounds_of(target, fresher, options.topic_map)
    return Translation(groups, options, decisions, stats, fresher, bounds, snapshot_at, history)


@collections_paused()
def translate(
    groups: Sequence[GroupSnapshot],
    target: TargetCluster,
    options: PlanOptions,
    *,
    snapshot_completed_at: datetime | None = None,
    checkpoints: CheckpointReader | None = None,
    progress: Progress | None = None,
    source_partitions: Mapping[str, int] | None = None,
) -> tuple[list[PlanEntry], TranslateStats]:
    """Plan entries for every group-partition of ``groups``, in memory; reads the target, writes nothing."""
    done = translation(
        groups,
        target,
        options,
        snapshot_completed_at=snapshot_completed_at,
        checkpoints=checkpoints,
        progress=progress,
        source_partitions=source_partitions,
    )
    return list(done.entries()), done.stats


def _refuse_a_stop_before(stopped: datetime | None, snapshot_at: datetime | None) -> None:
    """A source said to have stopped before the snapshot read it is a wrong date (the source answered
    then): refused before the target is read, rather than counting every live group's exposure as 0."""
    if stopped is not None and snapshot_at is not None and stopped < aware(snapshot_at):
        raise BadInputError(
            f"source_stopped_at (--source-stopped-at) {stopped.isoformat()} is before the snapshot read the "
            f"positions ({aware(snapshot_at).isoformat()}): the source answered then. Give the time it stopped "
            "serving its consumers (the alarm's), or leave it out to count up to the plan"
        )


def _bounds_of(
    target: TargetCluster, fresher: Mapping[tuple[str, str, int], Fresher], topic_map: Mapping[str, str]
) -> dict[TP, LogBounds]:
    """The target logs of the group-partitions with a newer MM2 checkpoint (those that exist); no
    request when there are none (the usual plan)."""
    if not fresher:
        return {}
    topics = target.topic_partitions()
    wanted = {TP(topic_map.get(t, t), p) for _, t, p in fresher}
    return target.log_bounds(tp for tp in wanted if tp.partition < topics.get(tp.topic, 0))


class _Fresher:
    """The snapshot's groups as ``fresher_groups`` gives them, each time they are iterated (the plan
    reads them twice: positions, then entries)."""

    def __init__(
        self,
        groups: Iterable[GroupSnapshot],
        table: MirrorCheckpoints,
        completed: datetime,
        topic_map: Mapping[str, str],
        found: dict[tuple[str, str, int], Fresher],
    ) -> None:
        self.groups, self.table, self.completed, self.topic_map, self.found = groups, table, completed, topic_map, found

    def __iter__(self) -> Iterator[GroupSnapshot]:
        return fresher_groups(self.groups, self.table, self.completed, self.topic_map, self.found)
