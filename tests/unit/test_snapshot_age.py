"""How old a run's snapshot was: the humanized age, and that every report, the plan summary and the
SNS text's source (the report builder) say it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from offset_restore.cli.plan import plan_summary
from offset_restore.formats.plan import PlanEntry, PlanSummary
from offset_restore.snapshot.health import age_phrase, age_seconds, humanize_age
from offset_restore.translate.run import PlanResult
from offset_restore.workflow.report import ReportBuilder, render_report, snapshot_age

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s"),
        (59.9, "59 s"),
        (60, "1 min"),
        (14 * 60 + 30, "14 min"),
        (3600, "1 h"),
        (3 * 3600 + 5 * 60, "3 h 5 min"),
        (86400, "1 d"),
        (2 * 86400 + 4 * 3600 + 59, "2 d 4 h"),
    ],
)
def test_humanized_age(seconds: float, text: str) -> None:
    assert humanize_age(seconds) == text


def test_age_phrase_and_a_clock_slightly_ahead() -> None:
    assert age_phrase(T0, T0 + timedelta(minutes=14, seconds=20)) == "offsets as of 14 min before this run"
    assert age_seconds(T0 + timedelta(seconds=3), T0) == 0  # a snapshot clock ahead of the run's


def run_record(age: timedelta) -> dict[str, object]:
    return {
        "restore_id": "r-1",
        "mode": "plan",
        "started_at": (T0 + age).timestamp(),
        "work": {"snapshot_id": "s-9", "snapshot_created_at": T0.isoformat()},
    }


ENTRY = PlanEntry(
    group="billing",
    topic="orders",
    partition=0,
    target_topic="orders",
    source_offset=5,
    target_offset=4,
    method="header",
    exact=True,
    max_duplicates=0,
    status="mapped",
)


def test_every_report_says_how_old_the_snapshot_was() -> None:
    files = render_report(run_record(timedelta(hours=1, minutes=14)), [ENTRY], "planned")
    document = json.loads(files["report.json"])
    assert document["snapshot_age"] == "offsets as of 1 h 14 min before this run"
    assert document["snapshot_age_seconds"] == 4440 and document["snapshot_created_at"] == T0.isoformat()
    assert "Snapshot s-9 (offsets as of 1 h 14 min before this run)." in files["report.md"].decode()
    assert "<span id='snapshot-age'>offsets as of 1 h 14 min before this run</span>" in files["report.html"].decode()


def test_a_run_before_its_snapshot_is_known_says_nothing_of_age() -> None:
    assert snapshot_age({"restore_id": "r", "started_at": T0.timestamp()}) is None
    assert snapshot_age({"work": {"snapshot_created_at": "not a time"}, "started_at": 1.0}) is None
    files = render_report({"restore_id": "r"}, [ENTRY], "failed")
    assert json.loads(files["report.json"])["snapshot_age"] is None
    assert "offsets as of" not in files["report.md"].decode()


def test_the_report_builder_gives_the_age_to_the_notification() -> None:
    age = ReportBuilder(run_record(timedelta(minutes=3)), "planned").snapshot_age
    assert age is not None and age.phrase == "offsets as of 3 min before this run" and age.seconds == 180


def test_the_plan_summary_says_how_old_the_snapshot_was() -> None:
    result = PlanResult(
        restore_id="r-1",
        snapshot_id="s-9",
        source_cluster="src",
        target_cluster="dr",
        location="plan.json",
        csv=None,
        summary=PlanSummary.of([ENTRY]),
        duration_s=1.0,
        requests={},
        fetch_rounds={},
        median_rounds_per_partition={},
        out_of_order={},
        problems=[],
    )
    lines = plan_summary(result, age_phrase(T0, T0 + timedelta(days=1, hours=2)))
    assert lines[1] == "  snapshot age      offsets as of 1 d 2 h before this run"
    assert not any("snapshot age" in line for line in plan_summary(result))
