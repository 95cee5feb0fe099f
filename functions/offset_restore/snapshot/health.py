"""A snapshot's health in numbers: what the Snapshot function emits as metrics (which groups lag
most, the totals an alarm watches) and how old a snapshot's positions are when a run uses them.

Pure: the handler turns ``MetricBlob`` into EMF and the reports print ``age_phrase``. A snapshot is
streamed group by group (240,000 group-partitions at scale), so ``LagTally`` keeps the top groups'
sums as the groups go by, never the entries.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel, Field

from offset_restore.snapshot.model import GroupSnapshot, SnapshotCounts

__all__ = [
    "MAX_DIMENSION_VALUE",
    "TOP_GROUPS",
    "TOP_TOPICS_PER_GROUP",
    "GroupLag",
    "LagTally",
    "MetricBlob",
    "age_phrase",
    "age_seconds",
    "group_metrics",
    "humanize_age",
    "total_metrics",
]

TOP_GROUPS = 20
"""Groups that get their own ``group`` dimension, the ones that lag most. CloudWatch bills every
distinct metric name and dimension combination as one custom metric (about 0.30 USD a month each):
a dimension per group of a cluster with thousands of groups would cost more than the system, and a
dashboard cannot show them anyway. The totals cover every group."""

TOP_TOPICS_PER_GROUP = 5
"""Topics per top group that get a ``topic`` dimension (the ones with most lag): at most
``TOP_GROUPS * (1 + TOP_TOPICS_PER_GROUP)`` = 120 per-group metrics, whatever the cluster holds."""

MAX_DIMENSION_VALUE = 250
"""Characters of a group or topic name kept in a dimension value (CloudWatch takes 1-1024; Kafka
names may be longer, and a group id may even be empty)."""


class GroupLag(BaseModel):
    """One group's lag: its total, and its topics' lag (the ``TOP_TOPICS_PER_GROUP`` largest)."""

    group: str
    lag: int
    topics: dict[str, int] = Field(default_factory=dict)


class LagTally:
    """The ``TOP_GROUPS`` groups by lag (ties: by name), kept as the groups go by: memory for
    ``TOP_GROUPS`` groups' topic sums, not for the snapshot. A partition without a lag (its topic is
    gone from the cluster) counts 0."""

    def __init__(self, keep: int = TOP_GROUPS, topics: int = TOP_TOPICS_PER_GROUP) -> None:
        self.keep, self.topics = keep, topics
        self._top: list[GroupLag] = []

    def add(self, group: GroupSnapshot) -> None:
        total = sum(p.lag or 0 for p in group.partitions)
        if len(self._top) == self.keep and _rank(total, group.group) >= _rank(self._top[-1].lag, self._top[-1].group):
            return  # not among the top: its topics are not even summed
        by_topic: Counter[str] = Counter()
        for p in group.partitions:
            by_topic[p.topic] += p.lag or 0
        largest = sorted(by_topic.items(), key=lambda item: (-item[1], item[0]))[: self.topics]
        self._top.append(GroupLag(group=group.group, lag=total, topics=dict(largest)))
        self._top.sort(key=lambda g: _rank(g.lag, g.group))
        del self._top[self.keep :]

    def watch(self, groups: Iterable[GroupSnapshot]) -> Iterator[GroupSnapshot]:
        """The same groups, tallied as they are consumed (a snapshot stream is consumed once)."""
        for group in groups:
            self.add(group)
            yield group

    def top(self) -> list[GroupLag]:
        """Largest lag first."""
        return list(self._top)


def _rank(lag: int, name: str) -> tuple[int, str]:
    return (-lag, name)


@dataclass(frozen=True)
class MetricBlob:
    """Metrics that share one set of dimensions: one EMF document (at most 100 metrics each).
    ``service`` is not in ``dimensions``: the emitter adds it, as the handlers' Metrics do."""

    dimensions: dict[str, str]
    metrics: list[tuple[str, str, float]] = field(default_factory=list)
    """(name, unit, value); units are CloudWatch's names (``Count``, ``Seconds``)."""


def total_metrics(counts: SnapshotCounts, duration_s: float) -> MetricBlob:
    """What every successful snapshot emits under the ``service`` dimension alone. ``SnapshotsTaken``
    is 1 on every success, an empty one included: the "no snapshot within the RPO" alarm counts it,
    and the "zero groups" alarm watches ``SnapshotGroups``."""
    return MetricBlob(
        dimensions={},
        metrics=[
            ("SnapshotsTaken", "Count", 1),
            ("SnapshotGroups", "Count", counts.groups),
            ("SnapshotGroupPartitions", "Count", counts.group_partitions),
            ("SnapshotWithEvidence", "Count", counts.with_evidence),
            ("SnapshotEvidenceIncomplete", "Count", counts.evidence_incomplete),
            ("SnapshotTotalLag", "Count", counts.total_lag),
            ("SnapshotSeconds", "Seconds", duration_s),
        ],
    )


def group_metrics(top: Iterable[GroupLag]) -> list[MetricBlob]:
    """``GroupLag`` per top group (dimension ``group``), then ``GroupTopicLag`` per top topic of each
    (dimensions ``group`` and ``topic``): one blob per dimension combination."""
    blobs: list[MetricBlob] = []
    for g in top:
        group = dimension_value(g.group)
        blobs.append(MetricBlob({"group": group}, [("GroupLag", "Count", g.lag)]))
        blobs += [
            MetricBlob({"group": group, "topic": dimension_value(topic)}, [("GroupTopicLag", "Count", lag)])
            for topic, lag in g.topics.items()
        ]
    return blobs


def dimension_value(name: str) -> str:
    """A Kafka name as a CloudWatch dimension value: never empty, never longer than it may be."""
    if not name.strip():
        return "(empty)" if not name else f"(blank:{len(name)})"
    return name if len(name) <= MAX_DIMENSION_VALUE else name[: MAX_DIMENSION_VALUE - 1] + "~"


# -- age ------------------------------------------------------------------------------------------


def age_seconds(positions_at: datetime, run_at: datetime) -> float:
    """How old the positions were when the run used them; never negative (a clock ahead by a little
    makes a fresh snapshot look taken after the run)."""
    return max(0.0, (run_at - positions_at).total_seconds())


def humanize_age(seconds: float) -> str:
    """``42 s``, ``14 min``, ``3 h 5 min``, ``2 d 4 h``: precise enough to judge a recovery point."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    minutes, hours, days = s // 60, s // 3600, s // 86400
    if s < 3600:
        return f"{minutes} min"
    if s < 86400:
        rest = minutes % 60
        return f"{hours} h {rest} min" if rest else f"{hours} h"
    rest = hours % 24
    return f"{days} d {rest} h" if rest else f"{days} d"


def age_phrase(positions_at: datetime, run_at: datetime) -> str:
    """``offsets as of 14 min before this run``."""
    return f"offsets as of {humanize_age(age_seconds(positions_at, run_at))} before this run"
