"""Translation against the two real brokers: every case asserts the exact target offset."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence

import pytest
from offset_restore.devtools.apache_broker import ApacheBroker
from offset_restore.formats.plan import PlanEntry
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.live import SnapshotOptions, take_snapshot
from offset_restore.snapshot.model import GroupSnapshot, default_cluster_name
from offset_restore.translate.checkpoints import Checkpoint, MemoryCheckpoints
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.strategies.header import MalformedHeaderError
from offset_restore.translate.translation import translate

from tests.helpers import Produced, commit, expected_target, produce, restore, unique


class Scenario:
    """One source topic with groups at given offsets, snapshotted; a target topic to restore into."""

    def __init__(self, source: KafkaCluster, target: KafkaCluster, records: int, partitions: int = 1) -> None:
        self.source, self.target = source, target
        self.topic = unique("plan")
        self.target_topic = self.topic
        source.create_topics({self.topic: partitions})
        self.records = {p: produce(source, self.topic, p, records) for p in range(partitions)}
        self.groups: dict[str, dict[int, int]] = {}

    def group(self, offsets: dict[int, int]) -> str:
        name = unique("g")
        commit(self.source, name, {TP(self.topic, p): o for p, o in offsets.items()})
        self.groups[name] = offsets
        return name

    def snapshot(self) -> list[GroupSnapshot]:
        snap = take_snapshot(self.source, SnapshotOptions(groups="|".join(self.groups), evidence_records=3))
        return snap.groups

    def create_target(self, name: str | None = None, partitions: int = 1) -> str:
        self.target_topic = name or self.topic
        self.target.create_topics({self.target_topic: partitions})
        return self.target_topic

    def plan(self, groups: list[GroupSnapshot], **options: object) -> dict[tuple[str, int], PlanEntry]:
        entries, _ = translate(groups, self.target, PlanOptions(**options))  # type: ignore[arg-type]
        return {(e.group, e.partition): e for e in entries}


@pytest.fixture
def make(source: KafkaCluster, target: KafkaCluster) -> Callable[..., Scenario]:
    return lambda records, partitions=1: Scenario(source, target, records, partitions)


def check_rule(
    entries: dict[tuple[str, int], PlanEntry],
    s: Scenario,
    pairs: Mapping[int, Sequence[tuple[int, int]]],
    end: dict[int, int],
) -> None:
    for (group, partition), entry in entries.items():
        c = s.groups[group][partition]
        assert entry.status == "mapped", entry
        assert entry.target_offset == expected_target(pairs[partition], c, end[partition]), (c, entry)
        assert entry.exact and entry.max_duplicates == 0


def test_retention_shift_and_gaps_including_the_committed_record(make: Callable[..., Scenario]) -> None:
    s = make(600)
    groups = [s.group({0: c}) for c in (0, 50, 100, 101, 250, 251, 252, 430, 599)]
    snap = s.snapshot()
    s.create_target()
    # The backup starts at source offset 100 and lost records 250-251 and every 7th after 400.
    pairs = restore(
        s.target,
        s.topic,
        0,
        s.records[0],
        keep=lambda r: r.offset >= 100 and r.offset not in (250, 251) and not (r.offset > 400 and r.offset % 7 == 0),
    )
    entries = s.plan(snap)
    check_rule(entries, s, {0: pairs}, {0: len(pairs)})
    by_offset = {s.groups[g][0]: entries[(g, 0)] for g in groups}
    assert by_offset[0].method == "earliest" and by_offset[50].method == "earliest"
    assert by_offset[250].target_offset == by_offset[252].target_offset == 150  # 250, 251 missing: 252
    assert "not in the restore" in (by_offset[250].reason or "")
    assert by_offset[101].method == "header" and by_offset[101].target_offset == 1


def test_restore_into_a_topic_that_already_held_records(make: Callable[..., Scenario]) -> None:
    s = make(300)
    for c in (0, 10, 150, 299, 300):
        s.group({0: c})
    snap = s.snapshot()
    s.create_target()
    s.target.produce(s.topic, 0, ((b"old", f"old {i}".encode(), [], None) for i in range(40)))
    pairs = restore(s.target, s.topic, 0, s.records[0], target_start=40)
    check_rule(s.plan(snap), s, {0: pairs}, {0: 340})


@pytest.mark.parametrize("encoding", ["int64", "text"])
def test_renamed_topic_with_either_header_encoding(make: Callable[..., Scenario], encoding: str) -> None:
    s = make(200, partitions=2)
    for c0, c1 in ((0, 5), (77, 199), (200, 120)):
        s.group({0: c0, 1: c1})
    snap = s.snapshot()
    renamed = s.create_target(f"dr.{s.topic}", partitions=2)
    pairs = {
        p: restore(s.target, renamed, p, s.records[p], keep=lambda r: r.offset % 5 != 3, header=encoding)
        for p in range(2)
    }
    entries = s.plan(snap, topic_map={s.topic: renamed})
    check_rule(entries, s, pairs, {p: len(pairs[p]) for p in range(2)})
    assert {e.target_topic for e in entries.values()} == {renamed}


def test_caught_up_and_beyond_the_restored_data_resume_at_its_end(make: Callable[..., Scenario]) -> None:
    s = make(100)
    caught_up = s.group({0: 100})
    beyond = s.group({0: 150})  # committed past the end (the source was truncated)
    snap = s.snapshot()
    s.create_target()
    restore(s.target, s.topic, 0, s.records[0], keep=lambda r: r.offset >= 20)  # 80 records
    s.target.produce(s.topic, 0, [(b"new", b"written after the restore", [], None)])  # no header
    entries = s.plan(snap)
    for group in (caught_up, beyond):
        assert (entries[(group, 0)].method, entries[(group, 0)].target_offset) == ("end", 80)


def test_a_restore_in_progress_is_pending_then_mapped(make: Callable[..., Scenario]) -> None:
    s = make(300)
    early, late, caught_up = s.group({0: 50}), s.group({0: 250}), s.group({0: 300})
    snap = s.snapshot()
    s.create_target()
    first = restore(s.target, s.topic, 0, s.records[0][:200])
    entries = s.plan(snap)
    assert entries[(early, 0)].status == "mapped" and entries[(early, 0)].target_offset == 50
    for group in (late, caught_up):
        assert entries[(group, 0)].status == "pending" and entries[(group, 0)].target_offset is None
        assert "reached source offset 199" in (entries[(group, 0)].reason or "")
    rest = restore(s.target, s.topic, 0, s.records[0][200:], target_start=200)
    entries = s.plan(snap)
    check_rule(entries, s, {0: first + rest}, {0: 300})


def test_missing_topic_and_missing_partition_are_unmapped(make: Callable[..., Scenario]) -> None:
    """A target topic with fewer partitions than the source's changed shape: the group is held whole
    (mapping partition 0 alone would start its consumers and lose what was restored elsewhere)."""
    s = make(10, partitions=3)
    group = s.group({0: 1, 2: 5})
    snap = s.snapshot()
    entries = s.plan(snap)
    assert entries[(group, 0)].status == "unmapped" and "does not exist on the target" in (
        entries[(group, 0)].reason or ""
    )
    s.create_target(partitions=2)
    restore(s.target, s.topic, 0, s.records[0])
    entries = s.plan(snap)
    for partition in (0, 2):
        entry = entries[(group, partition)]
        assert entry.status == "unmapped" and entry.holds_group and entry.target_offset is None
        assert (entry.reason or "").startswith(  # the groups alone tell it: no count from a manifest here
            f"source partition 2 of {s.topic} does not exist on the target ({s.topic} has 2 partitions); not mapped"
        ), entry.reason


def test_fingerprint_without_headers_and_ambiguity_with_identical_payloads(make: Callable[..., Scenario]) -> None:
    s = make(0)
    distinct = produce(s.source, s.topic, 0, 120)
    same = [Produced(120 + i, b"k", b"heartbeat", (), 1_700_000_100_000) for i in range(30)]
    s.source.produce(s.topic, 0, ((r.key, r.value, r.headers, r.timestamp) for r in same))
    s.records[0] = distinct + same
    g_distinct, g_same, g_caught = s.group({0: 60}), s.group({0: 135}), s.group({0: 150})
    snap = s.snapshot()
    s.create_target()
    s.target.produce(s.topic, 0, ((b"x", f"mm2 lag {i}".encode(), [], 1_600_000_000_000) for i in range(7)))
    restore(s.target, s.topic, 0, s.records[0], header=None, target_start=7)  # a replica: no header
    entries = s.plan(snap, strategies=("header", "fingerprint"))
    assert (entries[(g_distinct, 0)].method, entries[(g_distinct, 0)].target_offset) == ("fingerprint", 67)
    assert entries[(g_distinct, 0)].exact
    # Inside the identical run: the snapshot's evidence reaches back through the run's millisecond to the
    # distinct record before it, which places the run; the copies of its next record in the run leave it
    # unproven: it resumes at the first of them, where the run begins (127), earlier. It reads again at most
    # the records up to the match (142) and the copies after it (143-156): 29, where the truth is 15.
    inside = entries[(g_same, 0)]
    assert (inside.status, inside.target_offset, inside.exact, inside.max_duplicates) == ("mapped", 127, False, 29)
    assert 7 + 135 - 127 <= 29, "the truth (15) within the bound"
    assert "a copy of a record at or past source offset 135 lies at target offset 127" in (inside.reason or "")
    assert "at most 29 read twice" in (inside.reason or ""), inside.reason
    assert inside.unprovable, "no later plan changes what the target already holds"
    # Caught up after 30 identical records: the evidence matches at many places in the run. The earliest
    # is where the group resumes; the latest ends at the log's end (157), which bounds what it reads again.
    caught = entries[(g_caught, 0)]
    assert (caught.status, caught.exact, caught.unprovable) == ("mapped", False, True), caught.reason
    assert caught.target_offset is not None and caught.max_duplicates is not None
    assert 7 + 120 < caught.target_offset < 7 + 150, "after the earliest match, inside the run"
    assert caught.max_duplicates == 7 + 150 - caught.target_offset, "the truth: every record of the run after it"
    assert "resume at the end of the earliest match" in (caught.reason or ""), caught.reason


def test_checkpoints_only(make: Callable[..., Scenario]) -> None:
    checkpoints_only(make(500))


@pytest.fixture(scope="module")
def underscored() -> Iterator[KafkaCluster]:
    """A target whose cluster id starts with "_" (one Kafka id in 64 does): its default name is the id
    prefixed ``cluster-``. A CI run met one, and the checkpoint tests keyed their pairs by the raw id."""
    kafka_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()  # Uuid.toString()'s shape
    broker = ApacheBroker("underscored", cluster_id="_" + kafka_id[1:]).start()
    try:
        with KafkaCluster(broker.settings()) as cluster:
            yield cluster
    finally:
        broker.stop()


def test_checkpoints_of_a_target_whose_id_starts_with_an_underscore(
    source: KafkaCluster, underscored: KafkaCluster
) -> None:
    assert underscored.cluster_id.startswith("_")
    assert default_cluster_name(underscored.cluster_id) == f"cluster-{underscored.cluster_id}"
    checkpoints_only(Scenario(source, underscored, 500))


def checkpoints_only(s: Scenario) -> None:
    """Checkpoints every 100 source offsets, keyed as the restore tool records them: by the target's name."""
    exact, between = s.group({0: 200}), s.group({0: 250})
    snap = s.snapshot()
    s.create_target()
    pairs = restore(s.target, s.topic, 0, s.records[0], keep=lambda r: r.offset >= 100, header=None)
    # The name the plan knows the target by, as the restore tool records its pairs under: the id made a name
    # (an id that starts with "_", one in 64, is prefixed "cluster-": a CI run met one).
    name = default_cluster_name(s.target.cluster_id)
    table = MemoryCheckpoints({(name, s.topic, 0): [Checkpoint(src, tgt) for src, tgt in pairs if src % 100 == 0]})
    entries, _ = translate(snap, s.target, PlanOptions(strategies=("checkpoint",)), checkpoints=table)
    found = {e.group: e for e in entries}
    assert (found[exact].target_offset, found[exact].exact, found[exact].method) == (100, True, "checkpoint")
    assert (found[between].target_offset, found[between].exact, found[between].max_duplicates) == (100, False, 50)


