"""Restores written out of order, on the real brokers: no plan entry skips a record, "exact" only
where true, every bound at or above the truth — judged by an independent reader of the target log
(tests/disorder.py)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from offset_restore.apply.model import ApplyOptions
from offset_restore.apply.run import run_apply
from offset_restore.errors import BadInputError
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.live import SnapshotOptions, take_snapshot
from offset_restore.snapshot.model import GroupSnapshot
from offset_restore.snapshot.run import run_snapshot
from offset_restore.stores.storage import open_location
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.positions import TranslateStats
from offset_restore.translate.run import SnapshotChoice, run_plan
from offset_restore.translate.translation import translate

from tests.disorder import (
    Judgement,
    Slot,
    copy,
    layouts,
    random_layout,
    read_target,
    record_key,
    restored_part,
    write_layout,
)
from tests.helpers import Brokers, Produced, TestBroker, broker_kind, commit, new_broker, produce, restore, unique

N = 60  # source records: committed positions 0..60, 61 per case


@dataclass
class Source:
    topic: str
    records: list[Produced]
    groups: list[GroupSnapshot]

    @property
    def timestamps(self) -> dict[int, int]:
        return {r.offset: r.timestamp for r in self.records}

    @property
    def keys(self) -> dict[bytes, int]:
        return {record_key(0, r.offset): r.offset for r in self.records}


def committed_source(brokers: Brokers, name: str, records: int, at: range) -> Source:
    """One source partition of ``records`` records and a group committed at each offset of ``at``,
    snapshotted with 3 evidence records."""
    with KafkaCluster(brokers.source_settings) as source:
        topic = unique(name)
        source.create_topics({topic: 1})
        produced = produce(source, topic, 0, records)
        names = [unique(f"{name}-c{c}") for c in at]
        for c, group in zip(at, names, strict=True):
            commit(source, group, {TP(topic, 0): c})
        snap = take_snapshot(source, SnapshotOptions(groups="|".join(names), evidence_records=3))
    return Source(topic, produced, snap.groups)


@pytest.fixture(scope="module")
def source_groups(brokers: Brokers) -> Source:
    """One source partition of 60 records and a group committed at each of 0..60, snapshotted."""
    return committed_source(brokers, "order", N, range(N + 1))


def plan_layout(
    src: Source, target: KafkaCluster, layout: list[Slot], **options: object
) -> tuple[list, TranslateStats, str]:
    topic = unique("restored")
    target.create_topics({topic: 1})
    extra = {r.offset: r.headers for r in src.records}
    values = {r.offset: r.value for r in src.records}
    write_layout(target, topic, 0, layout, src.timestamps, values=values, extra_headers=extra)
    entries, stats = translate(src.groups, target, PlanOptions(topic_map={src.topic: topic}, **options))  # type: ignore[arg-type]
    return entries, stats, topic


def judged(src: Source, brokers: Brokers, topic: str, entries: list) -> Judgement:
    log = restored_part(read_target(brokers.target.bootstrap_servers, topic, 0, src.keys))
    judgement = Judgement()
    for entry in entries:
        judgement.judge(entry, log)
    return judgement


@pytest.mark.parametrize("case", list(layouts(N)))
@pytest.mark.parametrize("order_check", ["windows", "full"])
def test_no_position_skips_a_record_whatever_the_order(
    source_groups: Source, target: KafkaCluster, brokers: Brokers, case: str, order_check: str
) -> None:
    # 61 positions on 60 records: reading whole is cheaper than searching; the windows check is
    # tested here with that choice off (a partition read whole is checked as with "full").
    options = {"order_check": order_check, "whole_when_cheaper": False}
    entries, stats, topic = plan_layout(source_groups, target, layouts(N)[case], **options)
    judgement = judged(source_groups, brokers, topic, entries)
    assert judgement.positions == N + 1, [e for e in entries if e.status != "mapped"]
    assert judgement.holds, judgement.problems
    assert TP(topic, 0) in stats.out_of_order, "the plan must name the partition that was out of order"
    # The in-order part of a layout keeps exact entries; records without the header may carry any
    # source offset, so no entry of that layout can be exact (each counts them as possible duplicates).
    assert any(e.exact for e in entries) == (case != "records without the header")


def test_a_sorted_restore_stays_exact_and_reads_nothing_extra(
    source_groups: Source, target: KafkaCluster, brokers: Brokers
) -> None:
    entries, stats, topic = plan_layout(source_groups, target, copy(range(N)), whole_when_cheaper=False)
    judgement = judged(source_groups, brokers, topic, entries)
    assert judgement.holds and judgement.duplicates == 0
    assert all(e.exact and e.max_duplicates == 0 for e in entries)
    assert not stats.out_of_order
    assert "header (whole partitions)" not in stats.fetches
    # Every entry names the record apply must find next to its offset.
    assert all(e.anchor_offset is not None and e.anchor_source_offset is not None for e in entries)


def test_a_partition_with_more_positions_than_a_search_pays_for_is_read_once_whole(
    source_groups: Source, target: KafkaCluster, brokers: Brokers
) -> None:
    """61 positions on 60 records: one window each would read the partition many times over; it is
    read once, whole, and answered order-independently — the same exact answers."""
    entries, stats, topic = plan_layout(source_groups, target, copy(range(N)))
    assert judged(source_groups, brokers, topic, entries).holds
    assert all(e.exact and e.max_duplicates == 0 for e in entries)
    # The probe that priced the whole read read all 60 records (one small batch): it was the read.
    assert stats.fetch_rounds["header (probes)"] == 1 and stats.fetch_rounds["header (whole partitions)"] == 0
    assert stats.records_read["header (probes)"] == N
    assert "header" not in stats.rounds_per_partition or not stats.rounds_per_partition["header"]
    assert all("read whole: about" in (e.reason or "") for e in entries if e.status == "mapped")


def test_a_whole_read_goes_on_from_the_probe_that_priced_it(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster
) -> None:
    """Records of about 1 KB restored in three writes (several producer batches), a group at every
    offset: the 16 KB probe gets the first batch, which prices the whole read and is its first
    window; the read goes on from there, up to the records the shape check's sample holds (here
    the sample holds all but the probe's). Every record is taken once and every entry is exact."""
    topic = unique("probed")
    source.create_topics({topic: 1})
    target.create_topics({topic: 1})
    records = produce(source, topic, 0, N, headers=[("pad", b"x" * 1000)])
    names = [unique(f"probed-c{c}") for c in range(N + 1)]
    for c, name in enumerate(names):
        commit(source, name, {TP(topic, 0): c})
    snap = take_snapshot(source, SnapshotOptions(groups="|".join(names), evidence_records=3))
    for low in (0, 20, 40):
        restore(target, topic, 0, records[low : low + 20], target_start=low)
    entries, stats = translate(snap.groups, target, PlanOptions())
    assert sorted((e.source_offset, e.target_offset, e.exact) for e in entries) == [(c, c, True) for c in range(N + 1)]
    assert stats.fetch_rounds["header (probes)"] == 1
    assert 0 < stats.records_read["header (probes)"] < N
    taken = ("header (probes)", "header (whole partitions)", "header (whole partitions, held)")
    assert sum(stats.records_read[phase] for phase in taken) == N
    assert stats.records_read["header (whole partitions, held)"] > 0


