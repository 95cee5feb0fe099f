"""What a plan is exact relative to, and what it cannot see: an entry is exact as of the
snapshot's positions (time T), or of a newer MirrorMaker 2 checkpoint; a group that kept consuming on
the source after T will read again on the target what it processed since. The estimate of that:
its commit rate between the snapshot before and this one (the snapshot history) times the time from T
to the plan. The plan is made after the failover, so the time is never short of the group's real
time after T; the rate is its recent one.

Pure: the caller reads the previous snapshot (``History``); ``GroupMotion`` and ``exposure`` are
arithmetic on what the snapshots say.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from offset_restore.snapshot.model import GroupPositions, GroupSnapshot

__all__ = ["LIVE_STATES", "GroupMotion", "History", "aware", "history_of", "motion_of"]

LIVE_STATES = {"Stable", "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling", "NotReady"}
"""Group states with consumers at work (classic, KIP-848 and streams-protocol groups: NotReady has members
waiting for their internal topics)."""


@dataclass(frozen=True)
class History:
    """The previous snapshot's positions of the groups planned: when they were read, and each
    group-partition's committed offset (``group -> "topic/partition" -> offset``)."""

    at: datetime
    offsets: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    stopped: bool = False
    """The snapshot planned from is a migration's final one (``SnapshotManifest.groups_stopped``): its
    groups had stopped on the source, so one without members there moved on after it by nothing."""


def history_of(
    groups: Iterable[GroupSnapshot | GroupPositions], at: datetime, leave_out: Collection[str] = ()
) -> History:
    """A previous snapshot's positions of ``groups`` (the caller keeps only those it plans), without those
    on the topics ``leave_out`` (deleted and created again since: positions in another log)."""
    return History(
        at,
        {
            g.group: {f"{p.topic}/{p.partition}": p.committed_offset for p in g.partitions if p.topic not in leave_out}
            for g in groups
        },
    )


@dataclass(frozen=True)
class GroupMotion:
    """A group as the snapshot history saw it around T."""

    live: bool | None
    """It had consumers at T (its state), or its commits moved between the last two snapshots; None: it
    had none at T and no earlier snapshot says whether it moved (a group new since, committing without
    members)."""
    rates: Mapping[str, float] = field(default_factory=dict)
    """Records a second it committed past, per ``topic/partition``, between the last two snapshots
    (absent: no earlier snapshot holds that partition of it, or it was rewound)."""

    def exposure(self, partition: str, since: datetime, until: datetime) -> int | None:
        """Records the group may have processed on ``partition`` between ``since`` (the position the
        entry starts from) and ``until`` (the plan), which it then reads again on the target; None when
        the history cannot say (no earlier snapshot of the group)."""
        rate = self.rates.get(partition)
        if rate is None:
            return 0 if self.live is False else None
        return math.ceil(rate * max(0.0, (aware(until) - aware(since)).total_seconds()))


def motion_of(
    group: GroupSnapshot, at: datetime, history: History | None, at_snapshot: Mapping[str, int] | None = None
) -> GroupMotion:
    """How ``group`` moved up to its snapshot at ``at``, from the previous snapshot in ``history``.
    ``at_snapshot``: the snapshot's own offsets of partitions the group carries moved since (a newer
    MirrorMaker 2 checkpoint): the rate is the snapshots', not the checkpoint's."""
    live_state = group.state in LIVE_STATES and group.members != 0  # -1: a group whose members are not counted
    if history is not None and history.stopped:
        return GroupMotion(live_state)  # stopped: exposure 0; with members after all: unknown
    before = history.offsets.get(group.group) if history is not None else None
    if history is None or before is None or aware(at) <= aware(history.at):
        return GroupMotion(True if live_state else None)
    seconds = (aware(at) - aware(history.at)).total_seconds()
    rates = {}
    for p in group.partitions:
        key = f"{p.topic}/{p.partition}"
        was, now = before.get(key), (at_snapshot or {}).get(key, p.committed_offset)
        # A partition new since, or rewound (reset by hand): its motion says nothing of its rate.
        if was is not None and now >= was:
            rates[key] = (now - was) / seconds
    moved = any(rate > 0 for rate in rates.values())
    unknown = len(rates) < len(group.partitions)
    return GroupMotion(True if live_state or moved else (None if unknown else False), rates)


def aware(moment: datetime) -> datetime:
    """A time without a zone (a hand-written manifest) read as UTC, as the snapshot's own are."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
