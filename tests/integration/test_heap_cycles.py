"""A phase runs with the garbage collector paused (offset_restore/heap.py): what it makes in reference cycles
waits for the phase to end. Against the real brokers, a snapshot, a dense plan (read whole) and its apply make
few: a change that makes a cycle a record or a request would show here, not as memory that grows for the whole
of a large phase."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import TypeVar

from offset_restore.apply.commit import apply_plan
from offset_restore.apply.model import ApplyOptions
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.live import SnapshotOptions, take_snapshot
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.translation import translate

from tests.helpers import commit, expected_target, plan_of, produce, restore, unique

T = TypeVar("T")
PARTITIONS, RECORDS, GROUPS = 4, 2_000, 30
MOST_CYCLIC = 500
"""Objects in cycles a phase may leave (a client's closed connections and their futures: about 60 in a dense
apply); a cycle a record would leave thousands."""


def cyclic_garbage(phase: Callable[[], T]) -> tuple[T, int]:
    """What ``phase`` returns, and the objects in cycles it left unreachable (the collector off throughout)."""
    gc.collect()
    gc.disable()
    try:
        result = phase()
        return result, gc.collect()
    finally:
        gc.enable()


def test_a_snapshot_a_dense_plan_and_its_apply_leave_few_cycles(source: KafkaCluster, target: KafkaCluster) -> None:
    """Through the paused reads the answers are the rule's and the writes keep what they replace: each group
    resumes at the first restored record at or past its position (a restore that lost every 97th record), and
    apply records the offsets the target held before it writes its own."""
    topic = unique("heap")
    source.create_topics({topic: PARTITIONS})
    target.create_topics({topic: PARTITIONS})
    pairs = {
        p: restore(target, topic, p, produce(source, topic, p, RECORDS), keep=lambda r: r.offset % 97 != 5)
        for p in range(PARTITIONS)
    }
    groups = [unique("g") for _ in range(GROUPS)]
    for i, group in enumerate(groups):
        commit(source, group, {TP(topic, p): (37 * i + 11 * p) % RECORDS for p in range(PARTITIONS)})
        commit(target, group, {TP(topic, p): i for p in range(PARTITIONS)})  # what a rollback must put back

    snapshot, left = cyclic_garbage(lambda: take_snapshot(source, SnapshotOptions(groups="|".join(groups))))
    assert left < MOST_CYCLIC, f"the snapshot left {left} objects in cycles"
    (entries, stats), left = cyclic_garbage(lambda: translate(snapshot.groups, target, PlanOptions()))
    assert left < MOST_CYCLIC, f"the plan left {left} objects in cycles"
    assert sum(stats.records_read.values()) >= PARTITIONS * (RECORDS - RECORDS // 97)  # read whole, every record
    assert len(entries) == GROUPS * PARTITIONS
    ends = {p: len(pairs[p]) for p in range(PARTITIONS)}
    for e in entries:  # never past a record the target holds, never before the first one at or past it
        assert e.target_offset == expected_target(pairs[e.partition], e.source_offset, ends[e.partition]), e
    plan = plan_of(entries, snapshot.manifest.snapshot_id)
    report, left = cyclic_garbage(lambda: apply_plan(plan, target, ApplyOptions(wait_timeout_s=0), lambda p: None))
    assert left < MOST_CYCLIC, f"the apply left {left} objects in cycles"
    assert not report.groups_failed and not report.verify_failed
    now = target.committed_offsets(groups)
    for i, e in ((groups.index(e.group), e) for e in plan.entries):
        assert e.previous_recorded and e.previous_target_offset == i  # the rollback's offsets, kept
        assert now[e.group][TP(topic, e.partition)].offset == e.target_offset
