"""The single-writer lock against moto DynamoDB: one holder at a time, expiry for crashed runs."""

from __future__ import annotations

import io
import os

import boto3
import pytest
from offset_restore.apply.locks import LockHeldError, LockLostError, TargetLock


def test_one_writer_at_a_time_and_a_crashed_run_expires(table: str) -> None:
    client = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"])
    first = TargetLock(table, client, "prod-dr", "run-1", ttl_s=60)
    second = TargetLock(table, client, "prod-dr", "run-2", ttl_s=60)
    other_cluster = TargetLock(table, client, "staging-dr", "run-2", ttl_s=60)
    first.acquire(now=1_000)
    first.acquire(now=1_010)  # the same run retrying keeps its lock
    other_cluster.acquire(now=1_010)  # locks are per target cluster
    with pytest.raises(LockHeldError, match="target cluster prod-dr is locked by run run-1"):
        second.acquire(now=1_020)
    second.release()  # not the owner: nothing happens
    with pytest.raises(LockHeldError):
        second.acquire(now=1_030)
    second.acquire(now=1_071)  # run-1 (last renewed at 1,010 for 60 s) crashed: its lock expired
    with pytest.raises(LockHeldError, match="locked by run run-2"):
        first.acquire(now=1_072)
    second.release()
    first.acquire(now=1_073)


def test_a_heartbeat_keeps_the_lock_and_a_broken_lock_is_noticed(table: str) -> None:
    client = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"])
    run = TargetLock(table, client, "prod-dr", "run-1", ttl_s=60)
    other = TargetLock(table, client, "prod-dr", "run-2", ttl_s=60)
    run.acquire(now=1_000)
    run.renew(now=1_050)  # alive: the expiry moves to 1,110
    with pytest.raises(LockHeldError):
        other.acquire(now=1_100)
    assert run.holder() == ("run-1", 1_110)
    assert not other.break_lock("run-9")  # breaks only the holder it names
    assert other.break_lock("run-1")
    with pytest.raises(LockLostError, match="no longer run run-1's"):
        run.renew(now=1_120)
    other.acquire(now=1_120)
    with pytest.raises(LockLostError):
        run.renew(now=1_130)  # taken over: the old run must stop writing


