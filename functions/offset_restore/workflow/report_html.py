"""report.html from the report's model, through a Jinja2 template (``templates/report.html.j2``): the
page's markup reads as markup, and every value it prints is escaped without anyone remembering to —
group ids, topic names, reasons and the run's input are text anyone who can create a consumer group
or a topic chooses.

The environment autoescapes every template (they are all HTML), refuses a name the model does not
have (``StrictUndefined``: a typo fails the tests, not a customer's page) and escapes as
``html.escape`` spells it (``&#x27;``, ``&quot;``: what report.html always had, so a page diffed with
an earlier version's shows only what changed). The charts and the groups' tables come in as
``Markup``, escaped where they are drawn (``report_charts``, ``report_tables``), and are printed as
they are."""

from __future__ import annotations

import html
from itertools import islice
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from offset_restore.workflow.report_charts import bar_chart, timeline_chart
from offset_restore.workflow.report_model import Report, counted
from offset_restore.workflow.report_tables import group_table

__all__ = ["TEMPLATES", "html_page"]

TEMPLATES = Path(__file__).parent / "templates"
"""The templates, beside this module (the Lambda asset and the wheel carry them: package data)."""
_CHUNK = 20_000
"""Pieces of the page joined at a time: the page of 240,000 mappings is millions of pieces, and a
list of all of them would cost more than the page."""


def _escaped(value: object) -> object:
    """Every value printed, escaped by ``html.escape`` (quotes too); what autoescape then sees is
    Markup and passes. Markup (the charts) and numbers are left to autoescape, which prints them."""
    return Markup(html.escape(value)) if type(value) is str else value


def _tally(counts: tuple[tuple[str, int], ...]) -> str:
    """``2 committed, 1 pending``"""
    return ", ".join(f"{n} {status}" for status, n in counts)


_ENVIRONMENT = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=True,
    undefined=StrictUndefined,
    finalize=_escaped,
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENVIRONMENT.filters.update(thousands="{:,}".format, counted=counted, tally=_tally)
_ENVIRONMENT.globals.update(bar_chart=bar_chart, timeline_chart=timeline_chart, group_table=group_table)


def html_page(report: Report) -> bytes:
    """The page, encoded piece by piece as the template yields it."""
    pieces = _ENVIRONMENT.get_template("report.html.j2").generate(r=report)
    encoded = []
    while chunk := list(islice(pieces, _CHUNK)):
        encoded.append("".join(chunk).encode())
    return b"".join(encoded)
