"""A broker that ignores per-partition fetch limits (the local one, Tansu, fills a request's first
partition up to the response limit) is seen doing so once, and from then on each partition is asked
of it alone, a point read one batch: no read costs more than asked. Apache Kafka honours the limits
(KIP-74: at most the first batch whole past them) and is never taken for such a broker."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from kafka import KafkaProducer
from offset_restore.apply.anchors import records_at
from offset_restore.devtools.brokers import started
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP, CommittedOffset, PartitionFetch
from offset_restore.reading.rounds import POINT_READ_BYTES
from offset_restore.reading.whole import read_partition
from offset_restore.snapshot.fingerprint import DEFAULT_OFFSET_HEADER
from offset_restore.snapshot.live import SnapshotOptions, take_snapshot
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.translation import translate

from tests.helpers import unique

RECORDS = 2_000
DENSE = 3_000


@pytest.fixture(scope="module")
def local() -> Iterator[KafkaCluster]:
    with started("local", "limits") as (broker,), KafkaCluster(broker.settings()) as cluster:
        yield cluster


def _written(cluster: KafkaCluster) -> list[TP]:
    topic = unique("limits")
    cluster.create_topics({topic: 3})
    for p in range(3):  # ~220 KB a partition, in the producer's 16 KB batches
        cluster.produce(topic, p, ((f"{p}-{i}".encode(), b"v" * 100, [], None) for i in range(RECORDS)))
    return [TP(topic, p) for p in range(3)]


def _point_reads(cluster: KafkaCluster, tps: list[TP], at: int) -> dict[TP, tuple[int, int, list[int]]]:
    answers = cluster.fetch(dict.fromkeys(tps, at), partition_max_bytes=POINT_READ_BYTES)
    return {tp: (a.size, a.first_batch_bytes, [r.offset for r in a.records]) for tp, a in answers.items()}


def test_the_local_broker_is_seen_ignoring_limits_and_then_asked_one_batch_a_partition(local: KafkaCluster) -> None:
    tps = _written(local)
    first = _point_reads(local, tps, 100)
    assert max(size for size, _, _ in first.values()) > 2 * POINT_READ_BYTES  # what it does, shown
    assert local.limit_ignoring, "an answer of several batches far over its limit went unnoticed"
    for at in (700, 1_500):
        later = _point_reads(local, tps, at)
        for tp, (size, batch, offsets) in later.items():
            assert size == batch <= 2 * POINT_READ_BYTES, f"{tp} at {at}: {size} bytes, its batch {batch}"
            assert offsets[0] == at and offsets == list(range(at, offsets[-1] + 1))  # the batch holding it
    assert all(read_partition(local, tp)[-1].offset == RECORDS - 1 for tp in tps)  # reads of ranges go on


def test_apache_kafka_is_never_taken_for_a_broker_that_ignores_limits(target: KafkaCluster) -> None:
    tps = _written(target)
    for at in (0, 100, 1_500):
        for tp, (size, batch, offsets) in _point_reads(target, tps, at).items():
            assert size <= POINT_READ_BYTES or size == batch, f"{tp} at {at}: {size} bytes"
            assert offsets and offsets[0] == at
    assert target.limit_ignoring == set()
    assert target.uncut_senders == set()  # it cuts the batch a limit ends in: no read is cut short there


@pytest.mark.parametrize("broker", ["local", "apache"])
def test_anchors_close_together_are_read_in_a_few_runs_at_the_bytes_of_one_pass(
    broker: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Apply's check of a dense partition's anchors (every 10th offset here): point reads would cover
    it back to back, a request each window; read as runs (``FetchRounds.run_end``), a few rounds bring
    the same records, and no more bytes than reading the partition once."""
    cluster: KafkaCluster = request.getfixturevalue("local" if broker == "local" else "target")
    tps = _written(cluster)
    _point_reads(cluster, tps, 100)  # on the local broker: its first over-read, seen, out of the count
    assert bool(cluster.limit_ignoring) == (broker == "local")  # from here each partition alone there
    before = cluster.fetched_bytes
    read_partition(cluster, tps[1])
    one_pass = cluster.fetched_bytes - before
    rounds: list[int] = []
    real = cluster.fetch

    def counted(positions: Mapping[TP, int], **kwargs: Any) -> dict[TP, PartitionFetch]:
        rounds.append(len(positions))
        return real(positions, **kwargs)

    monkeypatch.setattr(cluster, "fetch", counted)
    wanted = set(range(3, RECORDS, 10))
    before = cluster.fetched_bytes
    found = records_at(cluster, {tps[2]: wanted})
    read = cluster.fetched_bytes - before
    assert {o for _, o in found} == wanted
    assert all(r.key == f"2-{o}".encode() for (_, o), r in found.items())
    assert len(rounds) <= 4, f"{len(rounds)} rounds for {len(wanted)} offsets on 14 batches"
    assert read <= one_pass * 1.1, f"{read} bytes, one pass {one_pass}"


