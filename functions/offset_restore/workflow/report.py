"""The report of a run, for machines (report.json) and people (report.md, one self-contained
report.html): a headline, what needs attention and what to do about it, every group with its
partitions folded, the inputs, the snapshot used (and how old its positions were when the run
started: the recovery point this run restored to) and the timings."""

from __future__ import annotations

import html
import io
import json
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from offset_restore.apply.commit import NO_ANSWER, NOT_WRITTEN
from offset_restore.snapshot.health import age_phrase, age_seconds
from offset_restore.snapshot.model import parse_time
from offset_restore.translate.model import PlanEntry, PlanSummary, SummaryTally
from offset_restore.workflow.report_charts import bar_chart, timeline_chart
from offset_restore.workflow.report_facts import CARDS, Facts, facts_of
from offset_restore.workflow.report_timeline import Phase

__all__ = ["ADVICE", "Headline", "ReportBuilder", "SnapshotAge", "render_report", "snapshot_age"]

ADVICE = {
    "pending": "The restore has not reached these records yet. Run again when it has: the same restore_id "
    "continues where this run stopped.",
    "reshaped": "The restore re-partitioned these topics (see the reason) and their records do not carry the "
    "source partition: no partition of these groups is written, on any topic, lest their consumers read the "
    "changed topic from their reset policy. Restore with the source-partition header (partition_header, default "
    "x-source-partition) or into a topic of the source's shape, then run again.",
    "unmapped": "No strategy could place these partitions (see the reason). Check that the topic exists on the "
    "target and carries the restore's offset header, or give a topic_map; otherwise reset them by hand.",
    "skipped": "Ahead: the group's consumers started on the target and are past the mapped offset, so they skip "
    "the records between. Rewind it (allow_rewind, or apply --allow-rewind 'GROUP') if they must read them, or "
    "accept the skip.",
    "failed": "The broker refused part of the group's commit. Check the target cluster and run again; the "
    "previous offsets are kept in the table for a rollback.",
    "not_written": "This run did not write these groups (the reason says why: still active, moved on since the "
    "run read them, the target changed since the plan). Nothing of theirs changed; deal with the reason and run "
    "again with the same restore_id.",
    "unverified": "Written, but the target does not hold what the plan says at the offset (another record is "
    "there, or the offset reads back otherwise). Check the group before its consumers start; roll it back if need "
    "be (the previous offsets are in the table).",
    "unanswered": "The commit went out but the cluster stopped answering before it confirmed: each group holds "
    "either all its planned offsets or all its previous ones. Run again (the same restore_id) when the cluster "
    "answers: it reads the target first and finishes them.",
}
ATTENTION = ("unverified", "unanswered", "failed", "not_written", "skipped", "pending", "reshaped", "unmapped")


class _Row(NamedTuple):
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
    held: bool = False
    """An entry of a topic whose shape changed, not mapped: it holds its whole group."""
    lost: int = 0
    """Source records between the group's position and the record it resumes at (lost before the backup)."""


def _lost(e: PlanEntry) -> int:
    """What the restore's offset header says is missing before the resume point: the record the group
    resumes at carries a later source offset than its committed position (retention, a gap)."""
    at_resume = e.anchor_offset is not None and e.anchor_offset == e.target_offset
    if not at_resume or e.anchor_source_offset is None or e.status in ("pending", "unmapped"):
        return 0
    if e.expected_fingerprint:  # resumes at the copy of its own next record: the offsets between are gaps
        return 0  # of the source (transaction markers, compaction), not records lost
    return max(0, e.anchor_source_offset - e.source_offset)


def _needs_attention(entry: PlanEntry | _Row) -> str:
    if entry.status == "mapped" and entry.reason == NO_ANSWER:
        return "unanswered"
    if entry.status == "mapped" and (entry.reason or "").startswith(NOT_WRITTEN):
        return "not_written"
    if entry.status == "committed" and entry.verified is False:
        return "unverified"
    if entry.status == "unmapped" and (entry.held if isinstance(entry, _Row) else entry.holds_group):
        return "reshaped"
    return entry.status


