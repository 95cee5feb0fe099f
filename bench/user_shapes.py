"""The shapes users have, each beside the kafka-python consumer scans an operator writes.

    python -m bench.user_shapes --broker apache                  # every shape, full size
    python -m bench.user_shapes --shapes holed,dense --records 20000 --diagnose --profile

Shapes (the logs users have), written by kafka-python's producer (one request in flight, in order):
- holed: 20 partitions x 200,000 records, 16 KB batches, 100-byte values; the restore misses every 7th
  record (source offsets 6, 13, 20, ...: what compaction, filtering and transaction markers leave); 5 groups;
- dense: 200 partitions x 5,000 records, 16 KB batches, 100-byte values, the restore whole; 400 groups;
- gzip / lz4 / zstd: 20 partitions x 100,000 records, 1 MB batches (batch_size 1 MB, linger 500 ms),
  200-byte JSON-like values that compress as payloads do, the restore whole; 50 groups;
- fingerprint: 20 x 100,000 records, 16 KB lz4 batches, JSON-like values; a replica without the header,
  missing each partition's first 1,000 records; 20 groups (placed by the snapshot's fingerprints);
- transactional: 20 x 50,000 records, 16 KB batches; the restore writes transactions of 1,000 records,
  every 7th aborted and written again (aborted records and markers on the target); 5 groups.
Every record on the target carries ``x-source-offset`` (but the replica's); committed offsets are uniform
over [0, records]. The scan reads read_committed on the transactional shape; on the replica it takes the
source offset from the key the benchmark wrote (a baseline that cannot be wrong: an operator's script
would need the fingerprints).
``--memory`` (on by default) runs the snapshot and the plan of each 1 MB-batch shape again, each alone in a
fresh process, and reports its peak resident memory beside its Lambda function's.

Measured in one run per shape, each phase as a user runs it: ``take_snapshot`` (defaults) on the source,
``translate`` (defaults) and ``apply_plan`` on the target; and two baselines. THE OPERATOR SCAN, the one the
ratios are against (``operator_scan``): one consumer reading one partition at a time from its beginning,
``fetch_max_bytes`` 8 MB, left once its last position is settled. THE PLAIN CONSUMER SCAN: one
``kafka.KafkaConsumer`` (no group, enable_auto_commit False, max_poll_records 5000,
max_partition_fetch_bytes 1 MB), every target partition assign()ed and seek_to_beginning()ed, read once
from the start, each committed position settled by the first record whose ``x-source-offset`` is >= it;
a partition is paused once all its positions are settled (or its end is reached). And ONE PASS, the bound
set on every phase on the local broker: each target partition read once, start to end, by the
project's own fetch rounds (``one_pass``); the scan, stopping early, reads less.

Counted three ways, per phase:
- at a counting TCP proxy in front of each broker (in its own process; the brokers advertise the proxy,
  so every client of every phase goes through it): every byte the broker sends down, the Fetch requests
  going up and the bytes of their responses. The same counter for our phases and the consumer: the
  table's "MB down" and "Fetch requests";
- at the client: ``KafkaCluster.fetched_bytes`` (bytes of record batches received, ours) and kafka-python's
  the bytes of record batches kafka-python's consumer parsed (what its consumer-fetch-manager-metrics are
  fed by; kafka-python 3.0 keeps no bytes-consumed-total), shown beside it.
Every plan entry must equal the scan's answer (a position past the last restored record: the log end);
a mismatch fails the run.

``--diagnose`` logs every fetch of the plan (partition, offset, limit, bytes, records) and prints per
partition how it was read; ``--profile`` plans the shape a second time and applies it again (rolled back
first, so it writes and checks as the first apply did) under cProfile (the measured runs are not profiled)
and prints the top functions; ``--profile-out PREFIX`` also writes each shape's whole profile to
``PREFIX.<shape>`` for ``pstats``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import multiprocessing as mp
import platform
import pstats
import random
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.consumer import fetcher
from kafka.record.memory_records import MemoryRecords
from offset_restore.apply.commit import apply_plan
from offset_restore.apply.model import ApplyOptions
from offset_restore.apply.rollback import rollback_plan
from offset_restore.devtools.apache_broker import ApacheBroker
from offset_restore.devtools.brokers import KINDS, Broker, new_broker, start_all
from offset_restore.devtools.local_broker import free_ports
from offset_restore.devtools.process_memory import peak_mb
from offset_restore.devtools.processes import terminated_as_interrupt
from offset_restore.formats.plan import ClusterRef, Plan, PlanEntry, PlanSummary
from offset_restore.heap import collections_paused
from offset_restore.kafka import batch_records, protocol
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP, CommittedOffset, PartitionFetch
from offset_restore.reading.rounds import AtEnd, FetchRounds, Served, fetch_from, read_forward
from offset_restore.snapshot.fingerprint import DEFAULT_OFFSET_HEADER
from offset_restore.snapshot.live import SnapshotOptions, take_snapshot
from offset_restore.translate import translation as translation_module
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.positions import TranslateStats
from offset_restore.translate.strategies import header as header_strategy
from offset_restore.translate.translation import translate

RESULTS = Path(__file__).parent / "results"
BASE_MS = 1_700_000_000_000
T = TypeVar("T")


@dataclass(frozen=True)
class Shape:
    name: str
    title: str
    partitions: int
    records: int
    groups: int
    batch: int = 16_384
    codec: str | None = None
    hole_every: int = 0
    """The restore misses source offsets k-1, 2k-1, ... (0: the restore is whole)."""
    json_values: bool = False
    headers: bool = True
    """The restore writes the offset header (False: a replica, placed by its records' fingerprints)."""
    lost_first: int = 0
    """The restore misses each partition's first records (a backup that began late)."""
    transaction: int = 0
    """The restore writes in transactions of this many records, every 7th aborted and written again
    (a restore tool that retried): aborted records and a marker per transaction on the target."""


SHAPES = {
    s.name: s
    for s in (
        Shape("holed", "sparse with holes", 20, 200_000, 5, hole_every=7),
        Shape("dense", "dense", 200, 5_000, 400),
        Shape("gzip", "large compressed batches, gzip", 20, 100_000, 50, 1 << 20, "gzip", json_values=True),
        Shape("lz4", "large compressed batches, lz4", 20, 100_000, 50, 1 << 20, "lz4", json_values=True),
        Shape("zstd", "large compressed batches, zstd", 20, 100_000, 50, 1 << 20, "zstd", json_values=True),
        Shape(
            "fingerprint",
            "header-less replica (fingerprints)",
            20,
            100_000,
            20,
            codec="lz4",
            headers=False,
            lost_first=1_000,
            json_values=True,
        ),
        Shape("transactional", "transactional restore", 20, 50_000, 5, transaction=1_000),
    )
}

# ---------------------------------------------------------------------------------------------------
# The counting proxy: [down bytes, Fetch requests, Fetch response bytes, up bytes] per broker.

SLOTS = 4


def _proxy_main(pairs: list[tuple[int, int]], counts: Any, ready: Any) -> None:
    asyncio.run(_proxy(pairs, counts, ready))


async def _proxy(pairs: list[tuple[int, int]], counts: Any, ready: Any) -> None:
    servers = []
    for index, (listen, upstream) in enumerate(pairs):
        servers.append(await asyncio.start_server(_handler(upstream, counts, index * SLOTS), "127.0.0.1", listen))
    ready.set()
    await asyncio.gather(*(s.serve_forever() for s in servers))


class _Framer:
    """Kafka's framing (a 4-byte size, then the message): calls ``on_header`` with the first
    ``header`` bytes of each message (size included) while the bytes stream through."""

    def __init__(self, header: int, on_header: Callable[[bytes], None]) -> None:
        self.header, self.on_header = header, on_header
        self.partial = bytearray()
        self.remaining = 0

    def feed(self, data: bytes) -> None:
        i, n = 0, len(data)
        while i < n:
            if self.remaining:
                take = min(self.remaining, n - i)
                self.remaining -= take
                i += take
                continue
            take = min(self.header - len(self.partial), n - i)
            self.partial += data[i : i + take]
            i += take
            if len(self.partial) == self.header:
                head = bytes(self.partial)
                self.partial.clear()
                self.remaining = int.from_bytes(head[:4], "big") - (self.header - 4)
                self.on_header(head)


def _handler(upstream: int, counts: Any, base: int) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any]:
    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            broker_r, broker_w = await asyncio.open_connection("127.0.0.1", upstream)
        except OSError:
            client_w.close()
            return
        fetches: dict[int, None] = {}

        def request(head: bytes) -> None:  # size, api_key, api_version, correlation id
            if int.from_bytes(head[4:6], "big") == 1:
                counts[base + 1] += 1
                fetches[int.from_bytes(head[8:12], "big")] = None

        def response(head: bytes) -> None:  # size, correlation id
            if fetches.pop(int.from_bytes(head[4:8], "big"), 0) is None:
                counts[base + 2] += int.from_bytes(head[:4], "big") + 4

        async def pump(r: asyncio.StreamReader, w: asyncio.StreamWriter, framer: _Framer, slot: int) -> None:
            try:
                while data := await r.read(1 << 20):
                    framer.feed(data)
                    counts[base + slot] += len(data)
                    w.write(data)
                    await w.drain()
            except (OSError, asyncio.IncompleteReadError):
                pass
            finally:
                w.close()

        await asyncio.gather(
            pump(client_r, broker_w, _Framer(12, request), 3), pump(broker_r, client_w, _Framer(8, response), 0)
        )

    return handle


