"""Apply and rollback against the real target broker: docs/design.md §6's promises, one test each."""

from __future__ import annotations

import io
import json
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from offset_restore.apply.anchors import checked_offsets, records_at
from offset_restore.apply.commit import apply_plan
from offset_restore.apply.model import ApplyOptions
from offset_restore.apply.rollback import rollback_plan
from offset_restore.apply.run import PlanFile
from offset_restore.apply.seal import PlanKey, seal_plan, seal_whole
from offset_restore.cli.main import main
from offset_restore.errors import PlanBusyError
from offset_restore.formats.plan import Plan
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP, GroupInfo, PartitionFetch
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.stores.storage import open_location
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.run import SnapshotChoice, run_plan

from tests.helpers import Brokers, Produced, active_member, commit, produce, restore, table_rows, unique


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


class Restored:
    """Groups on a source topic, snapshotted, restored to the target from source offset 10, planned."""

    def __init__(
        self,
        brokers: Brokers,
        source: KafkaCluster,
        target: KafkaCluster,
        folder: Path,
        offsets: dict[str, dict[int, int]],
        restored_up_to: int = 100,
    ) -> None:
        self.brokers, self.target = brokers, target
        self.topic = unique("apply")
        source.create_topics({self.topic: 2})
        records = {p: produce(source, self.topic, p, 100) for p in range(2)}
        self.groups = {name: unique(name) for name in offsets}
        for name, by_partition in offsets.items():
            commit(source, self.groups[name], {TP(self.topic, p): o for p, o in by_partition.items()}, "meta-1")
        store = open_location(str(folder / "snaps"))
        run_snapshot(
            brokers.source_settings, store, SnapshotOptions(groups="|".join(self.groups.values()), cluster="src")
        )
        target.create_topics({self.topic: 2})
        for p in range(2):
            restore(target, self.topic, p, [r for r in records[p] if 10 <= r.offset < restored_up_to])
        self.plan_path = folder / "plan.json"
        run_plan(SnapshotChoice(str(folder / "snaps")), brokers.target_settings, str(self.plan_path), PlanOptions())

    def apply(self, *extra: str) -> tuple[int, str, str]:
        return run(
            "apply",
            "--plan",
            str(self.plan_path),
            "--bootstrap-servers",
            self.brokers.target.bootstrap_servers,
            "--poll-interval",
            "0.2",
            *(extra if "--dry-run" in extra or "--preview" in extra else ("--execute", *extra)),
        )

    def offsets(self, name: str) -> dict[int, int]:
        found = self.target.committed_offsets([self.groups[name]])[self.groups[name]]
        return {tp.partition: c.offset for tp, c in found.items() if tp.topic == self.topic}

    def plan(self) -> Plan:
        return PlanFile(str(self.plan_path)).load()


@pytest.fixture
def scene(brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path) -> Callable[..., Restored]:
    return lambda offsets, **kw: Restored(brokers, source, target, tmp_path, offsets, **kw)


def test_apply_commits_verifies_and_a_second_apply_changes_nothing(scene: Callable[..., Restored]) -> None:
    s = scene({"a": {0: 50, 1: 5}, "b": {0: 100}})
    status, out, err = s.apply()
    assert status == 0, out + err
    assert s.offsets("a") == {0: 40, 1: 0} and s.offsets("b") == {0: 90}
    assert "groups written    2 (3 offsets)" in out and "verified          3 partitions; 0 did not verify" in out
    plan = s.plan()
    assert {e.status for e in plan.entries} == {"committed"}
    assert all(e.previous_target_offset is None and e.verified for e in plan.entries)
    status, out, _ = s.apply()
    assert status == 0 and "groups written    0 (0 offsets)" in out
    assert s.offsets("a") == {0: 40, 1: 0}


def test_an_active_group_blocks_only_itself_and_a_rerun_commits_it(
    scene: Callable[..., Restored], brokers: Brokers
) -> None:
    s = scene({"busy": {0: 30}, "idle": {0: 60}})
    with active_member(brokers.target.bootstrap_servers, s.groups["busy"], s.topic):
        status, out, _ = s.apply("--wait-timeout", "1", "--on-wait-timeout", "commit_empty")
        assert status == 3
        assert f"skipped: {s.groups['busy']}: still active on the target (Stable, 1 members" in out
        assert s.offsets("idle") == {0: 50} and s.offsets("busy") == {}
        status, out, err = s.apply("--wait-timeout", "0.5")
        assert status == 1 and "still have members" in err and "nothing was written" in err
    status, out, _ = s.apply("--wait-timeout", "10")
    assert status == 0 and s.offsets("busy") == {0: 20}


def test_a_member_that_joins_after_the_check_makes_the_broker_refuse(
    scene,
    brokers: Brokers,
    target: KafkaCluster,
) -> None:
    s = scene({"racer": {0: 30, 1: 40}})
    plan_file = PlanFile(str(s.plan_path))
    plan = plan_file.load()
    with active_member(brokers.target.bootstrap_servers, s.groups["racer"], s.topic):

        class Late:
            """The real target, except that the re-check before the write still sees the group empty."""

            def __getattr__(self, name: str) -> object:
                return getattr(target, name)

            def describe_groups(self, ids: Sequence[str]) -> dict[str, GroupInfo]:
                return {g: GroupInfo(g, "Empty", "consumer", 0) for g in ids}

        report = apply_plan(plan, Late(), ApplyOptions(wait_timeout_s=0), plan_file.save)  # type: ignore[arg-type]
    assert s.groups["racer"] in report.groups_skipped
    assert "UnknownMemberIdError" in report.groups_skipped[s.groups["racer"]]
    assert s.offsets("racer") == {} and {e.status for e in plan_file.load().entries} == {"mapped"}


