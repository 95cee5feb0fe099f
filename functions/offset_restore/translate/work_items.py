"""Work items: batches of group-partitions that one translate invocation handles, kept in S3 so
that the state machine passes only their keys (its payloads are limited to 256 KB)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pydantic import BaseModel, ConfigDict, Field

from offset_restore.packing import packed
from offset_restore.snapshot.model import GroupSnapshot
from offset_restore.translate.options import STRATEGIES, OrderCheck, Strategy
from offset_restore.translate.reshaped import DEFAULT_PARTITION_HEADER

__all__ = ["WorkItem", "split_work"]


class WorkItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    restore_id: str
    snapshot_id: str
    source_cluster: str
    strategies: list[Strategy] = Field(default_factory=lambda: list(STRATEGIES))
    offset_header: str = "x-source-offset"
    partition_header: str = DEFAULT_PARTITION_HEADER
    source_partitions: dict[str, int] = Field(default_factory=dict)
    """Each topic's partition count on the source (the snapshot's): tells a topic re-partitioned."""
    topic_map: dict[str, str] = Field(default_factory=dict)
    order_check: OrderCheck = "windows"
    timestamp_margin_ms: int = Field(default=1_000, ge=0, le=86_400_000)
    groups: list[GroupSnapshot]


def split_work(groups: Iterable[GroupSnapshot], max_group_partitions: int) -> Iterator[list[GroupSnapshot]]:
    """Whole groups per batch, at most ``max_group_partitions`` each (a larger group gets its own),
    each batch given as soon as it is full."""
    return packed(groups, lambda group: len(group.partitions), max_group_partitions)