def test_checkpoints_whose_targets_go_backwards_are_not_trusted(make: Callable[..., Scenario]) -> None:
    """Two restore workers reported pairs: source 300 landed before source 200 on the target. Neither
    the pair at 200 (exact by itself) nor the one below 250 can be believed."""
    s = make(500)
    exact, between = s.group({0: 200}), s.group({0: 250})
    snap = s.snapshot()
    s.create_target()
    restore(s.target, s.topic, 0, s.records[0], keep=lambda r: r.offset >= 100, header=None)
    pairs = [Checkpoint(100, 0), Checkpoint(200, 300), Checkpoint(300, 150), Checkpoint(400, 390)]
    table = MemoryCheckpoints({(default_cluster_name(s.target.cluster_id), s.topic, 0): pairs})
    entries, _ = translate(snap, s.target, PlanOptions(strategies=("checkpoint",)), checkpoints=table)
    for entry in entries:
        assert entry.status == "unmapped" and "are out of order" in (entry.reason or ""), entry
    assert {e.group for e in entries} == {exact, between}


@pytest.mark.parametrize(("margin", "offset", "bound"), [(0, 30, 4), (1000, 25, 14)])
def test_timestamps_only_bound_the_duplicates(
    make: Callable[..., Scenario], margin: int, offset: int, bound: int
) -> None:
    s = make(0)
    # Five records share each timestamp: a timestamp cannot tell them apart.
    records = [
        Produced(i, f"k{i}".encode(), f"v{i}".encode(), (), 1_700_000_000_000 + (i // 5) * 1000) for i in range(100)
    ]
    s.source.produce(s.topic, 0, ((r.key, r.value, r.headers, r.timestamp) for r in records))
    s.records[0] = records
    group = s.group({0: 42})
    snap = s.snapshot()
    s.create_target()
    pairs = restore(s.target, s.topic, 0, records, header=None, keep=lambda r: r.offset >= 10)
    entries, _ = translate(snap, s.target, PlanOptions(strategies=("timestamp",), timestamp_margin_ms=margin))
    entry = entries[0]
    true_target = expected_target(pairs, 42, 90)
    assert entry.method == "timestamp" and not entry.exact
    # Without a margin: source 40, the first record of that second; the default margin: a second earlier.
    assert entry.target_offset == offset
    assert entry.target_offset <= true_target <= entry.target_offset + (entry.max_duplicates or 0)
    assert entry.max_duplicates == bound
    assert group == entry.group


@pytest.mark.parametrize(
    "value",
    [b"offset=12", b"9223372036854775808", b"      12", (12).to_bytes(8, "little")],
    ids=["text", "past-int64", "space-padded", "little-endian"],
)
def test_a_garbage_header_is_a_clear_error(make: Callable[..., Scenario], value: bytes) -> None:
    """A header that is no offset — text, a decimal past a signed 64-bit offset (it ended in an
    OverflowError), decimal text space-padded to 8 bytes or a little-endian number (both were read as
    big-endian numbers, entries "exact" up to 150 records early) — stops the plan with the record and the
    value named."""
    s = make(20)
    s.group({0: 10})
    snap = s.snapshot()
    s.create_target()
    s.target.produce(s.topic, 0, ((b"k", f"v{i}".encode(), [("x-source-offset", value)], None) for i in range(20)))
    with pytest.raises(MalformedHeaderError, match=rf"header x-source-offset = 0x{value.hex()}"):
        s.plan(snap)
