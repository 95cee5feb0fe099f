"""Test helpers: names, records, commits and live consumers on the local brokers."""

from __future__ import annotations

import itertools
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from kafka import KafkaConsumer
from offset_restore.devtools.brokers import Broker
from offset_restore.devtools.brokers import new_broker as devtools_new_broker
from offset_restore.formats.plan import ClusterRef, Plan, PlanEntry, PlanSummary, Status
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.kafka.model import TP, CommittedOffset, FetchedRecord, Record
from offset_restore.snapshot.fingerprint import fingerprint

_counter = itertools.count()

TEST_BROKER = os.environ.get("OFFSET_RESTORE_TEST_BROKER", "apache")
"""``apache`` (default, what CI proves): Apache Kafka 4.1 from Maven Central's jars; ``tansu``: the
zero-dependency local broker, a faster loop while editing."""

TestBroker = Broker


def held(records: Iterable[Record]) -> list[FetchedRecord]:
    """What records read hold, to compare: the compiled reader's records compare by identity."""
    return [FetchedRecord(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in records]


def broker_kind() -> str:
    """The devtools broker kind this session tests on."""
    if TEST_BROKER not in ("apache", "tansu"):
        raise ValueError(f"OFFSET_RESTORE_TEST_BROKER={TEST_BROKER!r}: choose apache or tansu")
    return "local" if TEST_BROKER == "tansu" else "apache"


def new_broker(name: str, *, port: int = 0, advertised_port: int = 0) -> TestBroker:
    """A broker of the kind this session tests on, not yet started."""
    return devtools_new_broker(broker_kind(), name, port=port, advertised_port=advertised_port)


@dataclass
class Brokers:
    source: TestBroker
    target: TestBroker

    @property
    def source_settings(self) -> ConnectionSettings:
        return self.source.settings()

    @property
    def target_settings(self) -> ConnectionSettings:
        return self.target.settings()

    @property
    def target_id(self) -> str:
        """The cluster id the target's brokers report: what its lock is keyed by."""
        with KafkaCluster(self.target_settings) as target:
            return target.cluster_id


def unique(prefix: str) -> str:
    """A name no other test uses (brokers live for the whole session)."""
    return f"{prefix}-{os.getpid()}-{next(_counter)}-{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True)
class Produced:
    offset: int
    key: bytes
    value: bytes
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.key, self.value, self.headers)


def produce(
    cluster: KafkaCluster,
    topic: str,
    partition: int,
    count: int,
    *,
    start_offset: int = 0,
    headers: Sequence[tuple[str, bytes]] = (),
    base_timestamp: int = 1_700_000_000_000,
) -> list[Produced]:
    """Append ``count`` distinct records; returns what each holds, with the offset it gets."""
    records = [
        Produced(
            offset=start_offset + i,
            key=f"k{partition}-{start_offset + i}".encode(),
            value=f"value {topic}/{partition}/{start_offset + i}".encode(),
            headers=(("trace", f"t{start_offset + i}".encode()), *headers),
            timestamp=base_timestamp + (start_offset + i) * 10,
        )
        for i in range(count)
    ]
    cluster.produce(topic, partition, ((r.key, r.value, r.headers, r.timestamp) for r in records))
    return records


def commit(cluster: KafkaCluster, group: str, offsets: dict[TP, int], metadata: str | None = None) -> None:
    errors = cluster.alter_offsets(group, {tp: CommittedOffset(o, metadata) for tp, o in offsets.items()})
    assert not any(errors.values()), errors


@contextmanager
def active_member(
    bootstrap_servers: str, group: str, topic: str, timeout_s: float = 15, client_id: str | None = None
) -> Iterator[KafkaConsumer]:
    """A real consumer that has joined ``group`` (the group is Stable while this lasts)."""
    consumer = KafkaConsumer(
        topic,
        **({"client_id": client_id} if client_id else {}),
        bootstrap_servers=bootstrap_servers,
        group_id=group,
        enable_auto_commit=False,
        session_timeout_ms=3000,
        heartbeat_interval_ms=500,
        auto_offset_reset="earliest",
    )
    try:
        deadline = time.monotonic() + timeout_s
        while not consumer.assignment():
            if time.monotonic() > deadline:
                raise TimeoutError(f"consumer did not join {group} within {timeout_s} s")
            # One poll long enough for a whole join: kafka-python 3.0.12 loses an assignment whose
            # SyncGroup answer arrives after a poll gave up waiting (seen on Apache Kafka: the member
            # stays in the group, assigned, while assignment() stays empty).
            consumer.poll(timeout_ms=3000, max_records=1)
        yield consumer
    finally:
        consumer.close()


