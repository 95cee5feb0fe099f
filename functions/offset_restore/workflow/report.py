"""The report of a run, for machines (report.json) and people (report.md, one self-contained
report.html): a headline, what needs attention and what to do about it, every group with its
partitions folded, the inputs, the snapshot used (and how old its positions were when the run
started: the recovery point this run restored to) and the timings.

The builder computes what the report says once, as a ``report_model.Report``; each document is a
rendering of that model alone (``report_json``, ``report_markdown``, ``report_html``), and so is the
SNS notification (``notification``)."""

from __future__ import annotations

import io
import json
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from offset_restore.formats.plan import PlanEntry, PlanSummary, SummaryTally
from offset_restore.formats.streams import internal_topic
from offset_restore.snapshot.health import age_phrase, age_seconds
from offset_restore.snapshot.model import parse_time
from offset_restore.stores.keys import report_page
from offset_restore.workflow.report_facts import CARDS, NOT_WRITTEN_OUTCOMES, Facts, facts_of
from offset_restore.workflow.report_html import html_page
from offset_restore.workflow.report_json import json_document
from offset_restore.workflow.report_markdown import markdown
from offset_restore.workflow.report_model import (
    Attention,
    Bar,
    Card,
    Charts,
    Flagged,
    GroupRows,
    Headline,
    InputRow,
    Notification,
    PartitionRow,
    Ready,
    Report,
    SnapshotAge,
    Timings,
    Wait,
)
from offset_restore.workflow.report_text import (
    ADVICE,
    ATTENTION,
    NEXT,
    SAFE,
    approval_phrase,
    done,
    glance,
    headline_text,
    ready_title,
)
from offset_restore.workflow.report_timeline import Phase

__all__ = [
    "ADVICE",
    "Headline",
    "ReportBuilder",
    "SnapshotAge",
    "effective_outcome",
    "notification",
    "render_report",
    "snapshot_age",
]


def _lost(e: PlanEntry) -> int:
    """What the restore's offset header says is missing before the resume point: the record the group
    resumes at carries a later source offset than its committed position (retention, a gap)."""
    if e.status in ("pending", "unmapped"):
        return 0
    if e.target_partition is not None:  # a re-partitioned topic: its anchor may carry another source partition's
        return e.lost_before or 0
    at_resume = e.anchor_offset is not None and e.anchor_offset == e.target_offset
    if not at_resume or e.anchor_source_offset is None:
        return 0
    if e.expected_fingerprint:  # resumes at the copy of its own next record: the offsets between are gaps
        return 0  # of the source (transaction markers, compaction), not records lost
    return max(0, e.anchor_source_offset - e.source_offset)


def _held_by(e: PlanEntry) -> str | None:
    """What an entry that holds its group is (``PartitionRow.held``)."""
    if not e.holds_group:
        return None
    return "application" if internal_topic(e.group, e.topic) else "reshaped"


def _lost_in_all(e: PlanEntry) -> int:
    """Records the group will not read: lost before the backup, and (the restore declared complete)
    never restored after its position."""
    return _lost(e) + (e.never_restored or 0)


def _needs_attention(row: PartitionRow) -> str:
    """The attention list a partition is named under (its status, or what apply did with it)."""
    if row.status == "mapped" and (row.outcome == "unanswered" or row.in_doubt):
        return "unanswered"
    if row.status == "mapped" and row.outcome in NOT_WRITTEN_OUTCOMES:
        return "not_written"
    if row.status == "committed" and row.verified is False:
        return "unverified"
    if row.status == "unmapped" and row.held:
        return row.held
    return row.status


def effective_outcome(outcome: str, attention: Mapping[str, list[str]], run: Mapping[str, Any] | None = None) -> str:
    """An apply run that left groups unwritten, unverified or refused — whatever held them: a member, a
    pending or unmapped entry, a reshaped topic, an application missing a topic — says so in its outcome
    (the report's title, the SNS subject, ``start``'s exit 3), not just "applied": "applied" means every
    selected group was written. So does a rollback that left groups as they were (active, moved on since
    the apply, refused: its step's output names them)."""
    if outcome == "rolled back":
        step = (run or {}).get("rollback")
        counts = step.get("counts", {}) if isinstance(step, dict) else {}
        left = int(counts.get("skipped", 0)) + int(counts.get("failed", 0))
        return f"rolled back in part ({left} groups left as they were)" if left else outcome
    serious = [s for s in ATTENTION if attention.get(s)]
    return f"{outcome}, needs attention" if outcome == "applied" and serious else outcome


