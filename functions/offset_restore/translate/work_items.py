"""Work items: batches of group-partitions that one translate invocation handles, kept in S3 so
that the state machine passes only their keys (its payloads are limited to 256 KB)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from offset_restore.formats.plan import PlanEntry
from offset_restore.packing import packed
from offset_restore.snapshot.model import GroupPositions, GroupSnapshot
from offset_restore.translate.options import PlanSettings

__all__ = ["HELD_ITEMS", "GroupPartition", "WorkItem", "covered", "selection", "split_work", "topics_of"]

GroupPartition = tuple[str, str, int]
"""A group's committed source partition: (group, topic, partition)."""


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
    source_recreated: dict[str, str] = Field(default_factory=dict)
    """Source topics deleted and created again after the snapshot, with why (``run.recreated_since``)."""
    groups: list[GroupSnapshot]
    groups_stopped: bool = False
    """The snapshot is a migration's final one: its groups had stopped (``History.stopped``)."""
    until_exact: bool = False
    """A migration's: entries mapped without proof are translated again, as pending ones are."""


HELD_ITEMS = 8
"""Work items' worth of group-partitions ``split_work`` holds at most while it gathers groups by their
topics (Prepare's memory: about as many as the items it has in flight, never the snapshot)."""


def topics_of(group: GroupSnapshot) -> tuple[str, ...]:
    """The topics a group committed on, in order: what its work item's reads are spent on."""
    return tuple(sorted({p.topic for p in group.partitions}))


def split_work(
    groups: Iterable[GroupSnapshot], max_group_partitions: int, held_items: int = HELD_ITEMS
) -> Iterator[list[GroupSnapshot]]:
    """Whole groups per batch, at most ``max_group_partitions`` each (a larger group gets its own),
    groups that read the same topics together.

    A work item costs by its partitions more than by its positions: each partition's bounds, shape
    sample and probe are read once per item. Groups listed by name read topics at random, and 2,000
    group-partitions so taken spanned 1,000 partitions at 120,000 (Translate's own time 2.6 s a work
    item at the median; 0.4-0.5 s on average once items were gathered by topic). So groups are gathered by their topics
    (``topics_of``) and a topic's batch leaves as soon as it is full; when more than ``held_items``
    items' worth is held, all held groups leave, packed in the order of their topics."""
    held: dict[tuple[str, ...], list[GroupSnapshot]] = {}
    sizes: dict[tuple[str, ...], int] = {}
    total = 0
    for group in groups:
        key, n = topics_of(group), len(group.partitions)
        if held.get(key) and sizes[key] + n > max_group_partitions:
            total -= sizes.pop(key)
            yield held.pop(key)
        held.setdefault(key, []).append(group)
        sizes[key] = sizes.get(key, 0) + n
        total += n
        if sizes[key] >= max_group_partitions:
            total -= sizes.pop(key)
            yield held.pop(key)
        elif total > held_items * max_group_partitions:
            yield from _packed_in_topic_order(held, max_group_partitions)
            sizes.clear()
            total = 0
    yield from _packed_in_topic_order(held, max_group_partitions)


def _packed_in_topic_order(
    held: dict[tuple[str, ...], list[GroupSnapshot]], max_group_partitions: int
) -> Iterator[list[GroupSnapshot]]:
    """Every held group, packed with its neighbours by topic; ``held`` is left empty."""
    ordered = [group for key in sorted(held) for group in held[key]]
    held.clear()
    return packed(ordered, lambda group: len(group.partitions), max_group_partitions)


def covered(entry: PlanEntry) -> Iterator[GroupPartition]:
    """The selected group-partitions one entry accounts for: its own, and for an entry of a re-partitioned
    topic every source partition it follows (a source partition may have no entry under its own number).
    Names are interned: a restore's worth is held at once, and a group's partitions then share them."""
    group, topic = sys.intern(entry.group), sys.intern(entry.topic)
    yield group, topic, entry.partition
    for partition in entry.source_positions or ():
        yield group, topic, partition


class _Selection(BaseModel):
    """Of a work item, what says which group-partitions it holds; the rest of its JSON (the settings, the
    snapshot's evidence of each partition, the history) is skipped unparsed: at 120,000 group-partitions
    the items are 100 MB, and whole ``WorkItem`` models took Summarize seconds to build only to be counted."""

    groups: list[GroupPositions]


def selection(raw: bytes) -> list[GroupPartition]:
    """The group-partitions of a work item's JSON (``WorkItem``), in its order, names interned."""
    item = _Selection.model_validate_json(raw)
    return [(sys.intern(g.group), sys.intern(p.topic), p.partition) for g in item.groups for p in g.partitions]
