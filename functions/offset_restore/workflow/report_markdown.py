"""report.md from the report's model (pure): the same facts as the page, for a terminal, a ticket or a
pull request.

Built by small functions, not a template: Markdown has no escaping a template engine could apply by
itself — what breaks it is a ``|`` splitting a table cell and a line break ending a row or an item —
so every name and reason goes through ``_md`` here, where mypy sees each line's types; a template
would need the same filter written on every name, with autoescape off and its whitespace rules on
top."""

from __future__ import annotations

from offset_restore.workflow.report_model import Report, counted, verified_word

__all__ = ["markdown"]


def markdown(report: Report) -> str:
    return "\n".join([*_top(report), *_lists(report), *_attention(report), *_groups(report), *_input(report)]) + "\n"


def _md(text: str) -> str:
    """A name or reason inside Markdown: a ``|`` would split a table cell, a newline end a row."""
    return text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _top(report: Report) -> list[str]:
    head, age = report.headline, report.snapshot_age
    statuses = ", ".join(f"{count:,} {status}" for status, count in head.statuses.items()) or "none"
    lines = [
        f"# Restore {_md(str(report.restore_id))}: {report.outcome}",  # an invalid id's failure is reported too
        "",
        f"**{report.headline_text}**",
        "",
        *([f"Approval: {_md(report.approval)}.", ""] if report.approval else []),
        f"Snapshot {_md(str(report.snapshot_id or '-'))}" + (f" ({age.phrase})" if age else "") + ".",
        f"Partitions by status: {statuses}. Run: {report.timings.phrase()}.",
        "",
        "| | partitions |",
        "|---|---|",
        *(f"| {card.title} | {card.total:,} |" for card in report.cards if card.key != "lost"),
    ]
    if head.lost_records:
        lines.append(
            f"| records the groups will not read (lost before the backup, or never restored) | {head.lost_records:,} |"
        )
    return lines


def _lists(report: Report) -> list[str]:
    lines = []
    if ready := report.ready:
        lines += ["", f"## {ready.title} ({counted(len(ready.groups), 'group')})", ""]
        lines.append(_md(ready.first_names()) or "none")
    if report.waits:
        lines += ["", f"## Do not start yet ({counted(len(report.waits), 'group')})", ""]
        lines += [f"- {_md(w.group)}: {w.held_by.replace('_', ' ')}: {w.next}" for w in report.waits]
    return lines


def _attention(report: Report) -> list[str]:
    lines = []
    for kind in report.attention:
        lines += ["", f"## {kind.title} ({counted(len(kind.groups), 'group')})", "", kind.advice, ""]
        lines += [f"- {_md(flagged.group)}: {_md(flagged.reason)}" for flagged in kind.groups]
    return lines


def _groups(report: Report) -> list[str]:
    lines = [
        "",
        "## Groups",
        "",
        "| group | topic | partition | source offset | target offset | method | exact | verified | status | reason |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for shown in report.groups:
        group = _md(shown.group)
        lines += [
            f"| {group} | {_md(r.target_topic)} | {r.partition} | {r.source_offset} | "
            f"{'-' if r.target_offset is None else r.target_offset} | {r.method or '-'} | "
            f"{'yes' if r.exact else 'no'} | {verified_word(r.verified)} | {r.status} | {_md(r.reason or '')} |"
            for r in shown.rows
        ]
    return lines


def _input(report: Report) -> list[str]:
    return ["", "## Input", "", "| | |", "|---|---|", *(f"| {row.name} | {_md(row.value)} |" for row in report.inputs)]
