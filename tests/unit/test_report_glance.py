"""The report is true at a glance: its headline and cards are computed over every partition, from a
run with every kind of row — committed exact and bounded, ahead, active, pending, unmapped, lost
before the backup, not verified — and the lists say which groups may start and what the others need."""

from __future__ import annotations

import json

import pytest
from offset_restore.apply.commit import NOT_WRITTEN
from offset_restore.formats.plan import PlanEntry, Status
from offset_restore.workflow.report import render_report


def row(group: str, partition: int, status: Status, **fields: object) -> PlanEntry:
    placed = status not in ("pending", "unmapped")
    values: dict[str, object] = {
        "group": group,
        "topic": "orders",
        "partition": partition,
        "target_topic": "dr.orders",
        "source_offset": 100,
        "target_offset": 90 if placed else None,
        "method": "header" if placed else None,
        "exact": placed,
        "max_duplicates": 0 if placed else None,
        "status": status,
        "verified": True if status == "committed" else None,
    }
    return PlanEntry.model_validate({**values, **fields})


ROWS = [
    row("billing", 0, "committed"),
    row("billing", 1, "committed", anchor_offset=90, anchor_source_offset=130),  # 30 records lost before it
    row("search", 0, "committed", exact=False, max_duplicates=7),
    row("ledger", 0, "committed"),
    row("ledger", 1, "unmapped", reason="topic ledger does not exist on the target"),  # not restored
    row("audit", 0, "pending", reason="the restore has reached source offset 40"),
    row("late", 0, "skipped", outcome="ahead", reason="ahead: the group is at 150 on the target, past the mapped 90"),
    row("busy", 0, "mapped", outcome="active", reason=NOT_WRITTEN + "still active on the target (Stable, 1 members)"),
    row("odd", 0, "committed", verified=False),
]


def test_headline_and_cards_count_every_partition() -> None:
    document = json.loads(render_report({"restore_id": "r"}, ROWS, "applied")["report.json"])
    head = document["headline"]
    assert (head["groups"], head["groups_restored"], head["partitions"], head["exact"]) == (7, 2, 9, 3)
    assert head["exact_ratio"] == round(3 / 9, 4)  # of every partition, not of the mapped ones
    assert head["lost_records"] == 30 and head["records_at_risk"] == 7
    cards = head["cards"]
    assert (cards["exact"], cards["bounded"], cards["ahead"], cards["active"]) == (3, 1, 1, 1)
    assert (cards["pending"], cards["unmapped"], cards["unverified"], cards["lost"]) == (1, 1, 1, 30)
    assert document["safe_to_start"] == ["billing", "search"]
    waits = {g: w["held_by"] for g, w in document["do_not_start_yet"].items()}
    assert waits == {
        "audit": "pending",
        "busy": "active",
        "late": "ahead",
        "ledger": "unmapped",
        "odd": "unverified",
    }
    assert "allow-rewind" in document["do_not_start_yet"]["late"]["next"]
    assert document["outcome"] == "applied, needs attention"


def test_a_plan_counts_mapped_partitions_as_done() -> None:
    rows = [row("a", 0, "mapped"), row("b", 0, "mapped", exact=False, max_duplicates=2), row("c", 0, "pending")]
    head = json.loads(render_report({"restore_id": "p"}, rows, "planned")["report.json"])["headline"]
    assert (head["groups_restored"], head["exact"], head["cards"]["bounded"], head["cards"]["pending"]) == (2, 1, 1, 1)


def test_markdown_is_clean_words_not_python() -> None:
    run = {"restore_id": "r", "mode": "apply", "wait": {"timeout_seconds": 60}, "summary": {"retries_left": 3}}
    markdown = render_report(run, ROWS, "applied")["report.md"].decode()
    assert "{'" not in markdown and "None" not in markdown and "1 groups" not in markdown
    assert "**2 of 7 groups restored (every partition committed); 3 of 9 partitions exact" in markdown
    assert "lost before the backup or never restored (1 partitions)" not in markdown  # counted, said properly
    assert "30 records the groups will not read, lost before the backup or never restored (1 partition)" in markdown
    assert "## Safe to start consumers (2 groups)" in markdown and "billing, search" in markdown
    assert "- late: ahead: its consumers started on the target" in markdown
    assert '| wait | {"timeout_seconds": 60} |' in markdown and "retries_left" not in markdown


