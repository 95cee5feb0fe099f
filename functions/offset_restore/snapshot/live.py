"""Take a snapshot of a live cluster's consumer groups (docs/design.md §2.1).

Reads in bulk: one ListGroups, DescribeGroups and multi-group OffsetFetch in batches (a share group's start
offsets stand for its committed offsets: the cluster reads them so once its listing names it a share group),
log bounds in three requests per broker, then evidence in fetch rounds shared by every group. The cluster is any
object with the ``SnapshotSource`` methods (the Kafka adapter, or a fake in unit tests).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from offset_restore.heap import collections_paused
from offset_restore.kafka.model import (
    SHARE_GROUP,
    TP,
    CommittedOffset,
    GroupInfo,
    LogBounds,
    PartitionIdentity,
    topic_ids,
)
from offset_restore.reading.rounds import Source, fetch_from
from offset_restore.snapshot.evidence import Evidence, EvidenceStats, collect_evidence
from offset_restore.snapshot.filters import DEFAULT_EXCLUDE_GROUPS, NameFilter
from offset_restore.snapshot.fingerprint import DEFAULT_OFFSET_HEADER
from offset_restore.snapshot.model import (
    GroupSnapshot,
    SnapshotCounts,
    SnapshotManifest,
    default_cluster_name,
    new_snapshot_id,
    validate_name,
)
from offset_restore.snapshot.origin_order import OriginFloor, read_origin_logs
from offset_restore.snapshot.origin_tops import OriginTop, find_origin_tops

__all__ = [
    "GroupTally",
    "Snapshot",
    "SnapshotOptions",
    "SnapshotSource",
    "SnapshotStream",
    "count_groups",
    "stream_snapshot",
    "take_snapshot",
]

Progress = Callable[[str, int, int], None]


class SnapshotSource(Source, Protocol):
    @property
    def cluster_id(self) -> str: ...
    def list_groups(self) -> dict[str, str]:
        """Every group with its kind; the cluster reads the positions of the share groups it names as their
        start offsets from then on (``kafka/share_groups.py``)."""
        ...

    def describe_groups(self, group_ids: Sequence[str]) -> dict[str, GroupInfo]: ...
    def committed_offsets(self, group_ids: Sequence[str]) -> dict[str, dict[TP, CommittedOffset]]: ...
    def partition_identities(self, partitions: Iterable[TP]) -> dict[TP, PartitionIdentity]: ...
    def share_delivered_after_start(
        self, group_ids: Sequence[str], ends: Mapping[TP, int]
    ) -> dict[str, dict[TP, int]]: ...
    def topic_partitions(self) -> dict[str, int]: ...
    def log_bounds(self, partitions: Iterable[TP]) -> dict[TP, LogBounds]: ...


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
    groups_stopped: bool = False
    """A migration's final snapshot: the groups were waited for until they stopped (``SnapshotManifest``)."""
    origin_search: bool = False
    """Find the last restored record below a group that processed records produced on this cluster after a
    restore (snapshot/origin_tops.py): what a failback maps it by. A migration's final snapshot asks."""

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


@dataclass
class SnapshotStream:
    """A snapshot whose groups are assembled one at a time as they are consumed (once).

    Memory then holds what was read from the cluster and one items file, not every group's document:
    at 240,000 group-partitions with evidence that halves a Lambda's peak. ``manifest`` is final once
    ``groups`` is exhausted (counts, notes and completion time come from the groups).
    """

    manifest: SnapshotManifest
    groups: Iterator[GroupSnapshot]
    timings: dict[str, float] = field(default_factory=dict)
    listed_groups: int = 0
    """Groups on the cluster before the filters: said when a filter matched none of them."""
    selected_groups: int = 0
    selected_group_partitions: int = 0
    """Committed group-partitions the filters kept, known before any document is made."""


class GroupTally:
    """The manifest's counts, kept group by group so that no list of groups is needed."""

    def __init__(self) -> None:
        self.states: Counter[str] = Counter()
        self.partitions: set[tuple[str, int]] = set()
        self.numbers: Counter[str] = Counter()

    def add(self, group: GroupSnapshot) -> None:
        n = self.numbers
        self.states[group.state] += 1
        n["groups"] += 1
        n["groups_without_commits"] += not group.partitions
        n["group_partitions"] += len(group.partitions)
        for p in group.partitions:
            self.partitions.add((p.topic, p.partition))
            n["with_evidence"] += p.next is not None or bool(p.before)
            n["evidence_incomplete"] += not p.evidence_complete
            n["total_lag"] += p.lag or 0

    def result(self) -> SnapshotCounts:
        return SnapshotCounts(**self.numbers, partitions=len(self.partitions), states=dict(sorted(self.states.items())))


def count_groups(groups: Iterable[GroupSnapshot]) -> SnapshotCounts:
    tally = GroupTally()
    for group in groups:
        tally.add(group)
    return tally.result()


