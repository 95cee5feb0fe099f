"""Issue 36's cases through the state machine (moto's interpreter, the real handlers, real brokers): a
run whose lock was taken during a slow commit, an execution stopped while its commit was in flight, and a
commit whose save failed. In each the target, the DynamoDB record, the report and what ``start`` would exit
with agree."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from offset_restore.apply.locks import TargetLock
from offset_restore.devtools.local_aws import REGION, TABLE, Workflow
from offset_restore.errors import CommitInterruptedError
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.fence import Fences
from offset_restore.kafka.model import TP
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import S3Store
from offset_restore.workflow.executions import run_ending

from tests.e2e.test_workflow import setup
from tests.helpers import Brokers, commit


def offsets(target: KafkaCluster, group: str) -> dict[int, int]:
    return {tp.partition: c.offset for tp, c in target.committed_offsets([group])[group].items()}


@contextmanager
def held_commit(
    monkeypatch: pytest.MonkeyPatch, then: Callable[[], None], at: str = "alter_offsets_many"
) -> Iterator[threading.Event]:
    """The first call of ``Fences.<at>`` in the test (by default the write of group offsets; ``_add_groups``:
    once the lease was checked, right before the first request of the write's transaction) is held in flight
    (a slow cluster, a frozen Lambda) until the event yielded is set; ``then`` runs when it is let go (fail
    it, or send it). Every later call goes as it would."""
    entered, release = threading.Event(), threading.Event()
    original = getattr(Fences, at)
    calls: list[int] = []

    def slow(self: Fences, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            entered.set()
            assert release.wait(90), "the test never let the held commit go"
            then()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Fences, at, slow)
    yield entered
    release.set()


def wait_for(predicate: Callable[[], bool], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_a_run_whose_lock_was_taken_during_a_slow_commit_writes_nothing_more(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run 1 (an older snapshot) sends its commit; the cluster is slow and the attempt fails after its
    lock's lease ran out — played by moving the lock's expiry into the past, which is what a commit phase
    longer than the 20-minute lease does. Run 2 takes the lock and commits the newer positions. Before, run
    1's retry wrote its older offsets over run 2's and recorded run 2's as its "previous" ones. Now the
    retry renews the lock first, finds it run 2's and fails LockLostError: run 2's offsets stay; run 1's
    record, report and notification say it failed and wrote nothing it could not vouch for."""
    s = setup(brokers, source, target, workflow)
    a, b, topic = str(s["a"]), str(s["b"]), str(s["topic"])
    store = S3Store("offset-restore", "", workflow.s3)
    older = SnapshotRepository(store).latest("src")[1].snapshot_id
    commit(source, a, {TP(topic, 0): 30, TP(topic, 1): 5})  # the source moved on: a newer snapshot
    run_snapshot(brokers.source_settings, store, SnapshotOptions(groups=f"{a}|{b}", cluster="src"))
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    lock_key = {"pk": {"S": f"LOCK#{target.cluster_id}"}, "sk": {"S": "LOCK"}}

    def slow_cluster() -> None:
        raise CommitInterruptedError("committing offsets: the cluster did not answer (after 4 attempts)", {}, [a, b])

    run_input = {"groups": f"{a}|{b}", "mode": "apply"}
    with held_commit(monkeypatch, slow_cluster) as in_flight:
        first = workflow.start({**run_input, "restore_id": "slow-1", "snapshot": {"id": older}}, name="slow-1")
        assert in_flight.wait(60), (lambda d: (d["states"], d.get("cause")))(workflow.wait(first, timeout_s=1))
        dynamodb.update_item(  # the lease ran out while the commit was in flight
            TableName=TABLE,
            Key=lock_key,
            UpdateExpression="SET expires_at = :past",
            ExpressionAttributeValues={":past": {"N": str(int(time.time()) - 1)}},
        )
        second = workflow.run({**run_input, "restore_id": "slow-2"}, name="slow-2")
        assert second["status"] == "SUCCEEDED", second.get("cause")
        assert offsets(target, a) == {0: 20, 1: 0} and offsets(target, b) == {0: 40}
    ended = workflow.wait(first)
    assert ended["status"] == "FAILED" and ended["error"] == "LockLostError", ended.get("cause")
    assert ":slow-1's" in ended["cause"] and "CommitBatch" in ended["states"]
    assert offsets(target, a) == {0: 20, 1: 0} and offsets(target, b) == {0: 40}  # run 2's, untouched
    entries = MappingStore(TABLE, dynamodb).entries("slow-1")
    assert {e.status for e in entries} == {"mapped"} and not any(e.status == "committed" for e in entries)
    report = workflow.report("slow-1")
    assert report["outcome"] == "failed" and "0 of 2 groups restored" in report["headline_text"]
    assert any("slow-1: failed" in m and "LockLostError" in m for m in workflow.sns_queue)
    assert run_ending(ended)[0] == 1
    assert "Item" not in dynamodb.get_item(TableName=TABLE, Key=lock_key)  # run 2 released; run 1 left none


def test_an_execution_stopped_while_its_commit_is_in_flight_frees_the_target_and_its_lambda_writes_nothing(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run 1 (an older snapshot) is stopped while its write is in flight; a stopped execution's Lambda keeps
    running. The release rule's call (the event infra/triggers.py sends, through the real Lock handler)
    releases its lock at once: the target keeps the write fence, so run 2 — started right away, as a
    failover would be — takes it and commits the newer positions, and run 1's Lambda, let go after, is
    refused by the brokers and writes nothing. Before the fence, the lock stood as a 16-minute fence."""
    from offset_restore_handlers.lock import handler

    from tests.e2e.test_workflow_fence import older_and_newer
    from tests.helpers import LambdaContext

    s = setup(brokers, source, target, workflow)
    a, b = str(s["a"]), str(s["b"])
    older = older_and_newer(brokers, source, workflow, s)
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    run_input = {"groups": f"{a}|{b}", "mode": "apply"}
    with held_commit(monkeypatch, lambda: None) as in_flight:
        first = workflow.start({**run_input, "restore_id": "stopped-1", "snapshot": {"id": older}}, name="stopped-1")
        assert in_flight.wait(60)
        workflow.sfn.stop_execution(executionArn=first, cause="an operator stopped it")
        # EventBridge then sends the release rule's event (ABORTED): the execution's last state is CommitBatch.
        rule = {"action": "release", "restore_id": "stopped-1", "target_cluster": "dr", "owner": first, "ended": True}
        done = handler(rule, LambdaContext())
        assert done == {"lock": "released", "target_cluster": "dr"}, done
        second = workflow.run({**run_input, "restore_id": "stopped-2"}, name="stopped-2")
        assert second["status"] == "SUCCEEDED", second.get("cause")
        written = offsets(target, a), offsets(target, b)
        assert written == ({0: 20, 1: 0}, {0: 40})  # run 2's: the newer positions
    ended = workflow.wait(first)
    # AWS says ABORTED from the stop on; moto's interpreter, once the task in flight returns, ends the stopped
    # execution FAILED with an error of its own. Either way not a success, and start/status exit 1.
    assert ended["status"] in ("ABORTED", "FAILED") and run_ending(ended)[0] == 1, ended["status"]
    wait_for(
        lambda: (
            not any(
                e.status == "mapped" and e.outcome is None for e in MappingStore(TABLE, dynamodb).entries("stopped-1")
            )
        )
    )
    entries = MappingStore(TABLE, dynamodb).entries("stopped-1")
    assert not any(e.status == "committed" for e in entries), [(e.status, e.reason) for e in entries]
    assert all("another offset-restore writer took this cluster's write fence" in (e.reason or "") for e in entries)
    assert (offsets(target, a), offsets(target, b)) == written  # run 1's Lambda wrote nothing


def test_a_commit_whose_save_failed_is_reported_as_possibly_written_and_a_rerun_finishes_it(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit reaches the target; saving its entries as committed fails (DynamoDB throttles every
    try). Before, the failed run's report said "0 of 2 groups restored" of a target holding every offset.
    Now it says none is known restored and both may be — their commit was sent and its end is not on
    record — and a rerun of the restore id (at once: the failed run left no lock) reads the target, finds the
    offsets there and reports them restored."""
    from botocore.exceptions import ClientError

    s = setup(brokers, source, target, workflow)
    a, b = str(s["a"]), str(s["b"])
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    original = MappingStore.save

    def throttled(self: MappingStore, restore_id: str, entries: Any) -> None:
        entries = list(entries)
        if any(e.status == "committed" for e in entries):
            error = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "throttled"}}
            raise ClientError(error, "BatchWriteItem")  # type: ignore[arg-type]
        original(self, restore_id, entries)

    monkeypatch.setattr(MappingStore, "save", throttled)
    run_input = {"groups": f"{a}|{b}", "mode": "apply", "restore_id": "unsaved-1"}
    failed = workflow.run(run_input, name="unsaved-1")
    assert failed["status"] == "FAILED" and "ProvisionedThroughputExceeded" in failed["cause"], failed.get("cause")
    assert offsets(target, a) == {0: 10, 1: 0} and offsets(target, b) == {0: 40}  # the commit is on the target
    entries = MappingStore(TABLE, dynamodb).entries("unsaved-1")
    assert {e.status for e in entries} == {"mapped"} and all(e.previous_recorded for e in entries)
    report = workflow.report("unsaved-1")
    assert report["outcome"] == "failed" and report["headline"]["groups_in_doubt"] == 2
    assert (
        "0 of 2 groups restored (every partition committed); 2 more may be: their commit was sent"
        in (report["headline_text"])
    )
    assert any("unsaved-1: failed" in m and "commit unanswered" in m for m in workflow.sns_queue)
    assert run_ending(failed)[0] == 1

    monkeypatch.setattr(MappingStore, "save", original)
    # It failed while writing, and the target keeps the write fence: its lock is gone at once (a late write
    # of its Lambdas would be refused once the rerun takes the fence), and the rerun needs no unlock.
    assert TargetLock.named(TABLE, dynamodb, "dr", "operator").holder() is None
    again = workflow.run(run_input, name="unsaved-2")
    assert again["status"] == "SUCCEEDED", again.get("cause")
    assert offsets(target, a) == {0: 10, 1: 0} and offsets(target, b) == {0: 40}
    finished = workflow.report("unsaved-1")
    assert finished["headline_text"].startswith("2 of 2 groups restored") and finished["statuses"] == {"committed": 3}


