"""Issue 40 on the real brokers: a restore written in transactions, some aborted and written again (a
restore tool that retried). The aborted records and the markers take target offsets a read_committed
read never returns: between the search's windows they look like "more records than the source had",
as a chunk written twice does. The plan reads into those gaps until they are explained — not the
partition whole — and stays exact; a chunk committed twice is still caught and answered as the whole
read answers it."""

from __future__ import annotations

from kafka import KafkaProducer
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP, CommittedOffset
from offset_restore.snapshot.fingerprint import DEFAULT_OFFSET_HEADER
from offset_restore.snapshot.live import SnapshotOptions, take_snapshot
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.translation import translate

from tests.helpers import Brokers, unique

RECORDS = 20_000
CHUNK = 500
POSITIONS = (1, 777, 4_321, 9_999, 12_345, 17_000, 19_998)


def _producer(servers: str, transactional_id: str | None = None) -> KafkaProducer:
    extra = {"transactional_id": transactional_id} if transactional_id else {}
    return KafkaProducer(bootstrap_servers=servers, acks="all", linger_ms=20, **extra)


def write_source(servers: str, topic: str) -> None:
    producer = _producer(servers)
    try:
        for i in range(RECORDS):
            producer.send(
                topic, key=f"k{i}".encode(), value=b"v" * 100, partition=0, timestamp_ms=1_700_000_000_000 + i
            )
        producer.flush()
    finally:
        producer.close()


def write_restore(servers: str, topic: str, *, committed_again: range | None = None) -> None:
    """The source's records with the offset header, in transactions of CHUNK records; every 10th is
    aborted and written again. ``committed_again``: source offsets written a second time, committed,
    after the chunk that ends them (a restore tool that restarted from an older checkpoint)."""
    producer = _producer(servers, unique("restore-txn"))

    def send(rows: range) -> None:  # a batch of 100 records each: the same log, hence the same reads, every run
        for i in rows:
            if i % 100 == 0:
                producer.flush()
            producer.send(
                topic, key=f"k{i}".encode(), value=b"v" * 100, partition=0, timestamp_ms=1_700_000_000_000 + i,
                headers=[(DEFAULT_OFFSET_HEADER, i.to_bytes(8, "big"))],
            )  # fmt: skip

    try:
        producer.init_transactions()
        for n, start in enumerate(range(0, RECORDS, CHUNK)):
            chunk = range(start, min(RECORDS, start + CHUNK))
            if n % 10 == 9:
                producer.begin_transaction()
                send(chunk)
                producer.abort_transaction()
            producer.begin_transaction()
            send(chunk)
            if committed_again is not None and chunk.stop == committed_again.stop:
                send(committed_again)
            producer.commit_transaction()
    finally:
        producer.close()


def planned(brokers: Brokers, source: KafkaCluster, target: KafkaCluster, **restore: range) -> tuple[list, list, dict]:
    topic = unique("txn-restore")
    source.create_topics({topic: 1})
    target.create_topics({topic: 1})
    write_source(brokers.source.bootstrap_servers, topic)
    write_restore(brokers.target.bootstrap_servers, topic, **restore)
    groups = {unique(f"txn-at{c}"): c for c in POSITIONS}
    errors = source.alter_offsets_many({g: {TP(topic, 0): CommittedOffset(c, None)} for g, c in groups.items()})
    assert not any(e for per in errors.values() for e in per.values())
    snapshot = take_snapshot(source, SnapshotOptions(groups="|".join(groups)))
    entries, stats = translate(snapshot.groups, target, PlanOptions())
    whole, _ = translate(snapshot.groups, target, PlanOptions(order_check="full"))
    return (
        sorted(entries, key=lambda e: e.source_offset),
        sorted(whole, key=lambda e: e.source_offset),
        stats.fetch_rounds,
    )


def test_aborted_transactions_are_read_as_holes_not_the_partition_whole(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster
) -> None:
    entries, whole, rounds = planned(brokers, source, target)
    records = target.read_partition(TP(entries[0].target_topic, 0))
    by_source = {int.from_bytes(dict(r.headers)[DEFAULT_OFFSET_HEADER] or b"", "big"): r.offset for r in records}
    assert len(records) == RECORDS  # read_committed: the aborted copies are never read
    assert [(e.source_offset, e.target_offset, e.exact) for e in entries] == [
        (c, by_source[c], True) for c in POSITIONS
    ]
    assert [e.target_offset for e in entries] == [e.target_offset for e in whole]
    assert rounds.get("header (whole partitions)", 0) == 0, rounds  # the gaps were read, not the partition
    assert rounds.get("header (gaps)", 0) > 0, rounds


def test_a_chunk_committed_twice_in_a_transactional_restore_is_still_caught(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster
) -> None:
    """Source offsets 9,500-9,999 written again right after 9,999 (committed): the gap reads find headers
    that fall back, and the partition is read whole, answered as the full order check answers it."""
    entries, whole, rounds = planned(brokers, source, target, committed_again=range(9_500, 10_000))
    assert rounds.get("header (whole partitions)", 0) > 0, rounds
    assert [(e.target_offset, e.exact) for e in entries] == [(e.target_offset, e.exact) for e in whole]
