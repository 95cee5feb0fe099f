"""Work items: batches of group-partitions that one translate invocation handles, kept in S3 so
that the state machine passes only their keys (its payloads are limited to 256 KB)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from pydantic import ConfigDict, Field

from offset_restore.packing import packed
from offset_restore.snapshot.model import GroupSnapshot
from offset_restore.translate.options import PlanSettings

__all__ = ["WorkItem", "split_work"]


class WorkItem(PlanSettings):
    """One translate invocation's share of a restore: the plan's settings (the execution input's) and
    the snapshot's facts the translation needs besides its groups."""

    model_config = ConfigDict(extra="forbid")

    restore_id: str
    snapshot_id: str
    snapshot_completed_at: datetime | None = None
    """When the snapshot completed: a MirrorMaker 2 checkpoint emitted after it is newer (the same rule
    as the CLI's plan). None in work items written before it was carried: the snapshot's positions."""
    snapshot_at: datetime | None = None
    """When the snapshot read the positions (T): what the entries are exact as of."""
    history_at: datetime | None = None
    """When the snapshot before it read its positions (None: there is none)."""
    history: dict[str, dict[str, int]] = Field(default_factory=dict)
    """That snapshot's committed offsets of this item's groups (group -> "topic/partition" -> offset):
    each group's commit rate, for what it may read again (translate/exposure.py)."""
    source_cluster: str
    source_partitions: dict[str, int] = Field(default_factory=dict)
    """Each topic's partition count on the source (the snapshot's): tells a topic re-partitioned."""
    groups: list[GroupSnapshot]
    groups_stopped: bool = False
    """The snapshot is a migration's final one: its groups had stopped (``History.stopped``)."""
    until_exact: bool = False
    """A migration's: entries mapped without proof are translated again, as pending ones are."""


def split_work(groups: Iterable[GroupSnapshot], max_group_partitions: int) -> Iterator[list[GroupSnapshot]]:
    """Whole groups per batch, at most ``max_group_partitions`` each (a larger group gets its own),
    each batch given as soon as it is full."""
    return packed(groups, lambda group: len(group.partitions), max_group_partitions)
