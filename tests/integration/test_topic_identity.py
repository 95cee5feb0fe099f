"""A target topic deleted and created again is another log, whatever its name: the plan records each
target topic's id, and apply and rollback refuse, by name and before any write, a topic whose id changed
(on the real brokers, through the CLI)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP

from tests.helpers import Brokers, Produced, commit, produce, restore, unique
from tests.integration.test_apply import Restored, run


@pytest.fixture
def scene(brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path) -> Callable[..., Restored]:
    return lambda offsets, **kw: Restored(brokers, source, target, tmp_path, offsets, **kw)


def recreate(target: KafkaCluster, topic: str, records: list[Produced]) -> None:
    """Delete ``topic`` and create it again with two partitions holding ``records`` (a restore run again)."""
    target._admin.delete_topics([topic])
    deadline = time.monotonic() + 30
    while True:
        try:
            target.create_topics({topic: 2})
            for p in range(2):
                restore(target, topic, p, records)
            return
        except Exception:  # the deletion, or the new topic's leader election, is still under way
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def again(s: Restored, *, swapped: bool) -> list[Produced]:
    """The records the first restore wrote (source offsets 10..99), two of them swapped if asked."""
    records = [Produced(o, f"k0-{o}".encode(), f"value {s.topic}/0/{o}".encode(), (), 1_700_000_000_000 + o * 10)
               for o in range(10, 100)]  # fmt: skip
    if swapped:
        records[39], records[40] = records[40], records[39]
    return records


def test_apply_refuses_a_target_topic_created_again_since_the_plan(scene: Callable[..., Restored]) -> None:
    """The restore run again between plan and apply, two records swapped: the plan's offsets are the old
    log's. Apply used to write them (groups at 50 and 55 skipped a record each)."""
    s = scene({"a": {0: 50}, "b": {0: 55}})
    planned = {e.target_topic_id for e in s.plan().entries}
    assert len(planned) == 1 and None not in planned
    recreate(s.target, s.topic, again(s, swapped=True))
    status, out, err = s.apply()
    assert status == 2, out + err
    assert f"target topic {s.topic} (topic id " in err and "was deleted and created again since the plan" in err
    assert "nothing was written" in err
    assert s.offsets("a") == {} and s.offsets("b") == {}
    assert {e.status for e in s.plan().entries} == {"mapped"}


def test_rollback_writes_no_previous_offset_into_a_topic_created_again(
    scene: Callable[..., Restored], target: KafkaCluster
) -> None:
    """Applied over a group at 5; then the topic is deleted and created again, and the group stands at the
    applied offset in the new topic (its consumers committed there). Rollback used to put back 5 — a
    position in the old log — and the group skipped the new topic's first 5 records."""
    s = scene({"a": {0: 50}})
    commit(target, s.groups["a"], {TP(s.topic, 0): 5})
    status, out, err = s.apply()
    assert status == 0, out + err
    assert s.offsets("a") == {0: 40}
    recreate(target, s.topic, again(s, swapped=False))
    commit(target, s.groups["a"], {TP(s.topic, 0): 40})
    status, out, err = run(
        "rollback", "--plan", str(s.plan_path), "--bootstrap-servers", s.brokers.target.bootstrap_servers,
        "--execute",
    )  # fmt: skip
    assert status == 2, out + err
    assert "was deleted and created again since the plan" in err and "a rollback writes none into the new" in err
    assert s.offsets("a") == {0: 40}


def test_a_source_topic_created_again_between_snapshots_lends_no_positions(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """Snapshots record each topic's id. A topic deleted and created again between two snapshots: the
    earlier snapshot's positions are in the old log, so they give the group no commit rate (they used to:
    40 offsets "moved" between two logs made the group live, its exposure growing with the clock)."""
    topic, group = unique("identity-src"), unique("identity-g")
    source.create_topics({topic: 1})
    produce(source, topic, 0, 20)
    commit(source, group, {TP(topic, 0): 10})
    snaps = str(tmp_path / "snaps")
    status, _, err = run("snapshot", "--bootstrap-servers", brokers.source.bootstrap_servers, "--output", snaps,
                         "--groups", group)  # fmt: skip
    assert status == 0, err
    source._admin.delete_topics([topic])
    deadline = time.monotonic() + 30
    while True:
        try:
            source.create_topics({topic: 1})
            produce(source, topic, 0, 60)
            break
        except Exception:  # the deletion, or the new topic's leader election, is still under way
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    commit(source, group, {TP(topic, 0): 50})
    time.sleep(1.1)  # snapshot ids are by the second
    status, _, err = run("snapshot", "--bootstrap-servers", brokers.source.bootstrap_servers, "--output", snaps,
                         "--groups", group)  # fmt: skip
    assert status == 0, err
    manifests = sorted(Path(snaps).rglob("manifest.json"))
    ids = [json.loads(m.read_text())["topic_ids"][topic] for m in manifests]
    assert len(ids) == 2 and ids[0] != ids[1], ids
    target.create_topics({topic: 1})
    status, out, err = run("plan", "--snapshot", snaps, "--bootstrap-servers", brokers.target.bootstrap_servers,
                           "--output", str(tmp_path / "plan.json"))  # fmt: skip
    assert status in (0, 3), out + err
    [entry] = json.loads((tmp_path / "plan.json").read_text())["entries"]
    assert entry["source_offset"] == 50
    assert entry["live_at_snapshot"] is not True and not entry["exposure"], entry

    # Planned from the earlier snapshot: its position (10) is in the old topic's log, not evidence for the
    # new one's records (it used to be mapped onto them by header number).
    first = json.loads(manifests[0].read_text())["snapshot_id"]
    status, out, err = run("plan", "--snapshot", snaps, "--snapshot-id", first, "--bootstrap-servers",
                           brokers.target.bootstrap_servers, "--output", str(tmp_path / "old.json"))  # fmt: skip
    assert status == 3, out + err
    [old] = json.loads((tmp_path / "old.json").read_text())["entries"]
    assert (old["source_offset"], old["status"], old["target_offset"]) == (10, "unmapped", None), old
    assert f"topic {topic} was deleted and created again on the source after snapshot {first}" in old["reason"]