def snapshot_age(run: Mapping[str, Any]) -> SnapshotAge | None:
    """How old the snapshot's positions were when the run started: the prepare step records the
    snapshot's ``created_at`` (when its offsets were read) in ``work``; None before that step."""
    work = run.get("work")
    created = work.get("snapshot_created_at") if isinstance(work, dict) else None
    started = run.get("started_at")
    if not isinstance(created, str) or not isinstance(started, int | float) or isinstance(started, bool):
        return None
    try:
        positions_at = parse_time(created)
    except ValueError:
        return None
    run_at = datetime.fromtimestamp(started, UTC)
    return SnapshotAge(positions_at, round(age_seconds(positions_at, run_at), 1), age_phrase(positions_at, run_at))


class ReportBuilder:
    """The report of a run, built entry by entry so that the mappings are streamed, not held: each
    entry leaves a compact row for the people's documents and its JSON in one byte buffer for
    report.json. At 240,000 mappings that is what keeps the Report function under 512 MB."""

    def __init__(self, run: Mapping[str, Any], outcome: str, timeline: Sequence[Phase] = ()) -> None:
        """``timeline``: the run's phases from its execution history (``report_timeline``), if read."""
        self.run, self.outcome, self.timeline = run, outcome, list(timeline)
        self.snapshot_age = snapshot_age(run)
        self.tally = SummaryTally()
        self.by_group: dict[str, list[PartitionRow]] = defaultdict(list)
        self._entries = io.BytesIO()
        self.facts = Facts()
        self.report: Report | None = None
        """What the documents show, once ``documents`` has built it."""

    def add(self, e: PlanEntry) -> None:
        self.tally.add(e)
        self.by_group[e.group].append(
            PartitionRow(
                e.group,
                e.target_topic,
                e.target.partition,
                e.source_offset,
                e.target_offset,
                e.method,
                bool(e.exact),
                e.max_duplicates,
                e.status,
                e.reason,
                e.verified,
                _held_by(e),
                _lost_in_all(e),
                e.outcome,
                e.never_restored is not None,
                e.status == "mapped" and e.previous_recorded and e.outcome is None,
            )
        )
        self._entries.write(b",\n    " if self._entries.tell() else b"\n    ")
        self._entries.write(e.model_dump_json().encode())

    @property
    def summary(self) -> PlanSummary:
        return self.tally.result()

    def glance(self) -> str:
        """The headline in one sentence, with what needs attention counted (the SNS message: a run that
        left partitions behind must not read as a clean one). Call after ``documents``."""
        if self.report:
            return self.report.glance
        rollback = self.run if self.outcome.startswith("rolled back") else None
        return glance(_headline(self.tally, self.facts, rollback), self.outcome)

    def build(self) -> Report:
        """What the report says, from the rows added and the run (the outcome takes what the run left)."""
        run, summary = self.run, self.summary
        facts = self.facts = facts_of(self.by_group, done(self.outcome))
        attention = _attention(self.by_group, left_on_source(run), migrating=run.get("mode") == "migrate")
        outcome = effective_outcome(self.outcome, {s: [f.group for f in a.groups] for s, a in attention.items()}, run)
        head = _headline(self.tally, facts, run if outcome.startswith("rolled back") else None)
        work, now = run.get("work"), datetime.now(UTC)
        approval = approval_phrase(run)
        said = headline_text(head, outcome, facts.lost_partitions)
        if outcome == "not approved":  # what was asked, and that nothing of it was written
            said = f"{approval}. The plan it asked about: {said}"
        return Report(
            restore_id=run.get("restore_id"),
            outcome=outcome,
            created_at=now,
            headline=head,
            headline_text=said,
            glance=glance(head, outcome),
            summary=summary,
            cards=_cards(facts),
            ready=_ready(outcome, facts),
            waits=tuple(Wait(group, hold, NEXT[hold]) for group, hold in facts.wait.items()),
            attention=tuple(attention.values()),
            groups=_groups(self.by_group),
            snapshot_id=work.get("snapshot_id") if isinstance(work, dict) else None,
            snapshot_age=self.snapshot_age,
            timings=_timings(run, now),
            timeline=tuple(self.timeline),
            inputs=_inputs(run),
            charts=_charts(facts, summary),
            input={k: v for k, v in run.items() if k != "fence"},  # the fence's lanes: producer ids, not input
            approval=approval,
        )

    def documents(self) -> Iterator[tuple[str, bytes]]:
        """report.json, report.md, report.html, one at a time (a caller stores each and lets it go)."""
        report = self.report = self.build()
        self.outcome = report.outcome
        yield "report.json", json_document(report, self._entries)
        yield "report.md", markdown(report).encode()
        yield "report.html", html_page(report)