def test_a_first_batch_of_one_record_does_not_price_a_dense_partition_as_huge(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster
) -> None:
    """Issue 40: the restore's first write held one record, so the 16 KB probe's answer was that record
    and the start of the next batch, and the partition was priced at 16 KB an offset: 400 records of
    1 KB at 6.6 MB, searched one window per position for 200 groups. Priced by its records it is read
    whole (0.4 MB), once."""
    topic = unique("first-alone")
    source.create_topics({topic: 1})
    target.create_topics({topic: 1})
    records = produce(source, topic, 0, 400, headers=[("pad", b"x" * 1000)])
    prefix = unique("alone")
    names = [f"{prefix}-c{c}" for c in range(0, 400, 2)]
    for i, name in enumerate(names):
        commit(source, name, {TP(topic, 0): 2 * i})
    snap = take_snapshot(source, SnapshotOptions(groups=f"{prefix}-c.*", evidence_records=3))
    restore(target, topic, 0, records[:1])
    restore(target, topic, 0, records[1:], target_start=1)
    entries, stats = translate(snap.groups, target, PlanOptions())
    assert sorted((e.source_offset, e.target_offset, e.exact) for e in entries) == [
        (c, c, True) for c in range(0, 400, 2)
    ]
    assert "read whole: about 0.4 MB" in (entries[0].reason or ""), entries[0].reason
    assert stats.records_read["header (probes)"] + stats.records_read["header (whole partitions)"] == 400