def restore(
    target: KafkaCluster,
    topic: str,
    partition: int,
    records: Sequence[Produced],
    *,
    keep: Callable[[Produced], bool] = lambda record: True,
    header: str | None = "int64",
    header_name: str = "x-source-offset",
    target_start: int = 0,
) -> list[tuple[int, int]]:
    """Copy source records to the target as a restore tool would; returns (source, target) offsets.

    ``header``: "int64" (8 bytes big-endian), "text" (decimal ASCII) or None (no offset header, as a
    MirrorMaker 2 replica). ``target_start`` is the target partition's end before the copy.
    """
    kept = [r for r in records if keep(r)]

    def encode(offset: int) -> tuple[tuple[str, bytes], ...]:
        if header is None:
            return ()
        value = offset.to_bytes(8, "big") if header == "int64" else str(offset).encode()
        return ((header_name, value),)

    target.produce(topic, partition, ((r.key, r.value, (*r.headers, *encode(r.offset)), r.timestamp) for r in kept))
    return [(r.offset, target_start + i) for i, r in enumerate(kept)]


def expected_target(pairs: Sequence[tuple[int, int]], committed: int, end: int) -> int:
    """The rule: the target offset of the first restored record whose source offset is >= committed."""
    return next((t for s, t in pairs if s >= committed), end)


@dataclass
class LambdaContext:
    """What powertools reads of a Lambda context, for calling handlers in process."""

    function_name: str = "offset-restore-test"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:eu-west-1:123456789012:function:offset-restore-test"
    aws_request_id: str = "test-request"

    def get_remaining_time_in_millis(self) -> int:
        return 600_000


def plan_entry(group: str, partition: int, status: Status, offset: int | None = 7) -> PlanEntry:
    """A plan entry on topic ``t`` (no target offset for pending and unmapped entries)."""
    if status in ("pending", "unmapped"):
        offset = None
    return PlanEntry(
        group=group,
        topic="t",
        partition=partition,
        target_topic="t",
        source_offset=9,
        target_offset=offset,
        method="header" if offset is not None else None,
        status=status,
    )


def plan_of(entries: list[PlanEntry], snapshot_id: str = "s") -> Plan:
    """A plan holding ``entries``, from source cluster ``source`` to ``target``, made now."""
    return Plan(
        restore_id=unique("r"),
        snapshot_id=snapshot_id,
        created_at=datetime.now(UTC),
        source=ClusterRef(cluster="source", bootstrap_servers="-"),
        target=ClusterRef(cluster="target", bootstrap_servers="-"),
        entries=entries,
        summary=PlanSummary.of(entries),
    )


def table_rows(out: str) -> dict[tuple[str, str, int], tuple[str, str, str, str]]:
    """The offset table a preview or a run prints (kafka-consumer-groups' columns, then METHOD and
    EXACT), read by its header's column positions: (group, topic, partition) -> (current, new, method,
    exact). Cells are split where the header's columns start, so a method with spaces stays whole."""
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:3] == ["GROUP", "TOPIC", "PARTITION"])
    header = lines[at]
    starts = [header.index(name) for name in header.split()]
    rows: dict[tuple[str, str, int], tuple[str, str, str, str]] = {}
    for line in lines[at + 1 :]:
        if len(line) <= starts[-1] or line[starts[1] - 1] != " " or not line[starts[2] :].split()[0].isdigit():
            break
        cells = [line[a:b].strip() for a, b in itertools.pairwise([*starts, len(line)])]
        rows[(cells[0], cells[1], int(cells[2]))] = (cells[3], cells[4], cells[5], cells[6])
    return rows