def test_the_printed_rewind_command_pasted_in_a_shell_rewinds_only_the_groups_it_names(
    scene: Callable[..., Restored], target: KafkaCluster, tmp_path: Path
) -> None:
    """A group id with quotes, ``;``, ``$(...)``, backticks and regex metacharacters, ahead on the
    target: the run prints a complete command; pasted into a real shell it runs nothing the id holds,
    rewinds that group, and leaves alone a group it does not name (an unescaped ``a|.*`` would match
    it). Cases of issue 31."""
    marker = tmp_path / "pwned"
    hostile = f"it's; $(touch {marker}) `touch {marker}` a|.*"
    s = scene({hostile: {0: 30}, "bystander": {0: 30}})
    commit(target, s.groups[hostile], {TP(s.topic, 0): 70})
    status, out, _ = s.apply()
    assert status == 3, out
    printed = next(line for line in out.splitlines() if "to rewind them: " in line).split("to rewind them: ", 1)[1]
    assert printed.startswith("offset-restore apply --plan ") and "..." not in printed
    commit(target, s.groups["bystander"], {TP(s.topic, 0): 60})  # ahead now too, and not named
    command = printed.replace("offset-restore", f"{shlex.quote(sys.executable)} -m offset_restore", 1)
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 3), done.stdout + done.stderr
    assert not marker.exists()
    assert s.offsets(hostile) == {0: 20} and s.offsets("bystander") == {0: 60}


def test_control_characters_in_a_group_id_are_shown_not_sent_to_the_terminal(
    scene: Callable[..., Restored], target: KafkaCluster
) -> None:
    """A group id with a carriage return and an escape sequence (legal in Kafka): the preview and the
    run show them as escapes, never raw (a line overwritten, a terminal cleared); the JSON document
    names the group exactly. A case of issue 31."""
    name = "cr\r\x1bcreset"  # ESC c resets a terminal
    s = scene({name: {0: 30}})
    status, out, _ = s.apply("--dry-run", "--json")
    assert status == 0 and any(s.groups[name] in change for change in json.loads(out)["changes"])  # exactly
    for extra in (("--dry-run",), ()):
        status, out, err = s.apply(*extra)
        assert status == 0, out + err
        assert "\r" not in out + err and "\x1b" not in out + err
        assert "cr\\r\\x1bcreset" in out or not extra  # the preview names it; the run counts


def test_a_newline_in_a_group_id_never_starts_a_line_of_its_own(
    scene: Callable[..., Restored], target: KafkaCluster
) -> None:
    """A group id holding "\n  FAILED: ..." would print a forged line in the preview and in the ahead
    lines of a run; every summary line shows it as an escape, and the error of a refused run too."""
    name = "nl\n  FAILED: all"
    s = scene({name: {0: 30}})
    commit(target, s.groups[name], {TP(s.topic, 0): 70})  # ahead: named in the run's summary
    for extra in (("--dry-run",), ()):
        status, out, err = s.apply(*extra)
        assert status in (0, 3), out + err
        assert not any(line.startswith("  FAILED") for line in (out + err).splitlines()), out + err
        assert "nl\\n  FAILED: all" in out, out
    status, out, err = run("apply", "--plan", str(s.plan_path), "--bootstrap-servers", "localhost:1", "--allow-rewind",
                           "a\n  FAILED: ((", "--execute")  # fmt: skip
    assert status == 2 and len(err.splitlines()) == 1 and "FAILED: ((" in err, err  # the regex library's words too


def test_a_group_ahead_on_the_target_is_a_decision_made_by_name(
    scene: Callable[..., Restored], target: KafkaCluster
) -> None:
    """A group started on the target with auto.offset.reset=latest sits past its mapped position: apply
    does not rewind it silently or skip it silently — the preview and the run show the offsets it
    skips and the command that rewinds it; --allow-rewind GROUP_REGEX rewinds only the groups named."""
    s = scene({"ahead": {0: 30, 1: 30}, "also": {0: 30}})
    ahead, also = s.groups["ahead"], s.groups["also"]
    commit(target, ahead, {TP(s.topic, 0): 70, TP(s.topic, 1): 5})
    commit(target, also, {TP(s.topic, 0): 45})
    status, out, _ = s.apply("--dry-run")
    assert status == 0 and table_rows(out)[(ahead, s.topic, 0)] == ("70", "20", "header", "not rewound"), out
    assert f"ahead: {ahead} skips 50 offsets" in out
    status, out, _ = s.apply()
    assert status == 3 and "2 partitions not rewound" in out
    assert f"ahead: {ahead} skips 50 offsets on the target unless rewound" in out
    assert f"ahead: {also} skips 25 offsets" in out and f"--allow-rewind='{ahead}|{also}' --execute" in out
    assert s.offsets("ahead") == {0: 70, 1: 20} and s.offsets("also") == {0: 45}
    entry = next(e for e in s.plan().entries if e.partition == 0 and e.group == ahead)
    assert entry.status == "skipped" and "the group is at 70 on the target" in (entry.reason or "")
    # The ahead groups' consumers run on: a re-run neither waits for them nor fails on them.
    commit(target, ahead, {TP(s.topic, 0): 80})
    with active_member(s.brokers.target.bootstrap_servers, also, s.topic):
        status, out, _ = s.apply("--wait-timeout", "5")
    assert status == 3 and f"ahead: {ahead} skips 60 offsets" in out and s.offsets("also") == {0: 45}
    status, out, _ = s.apply("--allow-rewind", ahead)  # only the group named
    assert status == 3 and s.offsets("ahead") == {0: 20, 1: 20} and s.offsets("also") == {0: 45}
    written = next(e for e in s.plan().entries if e.partition == 0 and e.group == ahead)
    assert written.status == "committed" and not (written.reason or "").startswith("ahead")  # no stale reason
    assert f"ahead: {also} skips 25 offsets" in out and f"ahead: {ahead}" not in out
    # The way back is to where the consumers were when the rewind replaced it (80), not the 70 seen first.
    rewound = next(e for e in s.plan().entries if e.partition == 0 and e.group == ahead)
    assert rewound.previous_target_offset == 80
    status, out, err = rollback(s)
    assert status in (0, 3), out + err
    assert s.offsets("ahead") == {0: 80, 1: 5} and s.offsets("also") == {0: 45}