def test_a_plan_lists_groups_ready_to_apply_never_safe_to_start() -> None:
    """Nothing is written by a plan: consumers started now would begin from their reset policy."""
    files = render_report({"restore_id": "p"}, [row("a", 0, "mapped"), row("c", 0, "pending")], "planned")
    document = json.loads(files["report.json"])
    assert document["safe_to_start"] == [] and document["ready_to_apply"] == ["a"]
    assert "Safe to start" not in files["report.html"].decode() and "Safe to start" not in files["report.md"].decode()
    assert "Ready to apply (nothing is written yet): 1 group" in files["report.html"].decode()


def test_unanswered_rolled_back_and_unproven_ends_hold_their_groups() -> None:
    from offset_restore.apply.commit import NO_ANSWER

    rows = [
        row("ok", 0, "committed"),
        row("silent", 0, "mapped", outcome="unanswered", reason=NO_ANSWER),
        row(
            "undone", 0, "mapped", outcome="rolled_back", reason="rolled back: the previous target offset was put back"
        ),
        row("halfway", 0, "mapped", outcome="rollback_started", reason="rollback started 2026-12-01T03:00:00+00:00"),
        row("tail", 0, "committed", method="end", exact=False, max_duplicates=0),
    ]
    document = json.loads(render_report({"restore_id": "r"}, rows, "applied")["report.json"])
    waits = {g: w["held_by"] for g, w in document["do_not_start_yet"].items()}
    assert waits == {"silent": "unanswered", "undone": "rolled_back", "halfway": "rolled_back", "tail": "end_unsure"}
    assert document["safe_to_start"] == ["ok"] and "apply again" in document["do_not_start_yet"]["silent"]["next"]
    rolled = json.loads(render_report({"restore_id": "r"}, rows, "rolled back")["report.json"])
    assert rolled["safe_to_start"] == [] and rolled["ready_to_apply"] == []


def test_a_failed_run_never_calls_a_group_safe_to_start() -> None:
    """A run that failed — another writer took the target's fence, a save failed, a batch stopped half way —
    lists no group as safe, and its notification says the groups it restored are not yet safe to start."""
    from offset_restore.workflow.report import ReportBuilder

    rows = [row("ok", 0, "committed"), row("left", 0, "mapped")]
    documents = render_report({"restore_id": "r"}, rows, "failed")
    document = json.loads(documents["report.json"])
    assert document["safe_to_start"] == [] and document["ready_to_apply"] == []
    assert b"Safe to start" not in documents["report.md"]
    builder = ReportBuilder({"restore_id": "r"}, "failed", ())
    for entry in rows:
        builder.add(entry)
    dict(builder.documents())
    said = builder.glance()  # the notification's first line
    assert said.startswith("1 of 2 groups restored, not yet safe to start: the run failed"), said


def test_the_cards_count_outcomes_whatever_the_reasons_say() -> None:
    """Rewording a message changes no card: the report reads ``outcome``, never the reason's words."""
    reworded = [
        row(e.group, e.partition, e.status, **{**e.model_dump(exclude={"group", "partition", "status"}), "reason": "x"})
        for e in ROWS
    ]
    same = json.loads(render_report({"restore_id": "r"}, reworded, "applied")["report.json"])["headline"]["cards"]
    assert same == json.loads(render_report({"restore_id": "r"}, ROWS, "applied")["report.json"])["headline"]["cards"]
    # And words that once meant an outcome mean nothing when the entry says it had none.
    told = [row("quiet", 0, "mapped", outcome=None, reason="rolled back: the previous target offset was put back")]
    waits = json.loads(render_report({"restore_id": "r"}, told, "applied")["report.json"])["do_not_start_yet"]
    assert waits["quiet"]["held_by"] == "not_written"