def render_report(
    run: Mapping[str, Any], entries: Iterable[PlanEntry], outcome: str, timeline: Sequence[Phase] = ()
) -> dict[str, bytes]:
    report = ReportBuilder(run, outcome, timeline)
    for entry in entries:
        report.add(entry)
    return dict(report.documents())


def notification(report: Report, bucket: str, error: Mapping[str, Any] | None = None) -> Notification:
    """What the SNS topic is told of a run: the outcome as subject; the headline with what needs
    attention counted, the snapshot's age, the step's error (``Error``, ``Cause``) and where the
    report is as message — a run that left partitions behind must not read as a clean one."""
    restore_id = str(report.input.get("restore_id", "unknown"))
    location = f"s3://{bucket}/{report_page(restore_id)}"
    message = (
        f"offset-restore {restore_id}: {report.outcome}. {report.glance}."
        + (f" Snapshot {report.snapshot_id}: {report.snapshot_age.phrase}." if report.snapshot_age else "")
        + (f" Error: {error.get('Error')}: {error.get('Cause')}" if error else "")
        + f" Report: {location}"
    )
    return Notification(f"offset-restore {report.outcome}", message, location)


def _headline(tally: SummaryTally, facts: Facts, rollback_run: Mapping[str, Any] | None = None) -> Headline:
    """``rollback_run``: the run of a rollback, whose step's output names the groups it left as they were
    (their entries still say committed: the report alone would count them as still at the run's offsets)."""
    summary = tally.result()
    step = (rollback_run or {}).get("rollback")
    step = step if isinstance(step, dict) else {}
    counts = step.get("counts", {}) if isinstance(step.get("counts"), dict) else {}
    left = {**dict(step.get("skipped") or {}), **dict(step.get("failed") or {})}
    return Headline(
        groups_restored=len(facts.safe),
        groups=facts.groups,
        partitions=facts.partitions,
        exact=facts.outcomes["exact"],
        exact_ratio=round(facts.outcomes["exact"] / facts.partitions, 4) if facts.partitions else None,
        records_at_risk=summary.max_duplicates_total,
        entries_without_bound=summary.entries_without_bound,
        lost_records=facts.lost_records,
        verified=facts.verified,
        cards={key: facts.card(key) for key, _, _ in CARDS},
        statuses=dict(sorted(tally.statuses.items())),
        groups_live=summary.groups_live,
        exposure_records=summary.exposure_total,
        exposure_unknown=summary.entries_exposure_unknown,
        redelivered=summary.redelivered_total,
        groups_in_doubt=sum(1 for hold in facts.wait.values() if hold == "unanswered"),
        groups_rolled_back=None if rollback_run is None else sum(1 for h in facts.wait.values() if h == "rolled_back"),
        groups_left={str(group): str(why) for group, why in sorted(left.items())},
        groups_left_count=int(counts.get("skipped", 0)) + int(counts.get("failed", 0)),
    )


