"""Snapshots of the real local source broker: positions, bounds and evidence are exact."""

from __future__ import annotations

from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.live import SnapshotOptions, take_snapshot

from tests.helpers import Brokers, active_member, commit, produce, unique


def test_positions_bounds_and_evidence_are_exact(source: KafkaCluster) -> None:
    topic = unique("orders")
    source.create_topics({topic: 3})
    records = {p: produce(source, topic, p, 20 + 5 * p) for p in range(3)}  # 20, 25, 30 records
    lagging, caught_up, partial = unique("lagging"), unique("caught-up"), unique("partial")
    commit(source, lagging, {TP(topic, 0): 7, TP(topic, 1): 0, TP(topic, 2): 29}, metadata="m1")
    commit(source, caught_up, {TP(topic, p): len(records[p]) for p in range(3)})
    commit(source, partial, {TP(topic, 1): 12})  # never committed on partitions 0 and 2

    snap = take_snapshot(source, SnapshotOptions(groups=f"{lagging}|{caught_up}|{partial}", evidence_records=3))
    groups = {g.group: g for g in snap.groups}
    assert set(groups) == {lagging, caught_up, partial}

    lag = {TP(p.topic, p.partition): p for p in groups[lagging].partitions}
    p0 = lag[TP(topic, 0)]
    assert (p0.committed_offset, p0.log_start, p0.log_end, p0.lag) == (7, 0, 20, 13)
    assert p0.next is not None and p0.next.offset == 7
    assert p0.next.fingerprint == records[0][7].fingerprint
    assert p0.next.timestamp == records[0][7].timestamp
    assert [e.offset for e in p0.before] == [4, 5, 6]
    assert [e.fingerprint for e in p0.before] == [r.fingerprint for r in records[0][4:7]]
    p1 = lag[TP(topic, 1)]
    assert p1.next is not None and p1.next.offset == 0 and p1.before == [] and p1.lag == 25
    p2 = lag[TP(topic, 2)]
    assert p2.next is not None and p2.next.offset == 29 and [e.offset for e in p2.before] == [26, 27, 28]

    for entry in groups[caught_up].partitions:
        assert entry.lag == 0 and entry.next is None
        end = entry.log_end or 0
        assert [e.offset for e in entry.before] == [end - 3, end - 2, end - 1]
        assert entry.evidence_complete

    only = groups[partial]
    assert [(p.topic, p.partition, p.committed_offset) for p in only.partitions] == [(topic, 1, 12)]
    assert [(u.topic, u.partition) for u in only.uncommitted_partitions] == [(topic, 0), (topic, 2)]
    assert snap.manifest.counts.group_partitions == 3 + 3 + 1
    assert snap.manifest.counts.with_evidence == 7


def test_end_offsets_come_from_the_high_watermark_with_batched_records(source: KafkaCluster) -> None:
    """Several records in one batch make ListOffsets LATEST wrong on this broker; the snapshot is not."""
    topic, group = unique("batched"), unique("g")
    source.create_topics({topic: 1})
    source.produce(topic, 0, ((b"k", f"v{i}".encode(), [], None) for i in range(50)))  # few, large batches
    commit(source, group, {TP(topic, 0): 10})
    snap = take_snapshot(source, SnapshotOptions(groups=group, evidence_records=0))
    entry = snap.groups[0].partitions[0]
    assert (entry.log_end, entry.lag, entry.next, entry.before) == (50, 40, None, [])


def test_stable_and_empty_groups_are_told_apart(brokers: Brokers, source: KafkaCluster) -> None:
    topic, stable, empty = unique("live"), unique("stable"), unique("empty")
    source.create_topics({topic: 2})
    produce(source, topic, 0, 5)
    commit(source, stable, {TP(topic, 0): 2})
    commit(source, empty, {TP(topic, 0): 3})
    with active_member(brokers.source.bootstrap_servers, stable, topic):
        snap = take_snapshot(source, SnapshotOptions(groups=f"{stable}|{empty}"))
    groups = {g.group: g for g in snap.groups}
    assert (groups[stable].state, groups[stable].members) == ("Stable", 1)
    assert (groups[empty].state, groups[empty].members) == ("Empty", 0)
    assert groups[stable].partitions[0].committed_offset == 2
    assert snap.manifest.counts.states == {"Empty": 1, "Stable": 1}


def test_groups_on_one_partition_share_evidence_and_rounds(source: KafkaCluster) -> None:
    topic = unique("shared")
    source.create_topics({topic: 2})
    records = [produce(source, topic, p, 400) for p in range(2)]
    groups = [unique("many") for _ in range(30)]
    for number, group in enumerate(groups):
        commit(source, group, {TP(topic, 0): (number * 13) % 400, TP(topic, 1): 399 - number})
    before = source.requests_sent["Fetch"]
    snap = take_snapshot(source, SnapshotOptions(groups="|".join(groups), evidence_records=2))
    fetches = source.requests_sent["Fetch"] - before
    for snapshot in snap.groups:
        for entry in snapshot.partitions:
            assert entry.next is not None
            expected = records[entry.partition][entry.committed_offset]
            assert (entry.next.offset, entry.next.fingerprint) == (expected.offset, expected.fingerprint)
            assert [e.offset for e in entry.before] == list(
                range(max(0, entry.committed_offset - 2), entry.committed_offset)
            )
    # 60 group-partitions on 2 partitions: a forward pass per partition, not a fetch per group.
    assert fetches <= snap.timings["evidence_rounds"] + 1 < 30


def test_filters_select_groups_and_topics(source: KafkaCluster) -> None:
    keep_topic, drop_topic = unique("keep"), unique("drop")
    source.create_topics({keep_topic: 1, drop_topic: 1})
    produce(source, keep_topic, 0, 3)
    produce(source, drop_topic, 0, 3)
    prefix = unique("app")
    commit(source, f"{prefix}-a", {TP(keep_topic, 0): 1, TP(drop_topic, 0): 1})
    commit(source, f"{prefix}-b", {TP(keep_topic, 0): 2})
    commit(source, f"console-consumer-{prefix}", {TP(keep_topic, 0): 2})
    snap = take_snapshot(
        source,
        SnapshotOptions(
            groups=f"{prefix}-.*|console-consumer-{prefix}",
            exclude_groups=f"{prefix}-b|console-consumer-.*",
            topics=keep_topic,
        ),
    )
    assert [g.group for g in snap.groups] == [f"{prefix}-a"]
    assert [(p.topic, p.committed_offset) for p in snap.groups[0].partitions] == [(keep_topic, 1)]


def test_an_empty_selection_is_a_valid_empty_snapshot(source: KafkaCluster) -> None:
    snap = take_snapshot(source, SnapshotOptions(groups=unique("nobody")))
    assert snap.groups == [] and snap.manifest.counts.groups == 0