def test_a_plan_written_before_outcomes_reports_as_it_did() -> None:
    """An older plan file (tests/fixtures, written by the code before the field) keeps the cards and
    holds the code of its day gave it (checked against that code), but two: a group applied again
    after a rollback, whose entry kept the rollback's words, was counted rolled back; it is committed. And
    a mapped entry whose previous offset apply recorded, with no end of its commit on record, was "not
    written"; it may be written (issue 36: a commit whose save failed), so it is held as unanswered."""
    from pathlib import Path

    from offset_restore.formats.plan import Plan

    fixture = Path(__file__).parent.parent / "fixtures" / "plan-before-outcomes.json"
    entries = Plan.model_validate_json(fixture.read_text()).entries
    document = json.loads(render_report({"restore_id": "r"}, entries, "applied")["report.json"])
    cards = document["headline"]["cards"]
    counted = {card: cards[card] for card in ("unanswered", "active", "ahead", "rolled_back", "failed", "not_written")}
    assert counted == {"unanswered": 2, "active": 3, "ahead": 1, "rolled_back": 2, "failed": 1, "not_written": 2}
    held = {group: wait["held_by"] for group, wait in document["do_not_start_yet"].items()}
    assert held == {
        "ahead": "ahead", "changed": "not_written", "live": "active", "mover": "not_written", "planned": "unanswered",
        "racing": "active", "refused_all": "active", "silent": "unanswered", "split": "failed",
        "undoing": "rolled_back", "undone": "rolled_back", "waiting": "pending",
    }  # fmt: skip
    assert sorted(document["safe_to_start"]) == ["reapplied", "settled"]


def test_a_resume_at_the_copy_of_its_own_next_record_loses_nothing() -> None:
    """Source offsets are not dense (transaction markers, compaction): a group that resumes at the copy
    of the record it would have read next lost nothing, whatever offsets lie between."""
    gap = row("txn", 0, "committed", anchor_offset=90, anchor_source_offset=101, expected_fingerprint="f")
    head = json.loads(render_report({"restore_id": "r"}, [gap], "applied")["report.json"])["headline"]
    assert head["lost_records"] == 0 and head["cards"]["lost"] == 0


def test_names_with_pipes_and_newlines_keep_the_markdown_tables_whole() -> None:
    markdown = render_report({"restore_id": "r"}, [row("a|b\nc", 0, "committed")], "applied")["report.md"].decode()
    assert "| a\\|b c | dr.orders | 0 |" in markdown


def test_the_headline_says_what_it_is_exact_as_of_and_what_live_groups_may_read_again() -> None:
    """ "Exact" is as of the snapshot: the groups live then read again what they processed since, and
    the headline, the page's cards and the notification's sentence keep the two apart."""
    rows = [
        row("live", 0, "committed", live_at_snapshot=True, exposure=85),
        row("live", 1, "committed", live_at_snapshot=True, exposure=15),
        row("new", 0, "committed", live_at_snapshot=True, exposure=None),
        row("idle", 0, "committed", live_at_snapshot=False, exposure=0),
    ]
    files = render_report({"restore_id": "r"}, rows, "applied")
    head = json.loads(files["report.json"])["headline"]
    assert (head["records_at_risk"], head["groups_live"], head["exposure_records"], head["exposure_unknown"]) == (
        0, 2, 100, 1,
    )  # fmt: skip
    said = "after them, 2 live groups may read again about 100 records they processed since, 1 partitions"
    assert "exact as of the snapshot's positions; " + said in files["report.md"].decode()
    page = files["report.html"].decode()
    assert "<b>100</b>records live groups may read again, processed after the snapshot (estimated)" in page
    assert "<b>0</b>records at most read twice, as of the snapshot" in page
    quiet = render_report({"restore_id": "r"}, rows[3:], "applied")["report.md"].decode()
    assert "exact as of the snapshot's positions; no group was live then" in quiet


def test_a_commit_whose_save_failed_is_said_to_be_possibly_written_not_unrestored() -> None:
    """Issue 36: a correct commit whose save failed left its entries mapped with their previous offsets
    recorded, and the failed run's report said "0 of 2 groups restored" of a target that held every
    offset. Now those groups are held as a commit whose end is not on record, counted and named."""
    rows = [
        row("pay", 0, "mapped", previous_target_offset=3, previous_recorded=True, verified=None),
        row("ship", 0, "mapped", previous_target_offset=None, previous_recorded=True, verified=None),
        row("idle", 0, "mapped", verified=None),  # never reached: no previous offset saved
    ]
    report = json.loads(render_report({"restore_id": "r"}, rows, "failed")["report.json"])
    head = report["headline"]
    assert (head["groups_restored"], head["groups_in_doubt"], head["cards"]["unanswered"]) == (0, 2, 2)
    said = report["headline_text"]
    assert "0 of 3 groups restored (every partition committed); 2 more may be: their commit was sent" in said
    assert head["cards"]["not_written"] == 1  # the group never reached is not written, and said so
    assert report["attention"]["unanswered"]["groups"] == ["pay", "ship"]


