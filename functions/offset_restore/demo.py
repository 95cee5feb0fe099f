"""``offset-restore demo``: what exists of the main job, end to end, on a local broker.

Today that is the snapshot: start a source broker, fill topics, place groups at different lags
(caught up, a little behind, far behind, committed on part of a topic only), snapshot them to a local
folder, read the snapshot back and show each group's position and evidence.
"""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path
from typing import TextIO

from offset_restore.cluster_types import TP, CommittedOffset
from offset_restore.kafka_adapter import KafkaCluster
from offset_restore.local_broker import LocalBroker
from offset_restore.snapshot import SnapshotOptions
from offset_restore.snapshot_run import run_snapshot
from offset_restore.snapshot_store import SnapshotRepository
from offset_restore.storage import open_location

__all__ = ["run_demo"]

TOPICS = {"orders": 6, "payments": 3, "audit": 2}
RECORDS_PER_PARTITION = 200


def _fill(cluster: KafkaCluster, rng: random.Random) -> None:
    cluster.create_topics(TOPICS)
    start_ms = int(time.time() * 1000) - 3_600_000
    for topic, partitions in TOPICS.items():
        for partition in range(partitions):
            cluster.produce(
                topic,
                partition,
                (
                    (
                        f"{topic}-{rng.randrange(50)}".encode(),
                        f'{{"n":{i},"p":{partition}}}'.encode(),
                        [("trace-id", f"{i:08x}".encode())],
                        start_ms + i * 1000,
                    )
                    for i in range(RECORDS_PER_PARTITION)
                ),
            )


def _place_groups(cluster: KafkaCluster, count: int, rng: random.Random) -> dict[str, str]:
    """Commit positions for ``count`` groups; returns the story of each group."""
    kinds = ["caught up", "a few behind", "far behind", "part of the topic"]
    stories = {}
    for number in range(count):
        kind = kinds[number % len(kinds)]
        topic = list(TOPICS)[number % len(TOPICS)]
        group = f"{topic}-{kind.replace(' ', '-')}-{number:02d}"
        offsets = {}
        for partition in range(TOPICS[topic]):
            if kind == "caught up":
                offset = RECORDS_PER_PARTITION
            elif kind == "a few behind":
                offset = RECORDS_PER_PARTITION - rng.randint(1, 9)
            elif kind == "far behind":
                offset = rng.randint(0, RECORDS_PER_PARTITION // 2)
            elif partition % 2:
                continue  # never committed on the odd partitions
            else:
                offset = rng.randint(10, RECORDS_PER_PARTITION - 10)
            offsets[TP(topic, partition)] = CommittedOffset(offset, f"demo commit {number}")
        failed = {tp: e for tp, e in cluster.alter_offsets(group, offsets).items() if e}
        if failed:
            raise RuntimeError(f"demo could not commit {group}: {failed}")
        stories[group] = kind
    return stories


def run_demo(*, groups: int, output: str, keep_running: bool, out: TextIO) -> int:
    rng = random.Random(7)
    location = Path(output)
    if location.exists():
        shutil.rmtree(location)
    with LocalBroker("demo-source") as source:
        out.write(f"source broker listening on {source.bootstrap_servers}\n")
        connection = source.settings()
        with KafkaCluster(connection) as cluster:
            _fill(cluster, rng)
            stories = _place_groups(cluster, groups, rng)
        out.write(
            f"created {len(TOPICS)} topics, {sum(TOPICS.values()) * RECORDS_PER_PARTITION:,} records, "
            f"{len(stories)} groups\n\n"
        )
        store = open_location(str(location))
        result = run_snapshot(connection, store, SnapshotOptions(cluster="demo-source"))
        from offset_restore.cli import snapshot_summary

        out.write(snapshot_summary(result) + "\n")
        repository = SnapshotRepository(store)
        key, manifest = repository.latest("demo-source")
        out.write(f"{'group':34} {'story':18} {'state':6} {'parts':>5} {'lag':>5}  next record (offset, fingerprint)\n")
        for group in repository.groups(key, manifest):
            first = group.partitions[0] if group.partitions else None
            nxt = f"{first.next.offset}, {first.next.fingerprint[:12]}…" if first and first.next else "- (caught up)"
            lag = sum(p.lag or 0 for p in group.partitions)
            out.write(
                f"{group.group:34} {stories.get(group.group, ''):18} {group.state:6} "
                f"{len(group.partitions):>5} {lag:>5}  {nxt}\n"
            )
        out.write(
            f"\nread back the latest snapshot: {manifest.counts.groups} groups, "
            f"{manifest.counts.group_partitions} group-partitions from {store.description}/{key}\n"
        )
        if keep_running:
            out.write(f"broker still running on {source.bootstrap_servers}; Ctrl-C to stop\n")
            try:
                while True:
                    time.sleep(1)
            except KeyboardInterrupt:
                pass
    return 0
