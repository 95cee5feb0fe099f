"""The recovery point in every answer (issue 34): a plan is exact as of the snapshot's positions (T); a
group that kept consuming on the source after T reads again on the target what it processed since. Its
estimate — the group's commit rate between the last two snapshots times the time from T to the plan —
is tested against what the group then reads again: never below it, and within twice it."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from offset_restore.formats.plan import Plan
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP, CommittedOffset

from tests.helpers import Brokers, commit, produce, restore, unique
from tests.integration.test_apply import run

RATE = 200  # records a second the live group commits past on the source
RECORDS = 5_000


class Consumer(threading.Thread):
    """A group committing ``RATE`` records a second, as a consumer at work does, until stopped."""

    def __init__(self, brokers: Brokers, topic: str, group: str, start: int) -> None:
        super().__init__(daemon=True)
        self.brokers, self.tp, self.group, self.start_at = brokers, TP(topic, 0), group, start
        self.stopped, self.last = threading.Event(), start

    def run(self) -> None:
        began = time.monotonic()
        with KafkaCluster(self.brokers.source.settings()) as cluster:
            while not self.stopped.is_set():
                self.last = min(RECORDS, self.start_at + int(RATE * (time.monotonic() - began)))
                cluster.alter_offsets(self.group, {self.tp: CommittedOffset(self.last, None)})
                self.stopped.wait(0.05)


def _snapshot(brokers: Brokers, folder: Path, prefix: str) -> None:
    status, out, err = run(
        "snapshot", "--bootstrap-servers", brokers.source.bootstrap_servers, "--groups", f"{prefix}-.*",
        "--output", str(folder),
    )  # fmt: skip
    assert status == 0, out + err


def test_a_live_groups_exposure_is_never_below_what_it_reads_again_and_within_twice_it(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    topic, prefix = unique("exposed"), unique("exp")
    live, idle = f"{prefix}-live", f"{prefix}-idle"
    source.create_topics({topic: 1})
    records = produce(source, topic, 0, RECORDS)
    commit(source, idle, {TP(topic, 0): 100})
    consumer = Consumer(brokers, topic, live, 500)
    consumer.start()
    snapshots = tmp_path / "snapshots"
    time.sleep(0.5)
    _snapshot(brokers, snapshots, prefix)
    time.sleep(4)  # the rate is measured between the two snapshots
    _snapshot(brokers, snapshots, prefix)
    time.sleep(3)  # consuming on after T: these records it will read again
    consumer.stopped.set()  # the failover: the source is gone
    consumer.join()
    processed = consumer.last
    target.create_topics({topic: 1})
    restore(target, topic, 0, records)

    plan = tmp_path / "plan.json"
    status, out, err = run(
        "plan", "--snapshot", str(snapshots), "--bootstrap-servers", brokers.target.bootstrap_servers,
        "--output", str(plan),
    )  # fmt: skip
    assert status == 0, out + err
    document = Plan.model_validate_json(plan.read_text())
    entries = {e.group: e for e in document.entries}
    resumed = entries[live]
    read_again = processed - resumed.source_offset  # resumes exactly at the snapshot's position
    assert resumed.exact and resumed.live_at_snapshot and resumed.exposure is not None, resumed
    assert read_again > 0 and read_again <= resumed.exposure <= 2 * read_again, (read_again, resumed.exposure)
    assert (entries[idle].live_at_snapshot, entries[idle].exposure) == (False, 0)
    assert document.recovery_point is not None and document.history_at is not None
    assert document.history_at < document.recovery_point < document.created_at
    assert document.summary.groups_live == 1 and document.summary.exposure_total == resumed.exposure
    assert f"1 groups were live: about {resumed.exposure:,} records they may read again" in out, out
    # The idle group's 0 is an assumption no snapshot proves (it may move after T): counted and said.
    assert document.summary.groups_assumed_idle == 1
    assert "1 groups idle at both snapshots, assumed idle since (0 read again)" in out, out


def test_without_an_earlier_snapshot_a_live_groups_exposure_is_unknown_and_said(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """One snapshot only, a group without members: whether it moved, nothing says (unknown, not 0)."""
    topic, prefix = unique("unknown"), unique("unk")
    source.create_topics({topic: 1})
    records = produce(source, topic, 0, 50)
    commit(source, f"{prefix}-quiet", {TP(topic, 0): 10})
    _snapshot(brokers, tmp_path / "snapshots", prefix)
    target.create_topics({topic: 1})
    restore(target, topic, 0, records)
    plan = tmp_path / "plan.json"
    status, out, err = run(
        "plan", "--snapshot", str(tmp_path / "snapshots"), "--bootstrap-servers", brokers.target.bootstrap_servers,
        "--output", str(plan),
    )  # fmt: skip
    assert status == 0, out + err
    [entry] = Plan.model_validate_json(plan.read_text()).entries
    assert (entry.live_at_snapshot, entry.exposure) == (None, None)
    assert "1 partitions without an earlier snapshot to say whether their groups moved" in out, out


def test_exposure_counts_up_to_when_the_source_stopped_and_never_past_the_records_on_the_target(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """A plan made long after the failover: counted up to the plan, a live group's estimate grows with the
    clock, but it cannot read again more records than the target holds after its resume point (the restore
    holds 50 past what it processed: that many, by hand); told when the source stopped, the estimate is the
    group's rate up to then (about what it read again, within a quarter). A stop before the snapshot is
    refused by name, before the target is read."""
    topic, prefix = unique("stopped"), unique("stp")
    live = f"{prefix}-live"
    source.create_topics({topic: 1})
    records = produce(source, topic, 0, RECORDS)
    consumer = Consumer(brokers, topic, live, 500)
    consumer.start()
    snapshots = tmp_path / "snapshots"
    time.sleep(0.5)
    _snapshot(brokers, snapshots, prefix)
    time.sleep(2)
    _snapshot(brokers, snapshots, prefix)
    time.sleep(1.5)
    consumer.stopped.set()
    consumer.join()
    stopped_at, processed = datetime.now(UTC), consumer.last
    target.create_topics({topic: 1})
    restore(target, topic, 0, records[: processed + 50])
    time.sleep(3)  # the plan comes later: up to it, the rate would give far more than the target holds

    def planned(*more: str) -> tuple[int, Plan, str]:
        plan = tmp_path / f"plan-{len(list(tmp_path.glob('plan-*')))}.json"
        status, out, err = run(
            "plan", "--snapshot", str(snapshots), "--bootstrap-servers", brokers.target.bootstrap_servers,
            "--output", str(plan), *more,
        )  # fmt: skip
        return status, Plan.model_validate_json(plan.read_text()) if status == 0 else Plan.model_construct(), out + err

    status, late, said = planned()
    assert status == 0, said
    [entry] = late.entries
    assert entry.exact and entry.target_offset is not None and entry.live_at_snapshot, entry
    assert entry.exposure == processed + 50 - entry.target_offset, (entry.exposure, processed, entry.target_offset)
    status, told, said = planned("--source-stopped-at", stopped_at.isoformat())
    assert status == 0, said
    [entry] = told.entries
    read_again = processed - entry.source_offset
    # Its rate between the snapshots times the time it ran after T: about what it read again, not a bound.
    assert entry.exposure is not None and 0.8 * read_again <= entry.exposure <= 1.25 * read_again, (
        entry.exposure,
        read_again,
    )
    assert told.recovery_point is not None
    status, _, said = planned("--source-stopped-at", (told.recovery_point - timedelta(minutes=1)).isoformat())
    assert status == 2 and "is before the snapshot read the positions" in said, said
