"""Busy partitions without headers: a bulk producer puts tens of records in one millisecond, and a replica
holds every record (MirrorMaker 2, a migration's target, a restore without an offset header). Positions in
the middle of such a run are proven by the records' identities, not by their times."""

from __future__ import annotations

from pathlib import Path

from offset_restore.apply.run import PlanFile
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP

from tests.helpers import Brokers, Produced, commit, restore, unique
from tests.integration.test_apply import run as run_cli

PER_MILLISECOND = 30
"""Records a bulk producer puts in one millisecond here (the incident saw up to 27)."""


def bulk(cluster: KafkaCluster, topic: str, count: int) -> list[Produced]:
    """``count`` distinct records, ``PER_MILLISECOND`` of them in each millisecond."""
    records = [
        Produced(i, f"k{i % 7}".encode(), f"order {i}".encode(), (), 1_700_000_000_000 + i // PER_MILLISECOND)
        for i in range(count)
    ]
    cluster.produce(topic, 0, ((r.key, r.value, r.headers, r.timestamp) for r in records))
    return records


def test_positions_inside_a_millisecond_of_a_bulk_producer_are_exact_on_a_complete_replica(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """Groups at the start, the middle and the end of one millisecond's run, and at the log end, on a replica
    that holds every record at the source's offsets without headers: each resumes at its own offset, exact
    (the snapshot's default evidence, 3 records, is shorter than the run: it reaches back through it)."""
    topic = unique("bulk")
    source.create_topics({topic: 1})
    target.create_topics({topic: 1})
    records = bulk(source, topic, 300)
    restore(target, topic, 0, records, header=None)
    positions = {"start": 60, "middle": 75, "last": 89, "next": 90, "late": 251, "end": 300}
    groups = {name: unique(name) for name in positions}
    for name, offset in positions.items():
        commit(source, groups[name], {TP(topic, 0): offset})
    flags = ("--bootstrap-servers",)
    snaps, plan = str(tmp_path / "snaps"), str(tmp_path / "plan.json")
    status, out, err = run_cli(
        "snapshot", *flags, brokers.source.bootstrap_servers, "--groups", "|".join(groups.values()),
        "--output", snaps,
    )  # fmt: skip
    assert status == 0, out + err
    status, out, err = run_cli("plan", "--snapshot", snaps, *flags, brokers.target.bootstrap_servers, "--output", plan)
    assert status == 0, out + err
    entries = {e.group: e for e in PlanFile(plan).load().entries}
    shown = {name: (entries[g].target_offset, entries[g].exact, entries[g].reason) for name, g in groups.items()}
    assert shown == {name: (offset, True, shown[name][2]) for name, offset in positions.items()}, shown


def test_a_migration_onto_a_complete_replica_of_a_busy_partition_writes_every_group_at_its_own_offset(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """The incident's planned migration: a replica without headers holding every record at the source's
    offsets, groups stopped inside the bulk producer's milliseconds. ``migrate`` proves every position at its
    first plan and writes each group at its own offset (it had re-planned for its whole catch-up timeout and
    written none of them)."""
    topic, prefix = unique("busy-move"), unique("busy-move")
    source.create_topics({topic: 1})
    target.create_topics({topic: 1})
    records = bulk(source, topic, 600)
    restore(target, topic, 0, records, header=None)
    positions = {f"{prefix}-{i}": offset for i, offset in enumerate((31, 75, 119, 200, 377, 599))}
    for group, offset in positions.items():
        commit(source, group, {TP(topic, 0): offset})
    status, out, err = run_cli(
        "migrate", "--source-bootstrap-servers", brokers.source.bootstrap_servers,
        "--bootstrap-servers", brokers.target.bootstrap_servers, "--snapshots", str(tmp_path / "snapshots"),
        "--plan", str(tmp_path / "plan.json"), "--groups", f"{prefix}-.*", "--poll-interval", "0.3",
        "--catch-up-timeout", "60", "--execute",
    )  # fmt: skip
    assert status == 0, out + err
    written = target.committed_offsets(list(positions))
    assert {g: written[g][TP(topic, 0)].offset for g in positions} == positions


def test_a_migration_stops_waiting_for_a_position_no_later_plan_can_prove(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """A replica whose copy put a record past a group's position before it (as a reordering copy does): no
    record the target gains later changes that. ``migrate`` says so at its first plan, apart from "not caught
    up", with the way forward, and does not wait out its catch-up timeout; told to move what is exact
    (``--on-wait-timeout commit_empty``), it moves the group it proved and leaves the other."""
    topic, prefix = unique("moved"), unique("moved")
    source.create_topics({topic: 1})
    target.create_topics({topic: 1})
    records = bulk(source, topic, 400)
    reordered = [*records[:100], records[130], *records[100:130], *records[131:]]  # 130 copied before 100
    target.produce(topic, 0, ((r.key, r.value, r.headers, r.timestamp) for r in reordered))
    doubted, proven = f"{prefix}-doubted", f"{prefix}-proven"
    commit(source, doubted, {TP(topic, 0): 120})
    commit(source, proven, {TP(topic, 0): 300})
    status, out, err = run_cli(
        "migrate", "--source-bootstrap-servers", brokers.source.bootstrap_servers,
        "--bootstrap-servers", brokers.target.bootstrap_servers, "--snapshots", str(tmp_path / "snapshots"),
        "--plan", str(tmp_path / "plan.json"), "--groups", f"{prefix}-.*", "--poll-interval", "0.3",
        "--catch-up-timeout", "120", "--on-wait-timeout", "commit_empty", "--execute",
    )  # fmt: skip
    assert status == 3, out + err
    assert "not exact after 1 plans" in out and "CANNOT BE PROVEN  1 of them" in out, out
    assert "offset-restore apply --execute with this run's --plan" in out
    written = {
        g: {tp.partition: c.offset for tp, c in o.items()}
        for g, o in target.committed_offsets([doubted, proven]).items()
    }
    assert written == {doubted: {}, proven: {0: 300}}, out
    [entry] = [e for e in PlanFile(str(tmp_path / "plan.json")).load().entries if e.group == doubted]
    assert entry.unprovable and not entry.exact and entry.target_offset == 100, entry