@dataclass
class Proxied:
    brokers: list[Broker]
    counts: Any
    direct: list[str]
    """Bootstrap servers that bypass the proxy (a listener of their own on Apache Kafka), for writing
    the shapes; through the proxy on the local broker."""

    def counter(self, index: int) -> tuple[int, int, int]:
        base = index * SLOTS
        return self.counts[base], self.counts[base + 1], self.counts[base + 2]


@contextmanager
def proxied_brokers(kind: str, *names: str) -> Iterator[Proxied]:
    """Brokers of ``kind`` advertising a counting proxy (each broker's clients all go through it)."""
    ctx = mp.get_context("spawn")
    counts = ctx.Array("q", SLOTS * len(names), lock=False)
    ready = ctx.Event()
    with terminated_as_interrupt(), ExitStack() as stack:
        # Every port at once: ``free_ports`` holds each bound until all are chosen, so no two are the same
        # (separate ``free_port`` calls can return one port twice: the proxy then failed to bind).
        chosen = iter(free_ports(5 * len(names)))
        ports = [(next(chosen), next(chosen)) for _ in names]
        proxy = ctx.Process(target=_proxy_main, args=([(q, p) for p, q in ports], counts, ready), daemon=True)
        proxy.start()
        stack.callback(proxy.join, 5)
        stack.callback(proxy.terminate)
        ready.wait(30)
        brokers: list[Broker] = []
        direct: list[str] = []
        for name, (p, q) in zip(names, ports, strict=True):
            if kind == "apache":
                d, c, i = next(chosen), next(chosen), next(chosen)
                listeners = f"CLIENT://127.0.0.1:{{}},DIRECT://127.0.0.1:{d},INTERNAL://127.0.0.1:{i},CONTROLLER://127.0.0.1:{c}"
                config = {
                    "listeners": listeners.format(p),
                    "advertised.listeners": listeners.format(q),
                    "listener.security.protocol.map": ",".join(
                        f"{n}:PLAINTEXT" for n in ("CONTROLLER", "INTERNAL", "CLIENT", "DIRECT")
                    ),
                }
                brokers.append(ApacheBroker(name, config=config, port=p, advertised_port=q, controller_port=c))
                direct.append(f"127.0.0.1:{d}")
            else:
                brokers.append(new_broker(kind, name, port=p, advertised_port=q))
                direct.append(f"127.0.0.1:{q}")
        start_all(brokers, stack)
        yield Proxied(brokers, counts, direct)


# ---------------------------------------------------------------------------------------------------
# Writing the shapes.