def test_rewind_with_the_flag_then_rollback_restores_and_deletes(
    scene: Callable[..., Restored], target: KafkaCluster
) -> None:
    s = scene({"ahead": {0: 30, 1: 30}, "fresh": {0: 50}})
    commit(target, s.groups["ahead"], {TP(s.topic, 0): 70, TP(s.topic, 1): 5})
    status, _, _ = s.apply("--allow-rewind")
    assert status == 0 and s.offsets("ahead") == {0: 20, 1: 20} and s.offsets("fresh") == {0: 40}
    applied = s.plan_path.read_text()
    status, out, _ = run("rollback", "--plan", str(s.plan_path), "--bootstrap-servers",
                         s.brokers.target.bootstrap_servers)  # fmt: skip
    assert status == 0, out  # without --execute: a preview of each change, nothing written
    rows = table_rows(out)
    assert rows[(s.groups["ahead"], s.topic, 0)] == ("20", "70", "put back", "-"), out
    assert rows[(s.groups["fresh"], s.topic, 0)] == ("40", "-", "removed (apply created it)", "-"), out
    assert f"{s.groups['fresh']}: the whole group would be deleted" in out, out
    assert "would write 3 offsets in 2 groups" in out and "run again with --execute to write" in out, out
    assert s.offsets("ahead") == {0: 20, 1: 20} and s.offsets("fresh") == {0: 40}
    assert s.plan_path.read_text() == applied
    status, out, _ = run(
        "rollback", "--plan", str(s.plan_path), "--bootstrap-servers", s.brokers.target.bootstrap_servers, "--execute"
    )
    assert status == 0, out
    assert s.offsets("ahead") == {0: 70, 1: 5}
    assert s.offsets("fresh") == {}  # created by the apply: deleted
    assert {e.status for e in s.plan().entries} == {"mapped"}


def test_without_execute_apply_previews_every_change_and_writes_nothing(scene: Callable[..., Restored]) -> None:
    """As kafka-consumer-groups without --execute: every offset that would change, with how it was
    found, the counts, and the command to write; nothing on the target or in the plan changes."""
    s = scene({"a": {0: 50, 1: 60}, "there": {0: 30}})
    commit(s.target, s.groups["there"], {TP(s.topic, 0): 20})  # already where the plan puts it
    before = s.plan_path.read_text()
    for flags in ((), ("--dry-run",)):
        status, out, _ = run("apply", "--plan", str(s.plan_path), "--bootstrap-servers",
                             s.brokers.target.bootstrap_servers, *flags)  # fmt: skip
        assert status == 0, out
        assert table_rows(out)[(s.groups["a"], s.topic, 0)] == ("-", "40", "header", "exact"), out
        assert "would write 2 offsets in 1 groups; 1 already in place; 0 not rewound" in out, out
        assert "run again with --execute to write" in out and f"{s.groups['there']} " not in out
        assert s.offsets("a") == {} and s.plan_path.read_text() == before
    status, _, err = s.apply("--dry-run", "--execute")
    assert status == 2 and "--execute writes and --dry-run previews: give one" in err


def test_a_preview_names_an_active_group_at_once_instead_of_waiting(scene: Callable[..., Restored]) -> None:
    s = scene({"busy": {0: 50}})
    with active_member(s.brokers.target.bootstrap_servers, s.groups["busy"], s.topic):
        started = time.monotonic()
        status, out, _ = run("apply", "--plan", str(s.plan_path), "--bootstrap-servers",
                             s.brokers.target.bootstrap_servers, "--wait-timeout", "60")  # fmt: skip
        took = time.monotonic() - started
    assert status == 0 and f"not now: {s.groups['busy']}" in out, out
    assert "--execute waits up to 60 s" in out and took < 30, (took, out)


def test_pending_groups_wait_whole_and_unmapped_entries_are_not_written(scene: Callable[..., Restored]) -> None:
    s = scene({"waits": {0: 20, 1: 95}, "ok": {0: 20}}, restored_up_to=60)
    status, out, _ = s.apply()
    assert status == 3
    assert f"skipped: {s.groups['waits']}: 1 partitions still pending" in out
    assert s.offsets("waits") == {} and s.offsets("ok") == {0: 10}


def test_bad_plans_are_refused(scene: Callable[..., Restored], tmp_path: Path) -> None:
    s = scene({"a": {0: 50}})
    document = json.loads(s.plan_path.read_text())
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**document, "target": {"cluster": "some-other-cluster"}}))
    status, _, err = run(
        "apply", "--plan", str(other), "--bootstrap-servers", s.brokers.target.bootstrap_servers, "--execute"
    )
    assert status == 2 and "the plan is for target cluster some-other-cluster" in err
    document["entries"][0]["partition"] = -1
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(document))
    status, _, err = run(
        "apply", "--plan", str(broken), "--bootstrap-servers", s.brokers.target.bootstrap_servers, "--execute"
    )
    assert status == 2 and "is not a usable plan: entries.0.partition: input should be greater than" in err
    assert "Value error" not in err and "pydantic" not in err
    status, _, err = run(
        "apply", "--plan", str(s.plan_path), "--bootstrap-servers", "127.0.0.1:9", "--connect-timeout", "1",
        "--execute",
    )  # fmt: skip
    assert status == 1 and "cannot reach Kafka" in err
    assert s.offsets("a") == {}


def test_a_record_that_is_not_the_expected_one_is_refused_before_the_commit(scene: Callable[..., Restored]) -> None:
    """The plan found the snapshot's record at a mapped offset; the target now holds another one there:
    the group is not written (checked before the commit as after it), by name, and the others are."""
    s = scene({"a": {0: 50, 1: 5}, "b": {0: 100}})
    document = json.loads(s.plan_path.read_text())
    wrong = next(e for e in document["entries"] if e["expected_fingerprint"])
    wrong["expected_fingerprint"] = "0" * len(wrong["expected_fingerprint"])
    s.plan_path.write_text(json.dumps(document))
    name = next(n for n, g in s.groups.items() if g == wrong["group"])
    status, out, err = s.apply()
    assert status != 0, out + err
    assert "the target changed since the plan" in out + err and "another record is there" in out + err
    assert s.offsets(name) == {}
    entries = s.plan().entries
    assert all(e.status != "committed" for e in entries if e.group == wrong["group"])
    others = [e for e in entries if e.group != wrong["group"]]
    assert others and all(e.status == "committed" and e.verified for e in others)