def test_unlock_shows_the_holder_then_breaks_only_that_one(table: str) -> None:
    import io

    from offset_restore.cli.main import main

    client = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"])
    TargetLock(table, client, "prod-dr", "cli:host:123", ttl_s=3600).acquire()

    def unlock(*extra: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        status = main(["unlock", "--lock-table", table, "--target-cluster", "prod-dr", *extra], out, err)
        return status, out.getvalue(), err.getvalue()

    status, out, _ = unlock()
    assert status == 3 and "locked by cli:host:123" in out and "--owner=cli:host:123" in out
    status, _, err = unlock("--owner", "cli:other:1")
    assert status == 2 and "held by cli:host:123, not cli:other:1" in err
    status, out, _ = unlock("--owner", "cli:host:123")
    assert status == 0 and "broke the lock" in out
    assert unlock()[0] == 0


def test_the_release_rule_frees_only_the_stopped_executions_lock(table: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The event the release rule sends for a stopped execution (its name and ARN), through the real
    Lock handler: that execution's lock goes, another execution's stays."""
    from offset_restore_handlers.lock import handler

    from tests.helpers import LambdaContext

    monkeypatch.setenv("TABLE_NAME", table)
    monkeypatch.setenv("TARGET_CLUSTER_NAME", "prod-dr")
    monkeypatch.setenv("TARGET_BOOTSTRAP_SERVERS", "unreachable:9")  # a release asks no broker
    client = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"])
    arn = "arn:aws:states:eu-west-1:123456789012:execution:offset-restore:failover-1"
    TargetLock(table, client, "cluster-Xy1", arn, name="prod-dr").acquire()  # keyed by the id, as the acquire

    def stopped(execution: str) -> dict[str, str]:
        return {
            "action": "release",
            "restore_id": execution.rsplit(":", 1)[1],
            "target_cluster": "prod-dr",
            "owner": execution,
        }

    handler(stopped(arn.replace("failover-1", "another")), LambdaContext())
    assert TargetLock(table, client, "cluster-Xy1", "x").holder() is not None
    handler(stopped(arn), LambdaContext())
    assert TargetLock(table, client, "cluster-Xy1", "x").holder() is None


def test_unlock_by_stack_reads_the_deployed_table_and_target(table: str) -> None:
    """`unlock --stack prod` finds the lock through the stack's outputs (as infra/stack.py declares them);
    a missing stack, an old stack without the outputs, or --stack mixed with --lock-table are refused."""
    import io
    import json

    from offset_restore.cli.main import main

    region = os.environ["AWS_DEFAULT_REGION"]
    TargetLock(table, boto3.client("dynamodb", region_name=region), "prod-dr", "arn:exec:1", ttl_s=3600).acquire()
    cloudformation = boto3.client("cloudformation", region_name=region)
    outputs = {"LockTableName": table, "TargetClusterName": "prod-dr", "StateMachineArn": "arn:sm", "BucketName": "b"}
    for name, values in (("offset-restore-prod", outputs), ("offset-restore-old", {"LockTableName": table})):
        body = {
            "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
            "Outputs": {key: {"Value": value} for key, value in values.items()},
        }
        cloudformation.create_stack(StackName=name, TemplateBody=json.dumps(body))

    def unlock(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        return main(["unlock", *argv], out, err), out.getvalue(), err.getvalue()

    status, out, _ = unlock("--stack", "prod")
    assert status == 3 and "prod-dr is locked by arn:exec:1" in out and "unlock --stack=prod --owner=" in out
    status, _, err = unlock("--stack", "missing")
    assert status == 2 and "stack offset-restore-missing" in err and "does not exist" in err
    status, _, err = unlock("--stack", "old")
    assert status == 2 and "has no output TargetClusterName, StateMachineArn, BucketName" in err
    status, _, err = unlock("--stack", "prod", "--lock-table", table)
    assert status == 2 and "drop --lock-table" in err
    status, _, err = unlock("--lock-table", table)
    assert status == 2 and "give --stack ENV, or --target-cluster NAME or --cluster-id ID" in err
    assert TargetLock(table, boto3.client("dynamodb", region_name=region), "prod-dr", "x").holder() is not None
    status, out, _ = unlock("--stack", "offset-restore-prod", "--owner", "arn:exec:1")
    assert status == 0 and "broke the lock of target cluster prod-dr" in out
    started = io.StringIO()
    assert main(["start", "--mode", "plan"], io.StringIO(), started) == 2
    assert "give --stack ENV, or --state-machine" in started.getvalue()


class History:
    """A Step Functions client's history paginator for one execution: its states, newest first as asked
    (``oldest_first``: as a service that ignores ``reverseOrder`` gives them — moto's interpreter does),
    two events a page, each with its id as the service numbers them."""

    def __init__(self, states: list[str] | None, oldest_first: bool = False) -> None:
        self.states, self.oldest_first = states, oldest_first

    def get_paginator(self, name: str) -> History:
        return self

    def paginate(self, **kwargs: object) -> list[dict[str, object]]:
        if self.states is None:
            raise OSError("AccessDenied")
        events = [{"id": i + 1, "stateEnteredEventDetails": {"name": s}} for i, s in enumerate(self.states)]
        events = events if self.oldest_first else events[::-1]
        return [{"events": events[i : i + 2]} for i in range(0, len(events), 2)]


@pytest.mark.parametrize(
    ("states", "fenced"),
    [(["ValidateInput", "AcquireLock", "Prepare", "CheckEmpty"], False),
     (["CheckEmpty", "Commit", "CommitBatch"], True), (["AcquireLock", "Rollback"], True), (None, True),
     (["Prepare", "Translate", "ReleaseOnFailure"], False), (["Commit", "CommitBatch", "ReleaseOnFailure"], True)],
)  # fmt: skip
@pytest.mark.parametrize("oldest_first", [False, True])
def test_a_run_that_ended_while_writing_leaves_a_fence_not_a_free_target(
    table: str, states: list[str] | None, fenced: bool, oldest_first: bool
) -> None:
    """Issue 36's "two writers after a stop": a stopped execution's Lambda keeps running, so the release of
    a run that ended in Commit, CommitBatch or Rollback (or whose history cannot be read) turns its lock into
    a fence until that Lambda must have ended; a new run is refused until then, saying why. One that ended
    elsewhere is released at once. A run's own ReleaseOnFailure judges by the state it failed in: a failed
    batch of the Commit Map leaves the others' Lambdas running."""
    from offset_restore.apply.locks import FENCE_PREFIX, LAMBDA_TIMEOUT_S, release_ended
    from offset_restore.workflow.executions import last_state

    client = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"])
    arn = "arn:aws:states:eu-west-1:123456789012:execution:offset-restore:stopped-1"
    lock = TargetLock(table, client, "prod-dr", arn, ttl_s=1200)
    lock.acquire(now=1_000)
    done = release_ended(lock, last_state(History(states, oldest_first), arn), now=1_000)  # written unfenced
    newcomer = TargetLock(table, client, "prod-dr", "arn:...:execution:offset-restore:next", ttl_s=1200)
    if not fenced:
        assert done == "released" and lock.holder() is None
        newcomer.acquire(now=1_001)
        return
    assert done == f"fenced until {1_000 + LAMBDA_TIMEOUT_S + 60}"
    assert lock.holder() == (f"{FENCE_PREFIX}{arn}", 1_000 + LAMBDA_TIMEOUT_S + 60)
    with pytest.raises(LockHeldError, match=r"fenced until 1960 .*stopped-1 ended while writing"):
        newcomer.acquire(now=1_500)
    newcomer.acquire(now=1_000 + LAMBDA_TIMEOUT_S + 61)  # its Lambda must have ended: the target is free


def test_two_names_for_one_cluster_are_one_lock_and_the_name_finds_it(table: str) -> None:
    """Keyed by the cluster id: a second name for the same cluster is refused, naming the holder; a
    caller knowing only the name (a release while the target is down, unlock) finds the lock by it."""
    client = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"])
    first = TargetLock(table, client, "id-7", "run-1", ttl_s=60, name="tgt")
    first.acquire(now=1_000)
    with pytest.raises(LockHeldError, match=r"target cluster prod-dr \(cluster id id-7\) is locked by run run-1"):
        TargetLock(table, client, "id-7", "run-2", ttl_s=60, name="prod-dr").acquire(now=1_010)
    TargetLock(table, client, "id-8", "run-2", ttl_s=60, name="prod-dr").acquire(now=1_010)  # another cluster
    found = TargetLock.named(table, client, "tgt", "run-1", ttl_s=60)
    assert found.cluster == "id-7" and found.holder() == ("run-1", 1_060)
    from offset_restore.cli.main import main

    for how in (["--target-cluster", "tgt"], ["--cluster-id", "id-7"]):
        out, err = io.StringIO(), io.StringIO()
        assert main(["unlock", "--lock-table", table, *how], out, err) == 3, err.getvalue()
        assert "id-7" in out.getvalue() and "locked by run-1" in out.getvalue()
        assert "--cluster-id=id-7 --owner=run-1" in out.getvalue()
    found.renew(now=1_020)
    found.release()
    assert first.holder() is None
    assert TargetLock.named(table, client, "never-locked", "x").cluster == "never-locked"


def test_a_lock_an_earlier_version_took_under_the_name_is_read_and_moved(table: str) -> None:
    """Before, the lock was keyed by the name (``LOCK#<name>``). An execution in flight across the upgrade
    holds one: a new run is refused while it holds it; the old run renews, fences and releases it through
    this version; a lock of the acquiring run's own is moved to the id, an expired one is dropped."""
    client = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"])

    def legacy(owner: str, until: int) -> None:
        client.put_item(
            TableName=table,
            Item={
                "pk": {"S": "LOCK#prod-dr"},
                "sk": {"S": "LOCK"},
                "owner": {"S": owner},
                "expires_at": {"N": str(until)},
            },
        )

    def under_name() -> object:
        return client.get_item(TableName=table, Key={"pk": {"S": "LOCK#prod-dr"}, "sk": {"S": "LOCK"}}).get("Item")

    legacy("old-run", 2_000)
    newcomer = TargetLock(table, client, "id-9", "new-run", ttl_s=60, name="prod-dr")
    with pytest.raises(LockHeldError, match="locked by run old-run until 2000"):
        newcomer.acquire(now=1_000)
    assert TargetLock(table, client, "id-9", "x").holder() is None  # the refused acquire wrote nothing
    old = TargetLock(table, client, "id-9", "old-run", ttl_s=60, name="prod-dr")
    old.renew(now=1_100)  # the in-flight run's renewal acts where its lock is
    assert old.holder() == ("old-run", 1_160)
    old.release()
    assert under_name() is None
    newcomer.acquire(now=1_200)
    assert newcomer.holder() == ("new-run", 1_260)

    newcomer.release()
    legacy("new-run", 5_000)  # this run's own lock under the name (a retry across the upgrade): moved
    newcomer.acquire(now=1_300)
    assert under_name() is None and TargetLock(table, client, "id-9", "x").holder() == ("new-run", 1_360)
    newcomer.release()
    legacy("crashed", 1_000)  # expired: dropped
    newcomer.acquire(now=1_400)
    assert under_name() is None


@pytest.mark.parametrize("states", [None, ["Commit", "CommitBatch"], ["Rollback"], ["Prepare", "Translate"]])
def test_on_a_target_that_keeps_the_write_fence_an_ended_run_frees_the_target_at_once(
    table: str, states: list[str] | None
) -> None:
    """A run that failed or was stopped, even in the middle of its commit: the next run takes the cluster's
    write fence, so whatever the ended run's Lambdas still send is refused by the brokers — its lock is
    released at once instead of standing as a 16-minute fence that a failover started then would wait out."""
    from offset_restore.apply.locks import release_ended
    from offset_restore.workflow.executions import last_state

    client = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"])
    arn = "arn:aws:states:eu-west-1:123456789012:execution:offset-restore:ended-1"
    lock = TargetLock(table, client, "prod-dr", arn, ttl_s=1200)
    lock.acquire(now=1_000)
    assert release_ended(lock, last_state(History(states, False), arn), now=1_000, cluster_fenced=True) == "released"
    assert lock.holder() is None
    TargetLock(table, client, "prod-dr", "arn:...:execution:offset-restore:next", ttl_s=1200).acquire(now=1_001)