@pytest.mark.parametrize("broker", ["local", "apache"])
def test_point_reads_over_small_batches_cost_about_a_batch_not_16_kb(
    broker: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches of 10 records (about 1.3 KB, what a lightly loaded producer or a compressed 16 KB batch
    leaves): once a read showed them, a point read asks for the one batch (``ONE_BATCH``,
    ``FetchRounds._fitted``), where 16 KB brought 12 batches from Apache Kafka for the one wanted."""
    cluster: KafkaCluster = request.getfixturevalue("local" if broker == "local" else "target")
    topic = unique("small-batches")
    cluster.create_topics({topic: 1})
    tp = TP(topic, 0)
    for chunk in range(200):  # each call waits for its acknowledgement: a batch of 10 records each
        cluster.produce(topic, 0, ((f"{chunk}-{i}".encode(), b"v" * 100, [], None) for i in range(10)))
    _point_reads(cluster, [tp], 0)  # the local broker's first over-read, seen, out of the count
    sizes: list[int] = []
    real = cluster.fetch

    def sized(positions: Mapping[TP, int], **kwargs: Any) -> dict[TP, PartitionFetch]:
        answers = real(positions, **kwargs)
        sizes.extend(a.largest_batch_bytes for a in answers.values())
        return answers

    monkeypatch.setattr(cluster, "fetch", sized)
    wanted = set(range(5, 2_000, 97))  # 21 offsets, each in a batch of its own
    before = cluster.fetched_bytes
    found = records_at(cluster, {tp: wanted})
    read = cluster.fetched_bytes - before
    assert {o for _, o in found} == wanted
    batch = max(sizes)
    assert batch < 2_000, f"batches of {batch} bytes: the producer did not write small batches"
    assert read <= POINT_READ_BYTES + len(wanted) * batch, f"{read} bytes for {len(wanted)} batches"
    assert read < len(wanted) * POINT_READ_BYTES / 4  # the 16 KB point reads cost 4x more at least


def _incompressible(i: int) -> bytes:
    """96 bytes a codec cannot shrink much: a compressed dense partition still costs what it holds."""
    return b"".join(hashlib.sha256(f"{i}-{n}".encode()).digest() for n in range(3))


def _dense_restore(cluster: KafkaCluster, codec: str | None) -> tuple[list[TP], dict[str, dict[TP, int]]]:
    """A restore of itself (every record carries its own offset in the header), 2 partitions of 3,000
    records in ``codec`` batches, with 60 groups on each: so many positions that the plan reads them
    whole. Positions lie everywhere, the tail sample's last 64 records and the log end too."""
    topic = unique("dense-tail")
    cluster.create_topics({topic: 2})
    tps = [TP(topic, p) for p in range(2)]
    producer = KafkaProducer(
        bootstrap_servers=cluster.settings.bootstrap_servers, compression_type=codec, linger_ms=20, acks=1,
        max_in_flight_requests_per_connection=1,
    )  # fmt: skip
    try:
        for tp in tps:
            for i in range(DENSE):
                key, headers = f"{tp.partition}-{i}".encode(), [(DEFAULT_OFFSET_HEADER, i.to_bytes(8, "big"))]
                producer.send(topic, key=key, value=_incompressible(i), partition=tp.partition, headers=headers)
        producer.flush()
    finally:
        producer.close()
    tail = [DENSE - n for n in (0, 1, 2, 30, 63, 64, 65, 66, 130)]
    offsets = sorted({*range(0, DENSE, DENSE // 50), *tail})
    groups = {unique(f"dense-{n}"): {tp: offsets[n] for tp in tps} for n in range(len(offsets))}
    errors = cluster.alter_offsets_many(
        {g: {tp: CommittedOffset(c, None) for tp, c in at.items()} for g, at in groups.items()}
    )
    assert not any(e for per in errors.values() for e in per.values())
    return tps, groups


@pytest.mark.parametrize("codec", [None, "lz4", "zstd"])
@pytest.mark.parametrize("broker", ["local", "apache"])
def test_a_dense_partition_read_whole_takes_its_tail_from_the_sample_and_stays_exact(
    broker: str, codec: str | None, request: pytest.FixtureRequest
) -> None:
    """The shape check samples each partition's last records before the header strategy reads a dense
    one whole: the local broker, which sends whole batches up to a limit, is asked to stop short of them
    and the sample's records are put in their place (the plan read 1.02 times one pass before); on
    Apache Kafka the reads are not cut (it cuts a batch at the limit) and the sample's records replace
    the whole read's. Every position is where the header says, none twice: a record of the tail taken
    twice would read as disorder, one missed as a hole."""
    cluster: KafkaCluster = request.getfixturevalue("local" if broker == "local" else "target")
    tps, groups = _dense_restore(cluster, codec)
    snapshot = take_snapshot(cluster, SnapshotOptions(groups="|".join(groups)))
    with KafkaCluster(cluster.settings) as fresh:  # as a plan starts: nothing known of the broker yet
        entries, stats = translate(snapshot.groups, fresh, PlanOptions())
        read = fresh.fetched_bytes
        for tp in tps:
            read_partition(fresh, tp)
        one_pass = fresh.fetched_bytes - read
    assert len(entries) == 2 * len(groups)
    wrong = [(e.group, e.partition, e.source_offset, e.target_offset, e.exact) for e in entries
             if e.target_offset != groups[e.group][TP(e.topic, e.partition)] or not e.exact]  # fmt: skip
    assert not wrong, wrong
    assert stats.fetch_rounds.get("header (whole partitions)", 0) > 0 and not stats.out_of_order, stats
    if broker == "local":  # the proof's own reads (records it compares with the evidence) apart
        read -= stats.bytes_read.get("proof", 0)
        # Within 1% of one pass: what this guards against is every window read twice (1.03x). How the local
        # broker cuts its answers still varies with load (1.0015x once, in a suite of three processes).
        assert read <= one_pass * 1.01, f"the plan read {read} bytes, one pass {one_pass}"


def _restore_written_twice(cluster: KafkaCluster) -> tuple[TP, dict[str, int]]:
    """A restore of 20,000 records (each carrying its source offset) that wrote source records
    9,000..9,499 a second time after 12,000 (a restore tool restarted from an older checkpoint): the
    search's windows show the headers falling back, and the partition is read whole."""
    topic = unique("written-twice")
    cluster.create_topics({topic: 1})
    order = [*range(12_000), *range(9_000, 9_500), *range(12_000, 20_000)]
    rows = ((f"k{i}".encode(), b"v" * 100, [(DEFAULT_OFFSET_HEADER, i.to_bytes(8, "big"))], None) for i in order)
    cluster.produce(topic, 0, rows)
    groups = {unique(f"twice-{c}"): c for c in (5, 4_000, 9_100, 11_999, 12_001, 15_000, 19_999, 20_000)}
    errors = cluster.alter_offsets_many({g: {TP(topic, 0): CommittedOffset(c, None)} for g, c in groups.items()})
    assert not any(e for per in errors.values() for e in per.values())
    return TP(topic, 0), groups


@pytest.mark.parametrize("broker", ["local", "apache"])
def test_a_partition_read_whole_after_its_search_takes_the_search_windows_it_holds(
    broker: str, request: pytest.FixtureRequest
) -> None:
    """The search's windows that the broker sent uncut (the local broker) are taken by the whole read
    the disorder calls for, the read stopping short of each: no more bytes than one pass (1.03x before,
    every window read twice), and every entry the full order check's. The first window comes before the
    broker is known to send whole batches (a plan's first answer over a limit shows it) and is taken as
    well: a plan that read it first as one batch read 1.006x one pass on a loaded machine. On Apache
    Kafka a window is taken where a read reaches its start, and the entries are the same."""
    cluster: KafkaCluster = request.getfixturevalue("local" if broker == "local" else "target")
    tp, groups = _restore_written_twice(cluster)
    snapshot = take_snapshot(cluster, SnapshotOptions(groups="|".join(groups)))
    with KafkaCluster(cluster.settings) as fresh:
        entries, stats = translate(snapshot.groups, fresh, PlanOptions())
        read = fresh.fetched_bytes
        read_partition(fresh, tp)
        one_pass = fresh.fetched_bytes - read
    full, _ = translate(snapshot.groups, cluster, PlanOptions(order_check="full"))
    assert stats.fetch_rounds.get("header", 0) > 0 and stats.fetch_rounds.get("header (whole partitions)", 0) > 0
    assert tp in stats.out_of_order, stats.out_of_order
    assert stats.records_read.get("header (whole partitions, held)", 0) > 0, stats  # the first window at least
    answers = sorted((e.group, e.target_offset, e.exact) for e in entries)
    assert answers == sorted((e.group, e.target_offset, e.exact) for e in full)
    if broker == "local":  # the proof's own reads (records it compares with the evidence) apart
        read -= stats.bytes_read.get("proof", 0)
        assert read <= one_pass, f"the plan read {read} bytes, one pass {one_pass}"


def _transactional_restore(cluster: KafkaCluster, servers: str) -> tuple[list[TP], dict[str, tuple[TP, int]]]:
    """3 partitions of 10,000 records, each carrying its source offset, written in transactions of
    500 whose last record goes alone in a batch of its own (a producer flushed at the commit); every
    7th transaction aborted and written again. The local broker returns the aborted records to a
    read_committed read, so its restore is read whole after the search; Apache Kafka filters them."""
    topic = unique("txn-whole")
    cluster.create_topics({topic: 3})
    producer = KafkaProducer(  # batches end where it flushes (a commit flushes), not where a linger ran out
        bootstrap_servers=servers, acks="all", linger_ms=60_000, transactional_id=unique("txn")
    )

    def send(p: int, rows: range) -> None:
        for i in rows:
            if i % 100 == 0 or i % 500 == 499:
                producer.flush()
            producer.send(
                topic, key=f"k{i}".encode(), value=b"v" * 100, partition=p, timestamp_ms=1_700_000_000_000 + i,
                headers=[(DEFAULT_OFFSET_HEADER, i.to_bytes(8, "big"))],
            )  # fmt: skip

    try:
        producer.init_transactions()
        for p in range(3):
            for n, start in enumerate(range(0, 10_000, 500)):
                if n % 7 == 3:
                    producer.begin_transaction()
                    send(p, range(start, start + 500))
                    producer.flush()
                    producer.abort_transaction()
                producer.begin_transaction()
                send(p, range(start, start + 500))
                producer.commit_transaction()
    finally:
        producer.close()
    groups = {unique(f"txn-{p}-{c}"): (TP(topic, p), c) for p in range(3) for c in (1, 777, 4_321, 7_777, 9_998)}
    errors = cluster.alter_offsets_many({g: {tp: CommittedOffset(c, None)} for g, (tp, c) in groups.items()})
    assert not any(e for per in errors.values() for e in per.values())
    return [TP(topic, p) for p in range(3)], groups


@pytest.mark.parametrize("broker", ["local", "apache"])
def test_a_transactional_restore_read_whole_after_its_search_reads_each_batch_once(
    broker: str, request: pytest.FixtureRequest
) -> None:
    """On the local broker the search's windows, its gap reads and the sample's last records are each
    read once, the whole read stopping short of each (a batch before it asked alone) and taking what
    ran past: no more bytes than one pass (1.01-1.02x before: the sample's last batch read again by the
    search, two 14 KB batches for each point read, a lone record's batch pricing the read after it
    at 1.4x). Every entry is the full order check's, on both brokers. (On Apache Kafka the aborted
    transactions' gap reads cost more than half of each partition here, which is then read whole
    after them: 1.2x one pass, the windows read again; see docs/benchmarks.md.)"""
    cluster: KafkaCluster = request.getfixturevalue("local" if broker == "local" else "target")
    servers = cluster.settings.bootstrap_servers
    tps, groups = _transactional_restore(cluster, servers)
    snapshot = take_snapshot(cluster, SnapshotOptions(groups="|".join(groups)))
    with KafkaCluster(cluster.settings) as fresh:
        entries, stats = translate(snapshot.groups, fresh, PlanOptions())
        read = fresh.fetched_bytes
        for tp in tps:
            read_partition(fresh, tp)
        one_pass = fresh.fetched_bytes - read
    full, _ = translate(snapshot.groups, cluster, PlanOptions(order_check="full"))
    answers = sorted((e.group, e.target_offset, e.exact) for e in entries)
    assert answers == sorted((e.group, e.target_offset, e.exact) for e in full)
    if broker == "local":
        assert stats.fetch_rounds.get("header (whole partitions)", 0) > 0 and set(stats.out_of_order) == set(tps)
        # one batch (14 KB) of slack: once in CI, on a loaded machine, the plan read 1.003x one pass, on
        # a layout 60 runs under load here did not make again (1.01-1.02x before the search held its reads)
        slack = 15_000
        assert read <= one_pass + slack, f"the plan read {read} bytes, one pass {one_pass}: {stats.bytes_read}"
