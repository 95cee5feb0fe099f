"""The report renders: the HTML parses, its headline equals the plan's numbers, attention items say
what to do, nothing from the input is injected as markup."""

from __future__ import annotations

import html
import json
from html.parser import HTMLParser

from offset_restore.formats.plan import Outcome, PlanEntry, PlanSummary, Status
from offset_restore.workflow.report import ADVICE, render_report


def entry(
    group: str,
    partition: int,
    status: Status,
    exact: bool = True,
    dup: int | None = 0,
    reason: str | None = None,
    outcome: Outcome | None = None,
) -> PlanEntry:
    mapped = status in ("mapped", "committed", "skipped")
    return PlanEntry(
        group=group,
        topic="orders",
        partition=partition,
        target_topic="dr.orders",
        source_offset=100,
        target_offset=90 if mapped else None,
        method="header" if mapped else None,
        exact=exact,
        max_duplicates=dup if mapped else None,
        status=status,
        reason=reason,
        outcome=outcome,
    )


ENTRIES = [
    entry("billing", 0, "committed"),
    entry("billing", 1, "committed"),
    entry("search", 0, "committed", exact=False, dup=7),
    entry("audit", 0, "pending", reason="the restore has reached source offset 40"),
    entry("audit", 1, "committed"),
    entry("<script>alert(1)</script>", 0, "skipped", reason="still active on the target (Stable, 1 members)"),
]


class Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.ids: dict[str, str] = {}
        self._id: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self._id = dict(attrs).get("id") or self._id

    def handle_data(self, data: str) -> None:
        if self._id and self._id not in self.ids:
            self.ids[self._id] = data
        self._id = None


def test_report_headline_matches_the_entries_and_says_what_to_do() -> None:
    files = render_report({"restore_id": "r-1", "mode": "apply", "work": {"snapshot_id": "s-9"}}, ENTRIES, "applied")
    document = json.loads(files["report.json"])
    summary = PlanSummary.of(ENTRIES)
    assert document["headline"]["groups"] == 4 and document["headline"]["groups_restored"] == 2
    assert document["headline"]["exact_ratio"] == 0.5  # of all 6 partitions: the pending and the unwritten count
    assert document["headline"]["records_at_risk"] == summary.max_duplicates_total == 7
    assert document["attention"]["pending"] == {"groups": ["audit"], "what_to_do": ADVICE["pending"]}
    assert document["snapshot_id"] == "s-9"

    page = files["report.html"].decode()
    parsed = Collect()
    parsed.feed(page)
    assert parsed.tags.count("details") == 4 and "script" not in parsed.tags
    assert parsed.ids["groups-restored"] == "2 / 4"
    assert parsed.ids["records-at-risk"] == "7"
    assert html.escape(ADVICE["skipped"]) in page and "&lt;script&gt;" in page
    assert "search &mdash; 1 partition: 1 committed" in page and "billing &mdash; 2 partitions" in page

    markdown = files["report.md"].decode()
    assert "**2 of 4 groups restored (every partition committed)" in markdown and "## Pending (1 group)" in markdown
    assert "- audit: the restore has reached source offset 40" in markdown


def test_groups_whose_commit_got_no_answer_are_named_with_what_to_do() -> None:
    from offset_restore.apply.commit import NO_ANSWER

    entries = [entry("billing", 0, "committed"), entry("ledger", 0, "mapped", reason=NO_ANSWER, outcome="unanswered")]
    files = render_report({"restore_id": "r-2"}, entries, "failed")
    document = json.loads(files["report.json"])
    assert document["attention"]["unanswered"] == {"groups": ["ledger"], "what_to_do": ADVICE["unanswered"]}
    assert "## Unanswered (1 group)" in files["report.md"].decode()
    assert f"- ledger: {NO_ANSWER}" in files["report.md"].decode()
    assert "Unanswered: 1 group</h2>" in files["report.html"].decode()


def test_report_json_holds_every_entry_as_the_plan_does_and_streams_in_one_pass() -> None:
    once = iter(ENTRIES)  # a one-pass stream, as the Report function reads the mappings
    document = json.loads(render_report({"restore_id": "r-2"}, once, "applied")["report.json"])
    assert document["entries"] == [e.model_dump(mode="json") for e in ENTRIES]
    assert document["summary"] == PlanSummary.of(ENTRIES).model_dump()
    empty = json.loads(render_report({"restore_id": "r-3"}, [], "planned")["report.json"])
    assert empty["entries"] == [] and empty["headline"]["groups"] == 0


def test_summary_counts_mapped_entries_once_whatever_their_status() -> None:
    mapped = [entry("g", p, "mapped") for p in range(3)]
    summary = PlanSummary.of([*mapped, entry("h", 0, "pending"), entry("h", 1, "unmapped")])
    assert (summary.entries, summary.mapped, summary.exact, summary.pending, summary.unmapped) == (5, 3, 3, 1, 1)