def test_what_the_full_read_answers_on_a_repeated_chunk(
    source_groups: Source, target: KafkaCluster, brokers: Brokers
) -> None:
    """0..39, then 30..39 again, then 40..59. A group at 35 resumes at the first copy of 35 and then
    reads the second copies of 30..34, which it had processed: 5 duplicates, not exact. (It also reads
    36..39 twice, as any consumer of this target would: the restore wrote them twice.) A group at 20
    meets only records >= 20 after its resume point: exact. A group at 45 resumes past both copies."""
    layout = [*copy(range(40)), *copy(range(30, 40)), *copy(range(40, N))]
    entries, _, topic = plan_layout(source_groups, target, layout)
    by_c = {e.source_offset: e for e in entries}
    assert (by_c[35].target_offset, by_c[35].exact, by_c[35].max_duplicates) == (35, False, 5)
    assert (by_c[20].target_offset, by_c[20].exact, by_c[20].max_duplicates) == (20, True, 0)
    assert (by_c[45].target_offset, by_c[45].exact, by_c[45].max_duplicates) == (55, True, 0)
    assert "out of order" in (by_c[35].reason or "")
    assert judged(source_groups, brokers, topic, entries).holds


def test_a_header_below_the_position_on_a_record_the_group_had_not_processed_is_not_counted_twice(
    source_groups: Source, target: KafkaCluster, brokers: Brokers
) -> None:
    """Record 20 says it is source record 17. The group at 19 resumes at 19 and then reads it: by its header
    a record it processed, read again. The strategy knows it by the snapshot's evidence for record 20 and
    answers exact; the proof reads it again, compares its content with the same evidence — source record
    20, which the group had not processed — and lets the answer stand exact."""
    layout = [*copy(range(20)), Slot(20, 17), *copy(range(21, N))]
    entries, _, topic = plan_layout(source_groups, target, layout)
    at_19 = next(e for e in entries if e.source_offset == 19)
    assert (at_19.target_offset, at_19.exact, at_19.max_duplicates) == (19, True, 0), at_19.reason
    assert judged(source_groups, brokers, topic, entries).holds


def test_a_processed_record_written_again_without_the_header_after_the_restore_is_read_twice(
    source_groups: Source, brokers: Brokers
) -> None:
    """Record 3 moved past the restore's end without the offset header (then record 59 without it): no header
    below a group's position lies after its resume point, yet the copy of record 3, which every group past 3
    processed, does: not exact, the copy counted. The property below found it (seed 36): called exact, one
    record read twice, at 55 positions."""
    layout = [Slot(s, s) for s in [0, 1, 2, *range(4, 59)]] + [Slot(3, None), Slot(59, None)]
    with KafkaCluster(brokers.target_settings) as target:
        entries, _, topic = plan_layout(source_groups, target, layout, whole_when_cheaper=False)
    judgement = judged(source_groups, brokers, topic, entries)
    assert judgement.holds, judgement.problems
    at_12 = next(e for e in entries if e.source_offset == 12)
    assert (at_12.target_offset, at_12.exact, at_12.max_duplicates) == (11, False, 1), at_12.reason


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1))
def test_random_disorder_never_skips(source_groups: Source, brokers: Brokers, seed: int) -> None:
    """Property: any damage to a sorted restore (repeats, reversals, moved chunks, missing or stray
    headers): 0 skipped records, exact only where true, bounds at or above the truth."""
    layout = random_layout(random.Random(seed), N)
    with KafkaCluster(brokers.target_settings) as target:
        entries, _, topic = plan_layout(source_groups, target, layout, whole_when_cheaper=False)
    judgement = judged(source_groups, brokers, topic, entries)
    assert judgement.holds, (layout, judgement.problems)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1))
def test_random_damage_to_a_replica_never_skips_with_fingerprints(
    source_groups: Source, brokers: Brokers, seed: int
) -> None:
    """Property: a replica without headers (MirrorMaker 2) damaged as replication damages it — a
    region copied twice, batches moved or reversed: 0 skipped records, exact only where true."""
    layout = [Slot(s.source, None) for s in random_layout(random.Random(seed), N) if s.source is not None]
    with KafkaCluster(brokers.target_settings) as target:
        entries, _, topic = plan_layout(source_groups, target, layout, strategies=("fingerprint",))
    judgement = judged(source_groups, brokers, topic, entries)
    assert judgement.holds, ([s.source for s in layout], judgement.problems)


# -- timestamps ---------------------------------------------------------------------------------


def skewed_source(source: KafkaCluster, behind: dict[int, int]) -> Source:
    """60 records 100 ms apart, where record i's producer clock was ``behind[i]`` ms late."""
    topic = unique("skew")
    source.create_topics({topic: 1})
    base = 1_700_000_000_000
    records = [
        Produced(i, record_key(0, i), f"value {i}".encode(), (), base + i * 100 - behind.get(i, 0)) for i in range(N)
    ]
    source.produce(topic, 0, ((r.key, r.value, r.headers, r.timestamp) for r in records))
    names = [unique(f"skew-c{c}") for c in range(N + 1)]
    for c, name in enumerate(names):
        commit(source, name, {TP(topic, 0): c})
    snap = take_snapshot(source, SnapshotOptions(groups="|".join(names), evidence_records=3))
    return Source(topic, records, snap.groups)


