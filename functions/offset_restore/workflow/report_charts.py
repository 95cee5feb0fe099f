"""Inline SVG charts for report.html (pure): no script, no external file, so the report stays one
self-contained page that opens anywhere, also from an e-mail attachment or an S3 download.

A horizontal bar per category, its count written beside it, the colour saying whether it needs
attention: people read "3 partitions ahead, 2 pending" faster from bars than from a table.

Each chart is drawn from the report's numbers (``report_model.Charts``, the run's phases) and comes
back as ``Markup`` — marked safe only here, after every label in it (card titles, strategies, phases,
the groups a wait waited for) went through ``html.escape`` — so the page's template prints it as it
is and escapes everything else.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

from markupsafe import Markup

if TYPE_CHECKING:
    from offset_restore.workflow.report_timeline import Phase

__all__ = ["COLOURS", "bar_chart", "timeline_chart"]

COLOURS = {"good": "#2e7d32", "fine": "#7cb342", "warn": "#ef6c00", "bad": "#c62828", "info": "#546e7a"}
_ROW, _LABEL, _BAR, _GAP = 22, 250, 320, 6


def bar_chart(chart_id: str, title: str, bars: Sequence[tuple[str, int, str]]) -> Markup:
    """``bars``: (label, count, colour key of ``COLOURS``), as ``report_model.Bar``; bars of zero are
    left out. The SVG has a ``<title>`` (what screen readers and hovering show) and a bar per category,
    scaled to the largest."""
    shown = [(label, count, colour) for label, count, colour in bars if count > 0]
    if not shown:
        return Markup()
    largest = max(count for _, count, _ in shown)
    parts = _opened(chart_id, title, title, rows=len(shown), right=90)
    for number, (label, count, colour) in enumerate(shown):
        y = 26 + number * _ROW
        length = max(2, round(_BAR * count / largest))
        parts += [
            f"<text x='{_LABEL - 8}' y='{y + 14}' text-anchor='end' font-size='12'>{escape(label)}</text>",
            f"<rect class='bar' x='{_LABEL}' y='{y}' width='{length}' height='{_ROW - _GAP}' "
            f"fill='{COLOURS[colour]}'><title>{escape(label)}: {count:,}</title></rect>",
            f"<text x='{_LABEL + length + 6}' y='{y + 14}' font-size='12'>{count:,}</text>",
        ]
    parts.append("</svg></figure>")
    return Markup("".join(parts))  # every label in parts is escaped


def timeline_chart(chart_id: str, title: str, phases: Sequence[Phase]) -> Markup:
    """A row per phase of the run, placed at its start and as long as it lasted (waits in the
    attention colour), its duration and whom it waited for beside it."""
    if not phases:
        return Markup()
    total = max(p.start_s + p.seconds for p in phases) or 1.0
    parts = _opened(chart_id, title, f"{title} ({total:.1f} s)", rows=len(phases), right=330)
    for number, phase in enumerate(phases):
        y = 26 + number * _ROW
        x = _LABEL + round(_BAR * phase.start_s / total)
        length = max(2, round(_BAR * phase.seconds / total))
        colour = COLOURS["warn" if phase.name.startswith("waiting") else "info"]
        parts += [
            f"<text x='{_LABEL - 8}' y='{y + 14}' text-anchor='end' font-size='12'>{escape(phase.name)}</text>",
            f"<rect class='phase' x='{x}' y='{y}' width='{length}' height='{_ROW - _GAP}' fill='{colour}'>"
            f"<title>{escape(phase.label())}</title></rect>",
            f"<text x='{x + length + 6}' y='{y + 14}' font-size='12'>{escape(phase.label().removeprefix(phase.name))}"
            "</text>",
        ]
    parts.append("</svg></figure>")
    return Markup("".join(parts))  # every label in parts is escaped


def _opened(chart_id: str, title: str, heading: str, *, rows: int, right: int) -> list[str]:
    """A chart's start: the figure, an SVG sized for ``rows`` rows of labels, bars and ``right`` pixels
    of text after them, its ``<title>`` and the heading drawn above the rows."""
    height, width = rows * _ROW + 30, _LABEL + _BAR + right
    return [
        f"<figure class='chart'><svg id='{escape(chart_id)}' xmlns='http://www.w3.org/2000/svg' "
        f"width='{width}' height='{height}' viewBox='0 0 {width} {height}' role='img'>",
        f"<title>{escape(title)}</title>",
        f"<text x='0' y='16' font-weight='bold' font-size='14'>{escape(heading)}</text>",
    ]
