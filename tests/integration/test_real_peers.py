"""Side by side with the real tools: Apache Kafka's own ``kafka-consumer-groups``
(``ConsumerGroupCommand`` from Maven Central's kafka-tools 4.1.1 jar, run with ``java`` as the script
runs it) reading the CSV ``offset-restore plan --csv`` writes."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from offset_restore.devtools.apache_broker import ApacheBroker, java_tool
from offset_restore.devtools.mirror_maker import Flow, MirrorMaker
from offset_restore.formats.plan import Plan, PlanEntry
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.reading.whole import read_checkpoints, read_partition
from offset_restore.snapshot.filters import pattern_for
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import open_location
from offset_restore.translate.mm2 import FRESHER_MARGIN_MS
from offset_restore.workflow.states.prepare import prepare_work
from offset_restore.workflow.states.translate import translate_work_item
from offset_restore.workflow.states.validate import RunInput

from tests.helpers import TEST_BROKER, Brokers, Produced, active_member, commit, produce, restore, unique
from tests.integration.test_apply import run as run_cli

pytestmark = pytest.mark.skipif(TEST_BROKER != "apache", reason="runs Apache Kafka's own tools")

CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


def on_both(
    source: KafkaCluster, target: KafkaCluster, prefix: str, partitions: int, count: int
) -> tuple[str, dict[int, list[Produced]]]:
    """A new topic on both clusters, ``count`` records a partition on the source (restored by the test)."""
    topic = unique(prefix)
    source.create_topics({topic: partitions})
    target.create_topics({topic: partitions})
    return topic, {p: produce(source, topic, p, count) for p in range(partitions)}


def test_kafka_consumer_groups_from_file_puts_every_group_where_the_plan_does(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """Groups at the start, in the middle, caught up and absent from a partition; the target a
    restore that lost the first 7 records of each partition. ``--reset-offsets --from-file plan.csv
    --execute`` must commit exactly the plan's mapped offsets (what ``apply`` writes) and nothing else —
    three of the groups named as a spreadsheet formula begins (``=``, ``@``, ``+``): the tool reads them as
    the names they are, which is why the CSV carries them unchanged (and the plan says not to open it in a
    spreadsheet)."""
    assert isinstance(brokers.target, ApacheBroker)
    topic, records = on_both(source, target, "peer", 3, 40)
    groups = [unique("=peer-g"), unique("@peer-g"), unique("+peer-g"), unique("peer-g")]
    placed = [{0: 3, 1: 20, 2: 39}, {0: 40, 1: 40, 2: 40}, {0: 10, 2: 25}, {1: 7}]
    for group, offsets in zip(groups, placed, strict=True):
        commit(source, group, {TP(topic, p): o for p, o in offsets.items()})
    for p in range(3):
        restore(target, topic, p, records[p], keep=lambda r: r.offset >= 7)
    snaps, plan, csv = tmp_path / "snaps", tmp_path / "plan.json", tmp_path / "plan.csv"
    status, out, err = run_cli(
        "snapshot", "--bootstrap-servers", brokers.source.bootstrap_servers, "--groups", pattern_for(groups),
        "--output", str(snaps),
    )  # fmt: skip
    assert status == 0, out + err
    status, out, err = run_cli(
        "plan", "--snapshot", str(snaps), "--bootstrap-servers", brokers.target.bootstrap_servers,
        "--output", str(plan), "--csv", str(csv),
    )  # fmt: skip
    assert status == 0, out + err
    assert "in the CSV: 3 groups whose id or topic begins with =, +, - or @" in out + err, out + err
    planned = {
        (e.group, TP(e.target_topic, e.partition)): e.target_offset
        for e in Plan.model_validate_json(plan.read_text()).entries
        if e.status == "mapped"
    }
    assert len(planned) == 9 and planned[(groups[0], TP(topic, 0))] == 0 and planned[(groups[1], TP(topic, 2))] == 33

    selected = [flag for group in groups for flag in ("--group", group)]
    done = java_tool(
        CONSUMER_GROUP_COMMAND,
        ["--bootstrap-server", brokers.target.bootstrap_servers, "--reset-offsets", "--from-file", str(csv),
         "--execute", *selected],
        log4j=brokers.target.log4j,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    committed = target.committed_offsets(groups)
    landed = {(group, tp): c.offset for group, found in committed.items() for tp, c in found.items()}
    assert landed == planned, done.stdout


# -- MirrorMaker 2 ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def replica() -> Iterator[ApacheBroker]:
    """A cluster of its own for MirrorMaker 2 to replicate into (its checkpoint topic would otherwise
    be seen by every other test's plan on the shared target)."""
    with ApacheBroker(unique("replica")) as broker:
        yield broker


def next_record_on(cluster: KafkaCluster, topic: str, partition: int, source_offset: int) -> int:
    """The truth: the target offset of the copy of the source record at ``source_offset`` (``produce``
    writes ``value <topic>/<p>/<offset>``), or the log end when the group had read everything."""
    records = read_partition(cluster, TP(topic, partition))
    wanted = f"value {topic}/{partition}/{source_offset}".encode()
    return next((r.offset for r in records if r.value == wanted), records[-1].offset + 1)


def test_mm2_strategy_makes_mirror_makers_checkpoints_exact_and_a_fresher_checkpoint_wins(
    brokers: Brokers, source: KafkaCluster, replica: ApacheBroker, tmp_path: Path, table: str
) -> None:
    """The real MirrorMaker 2 (offset.lag.max 100) replicates a topic that lost its first 50 records
    on one partition before the copy, and syncs three groups. MM2 alone resumes them early; the
    ``mm2`` strategy alone (its checkpoints refined by the snapshot's evidence) puts the groups the
    snapshot saw exactly on their next record; a group that moved after the snapshot resumes from
    MM2's newer checkpoint, which says so, never past its record. The workflow's path (prepare's work
    items, the translate step into DynamoDB) answers entry for entry as the CLI's plan does, the newer
    checkpoint included. Apply then writes the plan over MM2's offsets."""
    assert isinstance(brokers.source, ApacheBroker)
    topic, prefix = unique("mm2"), unique("mm2-g")
    source.create_topics({topic: 2})
    for p in range(2):
        produce(source, topic, p, 600)
    source.delete_records({TP(topic, 0): 50})
    mid, end, moved = f"{prefix}-mid", f"{prefix}-end", f"{prefix}-moved"
    placed = {mid: {0: 250, 1: 333}, end: {0: 600, 1: 600}, moved: {0: 120, 1: 10}}
    for group, offsets in placed.items():
        commit(source, group, {TP(topic, p): o for p, o in offsets.items()})
    snaps, plan = tmp_path / "snaps", tmp_path / "plan.json"
    status, out, err = run_cli(
        "snapshot", "--bootstrap-servers", brokers.source.bootstrap_servers, "--groups", f"{prefix}.*",
        "--output", str(snaps),
    )  # fmt: skip
    assert status == 0, out + err
    placed[moved] = {0: 480, 1: 590}  # after the snapshot: only MM2 sees it
    commit(source, moved, {TP(topic, p): o for p, o in placed[moved].items()})
    time.sleep(FRESHER_MARGIN_MS / 1000)  # a forward move counts only when seen clearly after the snapshot

    alias = unique("src").replace("-", "")
    only = {f"{alias}->target.topics": topic, f"{alias}->target.groups": f"{prefix}.*"}
    with (
        MirrorMaker(brokers.source, [Flow(replica, lag_max=100)], alias, only) as mm2,
        KafkaCluster(replica.settings()) as mirror,
    ):

        def checkpointed() -> bool:
            if mm2.checkpoints_topic not in mirror.topic_partitions():
                return False
            seen = {(c.group, c.tp.partition): c.upstream for c in read_checkpoints(mirror, mm2.checkpoints_topic)}
            return seen == {(g, p): o for g, offsets in placed.items() for p, o in offsets.items()}

        mm2.wait_for("a checkpoint of every group at its source offset", checkpointed)
        mm2.stop()  # the failover: the source is gone, the replica holds what MM2 wrote
        truth = {
            (g, p): next_record_on(mirror, topic, p, o) for g, offsets in placed.items() for p, o in offsets.items()
        }
        synced = {(g, tp.partition): c.offset for g, found in mirror.committed_offsets(list(placed)).items()
                  for tp, c in found.items()}  # fmt: skip
        assert all(synced[key] <= truth[key] for key in truth), (synced, truth)
        assert synced[(mid, 0)] < truth[(mid, 0)], "MM2 at offset.lag.max 100 was expected to resume early"

        status, out, err = run_cli(
            "plan", "--snapshot", str(snaps), "--bootstrap-servers", replica.bootstrap_servers, "--output", str(plan),
            "--strategies", "mm2",
        )  # fmt: skip
        assert status == 0, out + err
        assert (
            "1 group-partitions" not in out and "from MirrorMaker 2 2 group-partitions have a checkpoint newer" in out
        ), out
        entries = {(e.group, e.partition): e for e in Plan.model_validate_json(plan.read_text()).entries}
        for group in (mid, end):
            for p in range(2):
                e = entries[(group, p)]
                assert (e.method, e.exact, e.target_offset) == ("mm2", True, truth[(group, p)]), e
        for p in range(2):
            e = entries[(moved, p)]
            assert e.source_offset == placed[moved][p] and "after the snapshot" in (e.reason or ""), e
            assert next_record_on(mirror, topic, p, (120, 10)[p]) < (e.target_offset or 0) <= truth[(moved, p)], e
        workflow = workflow_entries(snaps, tmp_path / "work", replica, table, f"{prefix}.*", ["mm2"])
        assert {key: _answer(e) for key, e in workflow.items()} == {key: _answer(e) for key, e in entries.items()}

        status, out, err = run_cli(
            "apply", "--plan", str(plan), "--bootstrap-servers", replica.bootstrap_servers, "--execute"
        )
        assert status == 0, out + err
        landed = {(g, tp.partition): c.offset for g, found in mirror.committed_offsets(list(placed)).items()
                  for tp, c in found.items()}  # fmt: skip
        assert landed == {key: e.target_offset for key, e in entries.items()}
        applied = Plan.model_validate_json(plan.read_text()).entries
        previous = {(e.group, e.partition): e.previous_target_offset for e in applied}
        assert previous == synced, "apply records MM2's offsets as the previous ones (rollback puts them back)"


def workflow_entries(
    snapshots: Path, work: Path, target: ApacheBroker, table: str, groups: str, strategies: list[str]
) -> dict[tuple[str, int], PlanEntry]:
    """The workflow's translation of the latest snapshot in ``snapshots``: prepare's work items and the
    translate step's entries in (moto's) DynamoDB, as the state machine runs them."""
    repository = SnapshotRepository(open_location(str(snapshots)))
    _, manifest = repository.latest(None)
    run = RunInput.model_validate(
        {"restore_id": "peers", "source_cluster": manifest.cluster, "target_cluster": "dr", "groups": groups,
         "strategies": strategies}
    )  # fmt: skip
    store = open_location(str(work))
    prepared = prepare_work(run, repository, store)
    mappings = MappingStore(table, boto3.client("dynamodb"))
    for key in prepared["work_items"]:
        translate_work_item(store, key, target.settings(), mappings, target_cluster="dr")
    return {(e.group, e.partition): e for e in mappings.entries("peers")}


def _answer(entry: PlanEntry) -> tuple[object, ...]:
    return entry.status, entry.target_offset, entry.method, entry.exact, entry.max_duplicates, entry.source_offset


# -- kafka-consumer-groups --export as a snapshot ---------------------------------------------------


def test_a_kafka_consumer_groups_export_is_a_snapshot_the_plan_places_exactly(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """What an operator saved with the real ``--reset-offsets --to-current --dry-run --export`` before
    losing the source: ``snapshot --from-export`` (no cluster read) gives the plan the same mapped
    offsets on a restore with headers as a snapshot of the live source; a one-group export needs
    ``--export-group``; refusals write nothing."""
    assert isinstance(brokers.source, ApacheBroker)
    topic, records = on_both(source, target, "export", 2, 30)
    groups = [unique("export-g") for _ in range(2)]
    commit(source, groups[0], {TP(topic, 0): 12, TP(topic, 1): 30})
    commit(source, groups[1], {TP(topic, 1): 5})
    for p in range(2):
        restore(target, topic, p, records[p], keep=lambda r: r.offset >= 4)
    selected = [flag for group in groups for flag in ("--group", group)]
    exported = java_tool(
        CONSUMER_GROUP_COMMAND,
        ["--bootstrap-server", brokers.source.bootstrap_servers, *selected, "--all-topics", "--reset-offsets",
         "--to-current", "--dry-run", "--export"],
        log4j=brokers.source.log4j,
    )  # fmt: skip
    assert exported.returncode == 0 and "Error" not in exported.stdout, exported.stdout + exported.stderr
    export = tmp_path / "offsets.csv"
    export.write_text(exported.stdout)

    def plan_of(*snapshot_args: str) -> dict[tuple[str, int], int | None]:
        snaps, plan = tmp_path / unique("snaps"), tmp_path / f"{unique('plan')}.json"
        status, out, err = run_cli("snapshot", *snapshot_args, "--output", str(snaps))
        assert status == 0, out + err
        status, out, err = run_cli(
            "plan", "--snapshot", str(snaps), "--bootstrap-servers", brokers.target.bootstrap_servers,
            "--output", str(plan),
        )  # fmt: skip
        assert status == 0, out + err
        return {(e.group, e.partition): e.target_offset for e in Plan.model_validate_json(plan.read_text()).entries}

    from_export = plan_of("--from-export", str(export), "--cluster", "gone")
    live = plan_of("--bootstrap-servers", brokers.source.bootstrap_servers, "--groups", "|".join(groups))
    assert from_export == live == {(groups[0], 0): 8, (groups[0], 1): 26, (groups[1], 1): 1}

    one_group = tmp_path / "one.csv"
    one_group.write_text(f"{topic},1,5\n")
    assert plan_of("--from-export", str(one_group), "--export-group", groups[1], "--cluster", "gone") == {
        (groups[1], 1): 1
    }
    for refused, message in [
        (["--from-export", str(one_group), "--cluster", "gone"], "name the group with --export-group"),
        (["--from-export", str(export)], "--from-export needs --cluster"),
        (["--from-export", str(export), "--cluster", "x", "--bootstrap-servers", "127.0.0.1:1"], "reads no cluster"),
        (["--cluster", "x"], "--bootstrap-servers is required (or --from-export FILE)"),
    ]:
        empty = tmp_path / unique("refused")
        status, out, err = run_cli("snapshot", *refused, "--output", str(empty))
        assert status == 2 and message in err, (refused, out, err)
        assert not empty.exists() or not any(empty.iterdir()), "a refusal writes nothing"


def test_the_export_of_a_busy_cluster_names_what_it_left_out_and_describe_holds_every_group(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """A group with a member is left out of the real ``--reset-offsets ... --export`` (the tool prints an
    ``Error:`` line among the offsets): the snapshot holds the others and names it. The real ``--describe``
    output holds it too, and its plan equals a live snapshot's. The offsets' age is the file's, not the run's."""
    apache = brokers.source
    assert isinstance(apache, ApacheBroker)
    topic, records = on_both(source, target, "busy-export", 2, 30)
    idle, busy = unique("idle g"), unique("busy-g")
    commit(source, idle, {TP(topic, 0): 12, TP(topic, 1): 30})
    commit(source, busy, {TP(topic, 0): 5})
    for p in range(2):
        restore(target, topic, p, records[p], keep=lambda r: r.offset >= 4)
    selected = ["--group", idle, "--group", busy]

    def saved(name: str, *args: str) -> Path:
        answer = java_tool(
            CONSUMER_GROUP_COMMAND, ["--bootstrap-server", apache.bootstrap_servers, *selected, *args],
            log4j=apache.log4j,
        )  # fmt: skip
        assert answer.returncode == 0, answer.stdout + answer.stderr
        path = tmp_path / name
        path.write_text(answer.stdout + answer.stderr)  # as `> file 2>&1` saves it
        return path

    with active_member(brokers.source.bootstrap_servers, busy, topic):
        exported = saved("offsets.csv", "--all-topics", "--reset-offsets", "--to-current", "--dry-run", "--export")
        described = saved("groups.txt", "--describe")
    assert "Error: Assignments can only be reset" in exported.read_text()
    eighteen_minutes_ago = time.time() - 18 * 60
    os.utime(described, (eighteen_minutes_ago, eighteen_minutes_ago))

    def plan_of(*snapshot_args: str) -> tuple[dict[tuple[str, int], int | None], dict[str, Any], str]:
        snaps, plan = tmp_path / unique("snaps"), tmp_path / f"{unique('plan')}.json"
        status, out, err = run_cli("snapshot", *snapshot_args, "--output", str(snaps))
        assert status == 0, out + err
        manifest = json.loads(next(snaps.rglob("manifest.json")).read_text())
        status, out, err = run_cli(
            "plan", "--snapshot", str(snaps), "--bootstrap-servers", brokers.target.bootstrap_servers,
            "--output", str(plan),
        )  # fmt: skip
        assert status == 0, out + err
        entries = Plan.model_validate_json(plan.read_text()).entries
        return {(e.group, e.partition): e.target_offset for e in entries}, manifest, out

    from_csv, manifest, _ = plan_of("--from-export", str(exported), "--cluster", "gone")
    assert from_csv == {(idle, 0): 8, (idle, 1): 26}
    assert any(
        f"left out 1 group(s), not in this snapshot: {busy} (Stable: it has members)" in n for n in manifest["notes"]
    )

    from_describe, manifest, out = plan_of("--from-export", str(described), "--cluster", "gone")
    live, _, _ = plan_of("--bootstrap-servers", brokers.source.bootstrap_servers, "--groups", f"{idle}|{busy}")
    assert from_describe == live == {(idle, 0): 8, (idle, 1): 26, (busy, 0): 1}
    assert datetime.fromisoformat(manifest["as_of"]).timestamp() == pytest.approx(eighteen_minutes_ago, abs=1)
    assert "offsets as of 18 min before this run" in out, out

    told, manifest, _ = plan_of("--from-export", str(described), "--cluster", "gone", "--as-of", "2026-01-02T03:04:05Z")
    assert told == live and manifest["as_of"].startswith("2026-01-02T03:04:05")
    status, out, err = run_cli(
        "snapshot", "--from-export", str(described), "--cluster", "gone", "--as-of", "2999-01-01T00:00:00Z",
        "--output", str(tmp_path / "future"),
    )  # fmt: skip
    assert status == 2 and "is in the future" in err and not (tmp_path / "future").exists()
