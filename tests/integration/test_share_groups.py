"""Share groups (KIP-932, queues) on Apache Kafka 4.4, where they are on by default: their position is a start
offset per share-partition, not a committed offset. They are not consumer groups and are never carried as
one (an empty group with nothing to restore, as before); the snapshot names each it leaves out and what to
do instead, and the consumer groups beside them are carried as ever."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from offset_restore.devtools.apache_broker import ApacheBroker, java_tool
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP, CommittedOffset
from offset_restore.snapshot.live import SnapshotOptions, take_snapshot

from tests.helpers import unique

VERSION = "4.4.0"


@pytest.fixture(scope="module")
def broker() -> Iterator[ApacheBroker]:
    with ApacheBroker(unique("share"), version=VERSION) as started:
        yield started


def share_group(broker: ApacheBroker, topic: str, group: str) -> None:
    """A share group made as its users make one: Kafka's console share consumer joins it (and leaves)."""
    done = java_tool(
        "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
        ["--bootstrap-server", broker.bootstrap_servers, "--topic", topic, "--group", group, "--timeout-ms", "4000"],
        log4j=broker.log4j,
        version=VERSION,
        timeout_s=90,
    )
    assert "Processed a total of" in done.stdout + done.stderr, done.stdout + done.stderr


def test_a_share_group_is_named_and_left_out_and_the_consumer_groups_beside_it_are_carried(
    broker: ApacheBroker,
) -> None:
    topic, queue, consumers = unique("orders"), unique("queue"), unique("billing")
    with KafkaCluster(broker.settings()) as cluster:
        cluster.create_topics({topic: 2})
        for p in range(2):
            cluster.produce(topic, p, [(b"k", f"v{i}".encode(), [], None) for i in range(30)])
        share_group(broker, topic, queue)
        failed = cluster.alter_offsets_many({consumers: {TP(topic, 0): CommittedOffset(12, None)}})
        assert not any(failed[consumers].values()), failed
        assert cluster.list_groups()[queue] == "share"
        assert queue not in cluster.list_group_ids() and consumers in cluster.list_group_ids()

        snapshot = take_snapshot(cluster, SnapshotOptions(groups=f"{queue}|{consumers}", evidence_records=0))

    assert [g.group for g in snapshot.groups] == [consumers]
    assert [(p.topic, p.partition, p.committed_offset) for p in snapshot.groups[0].partitions] == [(topic, 0, 12)]
    (note,) = [n for n in snapshot.manifest.notes if queue in n]
    assert note.startswith(f"share group {queue}: not carried") and "kafka-share-groups --reset-offsets" in note


def test_a_share_group_the_filter_leaves_out_is_not_named(broker: ApacheBroker) -> None:
    topic, queue = unique("orders"), unique("queue")
    with KafkaCluster(broker.settings()) as cluster:
        cluster.create_topics({topic: 1})
        share_group(broker, topic, queue)
        snapshot = take_snapshot(cluster, SnapshotOptions(groups="nothing-matches-this", evidence_records=0))
    assert not any(queue in n for n in snapshot.manifest.notes)