def _values(shape: Shape, p: int, seed: int) -> Iterator[bytes]:
    rng = random.Random(seed * 1000 + p)
    for i in range(shape.records):
        if shape.json_values:
            text = (
                f'{{"order":{i},"customer":"c-{rng.randrange(10**6):06d}","amount":{rng.randrange(10**5)},'
                f'"currency":"EUR","status":"{rng.choice(("new", "paid", "shipped"))}",'
                f'"note":"{rng.randbytes(12).hex()}","region":"eu-west-1","channel":"web","v":1}}'
            )
            yield text.ljust(200, " ").encode()[:200]
        else:
            yield rng.randbytes(100)


def restored(shape: Shape, i: int) -> bool:
    return i >= shape.lost_first and (not shape.hole_every or i % shape.hole_every != shape.hole_every - 1)


def _write(bootstrap: str, topic: str, shape: Shape, seed: int, restore: bool) -> int:
    """One cluster's copy of the topic (run in a process of its own, the source's beside the target's)."""
    errors: list[BaseException] = []
    transactional = restore and shape.transaction > 0
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=shape.codec,
        batch_size=shape.batch,
        linger_ms=500 if shape.batch > 16_384 else 50,
        acks="all" if transactional else 1,
        max_request_size=4 << 20,
        max_in_flight_requests_per_connection=1,
        **({"transactional_id": f"{topic}-restore"} if transactional else {}),
    )
    sent = 0

    def send(p: int, rows: list[tuple[int, bytes]], aborted: bool = False) -> int:
        for i, value in rows:
            headers = [(DEFAULT_OFFSET_HEADER, i.to_bytes(8, "big"))] if restore and shape.headers else []
            future = producer.send(
                topic, key=f"{p}:{i}".encode(), value=value, headers=headers, partition=p, timestamp_ms=BASE_MS + i
            )
            if i % 1000 == 0 and not aborted:  # an aborted transaction's records fail: as they should
                future.add_errback(errors.append)
        return len(rows)

    try:
        if transactional:
            producer.init_transactions()
        for p in range(shape.partitions):
            rows = [(i, v) for i, v in enumerate(_values(shape, p, seed)) if not restore or restored(shape, i)]
            if not transactional:
                sent += send(p, rows)
                continue
            for n, at in enumerate(range(0, len(rows), shape.transaction)):
                chunk = rows[at : at + shape.transaction]
                if n % 7 == 6:  # aborted, then written again: a restore tool that retried
                    producer.begin_transaction()
                    send(p, chunk, aborted=True)
                    producer.abort_transaction()
                producer.begin_transaction()
                sent += send(p, chunk)
                producer.commit_transaction()
        producer.flush(timeout=900)
    finally:
        producer.close()
    if errors:
        raise RuntimeError(f"producing to {bootstrap} failed: {errors[0]!r}")
    return sent


def write(
    shape: Shape, topic: str, boots: tuple[str, str], source: KafkaCluster, target: KafkaCluster, seed: int
) -> None:
    source.create_topics({topic: shape.partitions})
    target.create_topics({topic: shape.partitions})
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        jobs = [pool.apply_async(_write, (boots[k], topic, shape, seed, k == 1)) for k in (0, 1)]
        sent = [job.get() for job in jobs]
    for cluster, count in zip((source, target), sent, strict=True):
        bounds = cluster.log_bounds([TP(topic, p) for p in range(shape.partitions)])
        landed = sum(b.end - b.start for b in bounds.values())
        if cluster is source or not shape.transaction:
            assert landed == count, f"{count:,} records produced, {landed:,} in the log"
        else:  # aborted records and markers take offsets too
            assert landed > count, f"{count:,} records committed, only {landed:,} offsets in the log"


def commit_groups(source: KafkaCluster, shape: Shape, topic: str, seed: int) -> str:
    rng = random.Random(seed)
    prefix = f"{topic}-g"
    offsets = {
        f"{prefix}{g}": {
            TP(topic, p): CommittedOffset(rng.randrange(0, shape.records + 1), None) for p in range(shape.partitions)
        }
        for g in range(shape.groups)
    }
    failed = {g: e for g, errors in source.alter_offsets_many(offsets).items() for e in errors.values() if e}
    assert not failed, list(failed.items())[:3]
    return f"{prefix}.*"


# ---------------------------------------------------------------------------------------------------
# Measuring.


@dataclass
class Cost:
    seconds: float
    down: int
    """Bytes the broker sent down, at the proxy."""
    fetches: int
    """Fetch requests, at the proxy."""
    fetch_down: int
    """Bytes of Fetch responses, at the proxy."""
    client: int
    """Record-batch bytes counted by the client (fetched_bytes, or the consumer's parsed bytes)."""
    cpu: float = 0.0
    """CPU seconds of the benchmark's process (every thread: the client's I/O thread too; not the brokers' or
    the proxy's): what the code measured spends, less moved by other work on a shared machine than the wall."""
    batches: int = 0
    """Record batches the client parsed (``MemoryRecords.next_batch``: ours and the consumer's)."""
    note: str = ""


PARSED_BATCHES = [0]
"""Every record batch parsed in this process: ours (``batch_records.batches``, the compiled reader) and
kafka-python's consumer's (``MemoryRecords.next_batch``) alike (``count_batches``)."""


def count_batches() -> None:
    """Count each batch either reader hands out, into ``PARSED_BATCHES``."""
    original = MemoryRecords.next_batch

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        batch = original(self, *args, **kwargs)
        if batch is not None:
            PARSED_BATCHES[0] += 1
        return batch

    MemoryRecords.next_batch = counted
    ours = batch_records.batches

    def ours_counted(data: bytes) -> Any:
        for framed in ours(data):
            PARSED_BATCHES[0] += 1
            yield framed

    batch_records.batches = ours_counted
    protocol.batches = ours_counted  # decode_partition's own name for it


def rolled_back(plan: Plan, target: KafkaCluster, options: ApplyOptions) -> None:
    """``plan`` rolled back on ``target``, every group of it (an apply measured again writes what the first did)."""
    rolled = rollback_plan(plan, target, lambda _: None, wait=options)
    assert not rolled.groups_failed and not rolled.groups_skipped, (
        list(rolled.groups_failed.items())[:2],
        rolled.groups_skipped,
    )


