"""The target's fence through the state machine (moto's interpreter, the real handlers, real brokers): a run
whose lock was broken by `unlock` while its commit was in flight, a Lambda frozen between its lease check
and its write, and a writer of another deployment (its own lock table) — in each the final offsets are one
writer's, the run that lost the fence wrote nothing after it and says so, and a rollback undoes exactly what
was replaced."""

from __future__ import annotations

import io
from pathlib import Path

import boto3
import pytest
from offset_restore.apply.locks import TargetLock
from offset_restore.cli.main import main
from offset_restore.devtools.local_aws import REGION, TABLE, Workflow, create_table
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import S3Store
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.run import SnapshotChoice, run_plan
from offset_restore.workflow.executions import run_ending

from tests.e2e.test_workflow import setup
from tests.e2e.test_workflow_guard_rails import held_commit, offsets
from tests.helpers import Brokers, commit


def older_and_newer(brokers: Brokers, source: KafkaCluster, workflow: Workflow, s: dict[str, object]) -> str:
    """The setup's snapshot (its id returned), then a newer one where group a moved on: two runs from the
    two write different offsets, so the target says whose write stands."""
    store = S3Store("offset-restore", "", workflow.s3)
    older = SnapshotRepository(store).latest("src")[1].snapshot_id
    a, b, topic = str(s["a"]), str(s["b"]), str(s["topic"])
    commit(source, a, {TP(topic, 0): 30, TP(topic, 1): 5})
    run_snapshot(brokers.source_settings, store, SnapshotOptions(groups=f"{a}|{b}", cluster="src"))
    return older


def lost_the_fence(workflow: Workflow, execution: str, restore_id: str) -> None:
    """The run that lost the fence failed, named why, recorded nothing as committed and never says safe."""
    ended = workflow.wait(execution)
    assert ended["status"] == "FAILED" and ended["error"] == "WriterFencedError", (ended["error"], ended.get("cause"))
    assert "another offset-restore writer took this cluster's write fence" in ended["cause"]
    assert "nothing of it was written" in ended["cause"]
    entries = MappingStore(TABLE, boto3.client("dynamodb", region_name=REGION)).entries(restore_id)
    assert not any(e.status == "committed" for e in entries), [e.status for e in entries]
    report = workflow.report(restore_id)
    assert report["outcome"] == "failed" and "0 of 2 groups restored" in report["headline_text"]
    assert any(f"{restore_id}: failed" in m and "WriterFencedError" in m for m in workflow.sns_queue)
    assert run_ending(ended)[0] == 1


@pytest.mark.parametrize("held_at", ["alter_offsets_many", "_add_groups"])
def test_a_run_whose_lock_unlock_broke_writes_nothing_after_the_next_run(
    brokers: Brokers,
    source: KafkaCluster,
    target: KafkaCluster,
    workflow: Workflow,
    monkeypatch: pytest.MonkeyPatch,
    held_at: str,
) -> None:
    """Run 1's commit is in flight (held before its write, or after its lease check right before the first
    request of its transaction: a Lambda frozen there). The operator runs `offset-restore unlock --owner` on
    it; run 2 takes the lock and the fence and commits the newer positions. Before, run 1's held commit then
    overwrote them. Now the cluster refuses it: run 2's offsets stay, run 1 fails naming the fence, and a
    rollback of run 1 changes nothing (it wrote nothing)."""
    s = setup(brokers, source, target, workflow)
    a, b = str(s["a"]), str(s["b"])
    older = older_and_newer(brokers, source, workflow, s)
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    run_input = {"groups": f"{a}|{b}", "mode": "apply"}
    with held_commit(monkeypatch, lambda: None, at=held_at) as in_flight:
        first = workflow.start({**run_input, "restore_id": "unlocked-1", "snapshot": {"id": older}}, name="unlocked-1")
        assert in_flight.wait(60), (lambda d: (d["states"], d.get("cause")))(workflow.wait(first, timeout_s=1))
        lock = TargetLock.named(TABLE, dynamodb, "dr", "operator")
        held = lock.holder()
        assert held is not None and held[0] == first
        assert lock.break_lock(held[0])  # offset-restore unlock --owner <run 1>
        second = workflow.run({**run_input, "restore_id": "unlocked-2"}, name="unlocked-2")
        assert second["status"] == "SUCCEEDED", second.get("cause")
        written = offsets(target, a), offsets(target, b)
        assert written == ({0: 20, 1: 0}, {0: 40})  # the newer positions
    lost_the_fence(workflow, first, "unlocked-1")
    assert (offsets(target, a), offsets(target, b)) == written

    rolled = workflow.run({"restore_id": "unlocked-1", "mode": "rollback", "groups": ".*"}, name="unlocked-1-rb")
    assert rolled["status"] == "SUCCEEDED", rolled.get("cause")
    assert (offsets(target, a), offsets(target, b)) == written  # run 1 wrote nothing: nothing to undo


def test_a_writer_of_another_deployment_fences_the_run_and_its_rollback_restores_what_it_replaced(
    brokers: Brokers,
    source: KafkaCluster,
    target: KafkaCluster,
    workflow: Workflow,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Two deployments on one cluster, each with its own lock table: stack A's run holds A's lock and its
    commit is in flight when stack B's operator applies a plan of the newer snapshot (B's table knows
    nothing of A's run). B writes; A's held commit is then refused by the cluster and A fails saying so.
    B's rollback puts back exactly what B replaced: the offsets from before both."""
    s = setup(brokers, source, target, workflow)
    a, b = str(s["a"]), str(s["b"])
    older = older_and_newer(brokers, source, workflow, s)
    before = offsets(target, a), offsets(target, b)
    other_table = create_table(boto3.client("dynamodb", region_name=REGION), "offset-restore-stack-b")
    plan = str(tmp_path / "plan.json")
    run_plan(SnapshotChoice("s3://offset-restore"), brokers.target_settings, plan, PlanOptions(target_cluster="dr"))
    cli = ["--plan", plan, "--bootstrap-servers", brokers.target.bootstrap_servers, "--execute"]
    cli += ["--lock-table", other_table, "--target-cluster", "dr"]
    run_input = {"groups": f"{a}|{b}", "mode": "apply", "restore_id": "stack-a-1", "snapshot": {"id": older}}
    with held_commit(monkeypatch, lambda: None) as in_flight:
        first = workflow.start(run_input, name="stack-a-1")
        assert in_flight.wait(60)
        out, err = io.StringIO(), io.StringIO()
        assert main(["apply", *cli], out, err) == 0, err.getvalue()
        written = offsets(target, a), offsets(target, b)
        assert written == ({0: 20, 1: 0}, {0: 40})
    lost_the_fence(workflow, first, "stack-a-1")
    assert (offsets(target, a), offsets(target, b)) == written

    out, err = io.StringIO(), io.StringIO()
    assert main(["rollback", *cli], out, err) == 0, err.getvalue()
    assert (offsets(target, a), offsets(target, b)) == before
