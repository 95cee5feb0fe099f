"""Take a snapshot of a live cluster's consumer groups (DESIGN §2.1).

Reads in bulk: one ListGroups, DescribeGroups and multi-group OffsetFetch in batches, log bounds in
three requests per broker, then evidence in fetch rounds shared by every group. The cluster is any
object with the ``SnapshotSource`` methods (the Kafka adapter, or a fake in unit tests).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from offset_restore.cluster_types import TP, CommittedOffset, GroupInfo, LogBounds, PartitionFetch
from offset_restore.evidence import Evidence, collect_evidence
from offset_restore.filters import DEFAULT_EXCLUDE_GROUPS, NameFilter
from offset_restore.fingerprint import DEFAULT_OFFSET_HEADER
from offset_restore.snapshot_model import (
    GroupSnapshot,
    SnapshotCounts,
    SnapshotManifest,
    new_snapshot_id,
    validate_name,
)

__all__ = ["Snapshot", "SnapshotOptions", "SnapshotSource", "count_groups", "take_snapshot"]

Progress = Callable[[str, int, int], None]


class SnapshotSource(Protocol):
    @property
    def cluster_id(self) -> str: ...
    def list_group_ids(self) -> list[str]: ...
    def describe_groups(self, group_ids: Sequence[str]) -> dict[str, GroupInfo]: ...
    def committed_offsets(self, group_ids: Sequence[str]) -> dict[str, dict[TP, CommittedOffset]]: ...
    def topic_partitions(self) -> dict[str, int]: ...
    def log_bounds(self, partitions: Iterable[TP]) -> dict[TP, LogBounds]: ...
    def fetch(
        self, positions: Mapping[TP, int], *, partition_max_bytes: int = ..., until: Mapping[TP, int] | None = ...
    ) -> dict[TP, PartitionFetch]: ...


@dataclass(frozen=True)
class SnapshotOptions:
    """What to snapshot. Regexes match whole names; ``exclude_groups`` replaces the default."""

    groups: str | None = None
    exclude_groups: str | None = DEFAULT_EXCLUDE_GROUPS
    topics: str | None = None
    evidence_records: int = 3
    offset_header: str | None = DEFAULT_OFFSET_HEADER
    cluster: str | None = None
    snapshot_id: str | None = None

    def __post_init__(self) -> None:
        if self.evidence_records < 0 or self.evidence_records > 100:
            raise ValueError(f"--evidence-records must be between 0 and 100, not {self.evidence_records}")
        if self.snapshot_id is not None:
            validate_name(self.snapshot_id, "snapshot id")
        if self.cluster is not None:
            validate_name(self.cluster, "cluster name")

    def group_filter(self) -> NameFilter:
        return NameFilter.parse(self.groups, self.exclude_groups, "groups")

    def topic_filter(self) -> NameFilter:
        return NameFilter.parse(self.topics, None, "topics")

    def filters(self) -> dict[str, str | None]:
        return {"groups": self.groups, "exclude_groups": self.exclude_groups, "topics": self.topics}


@dataclass
class Snapshot:
    manifest: SnapshotManifest
    groups: list[GroupSnapshot]
    timings: dict[str, float] = field(default_factory=dict)


def count_groups(groups: Sequence[GroupSnapshot]) -> SnapshotCounts:
    states = Counter(group.state for group in groups)
    partitions = {(p.topic, p.partition) for group in groups for p in group.partitions}
    return SnapshotCounts(
        groups=len(groups),
        groups_without_commits=sum(1 for group in groups if not group.partitions),
        group_partitions=sum(len(group.partitions) for group in groups),
        partitions=len(partitions),
        with_evidence=sum(1 for g in groups for p in g.partitions if p.next is not None or p.before),
        evidence_incomplete=sum(1 for g in groups for p in g.partitions if not p.evidence_complete),
        total_lag=sum(p.lag or 0 for group in groups for p in group.partitions),
        states=dict(sorted(states.items())),
    )


def take_snapshot(
    cluster: SnapshotSource,
    options: SnapshotOptions,
    *,
    progress: Progress | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Snapshot:
    """Read every selected group's position and evidence; writes nothing."""
    group_filter, topic_filter = options.group_filter(), options.topic_filter()
    report = progress or (lambda phase, done, total: None)
    created_at = now()
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        timings[name] = round(time.perf_counter() - clock, 4)
        clock = time.perf_counter()

    group_ids = [g for g in cluster.list_group_ids() if group_filter(g)]
    report("groups", 0, len(group_ids))
    infos = cluster.describe_groups(group_ids) if group_ids else {}
    lap("describe_groups")
    committed = cluster.committed_offsets(group_ids) if group_ids else {}
    report("groups", len(group_ids), len(group_ids))
    lap("committed_offsets")

    topic_counts = cluster.topic_partitions()
    selected: dict[str, dict[TP, CommittedOffset]] = {
        group: {tp: c for tp, c in offsets.items() if topic_filter(tp.topic)} for group, offsets in committed.items()
    }
    partitions = {tp for offsets in selected.values() for tp in offsets if tp.topic in topic_counts}
    bounds = cluster.log_bounds(partitions)
    lap("log_bounds")

    notes: list[str] = []
    evidence: dict[tuple[TP, int], Evidence] = {}
    if options.evidence_records > 0:
        wanted: dict[TP, set[int]] = defaultdict(set)
        for offsets in selected.values():
            for tp, c in offsets.items():
                if tp in bounds:
                    wanted[tp].add(c.offset)

        def fetch(positions: Mapping[TP, int], until: Mapping[TP, int]) -> Mapping[TP, PartitionFetch]:
            return cluster.fetch(positions, until=until, partition_max_bytes=64 * 1024)

        evidence, stats = collect_evidence(
            wanted,
            bounds,
            options.evidence_records,
            fetch,
            offset_header=options.offset_header,
            progress=lambda done, total: report("evidence", done, total),
        )
        notes.extend(stats.notes)
        timings["evidence_rounds"] = stats.rounds
        timings["evidence_records_read"] = stats.records_read
        lap("evidence")

    groups: list[GroupSnapshot] = []
    for group_id in group_ids:
        info = infos.get(group_id)
        offsets = selected.get(group_id, {})
        entries: list[dict[str, Any]] = []
        for tp in sorted(offsets):
            c = offsets[tp]
            b = bounds.get(tp)
            ev = evidence.get((tp, c.offset))
            entries.append(
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "committed_offset": c.offset,
                    "metadata": c.metadata,
                    "log_start": b.start if b else None,
                    "log_end": b.end if b else None,
                    "lag": max(0, b.end - c.offset) if b else None,
                    "next": ev.next if ev else None,
                    "before": list(ev.before) if ev else [],
                    "evidence_complete": ev.complete if ev else options.evidence_records == 0,
                }
            )
        committed_topics = {tp.topic for tp in offsets}
        uncommitted = [
            {"topic": topic, "partition": p}
            for topic in sorted(committed_topics)
            for p in range(topic_counts.get(topic, 0))
            if TP(topic, p) not in offsets
        ]
        missing = sorted({tp.topic for tp in offsets if tp.topic not in topic_counts})
        if missing:
            notes.append(f"group {group_id}: commits on topics no longer on the cluster: {', '.join(missing)}")
        # One validation per group: pydantic builds the nested entries in one go.
        groups.append(
            GroupSnapshot.model_validate(
                {
                    "group": group_id,
                    "state": info.state if info else "Unknown",
                    "members": info.members if info else 0,
                    "protocol_type": info.protocol_type if info else "",
                    "partitions": entries,
                    "uncommitted_partitions": uncommitted,
                }
            )
        )
    lap("assemble")
    manifest = SnapshotManifest(
        snapshot_id=options.snapshot_id or new_snapshot_id(created_at),
        cluster=options.cluster or cluster.cluster_id,
        created_at=created_at,
        completed_at=now(),
        source="cluster",
        filters=options.filters(),
        evidence_records=options.evidence_records,
        offset_header=options.offset_header,
        counts=count_groups(groups),
        notes=notes,
    )
    return Snapshot(manifest=manifest, groups=groups, timings=timings)
