"""``"mode": "migrate"`` through the state machine (moto's interpreter, the real handlers) on Apache Kafka
(issue 35): a consumer runs on the source until the migration has started, the replica brings the last
records after the final snapshot; the run waits for both and commits every group-partition exactly. A
group that never stops fails the run, named, with nothing written."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from offset_restore.devtools.local_aws import Workflow
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.stores.storage import S3Store

from tests.helpers import Brokers, active_member, commit, produce, restore, unique
from tests.integration.test_failback import planned_back
from tests.integration.test_migrate import Migrating, consuming


def _input(migrating: Migrating, timeout_s: int, **more: object) -> dict[str, object]:
    return {
        "mode": "migrate",
        "groups": f"{migrating.prefix}-.*",
        "wait": {"timeout_seconds": timeout_s, "interval_seconds": 1},
        "pending_retries": 20,
        "pending_interval_seconds": 1,
        **more,
    }


def test_a_migration_waits_for_the_consumers_and_the_replica_then_commits_every_group_exactly(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, tmp_path: Path
) -> None:
    migrating = Migrating(brokers, source, target, tmp_path)
    live = f"{migrating.prefix}-live"
    stop = threading.Event()
    with consuming(brokers.source.bootstrap_servers, live, migrating.topic, stop):
        deadline = time.monotonic() + 20
        while len(source.committed_offsets([live])[live]) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        scheduled = SnapshotOptions(groups=f"{migrating.prefix}-.*", cluster="src")  # the schedule's, while it runs
        run_snapshot(brokers.source_settings, S3Store("offset-restore", "", workflow.s3), scheduled)
        time.sleep(0.5)
        threading.Timer(2.5, stop.set).start()
        late = migrating.copy_the_rest(5.0)
        result = workflow.run(_input(migrating, 60), name="migrate-1", timeout_s=180)
        late.join()
    assert result["status"] == "SUCCEEDED", result.get("cause")
    states = result["states"]
    assert {"SourceStopped", "WaitForSource", "FinalSnapshot", "WaitForRestore", "Commit"} <= set(states), states
    groups = [*migrating.static, live]
    truth = migrating.truth(groups)
    assert len(truth) == 8 and migrating.on_target(groups) == truth
    report = workflow.report("migrate-1")
    assert report["outcome"] == "applied" and all(e["exact"] for e in report["entries"]), report["summary"]
    assert {e["status"] for e in report["entries"]} == {"committed"}
    assert report["summary"]["groups_live"] == 0 and {e["exposure"] for e in report["entries"]} == {0}


def test_a_group_that_never_stops_fails_the_migration_named_and_nothing_is_written(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, tmp_path: Path
) -> None:
    migrating = Migrating(brokers, source, target, tmp_path)
    migrating.copy_the_rest(0).join()
    stuck = f"{migrating.prefix}-stuck"
    commit(source, stuck, {TP(migrating.topic, 0): 50})
    with active_member(brokers.source.bootstrap_servers, stuck, migrating.topic):
        result = workflow.run(_input(migrating, 2), name="migrate-stuck", timeout_s=120)
        assert result["status"] == "FAILED"
        assert f"still have members on the source after 2 s: {stuck}" in str(result.get("cause")), result
        assert "Prepare" not in result["states"] and migrating.on_target([*migrating.static, stuck]) == {}
        result = workflow.run(_input(migrating, 2, on_wait_timeout="commit_empty"), name="migrate-others")
    assert result["status"] == "SUCCEEDED", result.get("cause")
    groups = list(migrating.static)
    assert migrating.on_target(groups) == migrating.truth(groups) and migrating.on_target([stuck]) == {}
    report = workflow.report("migrate-others")  # the group left behind is said, not silently dropped
    assert report["outcome"] == "applied, needs attention", report["outcome"]
    assert report["attention"]["left_on_source"]["groups"] == [stuck], report["attention"]


def test_a_failback_carries_the_groups_that_ran_on_the_dr_back_to_the_primary_exactly(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow
) -> None:
    """The deployment's source is the DR cluster (a restore of the primary's records 20..189, each with
    its primary offset in x-source-offset, then 20 records produced on the DR), its target the primary. A
    consumer ran on the DR until the failback started; every group resumes on the primary at the record
    after the last one it processed there, by the origin strategy: DR offset c is primary offset c + 20,
    and a group past the DR's own records resumes at 190 (after the last restored one; the primary's
    190..199 were never on the DR)."""
    dr, primary, topic, prefix = source, target, unique("ledger"), unique("back")
    primary.create_topics({topic: 2})
    dr.create_topics({topic: 2})
    for p in range(2):
        restore(dr, topic, p, produce(primary, topic, p, 200), keep=lambda r: 20 <= r.offset < 190)
        produce(dr, topic, p, 20, start_offset=170, headers=[("born-on", b"dr")], base_timestamp=1_710_000_000_000)
    static = {f"{prefix}-inside": {0: 77, 1: 3}, f"{prefix}-caught-up": {0: 190, 1: 180}, f"{prefix}-start": {0: 0}}
    for group, offsets in static.items():
        commit(dr, group, {TP(topic, p): o for p, o in offsets.items()})
    live, stop = f"{prefix}-live", threading.Event()
    with consuming(brokers.source.bootstrap_servers, live, topic, stop):
        deadline = time.monotonic() + 20
        while len(dr.committed_offsets([live])[live]) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        threading.Timer(2.0, stop.set).start()
        result = workflow.run(
            {"mode": "migrate", "groups": f"{prefix}-.*", "wait": {"interval_seconds": 1}}, name="back-1"
        )
    assert result["status"] == "SUCCEEDED", result.get("cause")
    groups = [*static, live]
    final = dr.committed_offsets(groups)
    truth = {(g, tp.partition): min(c.offset + 20, 190) for g in groups for tp, c in final[g].items()}
    committed = primary.committed_offsets(groups)
    assert {(g, tp.partition): c.offset for g in groups for tp, c in committed[g].items()} == truth
    report = workflow.report("back-1")
    assert {(e["method"], e["exact"], e["status"]) for e in report["entries"]} == {("origin", True, "committed")}


def test_a_migration_whose_target_does_not_catch_up_commits_only_the_exact_groups_with_commit_empty(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, tmp_path: Path
) -> None:
    migrating = Migrating(brokers, source, target, tmp_path)  # the replica never brings offsets 150..199
    failed = workflow.run(_input(migrating, 5, pending_retries=1), name="migrate-short")
    assert failed["status"] == "FAILED" and "NotCaughtUp" in failed["states"], failed["states"]
    assert "TargetNotCaughtUp" in str(failed.get("error")) and migrating.on_target(list(migrating.static)) == {}
    result = workflow.run(_input(migrating, 5, pending_retries=1, on_wait_timeout="commit_empty"), name="migrate-part")
    assert result["status"] == "SUCCEEDED", result.get("cause")
    caught_up, inside, near = migrating.static
    assert migrating.on_target([inside]) == migrating.truth([inside]) and migrating.on_target([caught_up, near]) == {}
    report = workflow.report("migrate-part")
    assert report["outcome"] == "applied, needs attention"
    assert sorted(report["attention"]["not_exact"]["groups"]) == sorted([caught_up, near]), report["attention"]


def test_a_failback_over_a_dr_restored_out_of_order_answers_as_the_cli_and_writes_only_what_is_exact(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, tmp_path: Path
) -> None:
    """The DR's restore was written as parallel workers write (primary 0..49, 60..69, 50..59, 70..99): the
    workflow's failback (mode migrate) reads the DR partition whole in its final snapshot, as the CLI's does,
    gives every group the CLI's answer, and writes only the groups that are exact — each at the first primary
    record it had not processed (a group at 55 resumed at 65 before, never reading 50..59)."""
    dr, primary, topic, prefix = source, target, unique("ledger-order"), unique("back-order")
    primary.create_topics({topic: 1})
    dr.create_topics({topic: 1})
    layout = [*range(50), *range(60, 70), *range(50, 60), *range(70, 100)]
    records = produce(primary, topic, 0, 100)
    restore(dr, topic, 0, [records[o] for o in layout])
    at = {f"{prefix}-{c}": c for c in range(0, 101, 5)}
    for group, c in at.items():
        commit(dr, group, {TP(topic, 0): c})
    run_input = {"mode": "migrate", "groups": f"{prefix}-.*", "wait": {"interval_seconds": 1},
                 "pending_retries": 0, "on_wait_timeout": "commit_empty"}  # fmt: skip
    result = workflow.run(run_input, name="back-order")
    assert result["status"] == "SUCCEEDED", result.get("cause")
    flow = {e["group"]: e for e in workflow.report("back-order")["entries"]}
    cli = {e.group: e for e in planned_back(brokers, tmp_path, f"{prefix}-.*", "cli")}
    assert {g: (e["target_offset"], e["exact"]) for g, e in flow.items()} == {
        g: (e.target_offset, e.exact) for g, e in cli.items()
    }
    committed = primary.committed_offsets(list(at))
    for group, c in at.items():
        truth = min(x for x in range(101) if x not in set(layout[:c]))
        written = committed.get(group, {}).get(TP(topic, 0))
        if flow[group]["exact"]:
            assert written is not None and written.offset == truth, (c, written, truth)
        else:
            assert written is None and flow[group]["target_offset"] <= truth, (c, flow[group])
    assert sum(e["exact"] for e in flow.values()) >= 15, flow


def test_a_group_started_again_on_the_source_after_the_final_snapshot_is_not_moved_by_the_workflow(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, tmp_path: Path
) -> None:
    """While the run translates again for the replica's last records, one group's consumer runs on the source
    for 30 more records and stops, another's starts and keeps running. Before, the commit wrote both at the
    final snapshot's positions as exact. Now the SourceRecheck state looks at the source right before the
    Commit Map: both are held, named in the report, and only the group that stayed stopped moves."""
    migrating = Migrating(brokers, source, target, tmp_path)
    caught_up, inside, near = migrating.static
    late = migrating.copy_the_rest(5.0)
    try:
        with migrating.started_again(
            lambda: bool(workflow.s3.list_objects_v2(Bucket="offset-restore").get("KeyCount"))
        ) as joined:
            result = workflow.run(_input(migrating, 30), name="migrate-again", timeout_s=180)
            assert joined.is_set()
    finally:
        late.join()
    assert result["status"] == "SUCCEEDED", result.get("cause")
    assert {"FinalSnapshot", "WaitForRestore", "SourceRecheck", "Commit"} <= set(result["states"]), result["states"]
    assert migrating.on_target([caught_up]) == migrating.truth([caught_up])
    assert migrating.on_target([inside, near]) == {}
    report = workflow.report("migrate-again")
    assert report["outcome"] == "applied, needs attention", report["outcome"]
    held = {e["group"]: e["reason"] for e in report["entries"] if e["group"] in (inside, near)}
    assert set(held) == {inside, near} and all("started again on the source" in why for why in held.values()), held
    assert f"moved ({migrating.topic}-0: 120 -> 150)" in held[inside] and "(Stable, 1 members" in held[near]