def test_a_target_offset_moved_with_its_anchor_is_refused_by_the_expected_record_before_the_commit(
    scene: Callable[..., Restored],
) -> None:
    """Issue 31: the mapped offset, its anchor, the anchor's source offset and timestamp all moved 5
    records on, consistently (the anchor checks pass): the record there is not the snapshot's next one,
    and apply refuses the group before its commit (it used to write it, then fail its verification)."""
    s = scene({"a": {0: 50}})
    document = json.loads(s.plan_path.read_text())
    (moved,) = [e for e in document["entries"] if e["group"] == s.groups["a"]]
    assert moved["expected_fingerprint"] and moved["target_offset"] == moved["anchor_offset"] == 40
    record = s.target.fetch({TP(s.topic, 0): 45})[TP(s.topic, 0)].records[0]
    moved.update(target_offset=45, anchor_offset=45, anchor_source_offset=55, anchor_timestamp=record.timestamp)
    s.plan_path.write_text(json.dumps(document))
    status, out, err = s.apply()
    assert status != 0 and "another record is there" in out + err, out + err
    assert s.offsets("a") == {}


def test_rollback_is_not_blocked_by_entries_that_no_longer_fit(
    scene: Callable[..., Restored], brokers: Brokers, target: KafkaCluster
) -> None:
    """Apply refuses a plan whose unwritten mappings lie outside the target's logs; a rollback only
    puts back previous offsets, so the same plan still rolls back what was written."""
    s = scene({"idle": {0: 30}, "busy": {0: 50}})
    commit(target, s.groups["idle"], {TP(s.topic, 0): 3})
    with active_member(brokers.target.bootstrap_servers, s.groups["busy"], s.topic):
        status, out, _ = s.apply("--wait-timeout", "0", "--on-wait-timeout", "commit_empty")
    assert status == 3 and s.offsets("idle") == {0: 20}, out
    document = json.loads(s.plan_path.read_text())
    for entry in document["entries"]:
        if entry["group"] == s.groups["busy"]:
            # The target changed under the unwritten group (a plan made against it then says so).
            entry["target_offset"] = entry["anchor_offset"] = 10**9
    s.plan_path.write_text(sealed(Plan.model_validate(document)).model_dump_json())
    status, _, err = s.apply()
    assert status == 2 and "lie outside the target's logs now" in err
    status, out, err = run(
        "rollback", "--plan", str(s.plan_path), "--bootstrap-servers", s.brokers.target.bootstrap_servers, "--execute"
    )
    assert status == 0, out + err
    assert s.offsets("idle") == {0: 3}


def test_a_partition_a_fetch_round_leaves_unserved_is_asked_again_not_failed(
    scene: Callable[..., Restored], target: KafkaCluster
) -> None:
    """At 2,000 partitions a fetch round can come back with a partition empty though its records are
    there (its share of the response went to the others): verification asks again."""
    s = scene({"a": {0: 50, 1: 5}, "b": {0: 100}})

    class Unserving:
        """The real target, except that its first two fetch rounds serve nothing of one partition."""

        def __init__(self) -> None:
            self.rounds = 0

        def __getattr__(self, name: str) -> object:
            return getattr(target, name)

        def fetch(self, positions: Mapping[TP, int], **kw: Any) -> dict[TP, PartitionFetch]:
            answer = target.fetch(positions, **kw)
            self.rounds += 1
            if self.rounds <= 2:
                tp = min(answer)
                real = answer[tp]
                answer[tp] = PartitionFetch(real.fetch_offset, [], real.high_watermark, real.log_start_offset)
            return answer

    plan = s.plan()
    unserving = Unserving()
    report = apply_plan(plan, unserving, ApplyOptions(wait_timeout_s=0), lambda p: None)  # type: ignore[arg-type]
    assert unserving.rounds >= 3 and report.verify_failed == [] and report.verified == 3


