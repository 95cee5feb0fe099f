"""The workflow end to end: snapshot -> translate -> (wait until empty -> commit) -> report."""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path
from typing import Any

import boto3
import pytest
from offset_restore.apply.locks import TargetLock
from offset_restore.cli.main import main
from offset_restore.devtools.local_aws import REGION, Workflow
from offset_restore.devtools.local_broker import free_port
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.storage import S3Store
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.run import SnapshotChoice, run_plan
from offset_restore.workflow.executions import run_ending

from tests.figures import record
from tests.helpers import Brokers, Produced, active_member, commit, produce, restore, unique


def setup(brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow) -> dict[str, object]:
    topic = unique("flow")
    source.create_topics({topic: 2})
    records = {p: produce(source, topic, p, 50) for p in range(2)}
    a, b = unique("flow-a"), unique("flow-b")
    commit(source, a, {TP(topic, 0): 20, TP(topic, 1): 5})
    commit(source, b, {TP(topic, 0): 50})
    run_snapshot(
        brokers.source_settings,
        S3Store("offset-restore", "", workflow.s3),
        SnapshotOptions(groups=f"{a}|{b}", cluster="src"),
    )
    target.create_topics({topic: 2})
    for p in range(2):
        restore(target, topic, p, records[p], keep=lambda r: r.offset >= 10)
    return {"topic": topic, "a": a, "b": b}


def held_lock(target: KafkaCluster, newer_than: int = 0, timeout_s: float = 60) -> dict[str, Any]:
    """The target's lock item once a run holds it (with an expiry past ``newer_than``): what a test
    waits for, instead of sleeping while a run starts on a loaded machine."""
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    key = {"pk": {"S": f"LOCK#{target.cluster_id}"}, "sk": {"S": "LOCK"}}  # the brokers' id, not "dr"
    deadline = time.monotonic() + timeout_s
    while not (
        (item := dynamodb.get_item(TableName="offset-restore", Key=key).get("Item"))
        and int(item["expires_at"]["N"]) > newer_than
    ):
        assert time.monotonic() < deadline, f"no run holds the lock of the target after {timeout_s:g} s"
        time.sleep(0.1)
    return dict(item)


def test_plan_mode_maps_reports_and_releases_the_lock(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow
) -> None:
    s = setup(brokers, source, target, workflow)
    result = workflow.run({"groups": f"{s['a']}|{s['b']}", "mode": "plan"}, name="plan-run-1")
    assert result["status"] == "SUCCEEDED", result.get("cause")
    assert "ReportPlan" in result["states"] and "CheckEmpty" not in result["states"]
    report = workflow.report("plan-run-1")
    offsets = {(e["group"], e["partition"]): e["target_offset"] for e in report["entries"]}
    assert offsets == {(s["a"], 0): 10, (s["a"], 1): 0, (s["b"], 0): 40}
    assert report["outcome"] == "planned" and report["summary"]["exact"] == 3
    assert target.committed_offsets([str(s["a"])])[str(s["a"])] == {}
    assert any("plan-run-1: planned" in m for m in workflow.sns_queue)


def test_apply_mode_waits_for_an_active_group_then_commits_and_verifies(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow
) -> None:
    s = setup(brokers, source, target, workflow)
    stop, joined = threading.Event(), threading.Event()

    def consumer_for_a_while() -> None:
        with active_member(brokers.target.bootstrap_servers, str(s["b"]), str(s["topic"])):
            joined.set()
            stop.wait(8)  # from the join: the run's first states must meet it active on a loaded machine

    thread = threading.Thread(target=consumer_for_a_while)
    thread.start()
    assert joined.wait(60), "the consumer did not join the target"
    run_input = {
        "groups": f"{s['a']}|{s['b']}",
        "mode": "apply",
        "wait": {"timeout_seconds": 60, "interval_seconds": 1},
    }
    result = workflow.run(run_input, name="apply-run-1")
    thread.join()
    assert result["status"] == "SUCCEEDED", result.get("cause")
    assert result["states"].count("CheckEmpty") >= 2 and "WaitForEmpty" in result["states"]
    a, b = str(s["a"]), str(s["b"])
    assert {tp.partition: c.offset for tp, c in target.committed_offsets([a])[a].items()} == {0: 10, 1: 0}
    assert {tp.partition: c.offset for tp, c in target.committed_offsets([b])[b].items()} == {0: 40}
    report = workflow.report("apply-run-1")
    assert report["outcome"] == "applied" and report["statuses"] == {"committed": 3}
    assert all(e["verified"] for e in report["entries"])
    # The timeline, from the execution's own history: how long the run waited, and for whom.
    waits = [p for p in report["timeline"] if p["phase"] == "waiting for groups"]
    assert len(waits) == 1 and waits[0]["waited_for"] == [b] and waits[0]["seconds"] > 0
    assert [p["phase"] for p in report["timeline"]][-2:] == ["commit", "report"]