@pytest.mark.parametrize(
    "behind",
    [{i: 10_000 for i in range(21, 30)}, {i: 5_000 for i in range(0, N, 2)}],
    ids=["one-producer-10s-behind", "half-the-records-5s-behind"],
)
def test_clock_skew_never_skips_with_the_timestamp_strategy(
    source: KafkaCluster, target: KafkaCluster, brokers: Brokers, behind: dict[int, int]
) -> None:
    src = skewed_source(source, behind)
    layout = [Slot(s, None) for s in range(N)]  # a replica without the offset header
    entries, _, topic = plan_layout(src, target, layout, strategies=("timestamp",))
    judgement = judged(src, brokers, topic, entries)
    assert judgement.positions == N + 1
    assert judgement.holds, judgement.problems
    assert not any(e.exact for e in entries)
    assert all("skew seen on the target" in (e.reason or "") for e in entries if e.method == "timestamp")


# -- a target that changed between plan and apply ------------------------------------------------


@pytest.fixture
def resettable() -> Iterator[TestBroker]:
    broker = new_broker("refill").start()
    try:
        yield broker
    finally:
        broker.stop()


def test_a_target_refilled_after_the_plan_is_refused_before_any_commit(
    brokers: Brokers, source: KafkaCluster, resettable: TestBroker, tmp_path: Path
) -> None:
    """The plan is made on a whole restore; the target is then restored again from a backup that
    starts 5 records later, and new records arrive after it, so every mapped offset still lies in the
    log — 5 records too far. Apply must refuse every group, naming the partition, and write nothing."""
    topic = unique("refill")
    source.create_topics({topic: 1})
    records = produce(source, topic, 0, 50)
    groups = {unique(f"refill-c{c}"): c for c in (10, 20, 30, 40, 50)}
    for group, c in groups.items():
        commit(source, group, {TP(topic, 0): c})
    run_snapshot(
        brokers.source_settings, open_location(str(tmp_path / "snaps")), SnapshotOptions(groups="|".join(groups))
    )
    with KafkaCluster(resettable.settings()) as target:
        target.create_topics({topic: 1})
        restore(target, topic, 0, records)
    plan_path = str(tmp_path / "plan.json")
    run_plan(SnapshotChoice(str(tmp_path / "snaps")), resettable.settings(), plan_path, PlanOptions())
    resettable.stop()
    resettable.start()
    with KafkaCluster(resettable.settings()) as target:
        target.create_topics({topic: 1})
        restore(target, topic, 0, records[5:])
        target.produce(topic, 0, ((b"new", f"after failover {i}".encode(), [], None) for i in range(10)))
    try:
        _, report = run_apply(plan_path, resettable.settings(), ApplyOptions(wait_timeout_s=0))
    except BadInputError as refused:  # the broker restarted empty: the topic is new, its id says so first
        assert f"target topic {topic} (topic id " in str(refused) and "nothing was written" in str(refused)
    else:  # a broker that gives no topic ids: the anchors tell the change, group by group
        assert not report.groups_committed
        assert set(report.groups_skipped) == set(groups)
        assert all(f"the target changed since the plan: {topic}/0" in why for why in report.groups_skipped.values())
    with KafkaCluster(resettable.settings()) as target:
        assert not any(target.committed_offsets(list(groups)).values())


def test_holes_in_the_restore_are_believed_by_the_brokers_time_index_not_read_whole(
    source_groups: Source, target: KafkaCluster, brokers: Brokers
) -> None:
    """Issue 40: every 7th source record missing from the restore (compaction, a filter, a lossy backup)
    and groups committed on the holes. Apache Kafka's ListOffsets by the snapshot's timestamp shows no
    record as recent before the one found, so the holes are believed: every answer the judge's, exact,
    the gaps named, and nothing read whole. A broker that does not look timestamps up (the local one)
    answers the log start: the partition is read whole, with the same answers."""
    layout = copy(s for s in range(N) if s % 7 != 6)
    entries, stats, topic = plan_layout(source_groups, target, layout, whole_when_cheaper=False)
    judgement = judged(source_groups, brokers, topic, entries)
    assert judgement.positions == N + 1 and judgement.holds, judgement.problems
    assert all(e.exact for e in entries if e.status == "mapped")
    on_hole = next(e for e in entries if e.source_offset == 13)
    assert "source records 13..13 are not in the restore" in (on_hole.reason or ""), on_hole.reason
    whole = stats.fetch_rounds.get("header (whole partitions)", 0)
    assert (whole == 0) == (broker_kind() == "apache"), stats.fetch_rounds
