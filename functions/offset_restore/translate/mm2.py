"""MirrorMaker 2's checkpoints as a source of positions (the ``mm2`` strategy, docs/translation.md).

Two uses, both keeping the rule that a group never resumes past a record on the target:
- **A lower bound per position.** Every checkpoint of a partition, whichever group it belongs to,
  says "source offset u is at or after target offset d". For a position ``c`` the greatest ``d`` among
  checkpoints with ``u <= c`` is therefore a lower bound of where ``c``'s record is; the strategy
  (translate/strategies/mm2.py) then reads forward from there for the snapshot's evidence to make it exact.
- **The fresher observation wins.** A checkpoint MM2 emitted after the snapshot completed saw the
  group later than the snapshot did. When it names a greater source offset, the group moved on: both
  the snapshot's position and MM2's translation are lower bounds of where it is, so the later of the
  two target offsets is taken, or MM2's when no strategy placed the snapshot's position (MM2
  translates a group far behind its newest sync to a sync far below: its translation is not always
  the later). When it names a smaller one, the group was rewound: it resumes from the checkpoint's
  source offset (earlier: safe). Either way the entry says so. MM2 emits a checkpoint only when its
  translation moves, so a checkpoint's source offset can trail the group: it still is a lower bound.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from offset_restore.formats.plan import PlanEntry
from offset_restore.kafka.mirror_checkpoints import CHECKPOINTS_SUFFIX, MirrorCheckpoint
from offset_restore.kafka.model import TP, LogBounds
from offset_restore.snapshot.model import GroupSnapshot, PartitionSnapshot

__all__ = [
    "FRESHER_MARGIN_MS",
    "Floor",
    "Fresher",
    "MirrorCheckpoints",
    "choose_topic",
    "fresher_groups",
    "settle",
    "within_log",
]


@dataclass(frozen=True, slots=True)
class Floor:
    upstream: int
    """The greatest checkpointed source offset at or below the position."""
    downstream: int
    """The greatest translation among checkpoints at or below the position: the lower bound."""


class MirrorCheckpoints:
    """The checkpoints of one MM2 flow, by target partition and by group-partition."""

    def __init__(self, topic: str, checkpoints: Iterable[MirrorCheckpoint]) -> None:
        self.topic = topic
        self.by_group: dict[tuple[str, TP], MirrorCheckpoint] = {}
        pairs: dict[TP, dict[int, int]] = defaultdict(dict)
        for c in checkpoints:
            self.by_group[(c.group, c.tp)] = c
            known = pairs[c.tp].get(c.upstream, -1)
            pairs[c.tp][c.upstream] = max(known, c.downstream)
        self._upstreams: dict[TP, list[int]] = {}
        self._bounds: dict[TP, list[int]] = {}
        for tp, by_upstream in pairs.items():
            ups = sorted(by_upstream)
            running, bounds = -1, []
            for u in ups:  # a lower bound of u is one of every later position too
                running = max(running, by_upstream[u])
                bounds.append(running)
            self._upstreams[tp], self._bounds[tp] = ups, bounds

    def newer_than(self, moment: datetime) -> bool:
        """Whether any checkpoint was emitted after ``moment`` (else none can be fresher than a snapshot
        completed then, and the plan need not read the snapshot again for them)."""
        return any(c.emitted_ms > moment.timestamp() * 1000 for c in self.by_group.values())

    def beyond(self, tp: TP, end: int) -> bool:
        """Whether a checkpoint of ``tp`` translates past ``end``: then MM2's checkpoints describe
        another log (a target topic recreated since; MM2 never rewinds a checkpoint)."""
        bounds = self._bounds.get(tp) or [-1]
        return bounds[-1] > end

    def floor(self, tp: TP, committed: int) -> Floor | None:
        ups = self._upstreams.get(tp)
        if not ups:
            return None
        at = bisect.bisect_right(ups, committed) - 1
        return Floor(ups[at], self._bounds[tp][at]) if at >= 0 else None


def within_log(downstream: int, bounds: LogBounds) -> int:
    """MM2's translation within the target's log (a translation below the log start resumes at it);
    callers decline a translation past the end first (``beyond``)."""
    return min(max(downstream, bounds.start), bounds.end)


def choose_topic(topics: Iterable[str], asked: str | None) -> str | None:
    """The checkpoint topic to read: the one asked for, or the target's only ``*.checkpoints.internal``;
    None when there is none. Several, none asked: ``ValueError`` naming them."""
    if asked:
        return asked
    found = sorted(t for t in topics if t.endswith(CHECKPOINTS_SUFFIX))
    if len(found) > 1:
        raise ValueError(f"the target has several MirrorMaker 2 checkpoint topics ({', '.join(found)}): name one")
    return found[0] if found else None


FRESHER_MARGIN_MS = 10_000
"""A checkpoint that moves a group forward counts as newer than the snapshot only when emitted this
much after the snapshot completed: MM2 reads the group's offsets just after stamping the checkpoint,
but on another host's clock."""