def measured(proxy: Proxied, index: int, client: Callable[[], int], work: Callable[[], T]) -> tuple[T, Cost]:
    """``work`` timed and its bytes counted. What the benchmark holds before it (earlier shapes, the
    snapshot, the plan) is frozen out of the garbage collector's walks for the duration, so each phase and
    each scan pays for the objects it makes and no others, as a script run alone would."""
    down0, fetches0, fdown0 = proxy.counter(index)
    client0, batches0 = client(), PARSED_BATCHES[0]
    gc.freeze()
    started, cpu = time.perf_counter(), time.process_time()
    try:
        result = work()
    finally:
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        gc.unfreeze()
    time.sleep(0.05)  # the proxy's last bytes counted
    down1, fetches1, fdown1 = proxy.counter(index)
    cost = Cost(seconds, down1 - down0, fetches1 - fetches0, fdown1 - fdown0, client() - client0)
    cost.batches, cost.cpu = PARSED_BATCHES[0] - batches0, cpu
    return result, cost


@dataclass
class ScanResult:
    found: dict[tuple[TP, int], int]
    ends: dict[TP, int]
    consumed_bytes: int = 0
    records: int = 0


def plain_consumer_scan(bootstrap: str, wanted: Mapping[TP, list[int]], *, committed_only: bool) -> ScanResult:
    """THE PLAIN CONSUMER SCAN an operator writes: one KafkaConsumer, every partition read once from its start.

    Batches it prefetched and dropped when a partition was paused are not in its bytes (``counting``)."""
    with counting(bootstrap, committed_only) as (consumer, consumed):
        partitions = [TopicPartition(tp.topic, tp.partition) for tp in wanted]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        ends = {TP(k.topic, k.partition): v for k, v in consumer.end_offsets(partitions).items()}
        todo = {TP(tp.topic, tp.partition): sorted(set(offsets)) for tp, offsets in wanted.items()}
        next_index = dict.fromkeys(todo, 0)
        found: dict[tuple[TP, int], int] = {}
        open_ = {tp for tp in todo if todo[tp] and ends[tp] > 0}
        for tp in set(todo) - open_:
            consumer.pause(TopicPartition(tp.topic, tp.partition))
        records = 0
        while open_:
            for part, batch in consumer.poll(timeout_ms=1000).items():
                tp = TP(part.topic, part.partition)
                if tp not in open_:
                    continue
                # The local broker's ListOffsets answers the last batch's first offset for the end: the
                # fetches' high watermark is the end (KafkaCluster.log_bounds takes it for that reason).
                ends[tp] = max(ends[tp], consumer.highwater(part) or 0)
                next_index[tp], read, done = _settle(tp, batch, todo[tp], next_index[tp], ends[tp], found)
                records += read
                if done:
                    open_.discard(tp)
                    consumer.pause(part)
        return ScanResult(found, ends, consumed[0], records)


@contextmanager
def counting(bootstrap: str, committed_only: bool, **settings: Any) -> Iterator[tuple[Any, list[int]]]:
    """A scan's KafkaConsumer (no group, no auto-commit, ``max_poll_records`` 5,000, 1 MB a partition; read
    committed as a script must ask on a transactional topic), and the bytes of the record batches it parses.
    kafka-python 3.0 keeps no bytes-consumed-total (only rates and averages): they are summed by wrapping
    ``FetchResponseMetricAggregator.record``, the call those metrics are fed by."""
    consumed = [0]
    original = fetcher.FetchResponseMetricAggregator.record

    def counted(self: Any, partition: Any, num_bytes: int, num_records: int) -> None:
        consumed[0] += num_bytes
        original(self, partition, num_bytes, num_records)

    fetcher.FetchResponseMetricAggregator.record = counted
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        max_poll_records=5000,
        max_partition_fetch_bytes=1 << 20,
        isolation_level="read_committed" if committed_only else "read_uncommitted",
        **settings,
    )
    try:
        yield consumer, consumed
    finally:
        consumer.close()
        fetcher.FetchResponseMetricAggregator.record = original


def _settle(
    tp: TP, batch: list[Any], offsets: list[int], k: int, end: int, found: dict[tuple[TP, int], int]
) -> tuple[int, int, bool]:
    """One polled batch of a partition, each record's offset header read in a Python loop, settling the wanted
    positions it passes (``found``): the next unsettled position, the records read, and whether the partition
    is done (every position settled, or its end reached)."""
    read = 0
    for record in batch:
        read += 1
        source = None
        for key, value in record.headers:
            if key == DEFAULT_OFFSET_HEADER:
                source = int.from_bytes(value, "big")
        if not record.headers:  # a replica: the source offset the benchmark wrote in the key
            source = int(record.key.split(b":")[1])
        while source is not None and k < len(offsets) and source >= offsets[k]:
            found[(tp, offsets[k])] = record.offset
            k += 1
        if k == len(offsets) or record.offset + 1 >= end:
            return k, read, True
    return k, read, k == len(offsets) or (bool(batch) and batch[-1].offset + 1 >= end)


def operator_scan(bootstrap: str, wanted: Mapping[TP, list[int]], *, committed_only: bool) -> ScanResult:
    """THE SCAN TO BEAT, the simplest fast script an operator writes: one KafkaConsumer (``max_poll_records``
    5,000, ``fetch_max_bytes`` 8 MB, ``max_partition_fetch_bytes`` 1 MB), the partitions read one at a time
    from their beginning, each record's offset header read in a Python loop, a partition left as soon as its
    last wanted position is settled. Unlike the plain scan, no partition's prefetched data is dropped."""
    with counting(bootstrap, committed_only, fetch_max_bytes=8 << 20) as (consumer, consumed):
        every = [TopicPartition(tp.topic, tp.partition) for tp in wanted]
        ends = {TP(k.topic, k.partition): v for k, v in consumer.end_offsets(every).items()}
        found: dict[tuple[TP, int], int] = {}
        records = 0
        for tp, positions in sorted(wanted.items()):
            offsets, part = sorted(set(positions)), TopicPartition(tp.topic, tp.partition)
            if not offsets or ends[tp] <= 0:
                continue
            consumer.assign([part])
            consumer.seek_to_beginning(part)
            k, done = 0, False
            while not done:
                polled = consumer.poll(timeout_ms=1000)
                for _, batch in polled.items():
                    ends[tp] = max(ends[tp], consumer.highwater(part) or 0)  # the local broker's end: see above
                    k, read, done = _settle(tp, batch, offsets, k, ends[tp], found)
                    records += read
                done = done or (not polled and consumer.position(part) >= ends[tp])  # nothing left to read
        return ScanResult(found, ends, consumed[0], records)


