"""The table of a group's partitions in report.html (pure): the one part of the page that grows with
the mappings — a row per mapping, 240,000 at the largest scale — so it is drawn here, by one
f-string per row, and not by the template.

Printed by the template, each of those 2.6 million cells would go through autoescape on its own
(markupsafe's ``escape`` and ``Markup`` are Python calls: about 1.5 µs a value), 4 s of the Report
function's CPU at 240,000 mappings against half a second here — time the run's minute at 120,000
mappings does not have. Like the charts, the table comes back as ``Markup`` only after every text
in it (topic, strategy, status, reason) went through ``html.escape``; the numbers are ints.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from markupsafe import Markup

from offset_restore.workflow.report_model import PartitionRow, verified_word

__all__ = ["COLUMNS", "group_table"]

COLUMNS = (
    "topic", "partition", "source offset", "target offset", "method", "exact", "max duplicates", "verified",
    "status", "reason",
)  # fmt: skip
_HEAD = "<table><tr>" + "".join(f"<th>{column}</th>" for column in COLUMNS) + "</tr>"


def group_table(rows: Sequence[PartitionRow]) -> Markup:
    """A row per partition, in the order given (the builder's: by topic and partition)."""
    parts = [_HEAD]
    for x in rows:
        status = escape(x.status)
        parts.append(
            f"<tr class='{status}'><td>{escape(x.target_topic)}</td><td>{x.partition:d}</td>"
            f"<td>{x.source_offset:d}</td><td>{'-' if x.target_offset is None else f'{x.target_offset:d}'}</td>"
            f"<td>{escape(x.method or '-')}</td><td>{'yes' if x.exact else 'no'}</td>"
            f"<td>{'-' if x.max_duplicates is None else f'{x.max_duplicates:d}'}</td>"
            f"<td>{verified_word(x.verified)}</td><td>{status}</td><td>{escape(x.reason or '')}</td></tr>"
        )
    parts.append("</table>")
    return Markup("".join(parts))  # every text in parts is escaped, every number an int
