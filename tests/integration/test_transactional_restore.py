"""Issue 40 on the real brokers: a restore written in transactions, some aborted and written again (a
restore tool that retried). The aborted records and the markers take target offsets a read_committed
read never returns: between the search's windows they look like "more records than the source had",
as a chunk written twice does. The plan reads into those gaps until they are explained — not the
partition whole — and stays exact; a chunk committed twice is still caught and answered as the whole
read answers it."""

from __future__ import annotations

from typing import Any

from kafka import KafkaProducer
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP, AbortedBatch, CommittedOffset, PartitionFetch
from offset_restore.reading.whole import read_partition
from offset_restore.snapshot.fingerprint import DEFAULT_OFFSET_HEADER
from offset_restore.snapshot.live import SnapshotOptions, take_snapshot
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.positions import TranslateStats
from offset_restore.translate.translation import translate

from tests.helpers import Brokers, unique

RECORDS = 20_000
CHUNK = 500
POSITIONS = (1, 777, 4_321, 9_999, 12_345, 17_000, 19_998)


def _producer(servers: str, transactional_id: str | None = None) -> KafkaProducer:
    extra = {"transactional_id": transactional_id} if transactional_id else {}
    # batches end where the writer flushes (and a commit flushes), never where a linger ran out: on a
    # loaded machine 20 ms ran out mid-batch and the aborted transactions came in more batches
    return KafkaProducer(bootstrap_servers=servers, acks="all", linger_ms=60_000, **extra)


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


