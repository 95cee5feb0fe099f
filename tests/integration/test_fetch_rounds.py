"""The fetch-round rules against the real broker: partitions whose batches exceed the per-partition
limit come back empty (cut short) unless they are first in the request; they are asked again, first,
until every record is read."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from offset_restore.errors import ClusterError
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP, PartitionFetch
from offset_restore.reading.rounds import AtEnd, FetchRounds, Served, read_forward
from offset_restore.reading.whole import read_partition

from tests.helpers import broker_kind, unique


def test_every_record_is_read_when_rounds_leave_partitions_empty_below_their_end(source: KafkaCluster) -> None:
    topic = unique("big-batches")
    source.create_topics({topic: 4})
    payload = b"x" * 600
    for p in range(4):  # ~72 KB a partition in the producer's 16 KB batches
        source.produce(topic, p, ((f"{p}-{i}".encode(), payload, [], None) for i in range(120)))
    tps = [TP(topic, p) for p in range(4)]
    empty_below_end: list[TP] = []

    def fetch(
        positions: Mapping[TP, int],
        until: Mapping[TP, int] | None,
        limits: Mapping[TP, int],
        wait_ms: int | None = None,
    ) -> Mapping[TP, PartitionFetch]:
        answers = source.fetch(positions, partition_max_bytes=1024)  # far below one batch
        empty_below_end.extend(tp for tp, a in answers.items() if a.read_to < 0 and positions[tp] < a.high_watermark)
        return answers

    keys: dict[TP, list[bytes]] = {tp: [] for tp in tps}

    def take(tp: TP, outcome: Served | AtEnd) -> int | None:
        if isinstance(outcome, AtEnd):
            return None
        keys[tp].extend(r.key or b"" for r in outcome.answer.records)
        return outcome.answer.read_to

    rounds = FetchRounds(fetch)
    failed = read_forward(rounds, dict.fromkeys(tps, 0), take)
    assert failed == {}
    assert keys == {tp: [f"{tp.partition}-{i}".encode() for i in range(120)] for tp in tps}
    assert rounds.records == 480 and rounds.bytes >= 4 * 120 * 600
    if broker_kind() == "apache":
        # Apache Kafka gives a whole batch past the limit only to the first partition of a request:
        # the rule was needed here, not just tested.
        assert empty_below_end, "no round left a partition empty below its end"
    assert [r.key for r in read_partition(source, tps[3])] == keys[tps[3]]


def test_the_tail_sample_reaches_the_log_end_when_its_batch_begins_far_before_it(target: KafkaCluster) -> None:
    """The sample asks for the batch holding the 64th record from the end; when that batch begins far
    before it (records of 150 bytes in 16 KB batches, then larger ones), 16 KB ended 60 records short of
    the end, and a restore declared complete was said to have stopped there (a test failed one run in
    three). It reads on to the end the plan began with."""
    from offset_restore.kafka.model import LogBounds
    from offset_restore.reading.rounds import fetch_from
    from offset_restore.translate.reshaped import sample_reads

    topic = unique("tail-sample")
    target.create_topics({topic: 1})
    target.produce(topic, 0, ((f"a-{i}".encode(), b"s" * 150, [], None) for i in range(100)))
    target.produce(topic, 0, ((f"b-{i}".encode(), b"L" * 300, [], None) for i in range(60)))
    tp = TP(topic, 0)
    first = target.fetch({tp: 160 - 64}, partition_max_bytes=16 * 1024)[tp]
    assert first.read_to < 160, "the batch layout did not leave a 16 KB read short of the end"
    answers = sample_reads(FetchRounds(fetch_from(target)), {tp: LogBounds(0, 160)})[tp]
    assert answers[-1].read_to == 160 and answers[-1].records[-1].key == b"b-59"
    offsets = [r.offset for a in answers for r in a.records]
    assert offsets == list(range(offsets[0], 160))


def test_fetches_ask_the_cluster_metadata_once_and_again_after_an_answer_failed(source: KafkaCluster) -> None:
    """A Metadata answer lists every topic of the cluster: asked before every fetch, it cost a plan
    0.5 MB of 6.6 MB on a cluster of 400 partitions. Leaders are kept from one answer; a partition not
    in it (a topic created since), a leader that is gone (a broker replaced: here a node id no broker
    has) or an answer that failed makes the next fetch ask again, and the read goes on."""
    topic = unique("leaders")
    source.create_topics({topic: 2})
    for p in range(2):
        source.produce(topic, p, ((f"{p}-{i}".encode(), b"v" * 100, [], None) for i in range(300)))
    tps = [TP(topic, p) for p in range(2)]
    with KafkaCluster(source.settings) as fresh:
        metadata = fresh.requests_sent["Metadata"]
        for at in range(0, 300, 30):
            answers = fresh.fetch(dict.fromkeys(tps, at), partition_max_bytes=64 * 1024)
            assert all(a.error is None and a.records[0].offset == at for a in answers.values()), answers
        assert fresh.requests_sent["Metadata"] - metadata == 1, fresh.requests_sent
        later = TP(unique("created-later"), 0)
        assert fresh.fetch({later: 0})[later].error == "UnknownTopicOrPartitionError"
        source.create_topics({later.topic: 1})
        source.produce(later.topic, 0, [(b"k", b"v", [], None)])
        assert [r.key for r in read_partition(fresh, later)] == [b"k"]  # the new topic's leader found
        assert fresh._known_leaders is not None
        fresh._known_leaders[tps[0]] = 4_242  # a leader no broker is any more
        with pytest.raises(ClusterError, match="4242"):
            fresh.fetch({tps[0]: 0})
        assert [r.offset for r in read_partition(fresh, tps[0])] == list(range(300))  # asked again, read on
