"""The translate Lambda handler in-process: a work item in moto S3, mappings in moto DynamoDB, the
real target broker; re-running an item is harmless and picks up what a running restore added."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from offset_restore.errors import BadInputError, StorageError
from offset_restore.formats.plan import PlanEntry, Status
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.live import SnapshotOptions, take_snapshot
from offset_restore.stores.mappings import MappingStore
from offset_restore.translate.work_items import WorkItem, split_work

from tests.helpers import Brokers, LambdaContext, commit, plan_entry, produce, restore, unique


@pytest.fixture
def lambda_env(brokers: Brokers, monkeypatch: pytest.MonkeyPatch, s3: Any, table: str) -> None:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("TARGET_CLUSTER_NAME", "dr")
    monkeypatch.setenv("TARGET_BOOTSTRAP_SERVERS", brokers.target.bootstrap_servers)
    monkeypatch.setenv("TARGET_SECURITY_PROTOCOL", "PLAINTEXT")
    monkeypatch.setenv("RESTORE_BUCKET", "snapshots")
    monkeypatch.setenv("TABLE_NAME", table)


def test_translate_a_work_item_twice_then_after_the_restore_finishes(
    lambda_env: None, s3: Any, table: str, source: KafkaCluster, target: KafkaCluster
) -> None:
    from offset_restore_handlers.translate import handler

    topic = unique("work")
    source.create_topics({topic: 1})
    records = produce(source, topic, 0, 100)
    done, waiting = unique("done"), unique("waiting")
    commit(source, done, {TP(topic, 0): 30})
    commit(source, waiting, {TP(topic, 0): 90})
    snap = take_snapshot(source, SnapshotOptions(groups=f"{done}|{waiting}"))
    [batch] = split_work(snap.groups, 1000)
    item = WorkItem(restore_id="r-1", snapshot_id=snap.manifest.snapshot_id, source_cluster="src", groups=batch)
    s3.put_object(Bucket="snapshots", Key="restores/r-1/work/item-00000.json", Body=item.model_dump_json())
    target.create_topics({topic: 1})
    restore(target, topic, 0, records[:60])

    event = {"restore_id": "r-1", "work_item": "restores/r-1/work/item-00000.json"}
    first = handler(event, LambdaContext())
    assert (first["entries"], first["written"], first["summary"]["pending"]) == (2, 2, 1)
    again = handler(event, LambdaContext())
    assert (again["written"], again["unchanged"]) == (1, 1)  # the pending one is tried again

    restore(target, topic, 0, records[60:], target_start=60)
    last = handler(event, LambdaContext())
    assert (last["written"], last["unchanged"], last["summary"]["pending"]) == (1, 1, 0)
    stored = {e.group: e for e in MappingStore(table, boto3.client("dynamodb")).entries("r-1")}
    assert (stored[done].target_offset, stored[done].status) == (30, "mapped")
    assert (stored[waiting].target_offset, stored[waiting].method, stored[waiting].exact) == (90, "header", True)


def test_a_bad_work_item_is_named(lambda_env: None, s3: Any) -> None:
    from offset_restore_handlers.translate import handler

    s3.put_object(Bucket="snapshots", Key="restores/r-2/work/bad.json", Body=b'{"restore_id": "r-2"}')
    with pytest.raises(BadInputError, match=r"work item s3://snapshots/restores/r-2/work/bad\.json is invalid"):
        handler({"restore_id": "r-2", "work_item": "restores/r-2/work/bad.json"}, LambdaContext())
    with pytest.raises(BadInputError, match="invalid translate request"):
        handler({"restore_id": "r-2"}, LambdaContext())


def test_split_work_keeps_groups_whole() -> None:
    from offset_restore.snapshot.model import GroupSnapshot, PartitionSnapshot

    groups = [
        GroupSnapshot(
            group=f"g{i}",
            state="Empty",
            partitions=[PartitionSnapshot(topic="t", partition=p, committed_offset=0) for p in range(n)],
        )
        for i, n in enumerate([3, 3, 5, 12, 1])
    ]
    assert [[g.group for g in batch] for batch in split_work(groups, 6)] == [["g0", "g1"], ["g2"], ["g3"], ["g4"]]
    read: list[str] = []

    def stream() -> Iterator[GroupSnapshot]:
        for group in groups:
            read.append(group.group)
            yield group

    first = next(split_work(stream(), 6))  # a batch leaves as soon as it is full: Prepare holds one
    assert [g.group for g in first] == ["g0", "g1"] and read == ["g0", "g1"]


def test_translating_again_never_overwrites_what_apply_wrote(table: str) -> None:
    """A mapping that apply committed (or skipped) keeps its status, previous offset and verification
    when the same work item is translated again; a pending one is replaced; a new one is added."""

    def entry(partition: int, status: Status, offset: int | None = 7) -> PlanEntry:
        return plan_entry("g", partition, status, offset)

    store = MappingStore(table, boto3.client("dynamodb"))
    assert store.put("r", [entry(0, "mapped"), entry(1, "pending", None), entry(2, "mapped")]) == {
        "written": 3,
        "unchanged": 0,
    }
    applied = entry(0, "committed").model_copy(update={"previous_target_offset": 3, "verified": True})
    store.save("r", [applied])
    again = [entry(0, "mapped", 8), entry(1, "mapped", 5), entry(2, "mapped", 9), entry(3, "mapped")]
    assert store.put("r", again) == {"written": 2, "unchanged": 2}
    stored = {e.partition: e for e in store.entries("r")}
    assert (stored[0].status, stored[0].target_offset, stored[0].previous_target_offset) == ("committed", 7, 3)
    assert (stored[1].status, stored[1].target_offset) == ("mapped", 5)
    assert stored[2].target_offset == 7 and stored[3].status == "mapped"


def test_translating_a_topic_whose_shape_changed_since_drops_the_earlier_shape(table: str) -> None:
    """The first translation held group g (the restore had no partition header); restored again with it,
    the topic maps onto four target partitions: the held entries go (they would hold g for ever), the
    entries of a group named like a prefix of g's keys stay. An entry already committed under the earlier
    shape stops the translation before it writes anything."""
    store = MappingStore(table, boto3.client("dynamodb"))
    held = [plan_entry("g", q, "unmapped").model_copy(update={"holds_group": True}) for q in (0, 1)]
    lookalike = plan_entry("g#t#", 0, "unmapped")  # its key begins with g's prefix
    store.put("r", [*held, lookalike])
    mapped = [
        plan_entry("g", 0, "mapped", 3).model_copy(update={"target_partition": t, "source_positions": {0: 3, 1: 5}})
        for t in range(4)
    ]
    store.put("r", mapped)
    stored = store.entries("r")
    assert sorted((e.group, e.target.partition, e.status) for e in stored) == [
        ("g", 0, "mapped"), ("g", 1, "mapped"), ("g", 2, "mapped"), ("g", 3, "mapped"), ("g#t#", 0, "unmapped"),
    ]  # fmt: skip
    assert all(e.source_positions == {0: 3, 1: 5} for e in stored if e.group == "g")
    store.save("r", [plan_entry("h", 0, "committed", 4)])
    before = store.entries("r")
    with pytest.raises(StorageError, match="was committed on t by this restore when the topic had another shape"):
        store.put("r", [plan_entry("h", 0, "unmapped").model_copy(update={"holds_group": True, "partition": 1})])
    assert store.entries("r") == before