def effective_outcome(outcome: str, attention: Mapping[str, list[str]], run: Mapping[str, Any] | None = None) -> str:
    """An apply run that left groups unwritten, unverified or refused says so in its outcome (the
    report's title, the SNS subject), not just "applied"; so does a rollback that left groups as they
    were (active, moved on since the apply, refused: its step's output names them)."""
    if outcome == "rolled back":
        step = (run or {}).get("rollback")
        counts = step.get("counts", {}) if isinstance(step, dict) else {}
        left = int(counts.get("skipped", 0)) + int(counts.get("failed", 0))
        return f"rolled back in part ({left} groups left as they were)" if left else outcome
    serious = [s for s in ("unverified", "unanswered", "failed", "not_written", "skipped") if attention.get(s)]
    return f"{outcome}, needs attention" if outcome == "applied" and serious else outcome


class SnapshotAge(NamedTuple):
    positions_at: datetime
    seconds: float
    phrase: str
    """``offsets as of 14 min before this run``"""


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


class Headline(dict[str, Any]):
    """groups_restored (every partition where the run put it), groups, partitions, exact, exact_ratio
    (of all partitions), records_at_risk, entries_without_bound, lost_records, cards, statuses."""


def _headline(tally: SummaryTally, facts: Facts) -> Headline:
    summary = tally.result()
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
    )


def _done(outcome: str) -> str:
    """The status a partition has once the run did its part."""
    return "mapped" if outcome == "planned" else "committed"


NEXT = {
    "failed": "check the target cluster, then run again with the same restore_id",
    "unverified": "check the group before its consumers start; roll it back if need be (offset-restore rollback "
    "--restore-id ID --stack ENV)",
    "pending": "run again with the same restore_id once the restore has reached its records",
    "unmapped": "give a topic_map for a renamed topic, or reset the partition by hand",
    "reshaped": "the restore re-partitioned a topic it reads and its records do not say their source partition: "
    "restore it with the source-partition header (partition_header) or into a topic of the source's shape, then run "
    "again; until then none of its partitions is written",
    "active": "stop its consumers on the target, then run again with the same restore_id",
    "not_written": "deal with the reason shown, then run again with the same restore_id",
    "ahead": "its consumers started on the target and skip records: rewind it (allow_rewind, or apply "
    "--allow-rewind 'GROUP'), or accept the skip",
    "unanswered": "apply again with the same restore_id: it reads the target first and finishes the commit",
    "rolled_back": "it is back at the offsets it held before the apply (or on its way: run the rollback again "
    "if it did not finish); apply again to write the plan's offsets",
    "end_unsure": "it resumes at the end without proof: wait until the restore has finished, then plan again",
}
"""For each thing that holds a group back, what to do next."""