def test_a_rollback_names_the_groups_it_left_as_they_were() -> None:
    """Issue 36: a rollback that left two moved-on groups alone said "2 of 2 still at the run's offsets",
    naming neither (their entries still say committed). Now its step's output decides: how many it rolled
    back, which it left and why, and how many are still at the run's offsets."""
    moved = "moved on since the apply: at 120 on the target, past the 90 the apply wrote"
    rows = [
        row("a", 0, "committed", previous_target_offset=5),
        row("b", 0, "committed", previous_target_offset=5),
        row("c", 0, "mapped", previous_target_offset=5, outcome="rolled_back", reason="rolled back", verified=None),
        row("d", 0, "committed"),
    ]
    run = {"restore_id": "r", "rollback": {"skipped": {"a": moved, "b": moved}, "counts": {"skipped": 2}}}
    report = json.loads(render_report(run, rows, "rolled back")["report.json"])
    text = report["headline_text"]
    assert text.startswith(f"1 of 4 groups rolled back to their previous offsets; 2 left as they were (a: {moved}")
    assert "; 1 still at the run's offsets;" in text and report["outcome"].startswith("rolled back in part")
    many = {**run, "rollback": {"skipped": {"a": moved}, "counts": {"skipped": 40}}}
    said = json.loads(render_report(many, rows, "rolled back")["report.json"])["headline_text"]
    assert "40 left as they were (a: moved on" in said and "; and 39 more)" in said


@pytest.mark.parametrize("left", ["pending", "unmapped"])
def test_an_apply_that_left_a_group_unwritten_is_not_a_bare_applied(left: Status) -> None:
    """ "applied" means every selected group was written: one held by a pending or unmapped entry makes the
    outcome "applied, needs attention" (the SNS subject; ``start`` and ``status`` exit 3), naming it."""
    from offset_restore.workflow.executions import run_ending

    rows = [row("written", 0, "committed"), row("held", 0, left, reason=f"{left}: why")]
    document = json.loads(render_report({"restore_id": "r"}, rows, "applied")["report.json"])
    assert document["outcome"] == "applied, needs attention", document["outcome"]
    assert document["attention"][left]["groups"] == ["held"]
    described = {"status": "SUCCEEDED", "output": json.dumps({"report": {"outcome": document["outcome"]}})}
    assert run_ending(described)[0] == 3
    clean = json.loads(render_report({"restore_id": "r"}, rows[:1], "applied")["report.json"])
    assert clean["outcome"] == "applied"


def test_a_re_partitioned_topic_counts_what_it_lacks_per_source_partition_not_from_its_anchors() -> None:
    """Entries per target partition of a re-partitioned topic: each anchor carries the offset of whichever
    source partition's record lies at its resume point, so anchor minus position counts records that lie on
    another target partition. The report takes the group's own count (``lost_before``): 3, by hand."""
    first = row("orders-app", 0, "committed", target_partition=0, anchor_offset=90, anchor_source_offset=140)
    other = row("orders-app", 0, "committed", target_partition=1, anchor_offset=90, anchor_source_offset=110)
    first.lost_before = 3
    document = json.loads(render_report({"restore_id": "r"}, [first, other], "applied")["report.json"])
    assert document["headline"]["lost_records"] == 3


def test_records_a_share_group_gets_again_are_counted_in_every_report() -> None:
    """A share group resumes at its start offset: the records after it its consumers had acknowledged on the
    source are delivered again. The headline counts them beside the duplicates bound, in each format."""
    rows = [
        row("queue", 0, "committed", group_kind="share", redelivered=50),
        row("queue", 1, "committed", group_kind="share", redelivered=0),
        row("billing", 0, "committed"),
    ]
    files = render_report({"restore_id": "r"}, rows, "applied")
    document = json.loads(files["report.json"])
    assert document["headline"]["redelivered"] == 50
    said = "at most 0 records read twice; 50 records share groups had acknowledged delivered again"
    assert said in document["headline_text"]
    assert said in files["report.md"].decode()
    assert said in files["report.html"].decode()
    without = json.loads(render_report({"restore_id": "r"}, rows[2:], "applied")["report.json"])
    assert "delivered again" not in without["headline_text"] and without["headline"]["redelivered"] == 0
