"""Inline SVG charts for report.html (pure): no script, no external file, so the report stays one
self-contained page that opens anywhere, also from an e-mail attachment or an S3 download.

A horizontal bar per category, its count written beside it, the colour saying whether it needs
attention: people read "3 partitions ahead, 2 pending" faster from bars than from a table.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

__all__ = ["COLOURS", "bar_chart"]

COLOURS = {"good": "#2e7d32", "fine": "#7cb342", "warn": "#ef6c00", "bad": "#c62828", "info": "#546e7a"}
_ROW, _LABEL, _BAR, _GAP = 22, 250, 320, 6


def bar_chart(chart_id: str, title: str, bars: Sequence[tuple[str, int, str]]) -> str:
    """``bars``: (label, count, colour key of ``COLOURS``); bars of zero are left out. The SVG has a
    ``<title>`` (what screen readers and hovering show) and a bar per category, scaled to the largest."""
    shown = [(label, count, colour) for label, count, colour in bars if count > 0]
    if not shown:
        return ""
    largest = max(count for _, count, _ in shown)
    height = len(shown) * _ROW + 30
    width = _LABEL + _BAR + 90
    parts = [
        f"<figure class='chart'><svg id='{escape(chart_id)}' xmlns='http://www.w3.org/2000/svg' "
        f"width='{width}' height='{height}' viewBox='0 0 {width} {height}' role='img'>",
        f"<title>{escape(title)}</title>",
        f"<text x='0' y='16' font-weight='bold' font-size='14'>{escape(title)}</text>",
    ]
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
    return "".join(parts)