def test_bad_input_fails_the_first_state_and_touches_nothing(workflow: Workflow) -> None:
    result = workflow.run({"mode": "sideways", "groups": "("}, name="bad-input-1")
    assert result["status"] == "FAILED" and result["error"] == "BadInputError"
    assert "mode" in result["cause"] and "invalid groups regex" in result["cause"]
    assert result["states"] == ["ValidateInput"]
    assert workflow.s3.list_objects_v2(Bucket="offset-restore").get("KeyCount", 0) == 0


def test_an_unreachable_target_fails_before_the_lock_notifies_and_a_rerun_completes(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = setup(brokers, source, target, workflow)
    run_input = {
        "groups": f"{s['a']}|{s['b']}",
        "mode": "apply",
        "restore_id": "flaky-1",
        "wait": {"timeout_seconds": 10, "interval_seconds": 1},
    }
    monkeypatch.setenv("TARGET_BOOTSTRAP_SERVERS", f"127.0.0.1:{free_port()}")
    monkeypatch.setenv("KAFKA_CONNECT_TIMEOUT_S", "0.5")
    failed = workflow.run(run_input, name="flaky-1-attempt-1")
    assert failed["status"] == "FAILED" and failed["error"] == "ClusterUnreachableError"
    # The lock is keyed by the id the target's brokers report: an unreachable target fails the run at its
    # AcquireLock, before it holds anything (nothing to release, nothing left behind).
    assert failed["states"][-3:] == ["AcquireLock", "NotifyFailure", "Failed"], failed["states"]
    assert TargetLock.named("offset-restore", boto3.client("dynamodb", region_name=REGION), "dr", "x").holder() is None
    assert any("flaky-1: failed" in m and "ClusterUnreachableError" in m for m in workflow.sns_queue)
    monkeypatch.setenv("TARGET_BOOTSTRAP_SERVERS", brokers.target.bootstrap_servers)
    monkeypatch.setenv("KAFKA_CONNECT_TIMEOUT_S", "5")
    again = workflow.run(run_input, name="flaky-1-attempt-2")  # the lock was released: it runs
    assert again["status"] == "SUCCEEDED", again.get("cause")
    a = str(s["a"])
    assert {tp.partition: c.offset for tp, c in target.committed_offsets([a])[a].items()} == {0: 10, 1: 0}
    third = workflow.run(run_input, name="flaky-1-attempt-3")  # nothing is committed twice
    assert third["status"] == "SUCCEEDED"
    report = workflow.report("flaky-1")
    assert report["statuses"] == {"committed": 3}


def test_an_alarm_shaped_input_runs(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow
) -> None:
    """What the failover rule sends (infra/stack.py), with the event's fields filled in."""
    s = setup(brokers, source, target, workflow)
    alarm_input = {
        "mode": "plan",
        "wait": {"timeout_seconds": 1800, "interval_seconds": 15},
        "on_wait_timeout": "commit_empty",
        "trigger": {"alarm": "prod-primary-kafka-down", "time": "2026-11-29T21:00:00Z"},
        "groups": f"{s['a']}|{s['b']}",
    }
    result = workflow.run(alarm_input, name="alarm-prod-primary-kafka-down-1")
    assert result["status"] == "SUCCEEDED", result.get("cause")
    report = workflow.report("alarm-prod-primary-kafka-down-1")
    assert report["input"]["trigger"]["alarm"] == "prod-primary-kafka-down"


def test_two_runs_on_one_target_never_write_together(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow
) -> None:
    s = setup(brokers, source, target, workflow)
    run_input = {
        "groups": f"{s['a']}|{s['b']}",
        "mode": "apply",
        "wait": {"timeout_seconds": 30, "interval_seconds": 2},
    }
    with active_member(brokers.target.bootstrap_servers, str(s["b"]), str(s["topic"])):
        first = workflow.start({**run_input, "restore_id": "race-1"}, name="race-1")
        held_lock(target)  # the first run holds the lock and waits for the active group
        second = workflow.wait(workflow.start({**run_input, "restore_id": "race-2"}, name="race-2"))
        assert second["status"] == "FAILED" and second["error"] == "LockHeldError"
        assert "locked by run arn:" in second["cause"] and ":race-1 until" in second["cause"]  # the execution
        assert "Prepare" not in second["states"]
    first_result = workflow.wait(first)
    assert first_result["status"] == "SUCCEEDED", first_result.get("cause")
    a = str(s["a"])
    assert {tp.partition: c.offset for tp, c in target.committed_offsets([a])[a].items()} == {0: 10, 1: 0}
    third = workflow.run({**run_input, "restore_id": "race-2"}, name="race-2-again")  # the lock is free again
    assert third["status"] == "SUCCEEDED", third.get("cause")


def test_the_cli_and_the_workflow_exclude_each_other_on_one_target(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, tmp_path: Path
) -> None:
    """An operator's CLI apply and the deployed workflow lock the same item (the cluster id the target's
    brokers report), so whichever comes second is refused before it writes — also a CLI apply that names
    the cluster otherwise (``prod-dr``; before, keyed by the name, it wrote beside the run) — and the lock
    is gone when both are done."""
    s = setup(brokers, source, target, workflow)
    a, b = str(s["a"]), str(s["b"])
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    plan = str(tmp_path / "plan.json")
    run_plan(SnapshotChoice("s3://offset-restore"), brokers.target_settings, plan, PlanOptions(target_cluster="dr"))
    cli = ["apply", "--plan", plan, "--bootstrap-servers", brokers.target.bootstrap_servers, "--execute"]
    cli += ["--lock-table", "offset-restore", "--target-cluster", "dr", "--wait-timeout", "5"]
    run_input = {"groups": f"{a}|{b}", "mode": "apply", "wait": {"timeout_seconds": 30, "interval_seconds": 1}}

    with active_member(brokers.target.bootstrap_servers, b, str(s["topic"])):
        running = workflow.start({**run_input, "restore_id": "cli-race-1"}, name="cli-race-1")
        held_lock(target)  # the run holds the lock and waits for the active group
        out, err = io.StringIO(), io.StringIO()
        status = main(cli, out, err)
        assert status == 1 and ":cli-race-1 until" in err.getvalue(), err.getvalue()
        renamed = [*cli[: cli.index("--target-cluster") + 1], "prod-dr", *cli[cli.index("--target-cluster") + 2 :]]
        out, err = io.StringIO(), io.StringIO()
        assert main(renamed, out, err) == 1 and ":cli-race-1 until" in err.getvalue(), err.getvalue()
        assert not target.committed_offsets([a])[a]  # the CLI wrote nothing
    assert workflow.wait(running)["status"] == "SUCCEEDED"

    cli_lock = TargetLock("offset-restore", dynamodb, target.cluster_id, "cli:laptop:4242", name="dr")
    cli_lock.acquire()
    refused = workflow.run({**run_input, "restore_id": "cli-race-2"}, name="cli-race-2")
    assert refused["status"] == "FAILED" and "locked by run cli:laptop:4242" in refused["cause"]
    assert "Prepare" not in refused["states"]
    cli_lock.release()
    held = dynamodb.get_item(
        TableName="offset-restore", Key={"pk": {"S": f"LOCK#{target.cluster_id}"}, "sk": {"S": "LOCK"}}
    )
    record("concurrency", trial="CLI apply vs workflow run on one target", double_commits=0, correct="Item" not in held)
    assert "Item" not in held


def test_a_reused_restore_id_with_another_input_is_refused_before_anything_is_committed(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow
) -> None:
    """One restore id, one restore: a plan run over A|B, then an apply run with the same id over A
    alone (it would have committed B too: the commit list came from every mapping under the id), then
    one after a newer snapshot (it would have committed B's old mapping, 25 records back)."""
    s = setup(brokers, source, target, workflow)
    both = f"{s['a']}|{s['b']}"
    first = SnapshotRepository(S3Store("offset-restore", "", workflow.s3)).latest("src")[1].snapshot_id
    assert workflow.run({"restore_id": "reused", "groups": both, "mode": "plan"}, name="reused-1")["status"] == (
        "SUCCEEDED"
    )
    result = workflow.run({"restore_id": "reused", "groups": str(s["a"]), "mode": "apply"}, name="reused-2")
    message = json.loads(result["cause"])["errorMessage"]
    assert result["status"] == "FAILED" and "names a restore already made with another input" in message
    assert f'groups "{both}" then, "{s["a"]}" now' in message
    commit(source, str(s["b"]), {TP(str(s["topic"]), 0): 45})  # the group moved on; a newer snapshot
    run_snapshot(
        brokers.source_settings,
        S3Store("offset-restore", "", workflow.s3),
        SnapshotOptions(groups=both, cluster="src"),
    )
    result = workflow.run({"restore_id": "reused", "groups": both, "mode": "apply"}, name="reused-3")
    assert result["status"] == "FAILED" and "snapshot_id" in json.loads(result["cause"])["errorMessage"]
    assert "CommitBatches" not in result["states"] and "Commit" not in result["states"]
    assert not any(target.committed_offsets([str(s["a"]), str(s["b"])]).values())
    # The same input again (a run started over) is the same restore: it goes on.
    result = workflow.run(
        {"restore_id": "reused", "groups": both, "mode": "plan", "snapshot": {"id": first}}, name="reused-4"
    )
    assert result["status"] == "SUCCEEDED", result.get("cause")


def test_a_topic_map_onto_a_topic_the_group_also_reads_never_moves_it(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow
) -> None:
    """``zz-orders-old -> orders`` while the group also reads ``orders``: before, orders/0 was committed at
    35 (the old topic's position) where the group was at 10 — 25 records skipped, run SUCCEEDED. Now
    the renamed entry is unmapped, with why, and orders/0 gets the group's own position."""
    orders, old = unique("orders"), unique("zz-orders-old")
    source.create_topics({orders: 1, old: 1})
    records = produce(source, orders, 0, 50)
    produce(source, old, 0, 50)
    group = unique("reads-both")
    commit(source, group, {TP(orders, 0): 10, TP(old, 0): 35})
    run_snapshot(
        brokers.source_settings,
        S3Store("offset-restore", "", workflow.s3),
        SnapshotOptions(groups=group, cluster="src"),
    )
    target.create_topics({orders: 1})
    restore(target, orders, 0, records)
    result = workflow.run({"groups": group, "mode": "apply", "topic_map": {old: orders}}, name="collide-1")
    assert result["status"] == "SUCCEEDED", result.get("cause")
    assert target.committed_offsets([group])[group][TP(orders, 0)].offset == 10
    entries = {e["topic"]: e for e in workflow.report("collide-1")["entries"]}
    assert entries[old]["status"] == "unmapped" and "cannot hold both offsets" in entries[old]["reason"]
    assert entries[orders]["status"] == "committed"


def test_a_target_restored_again_after_the_plan_is_not_written(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow
) -> None:
    """Planned, then the target restored again with one record fewer at its start (and a new record
    after it, so every mapped offset still lies in the log): the commit step reads the plan's anchor
    records, by source offset (the restore's header, from the run's record) and timestamp, finds them
    changed and writes nothing — before, every group was committed one record too far."""
    s = setup(brokers, source, target, workflow)
    groups, topic = f"{s['a']}|{s['b']}", str(s["topic"])
    assert workflow.run({"restore_id": "refill", "groups": groups, "mode": "plan"}, name="refill-1")["status"] == (
        "SUCCEEDED"
    )
    target._admin.delete_topics([topic])
    time.sleep(0.3)
    target.create_topics({topic: 2})
    for p in range(2):
        fetched = source.fetch({TP(topic, p): 0}, partition_max_bytes=1 << 20)[TP(topic, p)].records
        copies = [
            Produced(r.offset, r.key or b"", r.value or b"", tuple((k, v or b"") for k, v in r.headers), r.timestamp)
            for r in fetched
        ]
        restore(target, topic, p, copies, keep=lambda r: r.offset >= 11)
        target.produce(topic, p, [(b"new", b"written after the restore", [], None)])
    result = workflow.run({"restore_id": "refill", "groups": groups, "mode": "apply"}, name="refill-2")
    assert not any(target.committed_offsets([str(s["a"]), str(s["b"])]).values())
    if result["status"] == "FAILED":  # the topic's id is new: the commit step refuses it by name
        assert f"target topic {topic} (topic id " in str(result.get("cause")), result.get("cause")
        assert "was deleted and created again since the plan" in str(result.get("cause"))
    else:  # a broker that gives no topic ids: the anchors tell the change, group by group
        reasons = {e["group"]: e["reason"] or "" for e in workflow.report("refill")["entries"]}
        assert all(f"the target changed since the plan: {topic}/" in reasons[str(g)] for g in (s["a"], s["b"])), reasons


def test_a_group_left_unwritten_is_named_in_the_table_the_report_and_the_notification(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow
) -> None:
    """commit_empty (what alarm runs use) gives up waiting on a group that stays active: it is not
    written — before, it stayed "mapped" without a reason, the report was clean and SNS said "applied"."""
    s = setup(brokers, source, target, workflow)
    a, b = str(s["a"]), str(s["b"])
    with active_member(brokers.target.bootstrap_servers, b, str(s["topic"])):
        result = workflow.run(
            {
                "groups": f"{a}|{b}",
                "mode": "apply",
                "wait": {"timeout_seconds": 2, "interval_seconds": 1},
                "on_wait_timeout": "commit_empty",
            },
            name="silent-1",
        )
    assert result["status"] == "SUCCEEDED", result.get("cause")
    assert target.committed_offsets([b])[b] == {} and target.committed_offsets([a])[a]
    report = workflow.report("silent-1")
    assert report["outcome"] == "applied, needs attention"
    assert report["attention"]["not_written"]["groups"] == [b]
    reasons = {e["reason"] for e in report["entries"] if e["group"] == b}
    assert reasons and all(r.startswith("not written: still active on the target") for r in reasons)
    assert any("silent-1: applied, needs attention" in m for m in workflow.sns_queue), workflow.sns_queue
    message = next(m for m in workflow.sns_queue if "silent-1" in m)
    assert "1 of 2 groups restored, safe to start" in message
    # b was not written; a's partition 1 resumes at the first restored record (source offsets 5..9 were lost).
    lost = "5 records the groups will not read (lost before the backup, or never restored)"
    assert f"needs attention: {lost}, 1 active on the target (not written)" in message
    assert report["safe_to_start"] == [a] and report["do_not_start_yet"][b]["held_by"] == "active"
    markdown = workflow.s3.get_object(Bucket="offset-restore", Key="restores/silent-1/report.md")["Body"].read()
    assert b"## Not written (1 group)" in markdown and b.encode() in markdown


def test_the_lock_is_the_deployments_target_and_each_execution_its_own_owner(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow
) -> None:
    """A run whose input names the target with a typo is refused before the lock (it would run against
    this deployment's target under another name; before the lock was keyed on the input's name, it
    committed while another run held the real lock). Two executions of one restore id are two owners:
    before, both held it. The lock is renewed at every wait poll."""
    s = setup(brokers, source, target, workflow)
    run_input = {
        "groups": f"{s['a']}|{s['b']}",
        "mode": "apply",
        "wait": {"timeout_seconds": 30, "interval_seconds": 1},
    }
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    lock_key = {"pk": {"S": f"LOCK#{target.cluster_id}"}, "sk": {"S": "LOCK"}}  # the brokers' id, not "dr"
    with active_member(brokers.target.bootstrap_servers, str(s["b"]), str(s["topic"])):
        patient = {**run_input, "wait": {"timeout_seconds": 300, "interval_seconds": 1}}
        first = workflow.start({**patient, "restore_id": "owners"}, name="owners-1")
        expiry = int(held_lock(target)["expires_at"]["N"])
        typo = workflow.wait(
            workflow.start({**run_input, "restore_id": "owners-typo", "target_cluster": "dr-typo"}, name="owners-2")
        )
        same_id = workflow.wait(workflow.start({**patient, "restore_id": "owners"}, name="owners-3"))
        assert typo["status"] == "FAILED" and "AcquireLock" not in typo["states"], typo["states"]
        assert "target_cluster 'dr-typo' is not this deployment's target ('dr')" in typo["cause"], typo["cause"]
        assert same_id["status"] == "FAILED" and same_id["error"] == "LockHeldError", same_id.get("cause")
        assert ":owners-1 until" in same_id["cause"] and "Prepare" not in same_id["states"]
        assert held_lock(target, newer_than=expiry)  # the waiting run's polls push the expiry out
    assert workflow.wait(first)["status"] == "SUCCEEDED"
    assert "Item" not in dynamodb.get_item(TableName="offset-restore", Key=lock_key)


def test_a_report_that_cannot_be_written_does_not_fail_a_complete_commit(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Everything committed and verified, then the report step fails (here: its topic is gone). It is
    retried; then the run still ends SUCCEEDED, its output naming the report's failure, and the lock is
    released — before, the run was FAILED and SNS said failed although everything was done. Not in
    silence: ``start`` exits 3 saying so, and the Report function's ReportFailed count pages through
    CloudWatch (tests/infra)."""
    s = setup(brokers, source, target, workflow)
    monkeypatch.setenv("TOPIC_ARN", "arn:aws:sns:eu-west-1:123456789012:no-such-topic")
    result = workflow.run({"groups": f"{s['a']}|{s['b']}", "mode": "apply"}, name="report-fails")
    assert result["status"] == "SUCCEEDED", result.get("cause")
    assert result["states"].count("ReportApply") == 1 and "ReleaseLock" in result["states"]
    output = json.loads(result["output"])
    assert output["report_error"]["Error"] == "NotFoundException" and "Publish" in output["report_error"]["Cause"]
    status, lines = run_ending(result)  # what offset-restore start then says: not a clean success
    assert status == 3 and "its report or notification was not written" in lines[1], lines
    a = str(s["a"])
    assert {tp.partition: c.offset for tp, c in target.committed_offsets([a])[a].items()} == {0: 10, 1: 0}
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    assert "Item" not in dynamodb.get_item(
        TableName="offset-restore", Key={"pk": {"S": f"LOCK#{target.cluster_id}"}, "sk": {"S": "LOCK"}}
    )


def test_the_execution_input_chooses_the_order_check(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow
) -> None:
    """``order_check: full`` reaches translation: every partition is read whole (each entry says so);
    an unknown value is refused in the first state."""
    s = setup(brokers, source, target, workflow)
    result = workflow.run({"groups": f"{s['a']}|{s['b']}", "mode": "plan", "order_check": "full"}, name="full-1")
    assert result["status"] == "SUCCEEDED", result.get("cause")
    entries = workflow.report("full-1")["entries"]
    assert entries and all("checked by reading all" in (e["reason"] or "") for e in entries)
    assert {(e["group"], e["partition"]): e["target_offset"] for e in entries} == {
        (s["a"], 0): 10,
        (s["a"], 1): 0,
        (s["b"], 0): 40,
    }
    refused = workflow.run({"groups": str(s["a"]), "order_check": "sometimes"}, name="full-2")
    assert refused["status"] == "FAILED" and "order_check" in refused["cause"]
