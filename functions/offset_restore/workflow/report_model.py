"""What a run's report says, as typed values (pure): the builder (``report.ReportBuilder``) computes
them once from the run and its mappings, and every rendering — report.json (``report_json``),
report.md (``report_markdown``), report.html (``report_html``), the SNS notification — only reads
them. So a rendering decides how a fact looks, never what it is: the page and the Markdown cannot
disagree on which groups may start, and a new rendering needs no knowledge of plan entries.

The rows are the builder's own compact tuples (one per mapping, 240,000 of them at the largest
scale), sorted in place and referenced, never copied into another shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from offset_restore.formats.plan import PlanSummary
from offset_restore.workflow.report_timeline import Phase

__all__ = [
    "SAFE_SHOWN",
    "Attention",
    "Bar",
    "Card",
    "Charts",
    "Flagged",
    "GroupRows",
    "Headline",
    "InputRow",
    "Notification",
    "PartitionRow",
    "Ready",
    "Report",
    "SnapshotAge",
    "Timings",
    "Wait",
    "counted",
    "verified_word",
]

SAFE_SHOWN = 50
"""Groups named in the list of those ready; the rest are counted (20,000 names help nobody)."""


class PartitionRow(NamedTuple):
    """What the people's reports show of one mapping: a fraction of a ``PlanEntry``'s memory."""

    group: str
    target_topic: str
    partition: int
    source_offset: int
    target_offset: int | None
    method: str | None
    exact: bool
    max_duplicates: int | None
    status: str
    reason: str | None
    verified: bool | None = None
    held: str | None = None
    """What an entry not mapped that holds its whole group is: ``reshaped`` (a topic whose shape changed) or
    ``application`` (a Kafka Streams application's repartition topic). None: it holds nothing."""
    lost: int = 0
    """Source records between the group's position and the record it resumes at (lost before the backup)."""
    outcome: str | None = None
    """What apply or rollback did with the entry when it did not simply write it (``PlanEntry.outcome``)."""
    declared_end: bool = False
    """It resumes at the end of a restore the operator declared complete (``never_restored`` is set)."""
    in_doubt: bool = False
    """Its previous offset was saved before a commit, and no end of that commit was recorded (the commit
    may have reached the target and its save failed, or the run stopped between): it may be written."""


class SnapshotAge(NamedTuple):
    positions_at: datetime
    seconds: float
    phrase: str
    """``offsets as of 14 min before this run``"""


class Headline(NamedTuple):
    """The numbers over every partition of the run (report.json's ``headline``, in this order)."""

    groups_restored: int
    """Groups whose every partition is where the run put it."""
    groups: int
    partitions: int
    exact: int
    exact_ratio: float | None
    """Of all partitions, not of the mapped ones; None without partitions."""
    records_at_risk: int
    entries_without_bound: int
    lost_records: int
    verified: int
    cards: dict[str, int]
    """Every card's count, shown or not (``report_facts.CARDS``)."""
    statuses: dict[str, int]
    """Partitions per status, by name."""
    groups_live: int = 0
    """Groups live when the snapshot read their positions: the numbers above are exact as of then."""
    exposure_records: int = 0
    """What those groups may read again, processed after the snapshot (estimated, ``PlanEntry.exposure``)."""
    exposure_unknown: int = 0
    """Partitions of live groups no earlier snapshot gives a rate for."""
    redelivered: int = 0
    """Records share groups had acknowledged past their start offsets, delivered again (``PlanEntry.redelivered``)."""
    groups_in_doubt: int = 0
    """Groups held by a commit that may have been written (unanswered, or sent and not recorded)."""
    groups_rolled_back: int | None = None
    """A rollback's report: the groups it put back (None in any other report)."""
    groups_left: dict[str, str] = {}
    """A rollback's report: the groups it left as they were (active, moved on since the apply, refused),
    the first ones by name with why (``groups_left_count`` counts them all)."""
    groups_left_count: int = 0


class Card(NamedTuple):
    """A card shown: exact always, the others when their count is not 0."""

    key: str
    title: str
    total: int
    """Partitions; records for the lost card."""
    attention: bool
    """Someone has to look at it (a serious card with a count)."""


class Ready(NamedTuple):
    """The groups the run did its part for: safe to start after an apply, ready to apply after a plan."""

    kind: str
    """``safe_to_start`` or ``ready_to_apply`` (report.json's key for ``groups``)."""
    title: str
    groups: list[str]

    def first_names(self) -> str:
        """The first ``SAFE_SHOWN`` names, and how many more."""
        more = f" and {len(self.groups) - SAFE_SHOWN:,} more" if len(self.groups) > SAFE_SHOWN else ""
        return ", ".join(self.groups[:SAFE_SHOWN]) + more


class Wait(NamedTuple):
    """A group that must not start yet, the first thing that holds it and what to do next."""

    group: str
    held_by: str
    next: str


class Flagged(NamedTuple):
    """A group under one attention status, with the reasons its partitions give."""

    group: str
    reason: str
    """The distinct reasons, sorted and joined with ``; ``; the status itself when none is given."""


class Attention(NamedTuple):
    """One kind of trouble the run left, with what to do about it and the groups it concerns."""

    status: str
    title: str
    advice: str
    groups: tuple[Flagged, ...]


class GroupRows(NamedTuple):
    """One group's partitions, by topic and partition."""

    group: str
    rows: Sequence[PartitionRow]
    statuses: tuple[tuple[str, int], ...]
    """Partitions per status, by name."""


class Timings(NamedTuple):
    finished_at: datetime
    started_at: datetime | None
    seconds: float | None
    """From the run's start to the report."""

    def phrase(self) -> str:
        """``started …, finished …, 12.3 s``"""
        took = f", {self.seconds:.1f} s" if self.seconds is not None else ""
        started = self.started_at.isoformat() if self.started_at else "-"
        return f"started {started}, finished {self.finished_at.isoformat()}{took}"


class InputRow(NamedTuple):
    """A field the run was asked with, its value as text (JSON for anything but a string)."""

    name: str
    value: str


class Bar(NamedTuple):
    label: str
    total: int
    tone: str
    """Whether it needs attention, as a key of ``report_charts.COLOURS``."""


class Charts(NamedTuple):
    outcomes: tuple[Bar, ...]
    """Partitions by outcome, a bar per card but the lost records (those are records, not partitions)."""
    methods: tuple[Bar, ...]
    """Positions by the strategy that found them."""


@dataclass(frozen=True)
class Report:
    """Everything the renderings of one run show."""

    restore_id: Any
    """As the input has it (a string; None for a run that failed before it had one)."""
    outcome: str
    """What the run did, with what it left said (``applied, needs attention``)."""
    created_at: datetime
    headline: Headline
    headline_text: str
    """The headline in one sentence (report.json's ``headline_text``, the page's lead)."""
    glance: str
    """The headline with what needs attention counted (the SNS message)."""
    summary: PlanSummary
    cards: tuple[Card, ...]
    ready: Ready | None
    """None for a rollback: nothing of it is ready or safe."""
    waits: tuple[Wait, ...]
    attention: tuple[Attention, ...]
    """Only the kinds with groups, the most serious first."""
    groups: tuple[GroupRows, ...]
    """Every group, by name."""
    snapshot_id: str | None
    snapshot_age: SnapshotAge | None
    timings: Timings
    timeline: tuple[Phase, ...]
    inputs: tuple[InputRow, ...]
    charts: Charts
    input: Mapping[str, Any]
    """The run as the report step received it (report.json's ``input``)."""
    approval: str | None = None
    """What the run's approval gate decided, by whom and when (``report_text.approval_phrase``)."""


class Notification(NamedTuple):
    """What the SNS topic is sent about a run, and where its report is."""

    subject: str
    message: str
    location: str
    """The report.html's S3 URL."""


def counted(count: int, noun: str) -> str:
    """``1 group``, ``2 groups``."""
    return f"{count} {noun}" + ("s" if count != 1 else "")


def verified_word(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "NO"
