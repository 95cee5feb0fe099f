"""Issue 32 on the real brokers: topics whose producers compress with each codec Kafka has, in batches
of 16 KB and of 1 MB, restored with another codec (with the offset header, and without it: a replica
the fingerprints must place). The CLI snapshots, plans and applies; the entries must be those of the
same data uncompressed, and a real consumer of each group reads next the record it had not processed."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from offset_restore.cli.main import main
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import ONE_BATCH, TP, CommittedOffset

from tests.helpers import Brokers, held, unique

CODECS = ("gzip", "snappy", "lz4", "zstd")
RECORDS = 3_000
LOST = 30
"""The backup lost the source's first records: every offset differs on the target."""
GAP = range(2_000, 2_010)
"""Records the restore does not hold (a gap in the backup)."""
POSITIONS = (LOST, 31, 777, 1_500, 2_005, 2_999, RECORDS)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


def produce(
    bootstrap: str, topic: str, rows: list[tuple[bytes, bytes, list, int]], codec: str | None, batch: int
) -> None:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, compression_type=codec, batch_size=batch, linger_ms=50, acks=1,
        max_request_size=2 * 1024 * 1024, max_in_flight_requests_per_connection=1,
    )  # fmt: skip
    try:
        for key, value, headers, stamp in rows:
            producer.send(topic, key=key, value=value, headers=headers, partition=0, timestamp_ms=stamp)
        producer.flush(timeout=120)
    finally:
        producer.close()


class Case:
    def __init__(self, brokers: Brokers, source: KafkaCluster, target: KafkaCluster, folder: Path, batch: int) -> None:
        self.brokers, self.source, self.target, self.folder, self.batch = brokers, source, target, folder, batch
        rng = random.Random(batch)
        self.rows = [
            (f"key-{i}".encode(), rng.randbytes(150) + b"x" * 150, [("trace", str(i).encode())], 1_700_000_000_000 + i)
            for i in range(RECORDS)
        ]

    def source_topic(self, codec: str) -> tuple[str, dict[str, int]]:
        topic = unique(f"codec-{codec}")
        self.source.create_topics({topic: 1})
        produce(self.brokers.source.bootstrap_servers, topic, self.rows, codec, self.batch)
        groups = {unique(f"codec-{codec}-at{c}"): c for c in POSITIONS}
        errors = self.source.alter_offsets_many(
            {g: {TP(topic, 0): CommittedOffset(c, None)} for g, c in groups.items()}
        )
        assert not any(e for per in errors.values() for e in per.values())
        return topic, groups

    def restore(self, codec: str | None, with_header: bool) -> str:
        """The source's records from ``LOST`` on but those of ``GAP``, written with ``codec``."""
        topic = unique("codec-dr")
        self.target.create_topics({topic: 1})
        rows = [
            (k, v, [*h, ("x-source-offset", str(i).encode())] if with_header else h, t)
            for i, (k, v, h, t) in enumerate(self.rows)
            if i >= LOST and i not in GAP
        ]
        produce(self.brokers.target.bootstrap_servers, topic, rows, codec, self.batch)
        return topic

    def plan(self, topic: str, groups: dict[str, int], restored: str, name: str, *options: str) -> list[dict]:
        snaps, plan = self.folder / f"snaps-{topic}", self.folder / f"{name}.json"
        if not snaps.exists():
            status, _, err = run(
                "snapshot", "--bootstrap-servers", self.brokers.source.bootstrap_servers, "--output", str(snaps),
                "--groups", "|".join(groups),
            )  # fmt: skip
            assert status == 0, err
        status, out, err = run(
            "plan", "--snapshot", str(snaps), "--bootstrap-servers", self.brokers.target.bootstrap_servers,
            "--topic-map", f"{topic}={restored}", "--output", str(plan), *options,
        )  # fmt: skip
        assert status in (0, 3), out + err
        return sorted(json.loads(plan.read_text())["entries"], key=lambda e: e["source_offset"])


@pytest.fixture
def case(brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path, request: pytest.FixtureRequest):
    return Case(brokers, source, target, tmp_path, request.param)


