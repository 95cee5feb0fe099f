"""Snapshot benchmark: one command, figures for the README.

    python -m bench.snapshot_bench            # 5,000 groups over 100 topics x 12 partitions
    python -m bench.snapshot_bench --groups 500 --topics 10   # a quick look
    python -m bench.snapshot_bench --groups 20000 --topics 167 --repeat 1 --broker apache   # 240,000

Starts a fresh source broker (local, or Apache Kafka with ``--broker apache``), fills it, places
every group on one topic at a varied lag (a fifth caught up), then takes snapshots without and with
evidence, each repetition in a fresh process so that its peak RSS is the snapshot's own. Prints a
Markdown table and writes it, with the raw numbers as JSON, to bench/results/.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import random
import resource
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from offset_restore.devtools.brokers import KINDS
from offset_restore.devtools.brokers import started as started_brokers
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.kafka.model import TP, CommittedOffset
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.stores.storage import open_location

RESULTS = Path(__file__).parent / "results"


def build(settings: ConnectionSettings, groups: int, topics: int, partitions: int, records: int, seed: int) -> int:
    """Fill the cluster; returns the number of group-partitions committed."""
    rng = random.Random(seed)
    names = [f"bench-topic-{t:03d}" for t in range(topics)]
    with KafkaCluster(settings) as cluster:
        cluster.create_topics(dict.fromkeys(names, partitions))
        payload = b"x" * 200
        for topic in names:
            for p in range(partitions):
                cluster.produce(
                    topic, p, ((f"k{i}".encode(), payload + str(i).encode(), [], None) for i in range(records))
                )

    def place(chunk: range) -> int:
        placed = 0
        with KafkaCluster(settings) as cluster:
            for g in chunk:
                local = random.Random(seed * 100_003 + g)
                topic = names[g % topics]
                caught_up = g % 5 == 0
                offsets = {
                    TP(topic, p): CommittedOffset(records if caught_up else local.randint(0, records - 1), None)
                    for p in range(partitions)
                }
                errors = cluster.alter_offsets(f"bench-group-{g:05d}", offsets)
                if any(errors.values()):
                    raise RuntimeError(f"commit failed for bench-group-{g:05d}: {errors}")
                placed += len(offsets)
        return placed

    rng.random()
    workers = 4
    size = (groups + workers - 1) // workers
    with ThreadPoolExecutor(workers) as pool:
        return sum(pool.map(place, [range(s, min(groups, s + size)) for s in range(0, groups, size)]))


def one_snapshot(settings: ConnectionSettings, evidence: int, queue: Any) -> None:
    """Runs in a child process: one snapshot written to a temporary folder."""
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        result = run_snapshot(
            settings,
            open_location(folder),
            SnapshotOptions(groups="bench-group-.*", evidence_records=evidence, cluster="bench"),
        )
        wall = time.perf_counter() - started
    queue.put(
        {
            "wall_s": wall,
            "group_partitions": result.counts.group_partitions,
            "with_evidence": result.counts.with_evidence,
            "requests": result.requests,
            "timings": result.timings,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
    )


def measure(settings: ConnectionSettings, evidence: int, repeat: int) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    runs = []
    for _ in range(repeat):
        queue = context.Queue()
        child = context.Process(target=one_snapshot, args=(settings, evidence, queue))
        child.start()
        runs.append(queue.get(timeout=900))
        child.join()
    walls = [r["wall_s"] for r in runs]
    gp = runs[0]["group_partitions"]
    return {
        "evidence_records": evidence,
        "group_partitions": gp,
        "with_evidence": runs[0]["with_evidence"],
        "median_wall_s": statistics.median(walls),
        "walls_s": walls,
        "gp_per_s": gp / statistics.median(walls),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "requests": runs[0]["requests"],
        "timings": runs[0]["timings"],
    }


def table(config: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    lines = [
        f"Snapshot benchmark: {config['groups']:,} groups over {config['topics']} topics x "
        f"{config['partitions']} partitions, {config['records']} records per partition; "
        f"median of {config['repeat']} runs; {config['machine']}; source: {config['broker']} broker.",
        "",
        "| evidence records | group-partitions | median wall time | group-partitions/s | target | peak RSS "
        "| Kafka requests (by API) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        target = 20_000  # group-partitions/s, with or without evidence, at any size
        verdict = "met" if row["gp_per_s"] >= target else "MISSED"
        requests = ", ".join(f"{k} {v}" for k, v in sorted(row["requests"].items()))
        lines.append(
            f"| {row['evidence_records']} | {row['group_partitions']:,} | {row['median_wall_s']:.2f} s "
            f"| {row['gp_per_s']:,.0f} | {target:,} ({verdict}) | {row['peak_rss_mb']:.0f} MB "
            f"| {sum(row['requests'].values())}: {requests} |"
        )
    if len(rows) == 2 and rows[0]["median_wall_s"]:
        lines += [
            "",
            f"Evidence costs {rows[1]['median_wall_s'] / rows[0]['median_wall_s']:.2f}x the time "
            f"of a snapshot without it.",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=5000)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--records", type=int, default=50, help="records per partition")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--broker", choices=KINDS, default="local", help="the source's kind (default: local)")
    args = parser.parse_args(argv)
    config = {
        **vars(args),
        "machine": f"{platform.machine()}, {multiprocessing.cpu_count()} cores, Python {platform.python_version()}",
    }
    with started_brokers(args.broker, "bench-source") as brokers:
        broker = brokers[0]
        started = time.perf_counter()
        placed = build(broker.settings(), args.groups, args.topics, args.partitions, args.records, args.seed)
        print(f"setup: {placed:,} group-partitions committed in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        rows = [measure(broker.settings(), evidence, args.repeat) for evidence in (0, 3)]
    report = table(config, rows)
    RESULTS.mkdir(exist_ok=True)
    default = args.groups == 5000 and args.partitions == 12 and args.broker == "local"
    name = "snapshot" if default else f"snapshot-{rows[0]['group_partitions']}-{args.broker}"
    (RESULTS / f"{name}.md").write_text(report)
    (RESULTS / f"{name}.json").write_text(json.dumps({"config": config, "rows": rows}, indent=2))
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