def one_pass(cluster: KafkaCluster, tps: list[TP]) -> int:
    """ONE PASS: every target partition read once, from its log start to its end, in the project's own
    fetch rounds at 1 MB a partition — the bound set on each phase on the local broker (the scan
    stops a partition once its positions are settled: less than one pass). Returns the records read.
    The garbage collector is paused, as the phases pause it where they read: its walks of the records
    decoded, which it never frees, would cost more than the read itself."""
    bounds = cluster.log_bounds(tps)
    ends = {tp: b.end for tp, b in bounds.items()}
    rounds = FetchRounds(fetch_from(cluster), ends=ends, partition_bytes=1 << 20)

    def take(tp: TP, outcome: Served | AtEnd) -> int | None:
        if isinstance(outcome, AtEnd):
            return None
        return outcome.answer.read_to if outcome.answer.read_to < ends[tp] else None

    with collections_paused():
        failed = read_forward(rounds, {tp: b.start for tp, b in bounds.items() if b.end > b.start}, take)
    assert not failed, failed
    return rounds.records


def check(entries: list[PlanEntry], scan: ScanResult) -> None:
    """Every entry equal to the scan's answer, or the run fails."""
    wrong = []
    for e in entries:
        tp = TP(e.target_topic, e.partition if e.target_partition is None else e.target_partition)
        expected = scan.found.get((tp, e.source_offset), scan.ends[tp])
        if e.target_offset != expected:
            wrong.append((e.group, tp, e.source_offset, e.target_offset, expected, e.status, e.reason))
    if wrong:
        raise SystemExit(f"PLAN MISMATCH: {len(wrong):,} of {len(entries):,} entries differ from the scan: {wrong[:5]}")


# ---------------------------------------------------------------------------------------------------
# Diagnosis: every fetch of the plan, recorded from outside (the target client's fetch wrapped).


@dataclass
class FetchLog:
    calls: list[tuple[int, TP, int, int, int, int, int]] = field(default_factory=list)
    """(call number, partition, fetch offset, partition limit, bytes, records, read_to)."""
    number: int = 0
    cheaper: dict[TP, str] = field(default_factory=dict)
    """What ``whole_read.cheaper_whole`` chose to read whole (wrapped where ``header.py`` calls it)."""
    probe_call: int = 0
    """The fetch call that was its probe round."""
    seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    """Wall seconds in the wrapped calls (fetch: the requests and decoding the answers)."""


@contextmanager
def logged_fetches(cluster: KafkaCluster) -> Iterator[FetchLog]:
    log = FetchLog()
    original = cluster.fetch

    def fetch(positions: Mapping[TP, int], **kw: Any) -> dict[TP, PartitionFetch]:
        log.number += 1
        started = time.perf_counter()
        answer = original(positions, **kw)
        log.seconds["fetch (requests and decoding)"] += time.perf_counter() - started
        limit = kw.get("partition_max_bytes", 256 * 1024)
        for tp, a in answer.items():
            lim = limit if isinstance(limit, int) else limit.get(tp, -1)
            log.calls.append((log.number, tp, a.fetch_offset, lim, a.size, len(a.records), a.read_to))
        return answer

    original_cheaper = header_strategy.cheaper_whole

    def cheaper(undecided: Any, ctx: Any, reads: Any) -> Any:
        log.probe_call = log.number + 1
        suspect, begun, probed = original_cheaper(undecided, ctx, reads)
        log.cheaper = dict(suspect)
        return suspect, begun, probed

    cluster.fetch = fetch  # type: ignore[method-assign]
    with ExitStack() as stack:
        for module, name in (
            (header_strategy, "cheaper_whole"),
            (header_strategy, "search_first_at_least"),
            (header_strategy, "read_whole_and_decide"),
            (translation_module, "decide_positions"),
            (translation_module, "translation"),
        ):
            stack.enter_context(_timed(module, name, log.seconds, cheaper if name == "cheaper_whole" else None))
        try:
            yield log
        finally:
            del cluster.fetch


@contextmanager
def _timed(
    module: Any, name: str, seconds: defaultdict[str, float], inner: Callable[..., Any] | None
) -> Iterator[None]:
    original = getattr(module, name)
    call = inner or original

    def timed(*args: Any, **kw: Any) -> Any:
        started = time.perf_counter()
        try:
            return call(*args, **kw)
        finally:
            seconds[f"{module.__name__.rsplit('.', 1)[-1]}.{name}"] += time.perf_counter() - started

    setattr(module, name, timed)
    try:
        yield
    finally:
        setattr(module, name, original)