def first_read(bootstrap: str, group: str, topic: str) -> bytes | None:
    """The key of the first record a real consumer of ``group`` reads on the target (None: none in 5 s)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="none")  # fmt: skip
    tp = TopicPartition(topic, 0)
    try:
        consumer.assign([tp])
        for _ in range(10):
            for record in consumer.poll(timeout_ms=500).get(tp, []):
                return record.key
        return None
    finally:
        consumer.close()


SAME = ("target_offset", "method", "exact", "max_duplicates", "status")


@pytest.mark.parametrize("case", [16 * 1024, 1000 * 1024], ids=["16KB", "1MB"], indirect=True)
@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_end_to_end_exact_and_the_same_as_uncompressed(case: Case, codec: str) -> None:
    topic, groups = case.source_topic(codec)
    other = CODECS[(CODECS.index(codec) + 1) % len(CODECS)]
    plain = case.plan(topic, groups, case.restore(None, with_header=True), "plain")
    restored = case.restore(other, with_header=True)
    packed = case.plan(topic, groups, restored, "packed")
    assert [[e[k] for k in SAME] for e in packed] == [[e[k] for k in SAME] for e in plain]
    assert all(e["exact"] and e["status"] == "mapped" for e in packed), packed
    in_gap = next(e for e in packed if e["source_offset"] == 2_005)
    assert in_gap["target_offset"] == GAP.stop - LOST - len(GAP)  # the first record after the gap
    replica = case.restore(other, with_header=False)  # recompressed with another codec: the same prints
    by_print = case.plan(topic, groups, replica, "replica", "--strategies", "fingerprint")
    placed = [(e["target_offset"], e["exact"]) for e in by_print if e["source_offset"] != 2_005]
    assert placed == [(e["target_offset"], True) for e in packed if e["source_offset"] != 2_005], by_print
    lost = next(e for e in by_print if e["source_offset"] == 2_005)  # its evidence is in the gap
    assert lost["target_offset"] is None or lost["target_offset"] <= in_gap["target_offset"], lost
    status, out, err = run(
        "apply", "--plan", str(case.folder / "packed.json"), "--bootstrap-servers",
        case.brokers.target.bootstrap_servers, "--poll-interval", "0.2", "--execute",
    )  # fmt: skip
    assert status == 0 and "did not verify" in out and "; 0 did not verify" in out, out + err
    end = case.target.log_bounds([TP(restored, 0)])[TP(restored, 0)].end
    for group, c in groups.items():
        if c == RECORDS:  # caught up: nothing to read, it waits at the end (a consumer would poll in vain)
            assert case.target.committed_offsets([group])[group][TP(restored, 0)].offset == end
        else:
            first = next(i for i in range(c, RECORDS) if i not in GAP)  # the gap's records are not there
            assert first_read(case.brokers.target.bootstrap_servers, group, restored) == f"key-{first}".encode(), c


@pytest.mark.parametrize("case", [16 * 1024], ids=["16KB"], indirect=True)
def test_a_codec_changed_mid_partition_and_a_topic_the_broker_recompresses(case: Case) -> None:
    """The source's producer switched from gzip to zstd at record 1,500; the restore went into a topic
    whose ``compression.type=lz4`` makes the broker recompress every batch it is sent uncompressed:
    the same entries as an uncompressed restore, every one exact."""
    from kafka.admin import NewTopic

    topic = unique("codec-mixed")
    case.source.create_topics({topic: 1})
    produce(case.brokers.source.bootstrap_servers, topic, case.rows[:1_500], "gzip", case.batch)
    produce(case.brokers.source.bootstrap_servers, topic, case.rows[1_500:], "zstd", case.batch)
    groups = {unique(f"codec-mixed-at{c}"): c for c in POSITIONS}
    errors = case.source.alter_offsets_many({g: {TP(topic, 0): CommittedOffset(c, None)} for g, c in groups.items()})
    assert not any(e for per in errors.values() for e in per.values())
    plain = case.plan(topic, groups, case.restore(None, with_header=True), "plain")
    recompressed = unique("codec-broker-lz4")
    case.target._admin.create_topics([NewTopic(recompressed, 1, 1, topic_configs={"compression.type": "lz4"})])
    rows = [(k, v, [*h, ("x-source-offset", str(i).encode())], t) for i, (k, v, h, t) in enumerate(case.rows)]
    kept = [row for i, row in enumerate(rows) if i >= LOST and i not in GAP]  # as case.restore keeps them
    produce(case.brokers.target.bootstrap_servers, recompressed, kept, None, case.batch)
    entries = case.plan(topic, groups, recompressed, "recompressed")
    assert [[e[k] for k in SAME] for e in entries] == [[e[k] for k in SAME] for e in plain]
    assert all(e["exact"] for e in entries), entries


@pytest.mark.parametrize("case", [1000 * 1024], ids=["1MB"], indirect=True)
@pytest.mark.parametrize("codec", CODECS)
def test_an_answer_inside_a_batch_holds_the_batch_from_its_start(case: Case, codec: str) -> None:
    """The broker sends a batch whole from its first offset; the records before the offset asked for
    (decoded only when asked) are those a fetch from the batch's start returns, every field equal: the
    search keeps them instead of asking for the same large batch again."""
    restored = case.restore(codec, with_header=True)
    tp = TP(restored, 0)
    inside = case.target.fetch({tp: 1_234}, partition_max_bytes=4 * 1024 * 1024)[tp]
    assert inside.error is None and inside.records[0].offset == 1_234
    assert 0 <= inside.earlier_from < 1_234 and inside.earlier is not None, inside
    from_start = case.target.fetch({tp: inside.earlier_from}, partition_max_bytes=4 * 1024 * 1024)[tp]
    assert held(inside.earlier(inside.earlier_from)) == held(r for r in from_start.records if r.offset < 1_234)
    assert held(inside.earlier(1_200)) == held(r for r in from_start.records if 1_200 <= r.offset < 1_234)
    at_start = case.target.fetch({tp: inside.earlier_from}, partition_max_bytes=16 * 1024)[tp]
    assert at_start.earlier is None and at_start.earlier_from == -1  # nothing before the offset asked for


@pytest.mark.parametrize("case", [16 * 1024], ids=["16KB"], indirect=True)
@pytest.mark.parametrize("codec", ["zstd", None])
def test_one_batch_asked_alone_brings_that_batch_whole_and_nothing_after(case: Case, codec: str | None) -> None:
    """``ONE_BATCH``: the partition alone in its request with a limit of one byte. The broker sends the
    batch holding the position whole (KIP-74) and nothing of the next, so a point read over large
    batches costs one batch, not its limit; several partitions asked so are each served."""
    first, second = case.restore(codec, with_header=True), case.restore(codec, with_header=True)
    tps = [TP(first, 0), TP(second, 0)]
    whole = case.target.fetch(dict.fromkeys(tps, 1_000), partition_max_bytes=16 * 1024 * 1024)
    one = case.target.fetch(dict.fromkeys(tps, 1_000), partition_max_bytes=dict.fromkeys(tps, ONE_BATCH))
    for tp in tps:
        assert one[tp].error is None and one[tp].records, one[tp]
        assert held(one[tp].records) == held(whole[tp].records[: len(one[tp].records)])
        batch_end = one[tp].read_to
        assert batch_end < whole[tp].read_to  # the next batch did not come
        again = case.target.fetch({tp: batch_end - 1}, partition_max_bytes={tp: ONE_BATCH})[tp]
        assert again.read_to == batch_end and again.size == one[tp].size  # the same batch, alone: its size


@pytest.mark.parametrize("case", [16 * 1024], ids=["16KB"], indirect=True)
def test_a_header_less_replica_is_planned_reading_no_batch_twice(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    """A replica without the header, lz4 batches of about 5 KB, the default strategies: the header
    search gives its windows up to the time search and the fingerprint scan, which read none of them
    again; each later read is one batch (``ONE_BATCH``) or a run of whole batches, never a batch cut
    at a limit and asked for again (the plan read 1.2 MB for 7 positions on 3,000 records before)."""
    from offset_restore.snapshot.live import SnapshotOptions, take_snapshot
    from offset_restore.translate.options import PlanOptions
    from offset_restore.translate.translation import translate

    topic, groups = case.source_topic("lz4")
    replica = case.restore("lz4", with_header=False)
    snapshot = take_snapshot(case.source, SnapshotOptions(groups="|".join(groups)))
    read: list[tuple[int, int, int]] = []  # (first offset, end, bytes) of each answer, in order
    real = case.target.fetch

    def logged(positions: dict[TP, int], **kwargs: object) -> dict[TP, object]:
        answers = real(positions, **kwargs)  # type: ignore[arg-type]
        for answer in answers.values():
            if answer.records:
                first = answer.earlier_from if answer.earlier_from >= 0 else answer.fetch_offset
                read.append((first, answer.read_to, answer.size))
        return answers  # type: ignore[return-value]

    monkeypatch.setattr(case.target, "fetch", logged)
    entries, _ = translate(snapshot.groups, case.target, PlanOptions(topic_map={topic: replica}))
    by_source = {e.source_offset: e for e in entries}
    assert all(by_source[c].method == "fingerprint" and by_source[c].exact for c in POSITIONS if c != 2_005), entries
    again = [(a, b) for i, (a, b, _) in enumerate(read) if any(x <= a and b <= y for x, y, _ in read[:i])]
    assert not again, f"batches read again: {again} of {[(a, b) for a, b, _ in read]}"
    batch = max(size for _, _, size in read[1:])
    assert sum(size for _, _, size in read) <= 16 * 1024 + len(read) * batch, read