@dataclass(frozen=True, slots=True)
class Fresher:
    snapshot_offset: int
    checkpoint: MirrorCheckpoint


def fresher_groups(
    groups: Iterable[GroupSnapshot],
    table: MirrorCheckpoints,
    snapshot_completed: datetime,
    topic_map: Mapping[str, str],
    found: dict[tuple[str, str, int], Fresher] | None = None,
) -> Iterator[GroupSnapshot]:
    """``groups`` with each group-partition that MM2 saw rewound after the snapshot completed moved to
    the checkpoint's source offset, without evidence (the snapshot's was of another offset). Every
    group-partition with a newer checkpoint at another offset is recorded in ``found``."""
    completed_ms = int(snapshot_completed.timestamp() * 1000)
    for group in groups:
        partitions = [_fresher(group.group, p, table, completed_ms, topic_map, found) for p in group.partitions]
        yield (
            group
            if all(a is b for a, b in zip(partitions, group.partitions, strict=True))
            else group.model_copy(update={"partitions": partitions})
        )


def _fresher(
    group: str,
    p: PartitionSnapshot,
    table: MirrorCheckpoints,
    completed_ms: int,
    topic_map: Mapping[str, str],
    found: dict[tuple[str, str, int], Fresher] | None,
) -> PartitionSnapshot:
    """The partition as the plan should place it: moved to the checkpoint's offset only when the
    group was rewound after the snapshot (a forward move is settled on the entry: ``settle``)."""
    checkpoint = table.by_group.get((group, TP(topic_map.get(p.topic, p.topic), p.partition)))
    if checkpoint is None or checkpoint.upstream == p.committed_offset or checkpoint.emitted_ms <= completed_ms:
        return p
    forward = checkpoint.upstream > p.committed_offset
    if forward and checkpoint.emitted_ms <= completed_ms + FRESHER_MARGIN_MS:
        return p
    if found is not None:
        found[(group, p.topic, p.partition)] = Fresher(p.committed_offset, checkpoint)
    if forward:
        return p
    return PartitionSnapshot(
        topic=p.topic,
        partition=p.partition,
        committed_offset=checkpoint.upstream,
        metadata=checkpoint.metadata or None,
        log_start=p.log_start,
        evidence_complete=False,
    )


def settle(entry: PlanEntry, fresher: Fresher, bounds: LogBounds | None) -> PlanEntry:
    """An entry with a newer MM2 checkpoint (module docstring), saying so in its reason. ``bounds``:
    the target partition's log (None: it does not exist, and the entry stays as it is). Called before
    the topic-map collision guard, which then still sees every entry of the group."""
    c = fresher.checkpoint
    seen = (
        f"MirrorMaker 2's checkpoint of {datetime.fromtimestamp(c.emitted_ms / 1000, UTC):%Y-%m-%dT%H:%M:%SZ}, after "
        f"the snapshot, has the group at source offset {c.upstream} (the snapshot: {fresher.snapshot_offset})"
    )
    if c.upstream < fresher.snapshot_offset:
        note = f"{seen}: rewound since, it resumes from there"
    elif bounds is None or c.downstream > bounds.end:
        note = f"{seen}: moved on, but its translation {c.downstream} is not on the target's log: not used"
    elif entry.status in ("mapped", "unmapped") and (entry.target_offset or 0) < within_log(c.downstream, bounds):
        was = f"snapshot's: {entry.target_offset}" if entry.status == "mapped" else "the snapshot's was not placed"
        offset = within_log(c.downstream, bounds)
        note = f"{seen}: moved on, it resumes at MM2's translation {offset} ({was})"
        entry.status, entry.source_offset, entry.target_offset, entry.method = "mapped", c.upstream, offset, "mm2"
        entry.exact, entry.max_duplicates, entry.metadata = False, None, c.metadata or entry.metadata
        entry.expected_fingerprint = entry.anchor_offset = entry.anchor_source_offset = entry.anchor_timestamp = None
    else:
        note = f"{seen}: moved on, but MM2's translation {c.downstream} is not past the snapshot's {entry.status} entry"
    entry.reason = f"{note}; {entry.reason}" if entry.reason else note
    return entry