class ReportBuilder:
    """The report of a run, built entry by entry so that the mappings are streamed, not held: each
    entry leaves a compact row for the people's documents and its JSON in one byte buffer for
    report.json. At 240,000 mappings that is what keeps the Report function under 512 MB."""

    def __init__(self, run: Mapping[str, Any], outcome: str, timeline: Sequence[Phase] = ()) -> None:
        """``timeline``: the run's phases from its execution history (``report_timeline``), if read."""
        self.run, self.outcome, self.timeline = run, outcome, list(timeline)
        self.snapshot_age = snapshot_age(run)
        self.tally = SummaryTally()
        self.by_group: dict[str, list[_Row]] = defaultdict(list)
        self._entries = io.BytesIO()
        self.facts = Facts()

    def add(self, e: PlanEntry) -> None:
        self.tally.add(e)
        lost = _lost(e)
        self.by_group[e.group].append(
            _Row(
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
                e.holds_group,
                lost,
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
        facts = self.facts
        attention = [(title, facts.card(key)) for key, title, serious in CARDS if serious and facts.card(key)]
        said = f"{len(facts.safe):,} of {_groups(facts.groups)} {_done_phrase(self.outcome)}; "
        said += f"{facts.outcomes['exact']:,} of {_count(facts.partitions, 'partition')} exact"
        if attention:
            said += "; needs attention: " + ", ".join(f"{count:,} {title}" for title, count in attention)
        return said

    def documents(self) -> Iterator[tuple[str, bytes]]:
        """report.json, report.md, report.html, one at a time (a caller stores each and lets it go)."""
        run, outcome = self.run, self.outcome
        summary = self.summary
        facts = self.facts = facts_of(self.by_group, _done(outcome))
        head = _headline(self.tally, facts)
        now = datetime.now(UTC)
        started = run.get("started_at")
        timings = {"finished_at": now.isoformat()}
        if isinstance(started, int | float):
            timings["started_at"] = datetime.fromtimestamp(started, UTC).isoformat()
            timings["seconds"] = f"{time.time() - started:.1f}"
        snapshot = (run.get("work") or {}).get("snapshot_id") if isinstance(run.get("work"), dict) else None
        attention: dict[str, set[str]] = {status: set() for status in ATTENTION}
        for rows in self.by_group.values():
            for r in rows:
                if (status := _needs_attention(r)) in attention:
                    attention[status].add(r.group)
        listed = {status: sorted(groups) for status, groups in attention.items()}
        self.outcome = outcome = effective_outcome(outcome, listed, run)
        age = self.snapshot_age.phrase if self.snapshot_age else None
        view = _View(run, outcome, head, listed, self.by_group, snapshot, timings, age, facts, summary, self.timeline)
        document = {
            "restore_id": run.get("restore_id"),
            "outcome": outcome,
            "headline_text": _headline_text(view),
            "created_at": now.isoformat(),
            "headline": head,
            "summary": summary.model_dump(),
            "statuses": head["statuses"],
            "attention": {s: {"groups": g, "what_to_do": ADVICE[s]} for s, g in listed.items() if g},
            "safe_to_start": facts.safe if _ready_title(outcome) == SAFE else [],
            "ready_to_apply": facts.safe if outcome == "planned" else [],
            "do_not_start_yet": {g: {"held_by": hold, "next": NEXT[hold]} for g, hold in facts.wait.items()},
            "snapshot_id": snapshot,
            "snapshot_created_at": self.snapshot_age.positions_at.isoformat() if self.snapshot_age else None,
            "snapshot_age_seconds": self.snapshot_age.seconds if self.snapshot_age else None,
            "snapshot_age": self.snapshot_age.phrase if self.snapshot_age else None,
            "timings": timings,
            "timeline": [
                {"phase": p.name, "start_s": p.start_s, "seconds": p.seconds, "waited_for": p.waited_for}
                for p in self.timeline
            ],
            "input": run,
        }
        text = json.dumps(document, indent=2, default=str).encode()
        entries = self._entries.getbuffer()
        yield "report.json", b"".join([text[:-2], b',\n  "entries": [', entries, b"\n  ]\n}" if entries else b"]\n}"])
        del entries
        yield "report.md", _markdown(view).encode()
        yield "report.html", _html(view).encode()


def render_report(
    run: Mapping[str, Any], entries: Iterable[PlanEntry], outcome: str, timeline: Sequence[Phase] = ()
) -> dict[str, bytes]:
    report = ReportBuilder(run, outcome, timeline)
    for entry in entries:
        report.add(entry)
    return dict(report.documents())


@dataclass(frozen=True)
class _View:
    """What both human-readable renderings show."""

    run: Mapping[str, Any]
    outcome: str
    head: Headline
    attention: dict[str, list[str]]
    by_group: Mapping[str, list[_Row]]
    snapshot: str | None
    timings: dict[str, str]
    snapshot_age: str | None
    facts: Facts
    summary: PlanSummary
    timeline: list[Phase]


def _title(status: str) -> str:
    return status.replace("_", " ").capitalize()


def _count(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("s" if count != 1 else "")


def _groups(count: int) -> str:
    return _count(count, "group")


def _ratio(head: Headline) -> str:
    return "-" if head["exact_ratio"] is None else f"{100 * head['exact_ratio']:.1f}%"


INPUT_FIELDS = (
    "restore_id", "mode", "snapshot", "source_cluster", "target_cluster", "groups", "exclude_groups", "topics",
    "topic_map", "strategies", "offset_header", "order_check", "wait", "on_wait_timeout", "allow_rewind", "trigger",
)  # fmt: skip
"""What the run was asked to do (the input's fields), not the state the workflow carries between steps."""
SAFE_SHOWN = 50


def _input_rows(run: Mapping[str, Any]) -> list[tuple[str, str]]:
    def shown(value: Any) -> str:
        if value is None:
            return "-"
        return value if isinstance(value, str) else json.dumps(value, default=str)

    return [(name, shown(run.get(name))) for name in INPUT_FIELDS if name in run]


def _statuses(head: Headline) -> str:
    return ", ".join(f"{count:,} {status}" for status, count in head["statuses"].items()) or "none"


def _timing(timings: Mapping[str, str]) -> str:
    took = f", {timings['seconds']} s" if "seconds" in timings else ""
    return f"started {timings.get('started_at', '-')}, finished {timings['finished_at']}{took}"


def _cards(view: _View) -> list[tuple[str, str, int, bool]]:
    """(key, title, count, needs attention) for each card to show: exact always, others when not 0."""
    shown = []
    for key, title, serious in CARDS:
        count = view.facts.card(key)
        if key == "exact" or count:
            shown.append((key, title, count, serious and count > 0))
    return shown


def _headline_text(view: _View) -> str:
    head, facts = view.head, view.facts
    text = (
        f"{head['groups_restored']:,} of {_groups(head['groups'])} {_done_phrase(view.outcome).split(',')[0]} "
        f"(every partition {'committed' if _done(view.outcome) == 'committed' else 'mapped'}); {head['exact']:,} of "
        f"{_count(head['partitions'], 'partition')} exact ({_ratio(head)}); at most {head['records_at_risk']:,} "
        "records read twice"
    )
    if head["entries_without_bound"]:
        text += f" ({head['entries_without_bound']:,} partitions without a bound)"
    if facts.lost_records:
        text += (
            f"; {facts.lost_records:,} records lost before the backup ({_count(facts.lost_partitions, 'partition')})"
        )
    return text


def _markdown(view: _View) -> str:
    run, outcome, facts = view.run, view.outcome, view.facts
    lines = [
        f"# Restore {run.get('restore_id')}: {outcome}",
        "",
        f"**{_headline_text(view)}**",
        "",
        f"Snapshot {view.snapshot or '-'}" + (f" ({view.snapshot_age})" if view.snapshot_age else "") + ".",
        f"Partitions by status: {_statuses(view.head)}. Run: {_timing(view.timings)}.",
        "",
        "| | partitions |",
        "|---|---|",
        *(f"| {title} | {count:,} |" for key, title, count, _ in _cards(view) if key != "lost"),
    ]
    if facts.lost_records:
        lines.append(f"| records lost before the backup | {facts.lost_records:,} |")
    title = _ready_title(outcome)
    if title:
        lines += ["", f"## {title} ({_groups(len(facts.safe))})", "", _md(_first_names(facts.safe)) or "none"]
    if facts.wait:
        lines += ["", f"## Do not start yet ({_groups(len(facts.wait))})", ""]
        lines += [f"- {_md(group)}: {hold.replace('_', ' ')}: {NEXT[hold]}" for group, hold in facts.wait.items()]
    for status, groups in view.attention.items():
        if groups:
            lines += ["", f"## {_title(status)} ({_groups(len(groups))})", "", ADVICE[status], ""]
            for group in groups:
                reasons = {e.reason for e in view.by_group[group] if _needs_attention(e) == status and e.reason}
                lines.append(f"- {_md(group)}: {_md('; '.join(sorted(reasons))) or status}")
    lines += [
        "",
        "## Groups",
        "",
        "| group | topic | partition | source offset | target offset | method | exact | verified | status | reason |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for group, rows in sorted(view.by_group.items()):
        for e in sorted(rows, key=lambda e: (e.target_topic, e.partition)):
            lines.append(
                f"| {_md(group)} | {_md(e.target_topic)} | {e.partition} | {e.source_offset} | "
                f"{'-' if e.target_offset is None else e.target_offset} | {e.method or '-'} | "
                f"{'yes' if e.exact else 'no'} | {_verified(e.verified)} | {e.status} | {_md(e.reason or '')} |"
            )
    lines += ["", "## Input", "", "| | |", "|---|---|", *(f"| {k} | {_md(v)} |" for k, v in _input_rows(run))]
    return "\n".join(lines) + "\n"


def _verified(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "NO"


_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2rem;color:#222;max-width:80rem}h1{margin-bottom:.2rem}"
    ".lead{font-size:1.15rem}.cards{display:flex;flex-wrap:wrap;gap:.8rem;margin:1rem 0}"
    ".card{background:#f3f5f7;padding:.7rem 1rem;border-radius:6px;min-width:9rem}"
    ".card b{display:block;font-size:1.6rem}.card.attention{background:#fff3e0;border-left:4px solid #ef6c00}"
    ".lists{display:flex;flex-wrap:wrap;gap:2rem}.lists section{flex:1;min-width:20rem}"
    ".safe h2{color:#2e7d32}.wait h2{color:#c62828}.charts{display:flex;flex-wrap:wrap;gap:2rem}"
    "table{border-collapse:collapse;margin:.4rem 0}td,th{border:1px solid #ccd;padding:3px 8px;text-align:left}"
    ".attention-list{border-left:4px solid #c60;padding-left:1rem}.failed,.skipped{color:#a40}.pending{color:#960}"
    "details{margin:.2rem 0}summary{cursor:pointer}"
)


def _charts(view: _View) -> str:
    colours = {"exact": "good", "bounded": "fine", "unbounded": "warn", "failed": "bad", "unverified": "bad"}
    outcomes = [(title, view.facts.outcomes[key], colours.get(key, "warn")) for key, title, _ in CARDS if key != "lost"]
    methods = [(method, count, "info") for method, count in view.summary.by_method.items()]
    return (
        "<div class='charts'>"
        + bar_chart("chart-outcomes", "Partitions by outcome", outcomes)
        + bar_chart("chart-methods", "How each position was found", methods)
        + timeline_chart("chart-timeline", "The run, phase by phase", view.timeline)
        + "</div>"
    )


SAFE = "Safe to start consumers"


def _ready_title(outcome: str) -> str | None:
    """What the groups the run did its part for are: safe to start after an apply, ready to apply
    after a plan (nothing is written: started now, consumers would begin from their reset policy); a
    rollback's report has no such list."""
    if outcome == "planned":
        return "Ready to apply (nothing is written yet)"
    return None if outcome.startswith("rolled back") else SAFE


def _done_phrase(outcome: str) -> str:
    if outcome == "planned":
        return "ready to apply (nothing written)"
    return "still at the run's offsets" if outcome.startswith("rolled back") else "restored, safe to start"


def _first_names(names: list[str]) -> str:
    more = f" and {len(names) - SAFE_SHOWN:,} more" if len(names) > SAFE_SHOWN else ""
    return ", ".join(names[:SAFE_SHOWN]) + more


def _md(text: str) -> str:
    """A name or reason inside Markdown: a ``|`` would split a table cell, a newline end a row."""
    return text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _html_lists(view: _View) -> list[str]:
    e, facts = html.escape, view.facts
    title = _ready_title(view.outcome)
    parts = ["<div class='lists'>"]
    if title:
        parts += [
            f"<section class='safe' id='safe-to-start'><h2>{e(title)}: {_groups(len(facts.safe))}</h2>",
            f"<p>{e(_first_names(facts.safe)) or 'none'}</p></section>",
        ]
    if facts.wait:
        parts.append(
            f"<section class='wait' id='do-not-start'><h2>Do not start yet: {_groups(len(facts.wait))}</h2><ul>"
        )
        parts += [
            f"<li><b>{e(g)}</b>: {e(hold.replace('_', ' '))} &mdash; {e(NEXT[hold])}</li>"
            for g, hold in facts.wait.items()
        ]
        parts.append("</ul></section>")
    parts.append("</div>")
    return parts


def _html_groups(view: _View) -> list[str]:
    e = html.escape
    parts = ["<h2>Groups</h2>"]
    for group, rows in sorted(view.by_group.items()):
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(Counter(x.status for x in rows).items()))
        parts.append(
            f"<details><summary>{e(group)} &mdash; {_count(len(rows), 'partition')}: {e(statuses)}</summary><table>"
            "<tr><th>topic</th><th>partition</th><th>source offset</th><th>target offset</th><th>method</th>"
            "<th>exact</th><th>max duplicates</th><th>verified</th><th>status</th><th>reason</th></tr>"
        )
        for x in sorted(rows, key=lambda x: (x.target_topic, x.partition)):
            parts.append(
                f"<tr class='{x.status}'><td>{e(x.target_topic)}</td><td>{x.partition}</td><td>{x.source_offset}</td>"
                f"<td>{x.target_offset if x.target_offset is not None else '-'}</td><td>{e(x.method or '-')}</td>"
                f"<td>{'yes' if x.exact else 'no'}</td><td>{x.max_duplicates if x.max_duplicates is not None else '-'}"
                f"</td><td>{_verified(x.verified)}</td><td>{x.status}</td><td>{e(x.reason or '')}</td></tr>"
            )
        parts.append("</table></details>")
    return parts


def _card(card_id: str, number: str, title: str, serious: bool = False) -> str:
    kind = "card attention" if serious else "card"
    return f"<div class='{kind}' id='{card_id}'><b>{number}</b>{html.escape(title)}</div>"


def _html(view: _View) -> str:
    run, outcome, head = view.run, view.outcome, view.head
    e = html.escape
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>offset-restore {e(str(run.get('restore_id')))}: {e(outcome)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>Restore {e(str(run.get('restore_id')))}: {e(outcome)}</h1>",
        f"<p class='lead' id='headline'>{e(_headline_text(view))}</p>",
        f"<p>Snapshot {e(view.snapshot or '-')}"
        + (f" (<span id='snapshot-age'>{e(view.snapshot_age)}</span>)" if view.snapshot_age else "")
        + f" &middot; {e(_timing(view.timings))}</p>",
        "<div class='cards'>",
        _card("groups-restored", f"{head['groups_restored']:,} / {head['groups']:,}", "groups restored"),
        _card("records-at-risk", f"{head['records_at_risk']:,}", "records at most read twice"),
        *(_card(f"card-{key}", f"{count:,}", title, serious) for key, title, count, serious in _cards(view)),
        "</div>",
        *_html_lists(view),
        _charts(view),
    ]
    for status, groups in view.attention.items():
        if groups:
            parts.append(
                f"<section class='attention-list {status}'><h2>{_title(status)}: {_groups(len(groups))}</h2>"
                f"<p>{e(ADVICE[status])}</p><ul>"
            )
            for group in groups:
                reasons = sorted({x.reason for x in view.by_group[group] if _needs_attention(x) == status and x.reason})
                parts.append(f"<li>{e(group)}: {e('; '.join(reasons) or status)}</li>")
            parts.append("</ul></section>")
    parts += _html_groups(view)
    parts += [
        "<h2>Input</h2><table id='input'>",
        *(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in _input_rows(run)),
        "</table>",
    ]
    parts.append("</body></html>")
    return "".join(parts)
