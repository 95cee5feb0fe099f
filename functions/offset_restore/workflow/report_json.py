"""report.json from the report's model (pure): what other code reads of a run — the CLI's ``report``
and ``demo``, the tests, an operator's ``jq`` — so its keys and their order stay as they are, and
every plan entry follows as the plan writes it.

The entries are the builder's byte buffer, spliced in, not parsed back: at 240,000 mappings a list
of dicts would cost the Report function its memory limit."""

from __future__ import annotations

import io
import json
from typing import Any

from offset_restore.workflow.report_model import Report, Timings

__all__ = ["json_document"]


def json_document(report: Report, entries: io.BytesIO) -> bytes:
    """``entries``: every entry's JSON, each after ``,\\n    `` (the first after ``\\n    ``)."""
    text = json.dumps(_document(report), indent=2, default=str).encode()
    with entries.getbuffer() as written:
        tail = b"\n  ]\n}" if written else b"]\n}"
        return b"".join([text[:-2], b',\n  "entries": [', written, tail])


def _document(report: Report) -> dict[str, Any]:
    ready, age = report.ready, report.snapshot_age
    return {
        "restore_id": report.restore_id,
        "outcome": report.outcome,
        "headline_text": report.headline_text,
        "created_at": report.created_at.isoformat(),
        "headline": report.headline._asdict(),
        "summary": report.summary.model_dump(),
        "statuses": report.headline.statuses,
        "attention": {
            kind.status: {"groups": [flagged.group for flagged in kind.groups], "what_to_do": kind.advice}
            for kind in report.attention
        },
        "safe_to_start": ready.groups if ready and ready.kind == "safe_to_start" else [],
        "ready_to_apply": ready.groups if ready and ready.kind == "ready_to_apply" else [],
        "do_not_start_yet": {w.group: {"held_by": w.held_by, "next": w.next} for w in report.waits},
        "snapshot_id": report.snapshot_id,
        "snapshot_created_at": age.positions_at.isoformat() if age else None,
        "snapshot_age_seconds": age.seconds if age else None,
        "snapshot_age": age.phrase if age else None,
        "timings": _timings(report.timings),
        "timeline": [
            {
                "phase": p.name,
                "start_s": p.start_s,
                "seconds": p.seconds,
                "waited_for": p.waited_for,
                "static_removed": p.static_removed,
            }
            for p in report.timeline
        ],
        "approval": report.approval,
        "input": report.input,
    }


def _timings(timings: Timings) -> dict[str, str]:
    """As report.json always had them: ISO times and the seconds as a string with one decimal."""
    said = {"finished_at": timings.finished_at.isoformat()}
    if timings.started_at is not None:
        said["started_at"] = timings.started_at.isoformat()
    if timings.seconds is not None:
        said["seconds"] = f"{timings.seconds:.1f}"
    return said
