"""The apply-step handlers in-process: mappings in moto DynamoDB, the real target broker."""

from __future__ import annotations

import boto3
import pytest
from offset_restore.errors import BadInputError
from offset_restore.formats.plan import PlanEntry, Status
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.stores.mappings import MappingStore

from tests.helpers import Brokers, LambdaContext, active_member, produce, unique
from tests.helpers import commit as commit_offsets


@pytest.fixture
def lambda_env(brokers: Brokers, monkeypatch: pytest.MonkeyPatch, table: str) -> None:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("TARGET_CLUSTER_NAME", "dr")
    monkeypatch.setenv("TARGET_BOOTSTRAP_SERVERS", brokers.target.bootstrap_servers)
    monkeypatch.setenv("TARGET_SECURITY_PROTOCOL", "PLAINTEXT")
    monkeypatch.setenv("TABLE_NAME", table)


def entry(group: str, topic: str, partition: int, target_offset: int | None, status: Status = "mapped") -> PlanEntry:
    return PlanEntry(
        group=group,
        topic=topic,
        partition=partition,
        target_topic=topic,
        source_offset=(target_offset or 0) + 100,
        target_offset=target_offset,
        method="header" if target_offset is not None else None,
        exact=target_offset is not None,
        max_duplicates=0,
        status=status,
    )


def test_check_empty_then_a_commit_that_verifies(
    lambda_env: None, table: str, brokers: Brokers, target: KafkaCluster
) -> None:
    from offset_restore_handlers import check_empty, commit

    topic = unique("steps")
    target.create_topics({topic: 2})
    for p in range(2):
        produce(target, topic, p, 20)
    idle, busy, waiting = unique("idle"), unique("busy"), unique("waiting")
    commit_offsets(target, idle, {TP(topic, 0): 2})  # the group already has an offset on the target
    store = MappingStore(table, boto3.client("dynamodb"))
    store.put(
        "r-9",
        [
            entry(idle, topic, 0, 7),
            entry(idle, topic, 1, 9),
            entry(busy, topic, 0, 3),
            entry(waiting, topic, 0, 5),
            entry(waiting, topic, 1, None, "pending"),
        ],
    )
    with active_member(brokers.target.bootstrap_servers, busy, topic):
        checked = check_empty.handler({"restore_id": "r-9"}, LambdaContext())
        assert (checked["empty"], checked["active"], checked["waiting"]) == ([idle], [busy], [waiting])
        assert checked["all_empty"] is False
        result = commit.handler({"restore_id": "r-9", "groups": [idle, busy]}, LambdaContext())
    assert result["committed"] == [idle] and busy in result["skipped"] and result["verified"] == 2
    offsets = target.committed_offsets([idle])[idle]
    assert {tp.partition: c.offset for tp, c in offsets.items()} == {0: 7, 1: 9}
    saved = {(e.group, e.partition): e for e in store.entries("r-9")}
    assert saved[(idle, 0)].status == "committed" and saved[(idle, 0)].previous_target_offset == 2
    assert saved[(idle, 1)].previous_target_offset is None and saved[(busy, 0)].status == "mapped"
    again = commit.handler({"restore_id": "r-9", "groups": [idle]}, LambdaContext())
    assert again["committed"] == [] and again["offsets_committed"] == 0


def test_bad_step_inputs_are_named(lambda_env: None) -> None:
    from offset_restore_handlers import commit

    with pytest.raises(BadInputError, match="invalid commit request"):
        commit.handler({"restore_id": "r-1", "groups": []}, LambdaContext())


def test_any_handler_refuses_an_incomplete_environment(lambda_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from offset_restore_handlers import check_empty

    monkeypatch.delenv("TABLE_NAME")
    with pytest.raises(BadInputError, match="TABLE_NAME not set"):
        check_empty.handler({"restore_id": "r-1"}, LambdaContext())


def test_a_retried_commit_in_one_execution_returns_the_first_answer(
    lambda_env: None, table: str, target: KafkaCluster
) -> None:
    from offset_restore_handlers import commit

    topic, group = unique("retry"), unique("retry-group")
    target.create_topics({topic: 1})
    produce(target, topic, 0, 10)
    store = MappingStore(table, boto3.client("dynamodb"))
    store.put("r-7", [entry(group, topic, 0, 4)])
    event = {"restore_id": "r-7", "groups": [group], "execution": "arn:aws:states:eu-west-1:1:execution:m:e1"}
    first = commit.handler(event, LambdaContext())
    commit_offsets(target, group, {TP(topic, 0): 9})  # someone moves the group after the first attempt
    retried = commit.handler(event, LambdaContext())
    assert retried == first and first["committed"] == [group]
    assert {tp.partition: c.offset for tp, c in target.committed_offsets([group])[group].items()} == {0: 9}
    records = boto3.client("dynamodb").query(
        TableName=table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "IDEMPOTENCY#commit"}},
    )["Items"]
    assert len(records) == 1 and records[0]["status"]["S"] == "COMPLETED"
    rerun = commit.handler({**event, "execution": "arn:aws:states:eu-west-1:1:execution:m:e2"}, LambdaContext())
    assert rerun["committed"] == [] and rerun["offsets_committed"] == 0  # a new execution: committed already


def test_a_batch_writes_only_while_its_execution_holds_the_lock(
    lambda_env: None, table: str, target: KafkaCluster
) -> None:
    """Issue 36's "two writers after a lost lock": a commit batch of an execution whose lock was taken
    (its lease ran out during a long commit phase, or it was broken) renews it first, finds it another
    run's, and writes nothing; the same batch of the execution that holds it commits."""
    from offset_restore.apply.locks import LockLostError, TargetLock
    from offset_restore_handlers import commit

    topic, group = unique("fenced"), unique("fenced-group")
    target.create_topics({topic: 1})
    produce(target, topic, 0, 10)
    MappingStore(table, boto3.client("dynamodb")).put("r-8", [entry(group, topic, 0, 4)])
    first, second = (f"arn:aws:states:eu-west-1:1:execution:m:{name}" for name in ("first", "second"))
    held = TargetLock(table, boto3.client("dynamodb"), target.cluster_id, second, ttl_s=600, name="dr")
    held.acquire()  # the lock is the second run's
    event = {"restore_id": "r-8", "groups": [group], "execution": first, "owner": first, "interval_seconds": 1}
    with pytest.raises(LockLostError, match=r"no longer run .*:first's"):
        commit.handler(event, LambdaContext())
    assert target.committed_offsets([group])[group] == {}
    assert MappingStore(table, boto3.client("dynamodb")).entries("r-8")[0].status == "mapped"
    answer = commit.handler({**event, "execution": second, "owner": second}, LambdaContext())
    assert answer["committed"] == [group] and "lock_lost" not in answer
    assert {tp.partition: c.offset for tp, c in target.committed_offsets([group])[group].items()} == {0: 4}