def write_restore(
    servers: str,
    topic: str,
    *,
    committed_again: range | None = None,
    inside_aborted: range | None = None,
    new_timestamps: bool = False,
) -> None:
    """The source's records with the offset header, in transactions of CHUNK records; every 10th is
    aborted and written again. ``committed_again``: source offsets written a second time, committed,
    after the chunk that ends them (a restore tool that restarted from an older checkpoint).
    ``inside_aborted``: source offsets another producer writes a second time, committed, in the middle
    of the first aborted transaction (a second restore instance running beside the first).
    ``new_timestamps``: the records get the time they are written, not the source's (as a restore tool
    that does not copy timestamps writes them): newer than the markers before them."""
    producer = _producer(servers, unique("restore-txn"))
    other = _producer(servers)

    def send(rows: range, by: KafkaProducer = producer) -> None:  # batches of 100 records: the same log every run
        for i in rows:
            if i % 100 == 0:
                by.flush()
            by.send(
                topic, key=f"k{i}".encode(), value=b"v" * 100, partition=0,
                timestamp_ms=None if new_timestamps else 1_700_000_000_000 + i,
                headers=[(DEFAULT_OFFSET_HEADER, i.to_bytes(8, "big"))],
            )  # fmt: skip

    try:
        producer.init_transactions()
        for n, start in enumerate(range(0, RECORDS, CHUNK)):
            chunk = range(start, min(RECORDS, start + CHUNK))
            if n % 10 == 9:
                producer.begin_transaction()
                send(chunk[: CHUNK // 2])
                if inside_aborted is not None and n == 9:
                    producer.flush()
                    send(inside_aborted, other)
                    other.flush()
                send(chunk[CHUNK // 2 :])
                producer.flush()  # every batch in the log, then the abort marker
                producer.abort_transaction()
            producer.begin_transaction()
            send(chunk)
            if committed_again is not None and chunk.stop == committed_again.stop:
                send(committed_again)
            producer.commit_transaction()
    finally:
        producer.close()
        other.close()


def planned(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, aborted: set | None = None, **restore: Any
) -> tuple[list, list, TranslateStats]:
    """The plan's entries, the full order check's, and the plan's counts. ``aborted`` gains every
    batch of an aborted transaction the plan's answers held."""
    topic = unique("txn-restore")
    source.create_topics({topic: 1})
    target.create_topics({topic: 1})
    write_source(brokers.source.bootstrap_servers, topic)
    write_restore(brokers.target.bootstrap_servers, topic, **restore)
    groups = {unique(f"txn-at{c}"): c for c in POSITIONS}
    errors = source.alter_offsets_many({g: {TP(topic, 0): CommittedOffset(c, None)} for g, c in groups.items()})
    assert not any(e for per in errors.values() for e in per.values())
    snapshot = take_snapshot(source, SnapshotOptions(groups="|".join(groups)))
    fetch = target.fetch

    def noted(*args: Any, **kwargs: Any) -> dict[TP, PartitionFetch]:
        answers = fetch(*args, **kwargs)
        for answer in answers.values():
            (aborted if aborted is not None else set()).update(answer.aborted)
        return answers

    target.fetch = noted  # type: ignore[method-assign]  # the real fetch, its answers noted
    try:
        entries, stats = translate(snapshot.groups, target, PlanOptions())
    finally:
        del target.fetch
    whole, _ = translate(snapshot.groups, target, PlanOptions(order_check="full"))
    return (
        sorted(entries, key=lambda e: e.source_offset),
        sorted(whole, key=lambda e: e.source_offset),
        stats,
    )


def test_aborted_transactions_are_read_as_holes_not_the_partition_whole(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster
) -> None:
    aborted: set[AbortedBatch] = set()
    entries, whole, stats = planned(brokers, source, target, aborted)
    rounds = stats.fetch_rounds
    records = read_partition(target, TP(entries[0].target_topic, 0))
    by_source = {int.from_bytes(dict(r.headers)[DEFAULT_OFFSET_HEADER] or b"", "big"): r.offset for r in records}
    assert len(records) == RECORDS  # read_committed: the aborted copies are never read
    assert [(e.source_offset, e.target_offset, e.exact) for e in entries] == [
        (c, by_source[c], True) for c in POSITIONS
    ]
    assert [e.target_offset for e in entries] == [e.target_offset for e in whole]
    assert rounds.get("header (whole partitions)", 0) == 0, rounds  # the gaps were read, not the partition
    assert rounds.get("header (gaps)", 0) > 0, rounds
    # each aborted transaction (500 records) proven from a few of its batches' headers, not read through
    # (aborted_spans.py): all of each were read before. Counted in offsets, not batches: on a loaded
    # machine the producer sends a record or two alone after a flush, and a read of one 100-record batch
    # then holds two or three (19 batches for 4 transactions once, in CI); the offsets stay ~200 each
    transactions = {b.transaction_start for b in aborted}
    covered = sum(b.next_offset - b.base_offset for b in aborted)
    assert transactions and covered <= CHUNK // 2 * len(transactions), sorted(aborted)
    # each found by its marker (read alone, through the time index: marker_walk.py), then read by its
    # first and last batches, no window spent looking for it (20 gap reads for 4 transactions before)
    assert stats.fetches.get("header (markers)", 0) > 0, stats.fetches
    assert stats.fetches["header (gaps)"] <= 2 * len(transactions) + 2, stats.fetches


def test_a_chunk_committed_twice_in_a_transactional_restore_is_still_caught(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster
) -> None:
    """Source offsets 9,500-9,999 written again right after 9,999 (committed): the gap reads find headers
    that fall back, and the partition is read whole, answered as the full order check answers it."""
    entries, whole, stats = planned(brokers, source, target, committed_again=range(9_500, 10_000))
    rounds = stats.fetch_rounds
    assert rounds.get("header (whole partitions)", 0) > 0, rounds
    assert [(e.target_offset, e.exact) for e in entries] == [(e.target_offset, e.exact) for e in whole]


def test_a_chunk_another_producer_committed_inside_an_aborted_transaction_is_read_and_caught(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster
) -> None:
    """Source offsets 12,345-12,444 committed by a second producer in the middle of the aborted
    transaction of 4,500-4,999: the aborted producer's sequences do not count those offsets, so the
    span is not proven across them; they are read, their headers fall back, and the group at 12,345
    resumes at that first copy (the whole read's answer), not 8,000 records past it."""
    entries, whole, stats = planned(brokers, source, target, inside_aborted=range(12_345, 12_445))
    rounds = stats.fetch_rounds
    assert rounds.get("header (whole partitions)", 0) > 0, rounds
    assert [(e.target_offset, e.exact) for e in entries] == [(e.target_offset, e.exact) for e in whole]
    at = next(e for e in entries if e.source_offset == 12_345)
    assert at.target_offset < 5_000, at  # inside the first aborted transaction's offsets


def test_a_restore_that_gave_its_records_new_timestamps_is_read_as_before_after_one_look(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster
) -> None:
    """The records carry the time they were written: the time index points past the newest record read
    at records, not markers, so the walk stops at its first look (an empty answer, or one batch) and the
    gaps are bisected as before: every entry the full order check's, no partition read whole."""
    aborted: set[AbortedBatch] = set()
    entries, whole, stats = planned(brokers, source, target, aborted, new_timestamps=True)
    assert [(e.target_offset, e.exact) for e in entries] == [(e.target_offset, e.exact) for e in whole]
    assert all(e.exact for e in entries)
    assert stats.fetch_rounds.get("header (whole partitions)", 0) == 0, stats.fetch_rounds
    assert stats.fetches.get("header (markers)", 0) <= 2, stats.fetches
