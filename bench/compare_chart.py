"""The comparison's chart (``bench/results/compare.svg``): per tool, the group-partitions that resume
exactly, early (records read twice) and late (records skipped), as stacked bars, with the records read
twice and skipped written beside them. Plain SVG, no plotting library."""

from __future__ import annotations

from html import escape
from typing import Any

__all__ = ["svg"]

COLOURS = {"exact": "#2e7d32", "early": "#f9a825", "late": "#c62828", "missing": "#9e9e9e"}
LABELS = {
    "exact": "exact",
    "early": "early (duplicates)",
    "late": "late (skipped)",
    "missing": "not committed (latest: skips to the end)",
}
"""Not committed: the group resumes by auto.offset.reset (``latest``, the default, skips to the end)."""


def svg(rows: list[tuple[str, dict[str, Any]]], width: int = 1000) -> str:
    bar_left, bar_width, row_h = 280, 360, 34
    height = 70 + row_h * len(rows)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="12">',
        '<text x="10" y="20" font-size="14" font-weight="bold">Where each tool resumes every group-partition</text>',
    ]
    for i, key in enumerate(COLOURS):
        lx = 10 + i * 190
        parts.append(f'<rect x="{lx}" y="32" width="12" height="12" fill="{COLOURS[key]}"/>')
        parts.append(f'<text x="{lx + 16}" y="42">{LABELS[key]}</text>')
    for i, (name, o) in enumerate(rows):
        y = 60 + i * row_h
        total = max(1, o["exact"] + o["early"] + o["late"] + o["missing"])
        parts.append(f'<text x="10" y="{y + 15}">{escape(name[:58])}</text>')
        x = float(bar_left)
        for key in COLOURS:
            w = bar_width * o[key] / total
            if w > 0:
                parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="20" fill="{COLOURS[key]}"/>')
            x += w
        detail = f"{o['duplicates']:,} read twice, {o['skipped']:,} skipped"
        if o["missing"]:
            detail += f", {o['missing']:,} not committed"
        parts.append(f'<text x="{bar_left + bar_width + 10}" y="{y + 15}">{detail}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
