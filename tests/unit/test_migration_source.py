"""The source side of a migration (migration/source.py, migration/steps.py) with a fake source: which
groups it waits for, when the wait ends, what is left out of the final snapshot, and the refusals."""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest
from offset_restore.apply.waiting import Polling, WaitTimeoutError
from offset_restore.cli.main import main
from offset_restore.errors import BadInputError
from offset_restore.formats.plan import PlanEntry
from offset_restore.kafka.model import TP, CommittedOffset, GroupInfo
from offset_restore.migration.source import leave_out, moved_since_snapshot, stopped_on_source
from offset_restore.snapshot.filters import NameFilter, compile_pattern
from offset_restore.workflow.states.source import check_source
from offset_restore.workflow.states.validate import validate_input


class FakeSource:
    """Groups whose members leave after a number of looks (None: never), and their committed offsets."""

    def __init__(self, leaves_after: dict[str, int | None], offsets: dict[str, dict[TP, int]] | None = None) -> None:
        self.leaves_after, self.looks = leaves_after, 0
        self.offsets = offsets or {}

    def committed_offsets(self, group_ids: Sequence[str]) -> dict[str, dict[TP, CommittedOffset]]:
        return {g: {tp: CommittedOffset(o, None) for tp, o in self.offsets.get(g, {}).items()} for g in group_ids}

    def list_group_ids(self) -> list[str]:
        return [*self.leaves_after, "other-service"]

    def treat_as_share_groups(self, group_ids: Iterable[str]) -> None:
        """Every group here is read alike, whatever its kind."""

    def describe_groups(self, group_ids: Sequence[str]) -> dict[str, GroupInfo]:
        self.looks += 1
        answer = {}
        for group in group_ids:
            after = self.leaves_after.get(group, 0)
            running = after is None or self.looks <= after
            answer[group] = GroupInfo(group, "Stable" if running else "Empty", "consumer", 2 if running else 0)
        return answer


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


MOVING = NameFilter.parse("pay-.*", None, "groups")


def test_the_wait_ends_when_the_selected_groups_stopped_and_ignores_the_others() -> None:
    source, clock = FakeSource({"pay-a": 2, "pay-b": 3}), Clock()
    stopped = stopped_on_source(source, MOVING, Polling(60, 5, "w"), lambda *a: None, clock.sleep, clock)
    assert stopped.groups == ["pay-a", "pay-b"] and not stopped.still_active
    assert (stopped.polls, stopped.waited_s) == (4, 15.0)  # "other-service" never waited for


def test_a_group_that_never_stops_is_named_after_the_timeout() -> None:
    source, clock = FakeSource({"pay-a": 1, "pay-stuck": None}), Clock()
    stopped = stopped_on_source(source, MOVING, Polling(12, 5, "w"), lambda *a: None, clock.sleep, clock)
    assert list(stopped.still_active) == ["pay-stuck"] and stopped.stopped == ["pay-a"]
    assert stopped.waited_s == 12.0 and stopped.active_phrase() == "pay-stuck (Stable, 2 members)"


def test_the_workflow_step_looks_once_and_fails_past_the_timeout_naming_the_group() -> None:
    source = FakeSource({"pay-a": 0, "pay-stuck": None})
    first = check_source(source, MOVING, started_at=None, timeout_s=30, fail_on_timeout=True, now=100.0)
    assert (first.all_empty, first.timed_out, first.still_active, first.started_at) == (
        False,
        False,
        ["pay-stuck"],
        100,
    )
    with pytest.raises(WaitTimeoutError, match=r"1 groups still have members on the source after 30 s: pay-stuck"):
        check_source(source, MOVING, started_at=100.0, timeout_s=30, fail_on_timeout=True, now=131.0)
    late = check_source(source, MOVING, started_at=100.0, timeout_s=30, fail_on_timeout=False, now=131.0)
    assert late.timed_out and late.output()["still_active"] == ["pay-stuck"]


@pytest.mark.parametrize("name", ["pay.(1)", "a|.*", "with space", "new\nline", "quote'\""])
def test_left_out_of_the_final_snapshot_by_its_exact_name_only(name: str) -> None:
    pattern = compile_pattern(leave_out("__.*", [name]), "exclude")
    assert pattern is not None
    assert pattern.fullmatch(name) and pattern.fullmatch("__consumer_offsets")
    assert not pattern.fullmatch("pay-other") and not pattern.fullmatch(name + "x")
    assert leave_out("__.*", []) == "__.*" and leave_out(None, []) is None


def test_refusals_write_nothing_and_say_why(tmp_path: Path) -> None:
    """An existing plan file is refused before any wait; so are contradictory flags and, in the workflow,
    a migration given a snapshot (it takes its own)."""
    plan = tmp_path / "plan.json"
    plan.write_text("{}")
    base = ["migrate", "--source-bootstrap-servers", "127.0.0.1:1", "--bootstrap-servers", "127.0.0.1:1",
            "--snapshots", str(tmp_path / "snaps"), "--plan", str(plan)]  # fmt: skip
    for extra, words in (
        (["--execute"], "plan.json already exists: a plan is never overwritten"),
        (["--execute", "--dry-run"], "--execute writes and --dry-run previews: give one"),
        (["--groups", "("], "invalid --groups regex"),
    ):
        out, err = io.StringIO(), io.StringIO()
        assert main([*base, *extra], out, err) == 2, out.getvalue() + err.getvalue()
        assert words in err.getvalue(), err.getvalue()
    assert not (tmp_path / "snaps").exists() and plan.read_text() == "{}"
    with pytest.raises(BadInputError, match="mode migrate takes its own final snapshot: leave out snapshot"):
        validate_input(
            {"mode": "migrate", "snapshot": "latest", "restore_id": "m"}, {"source_cluster": "a", "target_cluster": "b"}
        )


def test_the_last_look_holds_groups_running_again_or_moved_and_lets_the_stopped_ones_go() -> None:
    """Right before a migration's write: a group with members is held, one whose committed offsets moved (or
    were removed) on the source is held naming the partition, one exactly at the plan's positions goes (a
    re-partitioned topic's entry is checked at every source position it follows)."""
    from tests.helpers import plan_entry

    def at_3(group: str, **more: object) -> list[PlanEntry]:
        return [plan_entry(group, 0, "mapped").model_copy(update={"source_offset": 3, **more})]

    entries = {g: at_3(g) for g in ("pay-running", "pay-moved", "pay-gone", "pay-still")}
    entries["pay-split"] = at_3("pay-split", source_positions={0: 3, 1: 9})
    topic = entries["pay-still"][0].topic
    t0, t1 = TP(topic, 0), TP(topic, 1)
    source = FakeSource(
        {"pay-running": None},
        {"pay-moved": {t0: 33}, "pay-still": {t0: 3}, "pay-split": {t0: 3, t1: 10}},
    )
    held = moved_since_snapshot(source, entries)
    assert set(held) == {"pay-running", "pay-moved", "pay-gone", "pay-split"}
    assert held["pay-running"].startswith("started again on the source after the final snapshot: pay-running (Stable")
    assert held["pay-moved"].endswith(f"its committed offsets there moved ({topic}-0: 3 -> 33)")
    assert held["pay-gone"].endswith(f"({topic}-0: 3 -> none)")
    assert held["pay-split"].endswith(f"({topic}-1: 9 -> 10)")