def _cards(facts: Facts) -> tuple[Card, ...]:
    """The cards to show: exact always, the others when not 0."""
    counts = ((key, title, serious, facts.card(key)) for key, title, serious in CARDS)
    return tuple(Card(key, title, n, serious and n > 0) for key, title, serious, n in counts if key == "exact" or n)


def left_on_source(run: Mapping[str, Any]) -> dict[str, set[str]]:
    """The groups a migration left on the source (its final snapshot's output: the first names, counted),
    each with why; the rest counted under one line."""
    final = run.get("final_snapshot")
    if not isinstance(final, dict):
        return {}
    why = "it had members on the source when the final snapshot was taken: not moved"
    names = [str(name) for name in final.get("left_on_source") or []]
    left = {name: {why} for name in names}
    more = int(final.get("left_on_source_count") or 0) - len(names)
    if more > 0:
        left[f"... and {more:,} more groups"] = {"named in the Source function's log"}
    return left


def _attention(
    by_group: Mapping[str, list[PartitionRow]], on_source: Mapping[str, set[str]], *, migrating: bool = False
) -> dict[str, Attention]:
    """Each kind of trouble with the groups under it (by name) and their reasons; kinds without groups
    are left out. ``migrating``: a mapped entry not exact is one a migration did not write."""
    reasons: dict[str, dict[str, set[str]]] = {status: {} for status in ATTENTION}
    reasons["left_on_source"] = {group: set(why) for group, why in on_source.items()}
    for rows in by_group.values():
        for r in rows:
            status = _needs_attention(r)
            if migrating and status == "mapped" and not r.exact:
                status = "not_exact"
            if status in reasons:
                said = reasons[status].setdefault(r.group, set())
                if r.reason:
                    said.add(r.reason)
    return {
        status: Attention(
            status,
            status.replace("_", " ").capitalize(),
            ADVICE[status],
            tuple(Flagged(group, "; ".join(sorted(said)) or status) for group, said in sorted(groups.items())),
        )
        for status, groups in reasons.items()
        if groups
    }


def _ready(outcome: str, facts: Facts) -> Ready | None:
    title = ready_title(outcome)
    if title is None:
        return None
    return Ready("safe_to_start" if title == SAFE else "ready_to_apply", title, facts.safe)


def _groups(by_group: Mapping[str, list[PartitionRow]]) -> tuple[GroupRows, ...]:
    """Every group by name, its rows sorted in place (by topic and partition): referenced, not copied."""
    shown = []
    for group, rows in sorted(by_group.items()):
        rows.sort(key=lambda r: (r.target_topic, r.partition))
        shown.append(GroupRows(group, rows, tuple(sorted(Counter(r.status for r in rows).items()))))
    return tuple(shown)


def _timings(run: Mapping[str, Any], now: datetime) -> Timings:
    started = run.get("started_at")
    if not isinstance(started, int | float):
        return Timings(now, None, None)
    return Timings(now, datetime.fromtimestamp(started, UTC), time.time() - started)


INPUT_FIELDS = (
    "restore_id", "mode", "snapshot", "source_cluster", "target_cluster", "groups", "exclude_groups", "topics",
    "topic_map", "strategies", "offset_header", "order_check", "wait", "on_wait_timeout", "allow_rewind", "trigger",
)  # fmt: skip
"""What the run was asked to do (the input's fields), not the state the workflow carries between steps."""


def _inputs(run: Mapping[str, Any]) -> tuple[InputRow, ...]:
    def shown(value: Any) -> str:
        if value is None:
            return "-"
        return value if isinstance(value, str) else json.dumps(value, default=str)

    return tuple(InputRow(name, shown(run.get(name))) for name in INPUT_FIELDS if name in run)


_TONES = {"exact": "good", "bounded": "fine", "unbounded": "warn", "failed": "bad", "unverified": "bad"}
"""How each outcome's bar reads (``report_charts.COLOURS``); the others need attention."""


def _charts(facts: Facts, summary: PlanSummary) -> Charts:
    outcomes = tuple(
        Bar(title, facts.outcomes[key], _TONES.get(key, "warn")) for key, title, _ in CARDS if key != "lost"
    )
    return Charts(outcomes, tuple(Bar(method, count, "info") for method, count in summary.by_method.items()))