def diagnosis(
    shape: Shape, log: FetchLog, stats: TranslateStats, entries: list[PlanEntry], scan: ScanResult
) -> list[str]:
    lines = [f"## Diagnosis: {shape.name}", ""]
    lines.append(f"fetch calls by the plan: {log.number:,}; partition reads: {len(log.calls):,}")
    lines.append(f"TranslateStats.fetch_rounds {stats.fetch_rounds} fetches {stats.fetches}")
    lines.append(f"TranslateStats.bytes_read {stats.bytes_read} records_read {stats.records_read}")
    if stats.out_of_order:
        lines.append(
            f"TranslateStats.out_of_order ({len(stats.out_of_order)}): {dict(list(stats.out_of_order.items())[:5])}"
        )
    if log.seconds:
        lines.append(
            "wall seconds in (nested: translation > decide_positions > header's calls; fetch inside them): "
            + ", ".join(f"{k} {v:.2f}" for k, v in log.seconds.items())
        )
    methods = Counter(f"{e.method}/{e.status}/exact={e.exact}" for e in entries)
    lines.append(f"entries by method: {dict(methods)}")
    ones = sorted((c[4], c[5]) for c in log.calls if c[3] == 1 and c[4])
    if ones:
        lines.append(
            f"one batch as the broker sends it (the reads with a 1-byte limit, median of {len(ones)}): "
            f"{ones[len(ones) // 2][0]:,} bytes, {ones[len(ones) // 2][1]:,} records"
        )
    limits = Counter(c[3] for c in log.calls)
    lines.append(f"partition limits asked: {dict(limits.most_common(8))}")
    per: dict[TP, list[tuple[int, TP, int, int, int, int, int]]] = defaultdict(list)
    for c in log.calls:
        per[c[1]].append(c)
    whole: dict[TP, set[str]] = defaultdict(set)
    for e in entries:
        for mark in ("which are in order: ", "is out of order: "):
            if e.reason and mark in e.reason:
                tp = TP(e.target_topic, e.partition)
                whole[tp].add(re.sub(r"\d+", "N", e.reason.split(mark, 1)[1].rstrip("]")))
    kinds = Counter(why for whys in whole.values() for why in whys)
    lines.append(f"partitions read whole: {len(whole)} of {len(per)}; why (numbers as N): {dict(kinds.most_common(6))}")
    positions = Counter(TP(e.target_topic, e.partition) for e in entries)
    on_holes = Counter(
        TP(e.target_topic, e.partition)
        for e in entries
        if e.source_offset < shape.records and not restored(shape, e.source_offset)
    )
    if shape.hole_every:
        holed = {tp for tp in positions if on_holes[tp]}
        lines.append(
            f"partitions with a committed offset on a hole: {len(holed)}; "
            f"of them read whole: {len(holed & set(whole))}; "
            f"read whole without one: {len(set(whole) - holed)}"
        )
    if log.cheaper:
        probed = [c for c in log.calls if c[0] == log.probe_call]
        left = [c for c in probed if c[1] not in log.cheaper]
        lines.append(
            f"cheaper_whole chose {len(log.cheaper)} partitions of {len(probed)} probed (fetch call {log.probe_call}); "
            f"the probe answers of the others (offset, limit, bytes, records, read_to): "
            f"{[(c[1].partition, c[2], c[3], c[4], c[5], c[6]) for c in left[:10]]}"
        )
        rounds = Counter(c[1] for c in log.calls if c[1] not in log.cheaper)
        lines.append(f"reads of the partitions not chosen: {dict(rounds.most_common(10))}")
    lines += [
        "",
        "| partition | positions | on holes | reads | MB | records | offsets covered | read whole because |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for tp in sorted(per, key=lambda t: -sum(c[4] for c in per[t]))[: 20 if len(per) <= 20 else 12]:
        calls = per[tp]
        covered = _covered([(c[2], c[6]) for c in calls if c[6] > c[2]])
        why = "; ".join(sorted(whole.get(tp, ())))[:160]
        lines.append(
            f"| {tp.topic}/{tp.partition} | {positions[tp]} | {on_holes[tp]} | {len(calls)} | "
            f"{sum(c[4] for c in calls) / 1e6:.2f} | {sum(c[5] for c in calls):,} | {covered:,} of {scan.ends[tp]:,} | "
            f"{why} |"
        )
    return lines


def _covered(ranges: list[tuple[int, int]]) -> int:
    total, end = 0, -1
    for a, b in sorted(ranges):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def profiled(work: Callable[[], Any], top: int = 15, dump: str | None = None) -> list[str]:
    """The top functions of ``work`` under cProfile; ``dump``: a file the whole profile is written to (for
    ``pstats``' callers and callees)."""
    profile = cProfile.Profile()
    profile.enable()
    work()
    profile.disable()
    if dump is not None:
        profile.dump_stats(dump)
    lines = []
    for key in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profile, stream=out).strip_dirs().sort_stats(key).print_stats(top)
        body = out.getvalue()
        lines += [f"### top {top} by {key}", "", "```", body[body.find("   ncalls") :].rstrip(), "```", ""]
    return lines


# ---------------------------------------------------------------------------------------------------


def _peak_of(phase: str, settings: Any, payload: Any, answer: Any) -> None:
    """One phase in a fresh process (spawned), as a Lambda invocation holds it: its peak resident
    memory (``VmHWM``, MB) and the interpreter's before the phase began."""
    with KafkaCluster(settings) as cluster:
        cluster.log_bounds([])  # connected: the client's own memory counted in the base
        base = peak_mb()
        if phase == "snapshot":
            take_snapshot(cluster, SnapshotOptions(groups=payload))
        else:
            translate(payload, cluster, PlanOptions())
        answer.put((base, peak_mb()))


def peak_memory(phase: str, settings: Any, payload: Any) -> tuple[float, float]:
    """(base, peak) resident MB of ``phase`` run alone in a fresh process."""
    ctx = mp.get_context("spawn")
    answer = ctx.Queue()
    process = ctx.Process(target=_peak_of, args=(phase, settings, payload, answer))
    process.start()
    result = answer.get(timeout=1800)
    process.join()
    return result


def memory_rows(shape: Shape, proxy: Proxied, pattern: str, groups: Any) -> list[str]:
    """Each phase's peak memory on this shape, beside the memory its Lambda function is given."""
    from offset_restore_handlers.wiring import MEMORY_MB

    lines = []
    for phase, function, payload, index in (
        ("snapshot", "Snapshot", pattern, 0),
        ("plan", "Translate", groups, 1),
    ):  # not apply: run again, the plan it would apply is applied already (it reads next to nothing)
        base, peak = peak_memory(phase, proxy.brokers[index].settings(), payload)
        lines.append(
            f"| {shape.name} | {phase} | {peak:,.0f} MB | {peak - base:,.0f} MB | "
            f"{function} {MEMORY_MB[function]:,} MB |"
        )
    return lines


MEMORY_HEADER = [
    "| shape | phase, alone in a fresh process | peak resident | of it the phase's own | its Lambda function |",
    "|---|---|---|---|---|",
]


