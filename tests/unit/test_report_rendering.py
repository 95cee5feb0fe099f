"""The report's renderings read its model and nothing else, and no name in them becomes markup: a
group id, a topic name, a reason or an input value with ``<``, ``&``, quotes and line breaks shows as
the text it is on the page (escaped once, never twice) and keeps the Markdown's tables whole."""

from __future__ import annotations

import dataclasses
import json
import tomllib
from datetime import timedelta
from fnmatch import fnmatch
from html.parser import HTMLParser
from pathlib import Path

from offset_restore.workflow.report import ReportBuilder
from offset_restore.workflow.report_html import TEMPLATES, html_page
from offset_restore.workflow.report_json import json_document
from offset_restore.workflow.report_markdown import markdown
from offset_restore.workflow.report_timeline import Phase

from tests.unit.test_report_glance import ROWS, row

ROOT = Path(__file__).resolve().parents[2]
NASTY = "a<b>&amp;\"c' </td><script>x</script>\nd|e"
"""A name as anyone who may create a consumer group or a topic could choose it."""
TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "span", "div", "b", "section", "ul", "li"}
TAGS |= {"figure", "svg", "text", "rect", "details", "summary", "table", "tr", "th", "td"}
"""Every element the page has: any other would be markup a name brought in."""


class Page(HTMLParser):
    """The elements, their attributes and the text inside each element, as a browser reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attributes: list[str] = []
        self.texts: dict[str, list[str]] = {}
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes += [value or "" for _, value in attrs]
        if tag not in ("meta",):
            self._open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self._open:
            del self._open[len(self._open) - 1 - self._open[::-1].index(tag) :]

    def handle_data(self, data: str) -> None:
        if self._open:
            self.texts.setdefault(self._open[-1], []).append(data)


def nasty_report() -> ReportBuilder:
    run = {"restore_id": NASTY, "mode": "apply", "topics": [NASTY], "topic_map": {NASTY: NASTY}}
    builder = ReportBuilder(run, "applied", [Phase("waiting for groups", 0.0, 2.0, [NASTY])])
    for entry in [
        row(NASTY, 0, "committed", target_topic=NASTY),
        row(NASTY, 1, "pending", target_topic=NASTY, reason=NASTY),
        row("ok", 0, "committed"),
    ]:
        builder.add(entry)
    return builder


def test_names_on_the_page_are_text_escaped_once() -> None:
    documents = dict(nasty_report().documents())
    page = documents["report.html"].decode()
    parsed = Page()
    parsed.feed(page)
    assert parsed.tags <= TAGS, parsed.tags - TAGS  # no <script>, no </td> closing a cell early
    assert not [value for value in parsed.attributes if "<" in value or "c'" in value]
    assert "&amp;amp;" in page and "&amp;amp;amp;" not in page  # the name's own "&amp;" escaped, once
    assert "<script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    for where in ("title", "h1", "summary", "b", "li", "td", "text"):  # the names, read back whole
        assert any(NASTY in text for text in parsed.texts[where]), where
    assert parsed.texts["td"].count(NASTY) >= 3  # the topic of both partitions and the pending reason


def test_names_in_the_markdown_keep_its_tables_and_lists_whole() -> None:
    lines = dict(nasty_report().documents())["report.md"].decode().splitlines()
    flat = NASTY.replace("|", "\\|").replace("\n", " ")
    rows = [line for line in lines if line.startswith(f"| {flat} |")]
    assert len(rows) == 2 and all(line.replace("\\|", "").count("|") == 11 for line in rows), rows
    assert f"- {flat}: {flat}" in lines  # the pending group and its reason, on one item
    assert f"| topics | {json.dumps([NASTY]).replace('|', chr(92) + '|')} |" in lines  # JSON says the line break
    assert not [line for line in lines if line.startswith("d|e") or line.startswith("d\\|e")]


def test_every_rendering_reads_only_the_model() -> None:
    builder = ReportBuilder({"restore_id": "r"}, "applied")
    for entry in ROWS:
        builder.add(entry)
    report = dataclasses.replace(builder.build(), headline_text="said by the model", outcome="told")
    assert "said by the model" in markdown(report) and "# Restore r: told" in markdown(report)
    assert "<p class='lead' id='headline'>said by the model</p>" in html_page(report).decode()
    document = json.loads(json_document(report, builder._entries))
    assert (document["headline_text"], document["outcome"]) == ("said by the model", "told")
    assert len(document["entries"]) == len(ROWS)


def test_a_chart_label_is_escaped_where_the_chart_is_drawn() -> None:
    builder = ReportBuilder({"restore_id": "r"}, "applied", [Phase("<b>phase</b>", 0.0, 1.0, ["<i>g</i>"])])
    builder.add(row("g", 0, "committed"))
    page = dict(builder.documents())["report.html"].decode()
    timeline = page[page.index("<svg id='chart-timeline'") : page.index("</svg>", page.index("chart-timeline"))]
    assert "&lt;b&gt;phase&lt;/b&gt;" in timeline and "&lt;i&gt;g&lt;/i&gt;" in timeline and "<b>" not in timeline


def test_the_snapshot_age_and_timings_read_as_before() -> None:
    work = {"snapshot_id": "s-1", "snapshot_created_at": "2027-01-15T07:00:00+00:00"}
    run = {"restore_id": "r", "started_at": 1_800_000_000.0, "work": work}
    report = ReportBuilder(run, "planned").build()
    assert report.snapshot_age is not None and report.snapshot_age.seconds == timedelta(hours=1).total_seconds()
    assert report.timings.started_at is not None and report.timings.phrase().startswith(
        "started 2027-01-15T08:00:00+00:00, finished "
    )


def test_the_wheel_and_the_asset_carry_every_template() -> None:
    """pyproject.toml's package-data (the wheel, ``pip install .``) and the asset's data patterns
    (``infra.bundling.PACKAGE_DATA``) both match each file of the templates' folder."""
    from infra.bundling import PACKAGE_DATA

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    package = ROOT / "functions" / "offset_restore"
    files = [path for path in TEMPLATES.iterdir() if path.is_file()]
    assert files and (TEMPLATES / "report.html.j2") in files
    for path in files:
        assert any(fnmatch(str(path.relative_to(package)), pattern) for pattern in declared["offset_restore"]), path
        assert any(fnmatch(str(path.relative_to(TEMPLATES.parent)), pattern) for pattern in PACKAGE_DATA), path
