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
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from offset_restore.apply.commit import NO_ANSWER, NOT_WRITTEN
from offset_restore.snapshot.health import age_phrase, age_seconds
from offset_restore.snapshot.model import parse_time
from offset_restore.translate.model import PlanEntry, PlanSummary, SummaryTally

__all__ = ["ADVICE", "Headline", "ReportBuilder", "SnapshotAge", "render_report", "snapshot_age"]

ADVICE = {
    "pending": "The restore has not reached these records yet. Run again when it has: the same restore_id "
    "continues where this run stopped.",
    "unmapped": "No strategy could place these partitions (see the reason). Check that the topic exists on the "
    "target and carries the restore's offset header, or give a topic_map; otherwise reset them by hand.",
    "skipped": "Not written: the group was active on the target, or is already past the mapped offset. Stop "
    "its consumers and run again (or allow_rewind, if moving it back is intended).",
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
ATTENTION = ("unverified", "unanswered", "failed", "not_written", "skipped", "pending", "unmapped")


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


def _needs_attention(entry: PlanEntry | _Row) -> str:
    if entry.status == "mapped" and entry.reason == NO_ANSWER:
        return "unanswered"
    if entry.status == "mapped" and (entry.reason or "").startswith(NOT_WRITTEN):
        return "not_written"
    if entry.status == "committed" and entry.verified is False:
        return "unverified"
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
    """groups_restored, groups, exact_ratio, records_at_risk, entries_without_bound, statuses."""


def _headline(tally: SummaryTally, by_group: Mapping[str, list[_Row]], outcome: str) -> Headline:
    summary = tally.result()
    done = "committed" if outcome == "applied" else "mapped"
    restored = sum(
        1
        for rows in by_group.values()
        if all(r.status in (done, "unmapped") for r in rows) and any(r.status == done for r in rows)
    )
    return Headline(
        groups_restored=restored,
        groups=len(by_group),
        exact_ratio=round(summary.exact / summary.mapped, 4) if summary.mapped else None,
        records_at_risk=summary.max_duplicates_total,
        entries_without_bound=summary.entries_without_bound,
        statuses=dict(sorted(tally.statuses.items())),
    )


class ReportBuilder:
    """The report of a run, built entry by entry so that the mappings are streamed, not held: each
    entry leaves a compact row for the people's documents and its JSON in one byte buffer for
    report.json. At 240,000 mappings that is what keeps the Report function under 512 MB."""

    def __init__(self, run: Mapping[str, Any], outcome: str) -> None:
        self.run, self.outcome = run, outcome
        self.snapshot_age = snapshot_age(run)
        self.tally = SummaryTally()
        self.by_group: dict[str, list[_Row]] = defaultdict(list)
        self._entries = io.BytesIO()

    def add(self, e: PlanEntry) -> None:
        self.tally.add(e)
        self.by_group[e.group].append(
            _Row(
                e.group,
                e.target_topic,
                e.partition,
                e.source_offset,
                e.target_offset,
                e.method,
                bool(e.exact),
                e.max_duplicates,
                e.status,
                e.reason,
                e.verified,
            )
        )
        self._entries.write(b",\n    " if self._entries.tell() else b"\n    ")
        self._entries.write(e.model_dump_json().encode())

    @property
    def summary(self) -> PlanSummary:
        return self.tally.result()

    def documents(self) -> Iterator[tuple[str, bytes]]:
        """report.json, report.md, report.html, one at a time (a caller stores each and lets it go)."""
        run, outcome = self.run, self.outcome
        summary = self.summary
        head = _headline(self.tally, self.by_group, outcome)
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
        document = {
            "restore_id": run.get("restore_id"),
            "outcome": outcome,
            "created_at": now.isoformat(),
            "headline": head,
            "summary": summary.model_dump(),
            "statuses": head["statuses"],
            "attention": {s: {"groups": g, "what_to_do": ADVICE[s]} for s, g in listed.items() if g},
            "snapshot_id": snapshot,
            "snapshot_created_at": self.snapshot_age.positions_at.isoformat() if self.snapshot_age else None,
            "snapshot_age_seconds": self.snapshot_age.seconds if self.snapshot_age else None,
            "snapshot_age": self.snapshot_age.phrase if self.snapshot_age else None,
            "timings": timings,
            "input": run,
        }
        text = json.dumps(document, indent=2, default=str).encode()
        entries = self._entries.getbuffer()
        yield "report.json", b"".join([text[:-2], b',\n  "entries": [', entries, b"\n  ]\n}" if entries else b"]\n}"])
        del entries
        age = self.snapshot_age.phrase if self.snapshot_age else None
        view = _View(run, outcome, head, listed, self.by_group, snapshot, timings, age)
        yield "report.md", _markdown(view).encode()
        yield "report.html", _html(view).encode()


def render_report(run: Mapping[str, Any], entries: Iterable[PlanEntry], outcome: str) -> dict[str, bytes]:
    report = ReportBuilder(run, outcome)
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
    snapshot_age: str | None = None


def _title(status: str) -> str:
    return status.replace("_", " ").capitalize()


def _count(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("s" if count != 1 else "")


def _groups(count: int) -> str:
    return _count(count, "group")


def _ratio(head: Headline) -> str:
    return "-" if head["exact_ratio"] is None else f"{100 * head['exact_ratio']:.1f}%"


def _markdown(view: _View) -> str:
    run, outcome, head, attention = view.run, view.outcome, view.head, view.attention
    by_group, snapshot, timings = view.by_group, view.snapshot, view.timings
    lines = [
        f"# Restore {run.get('restore_id')}: {outcome}",
        "",
        f"**{head['groups_restored']} of {head['groups']} groups restored**; exact {_ratio(head)}; at most "
        f"{head['records_at_risk']} records reprocessed"
        + (f" ({head['entries_without_bound']} partitions without a bound)" if head["entries_without_bound"] else ""),
        "",
        f"Snapshot: {snapshot or '-'}"
        + (f" ({view.snapshot_age})" if view.snapshot_age else "")
        + f"; statuses: {head['statuses']}; timings: {timings}",
    ]
    for status, groups in attention.items():
        if groups:
            lines += [
                "",
                f"## {status.replace('_', ' ').capitalize()} ({_groups(len(groups))})",
                "",
                ADVICE[status],
                "",
            ]
            for group in groups:
                reasons = {e.reason for e in by_group[group] if _needs_attention(e) == status and e.reason}
                lines.append(f"- {group}: {'; '.join(sorted(reasons)) or status}")
    lines += [
        "",
        "## Groups",
        "",
        "| group | topic | partition | target offset | method | exact | status | reason |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for group, es in sorted(by_group.items()):
        for e in sorted(es, key=lambda e: (e.target_topic, e.partition)):
            lines.append(
                f"| {group} | {e.target_topic} | {e.partition} | {e.target_offset} | {e.method or '-'} | "
                f"{'yes' if e.exact else 'no'} | {e.status} | {e.reason or ''} |"
            )
    lines += ["", "## Input", "", "```json", json.dumps(dict(run), indent=2, default=str), "```"]
    return "\n".join(lines) + "\n"


def _html(view: _View) -> str:
    run, outcome, head, attention = view.run, view.outcome, view.head, view.attention
    by_group, snapshot, timings = view.by_group, view.snapshot, view.timings
    e = html.escape
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>offset-restore {e(str(run.get('restore_id')))}</title><style>",
        "body{font-family:system-ui,sans-serif;margin:2rem;color:#222}h1{margin-bottom:.2rem}",
        ".headline{display:flex;gap:2rem;margin:1rem 0}.headline div{background:#f3f5f7;padding:.8rem 1.2rem;"
        "border-radius:6px}.headline b{display:block;font-size:1.6rem}",
        "table{border-collapse:collapse;margin:.4rem 0}td,th{border:1px solid #ccd;padding:3px 8px;text-align:left}",
        ".attention{border-left:4px solid #c60;padding-left:1rem}.failed,.skipped{color:#a40}.pending{color:#960}",
        "details{margin:.2rem 0}summary{cursor:pointer}pre{background:#f6f6f6;padding:1rem;overflow:auto}",
        "</style></head><body>",
        f"<h1>Restore {e(str(run.get('restore_id')))}: {e(outcome)}</h1>",
        f"<p>Snapshot {e(snapshot or '-')}"
        + (f" (<span id='snapshot-age'>{e(view.snapshot_age)}</span>)" if view.snapshot_age else "")
        + f" &middot; finished {e(timings['finished_at'])}"
        + (f" &middot; {e(timings['seconds'])} s" if "seconds" in timings else "")
        + "</p>",
        "<div class='headline'>",
        f"<div id='groups-restored'><b>{head['groups_restored']} / {head['groups']}</b>groups restored</div>",
        f"<div id='exact-ratio'><b>{_ratio(head)}</b>exact</div>",
        f"<div id='records-at-risk'><b>{head['records_at_risk']}</b>records at risk of reprocessing</div>",
        "</div>",
    ]
    for status, groups in attention.items():
        if groups:
            parts.append(
                f"<section class='attention {status}'><h2>{_title(status)}: {len(groups)} groups</h2>"
                f"<p>{e(ADVICE[status])}</p><ul>"
            )
            for group in groups:
                reasons = sorted({x.reason for x in by_group[group] if _needs_attention(x) == status and x.reason})
                parts.append(f"<li>{e(group)}: {e('; '.join(reasons) or status)}</li>")
            parts.append("</ul></section>")
    parts.append("<h2>Groups</h2>")
    for group, es in sorted(by_group.items()):
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(Counter(x.status for x in es).items()))
        parts.append(
            f"<details><summary>{e(group)} &mdash; {_count(len(es), 'partition')}: {e(statuses)}</summary><table>"
            "<tr><th>topic</th><th>partition</th><th>source offset</th><th>target offset</th><th>method</th>"
            "<th>exact</th><th>max duplicates</th><th>status</th><th>reason</th></tr>"
        )
        for x in sorted(es, key=lambda x: (x.target_topic, x.partition)):
            parts.append(
                f"<tr class='{x.status}'><td>{e(x.target_topic)}</td><td>{x.partition}</td><td>{x.source_offset}</td>"
                f"<td>{x.target_offset if x.target_offset is not None else '-'}</td><td>{e(x.method or '-')}</td>"
                f"<td>{'yes' if x.exact else 'no'}</td><td>{x.max_duplicates if x.max_duplicates is not None else '-'}"
                f"</td><td>{x.status}</td><td>{e(x.reason or '')}</td></tr>"
            )
        parts.append("</table></details>")
    parts += ["<h2>Input</h2>", f"<pre>{e(json.dumps(dict(run), indent=2, default=str))}</pre>", "</body></html>"]
    return "".join(parts)