def run_shape(
    shape: Shape, proxy: Proxied, source: KafkaCluster, target: KafkaCluster, args: argparse.Namespace
) -> tuple[list[dict[str, Any]], list[str]]:
    topic = f"user-{shape.name}-{int(time.time())}"
    boots = (proxy.brokers[0].bootstrap_servers, proxy.brokers[1].bootstrap_servers)
    started = time.perf_counter()
    write(shape, topic, (proxy.direct[0], proxy.direct[1]), source, target, args.seed)
    pattern = commit_groups(source, shape, topic, args.seed)
    print(
        f"{shape.name}: wrote {shape.partitions} x {shape.records:,} records twice "
        f"in {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )

    snapshot, snap_cost = measured(
        proxy, 0, lambda: source.fetched_bytes, lambda: take_snapshot(source, SnapshotOptions(groups=pattern))
    )
    wanted: dict[TP, list[int]] = {}
    for group in snapshot.groups:
        for p in group.partitions:
            wanted.setdefault(TP(p.topic, p.partition), []).append(p.committed_offset)

    with ExitStack() as stack:
        log = stack.enter_context(logged_fetches(target)) if args.diagnose else None
        (entries, stats), plan_cost = measured(
            proxy, 1, lambda: target.fetched_bytes, lambda: translate(snapshot.groups, target, PlanOptions())
        )
    print(f"{shape.name}: plan {plan_cost.seconds:.1f} s", file=sys.stderr)

    def scanned(name: str, scan: Callable[..., ScanResult]) -> tuple[ScanResult, Cost]:
        """A baseline scan of the target, timed and counted, checked to answer what the plan answered."""
        result, cost = measured(
            proxy, 1, lambda: 0, lambda: scan(boots[1], wanted, committed_only=shape.transaction > 0)
        )
        cost.client, cost.note = result.consumed_bytes, f"{result.records:,} records settled through"
        print(f"{shape.name}: {name} {cost.seconds:.1f} s", file=sys.stderr)
        check(entries, result)
        return result, cost

    scan, scan_cost = scanned("scan", plain_consumer_scan)
    _, fast_cost = scanned("operator scan", operator_scan)
    plans, scans = [plan_cost], [fast_cost]
    for _ in range(args.repeat - 1):  # the plan and the scan it is compared with, turn about; medians kept
        plans.append(measured(proxy, 1, lambda: 0, lambda: translate(snapshot.groups, target, PlanOptions()))[1])
        print(f"{shape.name}: plan {plans[-1].seconds:.1f} s", file=sys.stderr)
        scans.append(scanned("operator scan", operator_scan)[1])
    for cost, runs in ((plan_cost, plans), (fast_cost, scans)):
        cost.seconds, cost.cpu = statistics.median(c.seconds for c in runs), statistics.median(c.cpu for c in runs)
    passed, pass_cost = measured(proxy, 1, lambda: target.fetched_bytes, lambda: one_pass(target, sorted(wanted)))
    pass_cost.note = f"{passed:,} records"

    plan = Plan(
        restore_id=f"user-{shape.name}",
        snapshot_id=snapshot.manifest.snapshot_id,
        created_at=datetime.now(UTC),
        source=ClusterRef(cluster="source", bootstrap_servers="-"),
        target=ClusterRef(cluster="target", bootstrap_servers="-"),
        entries=entries,
        summary=PlanSummary.of(entries),
        offset_header=DEFAULT_OFFSET_HEADER,
    )
    summary = plan.summary
    options = ApplyOptions(wait_timeout_s=0, poll_interval_s=0.1, on_wait_timeout="commit_empty")

    # Taken once before the writes, as the workflow's lock state takes it (the commit state holds it): its own
    # row, since a cluster's first transaction creates the transaction-state topic, which no shape should carry.
    _, fence_cost = measured(proxy, 1, lambda: target.fetched_bytes, target.hold_fence)
    fence_cost.note = "once a run, before its writes (the lock's)"
    again = args.profile or args.repeat > 1
    unapplied = plan.model_copy(deep=True) if again else plan  # applied again, as the measured run found it

    def fenced_apply(plan: Plan = plan) -> Any:
        """As ``apply`` writes: under the target's fence (held already, as a run holds it once its lock is
        taken; none on the local broker, which keeps none)."""
        return apply_plan(plan, target, options, save=lambda _: None)

    report, apply_cost = measured(proxy, 1, lambda: target.fetched_bytes, fenced_apply)
    assert not report.groups_failed and not report.verify_failed, (report.groups_failed, report.verify_failed[:3])
    applies = [apply_cost]
    for _ in range(args.repeat - 1):  # rolled back, then applied again from the unapplied plan; medians kept
        rolled_back(plan, target, options)
        plan = unapplied.model_copy(deep=True)
        applies.append(measured(proxy, 1, lambda: target.fetched_bytes, partial(fenced_apply, plan))[1])
        print(f"{shape.name}: apply {applies[-1].seconds:.1f} s", file=sys.stderr)
    apply_cost.seconds = statistics.median(c.seconds for c in applies)
    apply_cost.cpu = statistics.median(c.cpu for c in applies)
    apply_cost.note = f"{len(entries) / apply_cost.seconds:,.0f} offsets/s"
    plan_cost.note = f"exact {summary.exact:,}/{summary.entries:,}; {dict(summary.by_method)}"

    extra: list[str] = []
    if args.memory and shape.batch >= 1 << 20:
        extra += ["", f"## Memory: {shape.name} (1 MB batches, each phase alone in a fresh process)", ""]
        extra += [*MEMORY_HEADER, *memory_rows(shape, proxy, pattern, snapshot.groups)]
    if log is not None:
        extra += diagnosis(shape, log, stats, entries, scan)
    if args.profile:
        extra += ["", f"## Profile of the plan: {shape.name} (a second plan, under cProfile)", ""]
        dump = f"{args.profile_out}.{shape.name}" if args.profile_out else None
        extra += profiled(lambda: translate(snapshot.groups, target, PlanOptions()), dump=dump)
        rolled_back(plan, target, options)  # so the profiled apply writes and checks as the measured one did
        extra += ["", f"## Profile of apply: {shape.name} (rolled back, then applied again, under cProfile)", ""]
        extra += profiled(lambda: fenced_apply(unapplied), dump=f"{dump}.apply" if dump else None)
    if extra:
        print("\n".join(extra), file=sys.stderr)

    title = (
        f"{shape.title}: {shape.partitions} x {shape.records:,} records, {shape.batch // 1024:,} KB batches, "
        f"{shape.codec or 'uncompressed'}, {shape.groups} groups ({len(entries):,} group-partitions)"
    )
    rows = [
        {"shape": title, "phase": phase, "cost": cost, "scan": fast_cost, "pass": pass_cost, "positions": len(entries)}
        for phase, cost in (
            ("snapshot", snap_cost),
            ("plan", plan_cost),
            ("apply", apply_cost),
            ("taking the write fence", fence_cost),
            ("operator scan (one partition at a time)", fast_cost),
            ("plain consumer scan (every partition at once)", scan_cost),
            ("one pass", pass_cost),
        )
    ]
    return rows, extra


def _per_position(cost: Cost, positions: int) -> str:
    """A phase's time, bytes down and batches parsed over the group-partitions it served."""
    n = max(1, positions)
    return f"{cost.seconds * 1e3 / n:,.2f} ms, {cost.down / 1e3 / n:,.1f} KB, {cost.batches / n:,.2f}"


def table(rows: list[dict[str, Any]], kind: str, command: str, total_s: float) -> list[str]:
    lines = [
        f"# The shapes users have, beside the operator's consumer scan ({kind}, {platform.machine()}, "
        f"Python {platform.python_version()}, {datetime.now(UTC):%Y-%m-%d})",
        "",
        f"Command: `{command}` ({total_s / 60:.1f} min in all, writing included). With `--repeat N` the plan's "
        "and the operator scan's times are medians of N runs taken turn about. Client CPU: CPU seconds of the "
        "benchmark's process in the phase (every thread; not the brokers' or the proxy's). MB down and Fetch "
        "requests are counted at a TCP proxy in front of each broker (every byte the broker sent down in the "
        "phase; the same counter for every phase and for the scan). Client: record-batch bytes the client counted "
        "(`KafkaCluster.fetched_bytes` for ours; for the consumer the batch bytes it parsed, summed at "
        "`FetchResponseMetricAggregator.record`, what its fetch metrics are fed by). "
        "Snapshot reads the source, the others the target (its bytes beside the target's, the same data). "
        "One pass: every target partition read once, start to end, by the project's own fetch rounds (the scan "
        "stops a partition once its positions are settled), compared by the bytes of Fetch responses alone (what "
        "a phase reads of the log; apply's commits and offset reads answer with bytes of their own). "
        "Per position: over the group-partitions; batches: record batches the client parsed. "
        "Every plan entry equals the scans' answers. Time and bytes vs scan: against the operator scan, the "
        "simplest fast script (one consumer, one partition at a time from its beginning, left once its last "
        "position is settled); the plain scan reads every partition at once and drops what it prefetched for "
        "partitions it paused.",
        "",
        "| shape | phase | wall | client CPU | MB down | Fetch requests | MB client | per position: ms, KB down, "
        "batches | time vs scan | CPU vs scan | bytes vs scan | Fetch bytes vs one pass | notes |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    last = ""
    for r in rows:
        c: Cost = r["cost"]
        s: Cost = r["scan"]
        shape = r["shape"] if r["shape"] != last else ""
        last = r["shape"]
        lines.append(
            f"| {shape} | {r['phase']} | {c.seconds:.2f} s | {c.cpu:.2f} s | {c.down / 1e6:,.1f} | {c.fetches:,} | "
            f"{c.client / 1e6:,.1f} | {_per_position(c, r['positions'])} | "
            f"{c.seconds / s.seconds:.2f}x | {c.cpu / max(1e-9, s.cpu):.2f}x | {c.down / max(1, s.down):.3f}x | "
            f"{c.fetch_down / max(1, r['pass'].fetch_down):.3f}x | {c.note} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--broker", choices=KINDS, default="apache", help="apache (default) or local")
    parser.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of {','.join(SHAPES)}")
    parser.add_argument("--records", type=int, default=0, help="records per partition (default: each shape's)")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--diagnose", action="store_true", help="log the plan's fetches, print per-partition reads")
    parser.add_argument(
        "--memory", action=argparse.BooleanOptionalAction, default=True,
        help="measure each phase's peak memory alone in a fresh process on the 1 MB-batch shapes (default: on)",
    )  # fmt: skip
    parser.add_argument("--profile", action="store_true", help="plan and apply each shape again under cProfile")
    parser.add_argument(
        "--profile-out", metavar="PREFIX", help="with --profile: write each shape's whole profile to PREFIX.<shape>"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="measure the plan and the operator scan this many times, turn about, and report each one's median "
        "time (bytes from the first run): a shared machine's noise moves a single run by a quarter",
    )
    parser.add_argument("--output", default=None, help="results file (default: bench/results/user-shapes-<broker>.md)")
    args = parser.parse_args(argv)
    count_batches()
    shapes = [SHAPES[name] for name in args.shapes.split(",")]
    if args.records:
        shapes = [Shape(**{**s.__dict__, "records": args.records}) for s in shapes]
    command = "python -m bench.user_shapes " + " ".join(argv if argv is not None else sys.argv[1:])
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    extra: list[str] = []
    with (
        proxied_brokers(args.broker, "user-source", "user-target") as proxy,
        KafkaCluster(proxy.brokers[0].settings()) as source,
        # The local broker keeps no fence (it does not apply transactional offset commits): unfenced there.
        KafkaCluster(proxy.brokers[1].settings(unfenced=args.broker == "local")) as target,
    ):
        for shape in shapes:
            shape_rows, shape_extra = run_shape(shape, proxy, source, target, args)
            rows += shape_rows
            extra += shape_extra
            print("\n".join(table(shape_rows, args.broker, command, 0)[-len(shape_rows) :]), file=sys.stderr)
    lines = table(rows, args.broker, command.strip(), time.perf_counter() - started)
    if extra:
        lines += ["", *extra]
    print("\n".join(lines))
    output = Path(args.output) if args.output else RESULTS / f"user-shapes-{args.broker}.md"
    output.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