def test_a_translate_item_that_wrote_nothing_fails_the_run_by_name_before_any_commit(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One Translate work item dies (DynamoDB refuses its entries, a Lambda killed): moto's distributed
    Map counts the item failed and goes on (AWS fails the Map), so before, the run SUCCEEDED, committed
    the other group and its report counted only what was there. Now Summarize compares the group-partitions
    mapped with those Prepare selected: the run fails before the commit, naming what is missing and
    the work item that held it, and the target is untouched."""
    from botocore.exceptions import ClientError
    from offset_restore.workflow.states import prepare

    s = setup(brokers, source, target, workflow)
    a, b = str(s["a"]), str(s["b"])
    monkeypatch.setattr(prepare, "WORK_ITEM_GROUP_PARTITIONS", 1)  # one work item a group
    original = MappingStore.put

    def refused(self: MappingStore, restore_id: str, entries: Any, **kwargs: Any) -> Any:
        entries = list(entries)
        if any(e.group == b for e in entries):
            error = {"Error": {"Code": "ValidationException", "Message": "refused"}}
            raise ClientError(error, "BatchWriteItem")  # type: ignore[arg-type]
        return original(self, restore_id, entries, **kwargs)

    monkeypatch.setattr(MappingStore, "put", refused)
    failed = workflow.run({"groups": f"{a}|{b}", "mode": "apply", "restore_id": "lost-item-1"}, name="lost-item-1")
    assert failed["status"] == "FAILED", failed
    cause = failed.get("cause", "")
    assert "TranslationIncompleteError" in cause and "1 of 3 group-partitions" in cause, cause
    assert f"{b!r} {s['topic']}/0" in cause and "work/item-0000" in cause, cause
    assert offsets(target, a) == {} and offsets(target, b) == {}  # nothing committed
    assert workflow.report("lost-item-1")["outcome"] == "failed"