@collections_paused()
def take_snapshot(
    cluster: SnapshotSource,
    options: SnapshotOptions,
    *,
    progress: Progress | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Snapshot:
    """Read every selected group's position and evidence, all in memory; writes nothing."""
    stream = stream_snapshot(cluster, options, progress=progress, now=now)
    groups = list(stream.groups)
    return Snapshot(manifest=stream.manifest, groups=groups, timings=stream.timings)


@collections_paused()
def stream_snapshot(
    cluster: SnapshotSource,
    options: SnapshotOptions,
    *,
    progress: Progress | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> SnapshotStream:
    """Read from the cluster now; assemble each group's document only when the stream is consumed."""
    group_filter, topic_filter = options.group_filter(), options.topic_filter()
    report = progress or (lambda phase, done, total: None)
    created_at = now()
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        timings[name] = round(time.perf_counter() - clock, 4)
        clock = time.perf_counter()

    kinds = cluster.list_groups()
    listed = sorted(kinds)  # share groups too: their start offsets stand for committed offsets (kafka/share_groups.py)
    group_ids = [g for g in listed if group_filter(g)]
    share_groups = [g for g in group_ids if kinds[g] == SHARE_GROUP]
    del kinds
    report("groups", 0, len(group_ids))
    infos = cluster.describe_groups(group_ids) if group_ids else {}
    lap("describe_groups")
    selected = cluster.committed_offsets(group_ids) if group_ids else {}
    report("groups", len(group_ids), len(group_ids))
    lap("committed_offsets")

    topic_counts = cluster.topic_partitions()
    for offsets in selected.values():  # filtered in place: at scale a copy costs tens of MB
        for tp in [tp for tp in offsets if not topic_filter(tp.topic)]:
            del offsets[tp]
    partitions = {tp for offsets in selected.values() for tp in offsets if tp.topic in topic_counts}
    shapes = {topic: topic_counts[topic] for topic in sorted({tp.topic for tp in partitions})}
    bounds = cluster.log_bounds(partitions)
    del partitions
    lap("log_bounds")
    delivered = _delivered(cluster, share_groups, selected, bounds)

    notes: list[str] = []
    evidence: dict[tuple[TP, int], Evidence] = {}
    origins = _Origins()
    if options.evidence_records > 0:
        evidence, stats = _evidence(cluster, selected, bounds, options, report)
        notes.extend(stats.notes)
        timings["evidence_rounds"] = stats.rounds
        timings["evidence_records_read"] = stats.records_read
        lap("evidence")
        if options.origin_search and options.offset_header:
            origins.read(cluster, selected, evidence, bounds, options.offset_header, notes)
            timings["origin_order_rounds"] = origins.rounds
            lap("origin order")
            origins.tops, timings["origin_search_rounds"] = _origin_tops(
                cluster,
                evidence,
                {tp: b for tp, b in bounds.items() if tp not in origins.read_whole},
                options.offset_header,
            )
            lap("origin search")

    stream = SnapshotStream(
        manifest=SnapshotManifest(
            snapshot_id=options.snapshot_id or new_snapshot_id(created_at),
            cluster=options.cluster or default_cluster_name(cluster.cluster_id),
            created_at=created_at,
            completed_at=created_at,
            source="cluster",
            filters=options.filters(),
            evidence_records=options.evidence_records,
            offset_header=options.offset_header,
            topic_partitions=shapes,
            topic_ids=topic_ids(cluster.partition_identities(TP(topic, 0) for topic in shapes)),
            groups_stopped=options.groups_stopped,
        ),
        groups=iter(()),
        timings=timings,
        listed_groups=len(listed),
        selected_groups=len(group_ids),
        selected_group_partitions=sum(map(len, selected.values())),
    )
    del listed

    def assemble() -> Iterator[GroupSnapshot]:
        tally = GroupTally()
        for group_id in group_ids:
            info = infos.pop(group_id, None)
            offsets = selected.pop(group_id, {})  # what was read is let go as documents are made
            reads = _Reads(bounds, evidence, origins, delivered.get(group_id, {}))
            group = _group_document(group_id, info, offsets, reads, topic_counts, options, notes)
            tally.add(group)
            yield group
        lap("assemble")
        stream.manifest = stream.manifest.model_copy(
            update={"completed_at": now(), "counts": tally.result(), "notes": notes}
        )

    stream.groups = assemble()
    return stream


def _delivered(
    cluster: SnapshotSource,
    share_groups: Sequence[str],
    selected: Mapping[str, Mapping[TP, CommittedOffset]],
    bounds: Mapping[TP, LogBounds],
) -> dict[str, dict[TP, int]]:
    """Per share group and share-partition, the records after its start offset already delivered to
    completion: a consumer resuming there is given them again (``PartitionSnapshot.delivered_after_start``)."""
    ends = {tp: bounds[tp].end for g in share_groups for tp in selected.get(g, {}) if tp in bounds}
    return cluster.share_delivered_after_start(share_groups, ends) if ends else {}


def _origin_tops(
    cluster: SnapshotSource, evidence: Mapping[tuple[TP, int], Evidence], bounds: Mapping[TP, LogBounds], header: str
) -> tuple[dict[TP, OriginTop], int]:
    """The last restored record of each partition where a group processed records without the header
    (below the lowest such group's position)."""
    below: dict[TP, int] = {}
    for (tp, c), ev in evidence.items():
        if ev.before and ev.before[-1].origin_offset is None:
            below[tp] = min(c, below.get(tp, c))
    return find_origin_tops(below, bounds, fetch_from(cluster), offset_header=header) if below else ({}, 0)


@dataclass
class _Origins:
    """What a failback's snapshot knows of the restore its source holds (``origin_search``): per position the
    floor and the top below it, from the partitions read whole (``snapshot/origin_order.py``), and the top
    the binary search found on the others (``snapshot/origin_tops.py``)."""

    floors: dict[tuple[TP, int], OriginFloor] = field(default_factory=dict)
    tops_at: dict[tuple[TP, int], OriginTop] = field(default_factory=dict)
    tops: dict[TP, OriginTop] = field(default_factory=dict)
    read_whole: set[TP] = field(default_factory=set)
    rounds: int = 0

    def top_below(self, tp: TP, c: int) -> OriginTop | None:
        return self.tops_at.get((tp, c)) if tp in self.read_whole else self.tops.get(tp)

    def read(
        self,
        cluster: SnapshotSource,
        selected: Mapping[str, Mapping[TP, CommittedOffset]],
        evidence: Mapping[tuple[TP, int], Evidence],
        bounds: Mapping[TP, LogBounds],
        header: str,
        notes: list[str],
    ) -> None:
        """Read whole the partitions where a record the evidence read carries the restore's header."""
        wanted: dict[TP, list[int]] = {
            tp: []
            for (tp, _), ev in evidence.items()
            if any(r.origin_offset is not None for r in (*ev.before, *([ev.next] if ev.next else [])))
        }
        if not wanted:
            return
        for offsets in selected.values():
            for tp, committed in offsets.items():
                if tp in wanted:
                    wanted[tp].append(committed.offset)
        logs, failed, self.rounds = read_origin_logs(wanted, bounds, fetch_from(cluster), offset_header=header)
        for tp, why in sorted(failed.items()):
            notes.append(f"{tp.topic}/{tp.partition}: reading the restore's origin offsets failed ({why}): its "
                         "positions are mapped back by the records around them only")  # fmt: skip
        self.read_whole = set(logs)
        for tp, log in logs.items():
            for c in set(wanted[tp]):
                floor = log.floor_at(c)
                if floor is not None:
                    self.floors[(tp, c)] = floor
                if c in log.tops:
                    self.tops_at[(tp, c)] = log.tops[c]


def _floor(floor: OriginFloor | None) -> dict[str, Any]:
    return {} if floor is None else {"origin_floor": floor.floor, "origin_twice": floor.twice}


def _top_below(top: OriginTop | None, ev: Evidence | None, c: int) -> dict[str, Any]:
    """The partition's last restored record (and when the source's own records began), for a group whose
    last processed record has no header."""
    if top is None or ev is None or not ev.before or ev.before[-1].origin_offset is not None or top.top.offset >= c:
        return {}
    return {"origin_top": top.top, "own_since": top.own_since}


def _evidence(
    cluster: SnapshotSource,
    selected: Mapping[str, Mapping[TP, CommittedOffset]],
    bounds: Mapping[TP, LogBounds],
    options: SnapshotOptions,
    report: Progress,
) -> tuple[dict[tuple[TP, int], Evidence], EvidenceStats]:
    """Evidence for every distinct committed position on a partition that exists (groups at the same
    position share it)."""
    wanted: dict[TP, set[int]] = defaultdict(set)
    for offsets in selected.values():
        for tp, c in offsets.items():
            if tp in bounds:
                wanted[tp].add(c.offset)

    return collect_evidence(
        wanted,
        bounds,
        options.evidence_records,
        fetch_from(cluster),
        offset_header=options.offset_header,
        progress=lambda done, total: report("evidence", done, total),
    )


@dataclass(frozen=True, slots=True)
class _Reads:
    """What the snapshot read of the partitions, by partition: a group's document takes its own from it."""

    bounds: Mapping[TP, LogBounds]
    evidence: Mapping[tuple[TP, int], Evidence]
    origins: _Origins
    delivered: Mapping[TP, int]
    """The group's records delivered after its start offset, when a share group (``_delivered``)."""


def _group_document(
    group_id: str,
    info: GroupInfo | None,
    offsets: Mapping[TP, CommittedOffset],
    reads: _Reads,
    topic_counts: Mapping[str, int],
    options: SnapshotOptions,
    notes: list[str],
) -> GroupSnapshot:
    entries: list[dict[str, Any]] = []
    for tp in sorted(offsets):
        c = offsets[tp]
        b = reads.bounds.get(tp)
        ev = reads.evidence.get((tp, c.offset))
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
                **_top_below(reads.origins.top_below(tp, c.offset), ev, c.offset),
                **_floor(reads.origins.floors.get((tp, c.offset))),
                "delivered_after_start": reads.delivered.get(tp),
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
    return GroupSnapshot.model_validate(
        {
            "group": group_id,
            "state": info.state if info else "Unknown",
            "members": info.members if info else 0,
            "protocol_type": info.protocol_type if info else "",
            "partitions": entries,
            "uncommitted_partitions": uncommitted,
        }
    )