def edited(s: Restored, tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    document = json.loads(s.plan_path.read_text())
    change(document)
    path = tmp_path / f"edited-{unique('plan')}.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["entries"].append(dict(d["entries"][0])), "entry 2 (a-"),
        (lambda d: d["entries"][0].update(target_offset=True), "entries.0.target_offset"),
        (
            lambda d: d["entries"][0].update(target_offset=d["entries"][0]["target_offset"] + 3),
            "the record the plan read",
        ),
        (lambda d: d["entries"][0].update(target_topic="payments"), "which the plan's topic map does not"),
    ],
    ids=["duplicate-entry", "true-as-offset", "in-range-wrong-offset", "topic-outside-the-map"],
)
def test_edited_plans_are_refused_before_anything_is_written(
    scene: Callable[..., Restored], tmp_path: Path, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    s = scene({"a": {0: 50, 1: 60}})
    path = edited(s, tmp_path, change)
    before = path.read_text()
    status, _, err = run(
        "apply", "--plan", str(path), "--bootstrap-servers", s.brokers.target.bootstrap_servers, "--execute"
    )
    assert status == 2 and message in err, err
    assert s.offsets("a") == {} and path.read_text() == before


def test_a_plan_is_refused_on_other_brokers_that_carry_its_name(
    scene: Callable[..., Restored], brokers: Brokers, source: KafkaCluster, tmp_path: Path
) -> None:
    """A plan made with --target-cluster prod-dr, given other brokers under the same name: the
    cluster id the plan recorded decides, not the name."""
    s = scene({"a": {0: 50}})
    named = edited(s, tmp_path, lambda d: d["target"].update(cluster="prod-dr"))
    assert json.loads(named.read_text())["target"]["cluster_id"] == s.target.cluster_id
    status, _, err = run(
        "apply",
        "--plan",
        str(named),
        "--bootstrap-servers",
        brokers.source.bootstrap_servers,
        "--target-cluster",
        "prod-dr",
        "--wait-timeout",
        "0",
        "--execute",
    )
    assert status == 2 and f"these brokers report cluster id {source.cluster_id}" in err, err
    # The group on those brokers (the source, where it was committed at 50) is untouched.
    assert {tp.partition: c.offset for tp, c in source.committed_offsets([s.groups["a"]])[s.groups["a"]].items()} == {
        0: 50
    }


@pytest.mark.parametrize(
    ("option", "value"),
    [("--poll-interval", "nan"), ("--wait-timeout", "nan"), ("--connect-timeout", "inf"), ("--wait-timeout", "-1")],
)
def test_odd_option_values_are_refused_by_name(
    scene: Callable[..., Restored], option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    s = scene({"a": {0: 50}})
    before = s.plan_path.read_text()
    status, _, err = s.apply(option, value)
    err += capsys.readouterr().err  # argparse's own usage errors go to the process's stderr
    assert status == 2 and f"argument {option}: {value} is not between" in err, err
    assert "Traceback" not in err and s.offsets("a") == {} and s.plan_path.read_text() == before


def test_a_group_that_moves_on_during_apply_is_not_rewound(
    scene: Callable[..., Restored], target: KafkaCluster
) -> None:
    """After apply read the current offsets, something commits 80 for the group without joining it
    (a consumer that commits and leaves, a script): apply must not write its planned offsets over
    that, and must say so; the other group is written."""
    s = scene({"a": {0: 50, 1: 5}, "b": {0: 60}})
    moving, steady = s.groups["a"], s.groups["b"]

    def consumer_commits() -> None:
        commit(target, moving, {TP(s.topic, 0): 80})

    plan = s.plan()
    report = apply_plan(plan, target, ApplyOptions(wait_timeout_s=0), lambda p: None, before_write=consumer_commits)
    assert moving in report.groups_skipped and "moved on since apply read it" in report.groups_skipped[moving]
    assert f"{s.topic}/0 was none, now 80" in report.groups_skipped[moving]
    assert s.offsets("a") == {0: 80} and report.groups_committed == [steady]
    assert all(e.status == "mapped" for e in plan.entries if e.group == moving)


def sealed(plan: Plan) -> Plan:
    """``plan`` sealed as the CLI saves it (apply/seal.py): its previous offsets, and the plan as a whole —
    what a test that plays a change of the target by editing the plan does, as an operator with the key."""
    key = PlanKey.load(create=True)
    seal_plan(plan, key)
    seal_whole(plan, key)
    return plan


def rollback(s: Restored, *extra: str) -> tuple[int, str, str]:
    return run(
        "rollback",
        "--plan",
        str(s.plan_path),
        "--bootstrap-servers",
        s.brokers.target.bootstrap_servers,
        *(extra if "--dry-run" in extra else ("--execute", *extra)),
    )


def test_a_previous_offset_edited_past_the_log_is_refused_and_nothing_is_rolled_back(
    scene: Callable[..., Restored],
) -> None:
    """A plan whose recorded previous offset was edited to 10**12 (or damaged): rollback refuses, names
    the entry, exits 2 and writes nothing (it wrote the edited offset, exit 0). A case of issue 31."""
    s = scene({"a": {0: 50, 1: 5}})
    commit(s.target, s.groups["a"], {TP(s.topic, 0): 12})  # a previous offset on the target
    status, out, err = s.apply()
    assert status == 0, out + err
    written = s.offsets("a")
    document = json.loads(s.plan_path.read_text())
    edited = next(e for e in document["entries"] if e["partition"] == 0)
    edited["previous_target_offset"] = 10**12
    s.plan_path.write_text(json.dumps(document))
    status, out, err = rollback(s)
    assert status == 2, out + err
    assert f"({s.groups['a']} {s.topic}/0): previous offset 1000000000000 does not match its seal" in err, err
    assert s.offsets("a") == written
    shutil.rmtree(s.plan_path.parent / "plan.json.journal")  # else rollback follows the journal's 12
    status, out, err = rollback(s, "--trust-previous-offsets")  # the operator's word: the log still decides
    assert status == 2, out + err
    assert f"previous offset 1,000,000,000,000 for {s.groups['a']} {s.topic}/0, past the end" in err
    assert s.offsets("a") == written


def test_an_edited_previous_offset_within_the_log_is_caught_by_its_seal(
    scene: Callable[..., Restored], tmp_path: Path
) -> None:
    """Issue 31: a previous offset edited to another offset the log holds (12 -> 5) was written back by
    rollback, exit 0. Now its seal refuses the rollback and a re-run of apply (which would keep the edit
    and seal it again), entry named, exit 2, nothing written; so does another key, and a missing one;
    --trust-previous-offsets is the operator's word, but the journal beside the plan holds what apply read:
    12 comes back, and the run says the plan said otherwise."""
    s = scene({"a": {0: 50, 1: 5}})
    commit(s.target, s.groups["a"], {TP(s.topic, 0): 12})
    assert s.apply()[0] == 0
    written = s.offsets("a")
    document = json.loads(s.plan_path.read_text())
    edited = next(e for e in document["entries"] if e["partition"] == 0)
    assert edited["previous_target_offset"] == 12 and edited["previous_seal"]
    edited["previous_target_offset"] = 5
    s.plan_path.write_text(json.dumps(document))
    other_key = tmp_path / "other.key"
    PlanKey.load(other_key, create=True)
    refusals = {
        "rollback": rollback(s),
        "apply again": s.apply("--allow-rewind"),
        "another key": rollback(s, "--plan-key", str(other_key)),
        "no key": rollback(s, "--plan-key", str(tmp_path / "missing.key")),
    }
    for what, (status, out, err) in refusals.items():
        assert status == 2, (what, out + err)
        assert s.offsets("a") == written, what
    assert f"({s.groups['a']} {s.topic}/0): previous offset 5 does not match its seal" in refusals["rollback"][2]
    assert "cannot read the plan key" in refusals["no key"][2] and "--trust-previous-offsets" in refusals["no key"][2]
    status, out, err = rollback(s, "--trust-previous-offsets")
    assert status == 0 and s.offsets("a") == {0: 12}, out + err
    assert "the plan said previous offset 5, the journal 12" in out


def test_rollback_after_an_apply_that_crashed_before_its_last_save(
    scene: Callable[..., Restored], target: KafkaCluster
) -> None:
    """The commits were answered, the process died before the plan said so: the plan still says
    "mapped", but the previous offsets were saved before the first write. Rollback finds the writes
    on the target and puts the previous offsets back."""
    s = scene({"a": {0: 50, 1: 60}, "b": {0: 70}})
    commit(target, s.groups["a"], {TP(s.topic, 0): 3, TP(s.topic, 1): 4}, "target-meta")
    # What the target keeps of commit metadata (the local broker keeps none; Kafka keeps it).
    held = target.committed_offsets([s.groups["a"]])[s.groups["a"]][TP(s.topic, 0)].metadata
    saves: list[str] = []

    def save_then_die(plan: Plan) -> None:
        if saves:  # the save after the commits never happens
            raise KeyboardInterrupt
        sealed(plan)  # as the CLI's apply saves it
        saves.append(plan.model_dump_json())
        s.plan_path.write_text(saves[0])

    with pytest.raises(KeyboardInterrupt):
        apply_plan(s.plan(), target, ApplyOptions(wait_timeout_s=0), save_then_die)
    assert s.offsets("a") == {0: 40, 1: 50} and s.offsets("b") == {0: 60}
    assert {e.status for e in s.plan().entries} == {"mapped"}
    status, out, err = rollback(s)
    assert status == 0, out + err
    assert s.offsets("a") == {0: 3, 1: 4} and s.offsets("b") == {}  # b was created by the apply: deleted
    plan = s.plan()
    assert {e.previous_metadata for e in plan.entries if e.group == s.groups["a"]} == {held}
    assert target.committed_offsets([s.groups["a"]])[s.groups["a"]][TP(s.topic, 0)].metadata == held
    assert "verified          3 partitions" in out and {e.status for e in plan.entries} == {"mapped"}


def test_rollback_leaves_alone_what_an_interrupted_apply_never_wrote(
    scene: Callable[..., Restored], target: KafkaCluster
) -> None:
    """Issue 31: an apply killed after it recorded the previous offset (7) and before it wrote; the
    consumers then commit 80 on the target. Before: rollback said "apply wrote 40" and --allow-rewind
    rewound 80 -> 7. Now rollback names what is there and leaves it, with --allow-rewind too; a later
    apply that leaves the group ahead forgets the stale record; and one that rewinds it records 80 — the
    offset it replaced — which the rollback then puts back (read back independently)."""
    s = scene({"a": {0: 50}})
    tp = TP(s.topic, 0)
    commit(target, s.groups["a"], {tp: 7})

    def save(plan: Plan) -> None:
        s.plan_path.write_text(sealed(plan).model_dump_json())  # as the CLI's apply saves it

    def killed() -> None:
        raise KeyboardInterrupt  # after the previous offsets were saved, before the first commit

    with pytest.raises(KeyboardInterrupt):
        apply_plan(s.plan(), target, ApplyOptions(wait_timeout_s=0), save, before_write=killed)
    (entry,) = [e for e in s.plan().entries if e.group == s.groups["a"]]
    assert (entry.previous_recorded, entry.previous_target_offset, s.offsets("a")) == (True, 7, {0: 7})
    commit(target, s.groups["a"], {tp: 80})  # its consumers ran on the target
    for extra in ((), ("--allow-rewind",)):
        status, out, err = rollback(s, *extra)
        assert status == 0, out + err
        assert "apply wrote" not in out and s.offsets("a") == {0: 80}, out
        assert f"left alone: {s.groups['a']} {tp}: apply never wrote 40 there; it holds 80" in out, out
    status, out, err = s.apply()
    assert status == 3 and "ahead" in out, out + err
    (entry,) = [e for e in s.plan().entries if e.group == s.groups["a"]]
    assert not entry.previous_recorded and entry.previous_target_offset == 80
    status, out, err = s.apply("--allow-rewind", s.groups["a"])
    assert status == 0 and s.offsets("a") == {0: 40}, out + err
    status, out, err = rollback(s)
    assert status == 0 and s.offsets("a") == {0: 80}, out + err


def test_rollback_never_rewinds_consumers_that_ran_on_the_target(
    scene: Callable[..., Restored], target: KafkaCluster
) -> None:
    s = scene({"ran": {0: 50}, "idle": {0: 60}})
    commit(target, s.groups["ran"], {TP(s.topic, 0): 5})
    assert s.apply()[0] == 0
    commit(target, s.groups["ran"], {TP(s.topic, 0): 85})  # its consumers processed 40..84 on the target
    status, out, _ = rollback(s)
    assert status == 3 and "moved past what apply wrote" in out
    assert s.offsets("ran") == {0: 85} and s.offsets("idle") == {}
    status, out, _ = rollback(s, "--allow-rewind")
    assert status == 0 and s.offsets("ran") == {0: 5}, out


def test_rollback_removes_only_what_apply_created(scene: Callable[..., Restored], target: KafkaCluster) -> None:
    """The group already held an offset on another topic (payments/0 = 42) and none on the planned
    topic: rollback must not delete the group. It removes only the partitions apply created — with
    OffsetDelete, which the local broker does not support: then it says so, and payments/0 stays."""
    s = scene({"mixed": {0: 50}})
    payments = unique("payments")
    target.create_topics({payments: 1})
    commit(target, s.groups["mixed"], {TP(payments, 0): 42})
    assert s.apply()[0] == 0
    status, out, _ = rollback(s)
    found = target.committed_offsets([s.groups["mixed"]])[s.groups["mixed"]]
    assert found[TP(payments, 0)].offset == 42
    if TP(s.topic, 0) in found:  # the broker refused OffsetDelete: reported, the plan keeps it committed
        assert status == 1 and "could not remove the offsets the apply created" in out
        assert s.plan().entries[0].status == "mapped" and "rollback started" in (s.plan().entries[0].reason or "")
    else:
        assert status == 0


def test_an_apply_after_an_interrupted_rollback_writes_again_what_it_undid(
    scene: Callable[..., Restored], target: KafkaCluster
) -> None:
    from offset_restore.apply.rollback import rollback_plan

    s = scene({"a": {0: 50}})
    commit(target, s.groups["a"], {TP(s.topic, 0): 3})
    assert s.apply()[0] == 0 and s.offsets("a") == {0: 40}
    calls: list[int] = []

    def save_then_die(plan: Plan) -> None:
        if calls:
            raise KeyboardInterrupt  # the rollback wrote, then died before its last save
        calls.append(1)
        s.plan_path.write_text(sealed(plan).model_dump_json())

    with pytest.raises(KeyboardInterrupt):
        rollback_plan(s.plan(), target, save_then_die)
    assert s.offsets("a") == {0: 3}
    assert all("rollback started" in (e.reason or "") for e in s.plan().entries)
    status, out, _ = s.apply()
    assert status == 0 and s.offsets("a") == {0: 40}, out


def test_one_writer_per_plan_and_the_lock_goes_with_its_process(scene: Callable[..., Restored]) -> None:
    """A second apply or rollback while one holds the plan is refused before it reads the plan or
    writes anything; a holder killed with SIGKILL leaves no lock behind."""
    import signal
    import subprocess
    import sys
    import time

    s = scene({"a": {0: 50}})
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from offset_restore.apply.run import PlanFile\n"
            "with PlanFile(sys.argv[1]).locked():\n"
            "    print('locked', flush=True)\n"
            "    time.sleep(60)\n",
            str(s.plan_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        for command in (s.apply, lambda: rollback(s)):
            status, out, err = command()
            assert status == 1 and f"is in use by pid {holder.pid}" in err, out + err
        assert s.offsets("a") == {}
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    time.sleep(0.1)
    status, out, err = s.apply()
    assert status == 0 and s.offsets("a") == {0: 40}, out + err


def test_a_plan_changed_since_it_was_read_is_never_overwritten(scene: Callable[..., Restored]) -> None:
    """Two runs that both read the plan (e.g. one that read it before a slow connection): the second
    save is refused, so the previous offsets the first recorded stay."""
    s = scene({"a": {0: 50}})
    first, second = PlanFile(str(s.plan_path)), PlanFile(str(s.plan_path))
    mine, theirs = first.load(), second.load()
    mine.entries[0].previous_target_offset, mine.entries[0].previous_recorded = 7, True
    first.save(mine)
    theirs.entries[0].previous_target_offset, theirs.entries[0].previous_recorded = 40, True
    with pytest.raises(PlanBusyError, match="changed since this run read it"):
        second.save(theirs)
    assert s.plan().entries[0].previous_target_offset == 7
    first.save(mine)  # the run that wrote last may go on saving


def test_an_apply_whose_lock_was_broken_stops_before_writing(
    scene: Callable[..., Restored], brokers: Brokers, table: str
) -> None:
    """The heartbeat finds the lock taken (an operator ran unlock on a run they thought dead): the run
    stops before its first write instead of writing beside the new holder."""
    import os

    import boto3
    from offset_restore.apply.locks import LockLostError, TargetLock
    from offset_restore.apply.run import run_apply

    s = scene({"idle": {0: 50}, "busy": {0: 60}})
    client = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"])
    target_id = brokers.target_id
    lock = TargetLock(table, client, target_id, "run-1", ttl_s=3, name="prod-dr")  # a beat every second
    intruder = TargetLock(table, client, target_id, "run-2", ttl_s=3, name="prod-dr")
    with active_member(brokers.target.bootstrap_servers, s.groups["busy"], s.topic):
        original = lock.acquire

        def acquire_then_lose(now: float | None = None) -> None:
            original(now)
            assert intruder.break_lock("run-1")
            intruder.acquire()

        lock.acquire = acquire_then_lose  # type: ignore[method-assign]
        options = ApplyOptions(wait_timeout_s=2.5, poll_interval_s=0.5, on_wait_timeout="commit_empty")
        with pytest.raises(LockLostError, match="no longer run run-1's"):
            run_apply(str(s.plan_path), brokers.target_settings, options, lock=lock)
    assert s.offsets("idle") == {} and intruder.holder() is not None and intruder.holder()[0] == "run-2"  # type: ignore[index]


def test_the_lock_is_the_clusters_whatever_name_a_plan_or_an_option_gives_it(
    scene: Callable[..., Restored], brokers: Brokers, table: str
) -> None:
    """Issue 36's case: a run held the lock for the target under the name ``tgt``; an apply naming the
    same brokers ``prod-dr`` wrote beside it. The lock is keyed by the cluster id the brokers report, so
    it is refused and writes nothing. A lock an earlier version took under the name is read (refused too),
    and a run's lock leaves nothing behind: neither the lock nor a lock under the name."""
    import os

    import boto3
    from offset_restore.apply.locks import TargetLock

    s = scene({"a": {0: 50}, "b": {0: 60}, "c": {0: 70}})
    client = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"])
    other = TargetLock(table, client, brokers.target_id, "run-other", ttl_s=600, name="tgt")
    other.acquire()
    status, _, err = s.apply("--lock-table", table, "--target-cluster", "prod-dr")
    assert status == 1 and "locked by run run-other" in err and brokers.target_id in err, err
    assert s.offsets("a") == s.offsets("b") == s.offsets("c") == {}
    other.release()

    # An earlier version's lock, under the name the apply gives the cluster, held by a run in flight.
    legacy = {"pk": {"S": "LOCK#prod-dr"}, "sk": {"S": "LOCK"}}
    client.put_item(
        TableName=table,
        Item={**legacy, "owner": {"S": "old-run"}, "expires_at": {"N": str(int(time.time()) + 600)}},
    )
    status, _, err = s.apply("--lock-table", table, "--target-cluster", "prod-dr")
    assert status == 1 and "locked by run old-run" in err, err
    assert s.offsets("a") == {}
    client.delete_item(TableName=table, Key=legacy)

    status, out, err = s.apply("--lock-table", table, "--target-cluster", "prod-dr")
    assert status == 0 and s.offsets("a") == {0: 40}, out + err
    for pk in (f"LOCK#{brokers.target_id}", "LOCK#prod-dr"):
        assert "Item" not in client.get_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": "LOCK"}})


def test_an_apply_paused_past_its_lease_between_its_check_and_its_write_writes_nothing(
    scene: Callable[..., Restored], brokers: Brokers, table: str
) -> None:
    """Issue 36's case, with the real lease scaled down (3 s, renewed every second): the run freezes
    (a VM pause, a long GC: its heartbeat misses every beat too) for 4 s after its first lock check and
    before its OffsetCommit; meanwhile the lease runs out and another run takes the lock. Before, the
    check read a flag the heartbeat had not set: the frozen run wrote every group beside the new holder.
    Now the check right before the write is the lease by the clock: nothing is written, and it says why."""
    import os

    import boto3
    from offset_restore.apply.locks import LockLostError, TargetLock
    from offset_restore.apply.run import run_apply

    s = scene({"a": {0: 50}, "b": {0: 60}, "c": {0: 70}})
    client = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"])
    target_id = brokers.target_id
    lock = TargetLock(table, client, target_id, "run-1", ttl_s=3, name="prod-dr")
    intruder = TargetLock(table, client, target_id, "run-2", ttl_s=60, name="prod-dr")

    def frozen_beat(now: float | None = None) -> None:
        raise OSError("frozen: the heartbeat does not run either")

    lock.renew = frozen_beat  # type: ignore[method-assign]

    class Freezing(KafkaCluster):
        calls = 0

        def describe_groups(self, group_ids: Sequence[str], batch_size: int = 500) -> dict[str, GroupInfo]:
            Freezing.calls += 1
            if Freezing.calls == 2:  # the commit's own look, after the first check and before the write
                time.sleep(4)
                intruder.acquire()  # the lease ran out meanwhile: another run takes the lock
            return super().describe_groups(group_ids, batch_size)

    options = ApplyOptions(wait_timeout_s=0, poll_interval_s=0.5, on_wait_timeout="commit_empty")
    with pytest.raises(LockLostError, match=r"lease on target cluster prod-dr \(cluster id .+\)'s lock has 0.0 s left"):
        run_apply(str(s.plan_path), brokers.target_settings, options, lock=lock, connect=Freezing)
    assert s.offsets("a") == s.offsets("b") == s.offsets("c") == {}
    assert intruder.holder() is not None and intruder.holder()[0] == "run-2"  # type: ignore[index]


def test_an_s3_plan_is_saved_with_a_conditional_write(s3: Any) -> None:
    """On S3 the version check is S3's own (If-Match on the ETag read): a run whose plan changed
    since it read it cannot overwrite it, even without the lock table."""
    document = Plan(
        restore_id="r1",
        snapshot_id="s1",
        created_at="2026-11-30T00:00:00Z",  # type: ignore[arg-type]
        source={"cluster": "a"},  # type: ignore[arg-type]
        target={"cluster": "b"},  # type: ignore[arg-type]
        entries=[],
    )
    s3.put_object(Bucket="snapshots", Key="restores/r1/plan.json", Body=document.model_dump_json().encode())
    first, second = PlanFile("s3://snapshots/restores/r1/plan.json"), PlanFile("s3://snapshots/restores/r1/plan.json")
    mine, theirs = first.load(), second.load()
    mine.notes.append("first")
    first.save(mine)
    theirs.notes.append("second")
    with pytest.raises(PlanBusyError):
        second.save(theirs)
    assert first.load().notes == ["first"]


def test_the_verification_reuses_what_the_check_before_the_commit_read(
    scene: Callable[..., Restored], target: KafkaCluster
) -> None:
    """Issue 40: apply read every anchor twice (before the commit and in the verification): on a dense
    or compressed topic, the whole topic twice. The records of a partition that is still the same log
    (topic id, leader epoch, log start) are reused: one read in the whole apply."""
    s = scene({"a": {0: 50, 1: 60}, "b": {0: 30, 1: 90}})
    plan = s.plan()
    wanted: dict[TP, set[int]] = {}
    for entry in plan.entries:
        wanted.setdefault(entry.target, set()).update(checked_offsets(entry))
    assert sum(map(len, wanted.values())) >= 4
    before = target.fetched_bytes
    records_at(target, wanted)
    once = target.fetched_bytes - before
    before = target.fetched_bytes
    report = apply_plan(plan, target, ApplyOptions(wait_timeout_s=0), lambda p: None)
    used = target.fetched_bytes - before
    assert report.verified == 4 and report.verify_failed == [] and {e.verified for e in plan.entries} == {True}
    assert once > 0 and used < 1.5 * once, (used, once)  # before: twice


def test_a_topic_created_again_between_the_check_and_the_verification_is_read_again(
    scene: Callable[..., Restored], target: KafkaCluster
) -> None:
    """The restore run again while apply commits: the topic deleted, created again and refilled with other
    records at the same offsets. Its id is new, so the verification reads it again instead of trusting
    what it read before the commit, and says the group did not verify."""
    s = scene({"a": {0: 50}})
    plan = s.plan()
    done: list[bool] = []

    def restore_again() -> None:
        if done:
            return
        done.append(True)
        target._admin.delete_topics([s.topic])
        deadline = time.monotonic() + 30
        while True:
            try:
                target.create_topics({s.topic: 2})
                break
            except Exception:  # the deletion is still under way
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        for p in range(2):
            fake = [Produced(o + 1000, b"k", b"v", (), 1_700_000_000_000 + o) for o in range(100)]
            deadline = time.monotonic() + 30
            while True:
                try:
                    restore(target, s.topic, p, fake)
                    break
                except Exception:  # the new topic's leader is not elected yet
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)

    report = apply_plan(plan, target, ApplyOptions(wait_timeout_s=0), lambda p: None, before_write=restore_again)
    assert done and report.groups_committed == [s.groups["a"]]
    [failed] = report.verify_failed
    assert "another record is there" in failed or re.search(r"carries source offset 1\d{3}, the plan read", failed)
    assert report.verified == 0
    # The offsets it replaced are on record (the group had none): the way back is still there.
    assert all(e.previous_recorded and e.previous_target_offset is None for e in plan.entries)
    back = rollback_plan(plan, target, lambda p: None)
    assert back.groups_committed == [s.groups["a"]] and s.offsets("a") == {}
