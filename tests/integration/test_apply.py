"""Apply and rollback against the real target broker: DESIGN §6's promises, one test each."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from offset_restore.apply import ApplyOptions, apply_plan
from offset_restore.apply_run import PlanFile
from offset_restore.cli import main
from offset_restore.cluster_types import TP, GroupInfo, PartitionFetch
from offset_restore.kafka_adapter import KafkaCluster
from offset_restore.plan_model import Plan
from offset_restore.plan_run import SnapshotChoice, run_plan
from offset_restore.snapshot import SnapshotOptions
from offset_restore.snapshot_run import run_snapshot
from offset_restore.storage import open_location
from offset_restore.translate import PlanOptions

from tests.helpers import Brokers, active_member, commit, produce, restore, unique


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
            *extra,
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
        assert f"skipped: {s.groups['busy']}: still active on the target (Stable, 1 members)" in out
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


def test_no_rewind_without_the_flag(scene: Callable[..., Restored], target: KafkaCluster) -> None:
    s = scene({"ahead": {0: 30, 1: 30}})
    commit(target, s.groups["ahead"], {TP(s.topic, 0): 70, TP(s.topic, 1): 5})
    status, out, _ = s.apply()
    assert status == 3 and "1 partitions not rewound" in out
    assert s.offsets("ahead") == {0: 70, 1: 20}
    entry = next(e for e in s.plan().entries if e.partition == 0)
    assert entry.status == "skipped" and "already at 70" in (entry.reason or "")


def test_rewind_with_the_flag_then_rollback_restores_and_deletes(
    scene: Callable[..., Restored], target: KafkaCluster
) -> None:
    s = scene({"ahead": {0: 30, 1: 30}, "fresh": {0: 50}})
    commit(target, s.groups["ahead"], {TP(s.topic, 0): 70, TP(s.topic, 1): 5})
    status, _, _ = s.apply("--allow-rewind")
    assert status == 0 and s.offsets("ahead") == {0: 20, 1: 20} and s.offsets("fresh") == {0: 40}
    status, out, _ = run(
        "rollback", "--plan", str(s.plan_path), "--bootstrap-servers", s.brokers.target.bootstrap_servers
    )
    assert status == 0, out
    assert s.offsets("ahead") == {0: 70, 1: 5}
    assert s.offsets("fresh") == {}  # created by the apply: deleted
    assert {e.status for e in s.plan().entries} == {"mapped"}


def test_dry_run_changes_nothing(scene: Callable[..., Restored]) -> None:
    s = scene({"a": {0: 50}})
    before = s.plan_path.read_text()
    status, out, _ = s.apply("--dry-run")
    assert status == 0 and f"{s.groups['a']} {s.topic}/0: none -> 40" in out
    assert s.offsets("a") == {} and s.plan_path.read_text() == before


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
    status, _, err = run("apply", "--plan", str(other), "--bootstrap-servers", s.brokers.target.bootstrap_servers)
    assert status == 2 and "the plan is for target cluster some-other-cluster" in err
    document["entries"][0]["partition"] = -1
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(document))
    status, _, err = run("apply", "--plan", str(broken), "--bootstrap-servers", s.brokers.target.bootstrap_servers)
    assert status == 2 and "is invalid at entries.0.partition" in err
    status, _, err = run(
        "apply", "--plan", str(s.plan_path), "--bootstrap-servers", "127.0.0.1:9", "--connect-timeout", "1"
    )
    assert status == 1 and "cannot reach Kafka" in err
    assert s.offsets("a") == {}


def test_a_record_that_is_not_the_expected_one_fails_verification_by_name(scene: Callable[..., Restored]) -> None:
    s = scene({"a": {0: 50, 1: 5}, "b": {0: 100}})
    document = json.loads(s.plan_path.read_text())
    wrong = next(e for e in document["entries"] if e["expected_fingerprint"])
    wrong["expected_fingerprint"] = "0" * len(wrong["expected_fingerprint"])
    s.plan_path.write_text(json.dumps(document))
    status, out, err = s.apply()
    assert status == 1, out + err
    assert "1 did not verify" in out and "another record is there" in out + err
    verified = {(e.group, e.partition): e.verified for e in s.plan().entries}
    assert verified[(wrong["group"], wrong["partition"])] is False
    assert sum(1 for v in verified.values() if v) == len(verified) - 1


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
            entry["target_offset"] = 10**9  # the target changed under the unwritten group
    s.plan_path.write_text(json.dumps(document))
    status, _, err = s.apply()
    assert status == 2 and "lie outside the target's logs now" in err
    status, out, err = run(
        "rollback", "--plan", str(s.plan_path), "--bootstrap-servers", s.brokers.target.bootstrap_servers
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
