"""What telling and mapping a topic whose shape changed costs, beside a one-pass scan.

    python -m bench.shape_bench                       # Apache Kafka 4.1, 100,000 records a partition
    python -m bench.shape_bench --records 20000 --broker local

A source topic of 2 partitions x ``--records`` records (100-byte values, keyed), groups at random
committed offsets (5 and 200 of them, every group on both partitions), snapshotted with 3 evidence
records. Three restores of it on the target, written by kafka-python's producer in batches of 16 KB
(its default) and of 1 MB, each record with its source offset in ``x-source-offset``; the backup lost
the first 1% of every partition:

- **same shape**, each record also with ``x-source-partition``: what the shape check costs a plan that
  finds nothing (its sample is one batch a target partition);
- **2 -> 4 partitions** by key hash, with ``x-source-partition``: every target partition read whole and
  every group mapped onto all four;
- **2 -> 4 partitions** without it: the groups held (nothing read but the sample).

Each plan is judged against what was written (an independent computation of where every group must
resume on every target partition): a record skipped or a wrong "exact" fails the run. The baseline on
the same target is a one-pass scan (every partition of the target topic read once, in order): what any
correct mapping of a re-partitioned topic must at least read, since no order ties its records to a
position. Counted at the client: record-batch bytes received, Fetch requests, seconds.
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import time
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from offset_restore.formats.plan import PlanEntry
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP, CommittedOffset
from offset_restore.reading.whole import read_whole
from offset_restore.snapshot.live import Snapshot, SnapshotOptions, take_snapshot
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.positions import TranslateStats
from offset_restore.translate.translation import translate

from bench.bytes_bench import Cost, measured
from bench.two_clusters import Row, bench_parser, produce, two_clusters, write_results

BASE_MS = 1_700_000_000_000
LOSS = 0.01
SOURCES, TARGETS = 2, 4
BATCHES = {"16 KB": 16 * 1024, "1 MB": 1000 * 1024}
Restored = tuple[str, int, dict[int, list[tuple[int, int]]]]
"""A restored topic's name, partition count, and per partition the (source partition, offset) of each record."""


@dataclass
class Source:
    topic: str
    records: int
    values: dict[int, list[bytes]]


def write_source(source: KafkaCluster, bootstrap: str, records: int, seed: int) -> Source:
    topic = f"shape-src-{int(time.time() * 1000)}"
    source.create_topics({topic: SOURCES})
    rngs = {q: random.Random(seed * 10 + q) for q in range(SOURCES)}
    values = {q: [rng.randbytes(100) for _ in range(records)] for q, rng in rngs.items()}
    rows: list[Row] = [
        (q, f"{q}:{i}".encode(), values[q][i], [], BASE_MS + i) for i in range(records) for q in range(SOURCES)
    ]
    produce(bootstrap, topic, rows)
    return Source(topic, records, values)


def restore(
    target: KafkaCluster, bootstrap: str, src: Source, name: str, partitions: int, with_partition: bool, batch: int
) -> dict[int, list[tuple[int, int]]]:
    """The restore; returns per target partition the (source partition, source offset) of each record."""
    target.create_topics({name: partitions})
    lost = int(src.records * LOSS)
    placed: dict[int, list[tuple[int, int]]] = {t: [] for t in range(partitions)}
    rows: list[Row] = []
    for i in range(lost, src.records):
        for q in range(SOURCES):
            key = f"{q}:{i}".encode()
            t = q if partitions == SOURCES else zlib.crc32(key) % partitions
            headers = [("x-source-offset", i.to_bytes(8, "big"))]
            if with_partition:
                headers.append(("x-source-partition", str(q).encode()))
            rows.append((t, key, src.values[q][i], headers, BASE_MS + i))
            placed[t].append((q, i))
    produce(bootstrap, name, rows, batch=batch)
    return placed


def judge(
    entries: list[PlanEntry], placed: dict[int, list[tuple[int, int]]], committed: dict[str, dict[int, int]]
) -> str:
    """'' when every mapped entry skips nothing and claims exact only when it is; else what is wrong."""
    for e in entries:
        if e.status != "mapped" or e.target_offset is None:
            continue
        t, positions = e.target.partition, committed[e.group]
        rows = placed[t]
        needed = [at for at, (q, o) in enumerate(rows) if o >= positions[q]]
        dups = sum(1 for at, (q, o) in enumerate(rows) if o < positions[q] and at >= e.target_offset)
        if needed and needed[0] < e.target_offset:
            return f"{e.group} skips target offsets {needed[0]}..{e.target_offset - 1} of partition {t}"
        if e.max_duplicates is None or e.max_duplicates < dups:
            return f"{e.group} on partition {t}: {dups} duplicates, bound {e.max_duplicates}"
        if e.exact and (dups or (needed and needed[0] != e.target_offset)):
            return f"{e.group} on partition {t} claims exact wrongly"
    return ""


def one_scan(target: KafkaCluster, topic: str, partitions: int) -> int:
    records, failed = read_whole(target, {TP(topic, t): 0 for t in range(partitions)})
    assert not failed, failed
    return sum(map(len, records.values()))


def commit_groups(source: KafkaCluster, src: Source, prefix: str, count: int, seed: int) -> dict[str, dict[int, int]]:
    rng = random.Random(seed + count)
    lost = int(src.records * LOSS)
    committed = {
        f"{prefix}-g{count}-{g}": {q: rng.randrange(lost, src.records + 1) for q in range(SOURCES)}
        for g in range(count)
    }
    offsets = {g: {TP(src.topic, q): CommittedOffset(c, None) for q, c in pos.items()} for g, pos in committed.items()}
    failed = source.alter_offsets_many(offsets)
    assert not any(e for errors in failed.values() for e in errors.values())
    return committed


def plan_one(
    target: KafkaCluster, snap: Snapshot, src: Source, restored: Restored, committed: dict[str, dict[int, int]]
) -> dict[str, Any]:
    """One plan, judged, and the one-pass scan of the same target topic."""
    name, partitions, placed = restored
    options = PlanOptions(topic_map={src.topic: name})
    groups = list(snap.groups)

    def plan() -> tuple[list[PlanEntry], TranslateStats]:
        return translate(groups, target, options, source_partitions=snap.manifest.topic_partitions)

    (entries, stats), cost = measured(target, plan)
    wrong = judge(entries, placed, committed)
    assert not wrong, wrong
    _, scan = measured(target, lambda: one_scan(target, name, partitions))
    return {
        "cost": cost,
        "scan": scan,
        "sample": stats.bytes_read.get("shape (samples)", 0),
        "mapped": sum(e.status == "mapped" for e in entries),
        "exact": sum(e.exact for e in entries),
        "held": sum(e.holds_group for e in entries),
        "entries": len(entries),
    }


CASES = [
    ("same shape, both headers", SOURCES, True),
    ("2 -> 4, both headers", TARGETS, True),
    ("2 -> 4, no partition header", TARGETS, False),
]


def run_batch(
    source: KafkaCluster,
    target: KafkaCluster,
    boots: tuple[str, str],
    src: Source,
    label: str,
    args: argparse.Namespace,
) -> list[dict[str, Any]]:
    rows = []
    prefix = f"{src.topic}-{label.replace(' ', '')}"
    restored: dict[str, Restored] = {}
    for number, (case, partitions, with_partition) in enumerate(CASES):
        name = f"{prefix}-{number}"
        started = time.perf_counter()
        placed = restore(target, boots[1], src, name, partitions, with_partition, BATCHES[label])
        restored[case] = (name, partitions, placed)
        print(f"{label} {case}: restored in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    for count in (5, 200):
        committed = commit_groups(source, src, prefix, count, args.seed)
        snap = take_snapshot(source, SnapshotOptions(groups=f"{prefix}-g{count}-.*", evidence_records=3))
        for case, one in restored.items():
            rows.append({"case": case, "batch": label, "groups": count, **plan_one(target, snap, src, one, committed)})
    return rows


def table(rows: list[dict[str, Any]], kind: str, records: int) -> list[str]:
    lines = [
        f"# A topic whose shape changed ({kind}, {platform.machine()}, Python {platform.python_version()}, "
        f"{datetime.now(UTC):%Y-%m-%d})",
        "",
        f"Command: `python -m bench.shape_bench --broker {kind} --records {records}`. Source: 2 partitions x "
        f"{records:,} records; every group on both. Every plan judged against what was written: 0 records "
        "skipped, no wrong exact. Counted at the client.",
        "",
        "| restore | batches | groups | plan time | MB read | of which the shape sample | Fetch requests | "
        "time vs scan | bytes vs scan | entries: mapped / exact / held |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        c: Cost = r["cost"]
        s: Cost = r["scan"]
        lines.append(
            f"| {r['case']} | {r['batch']} | {r['groups']} | {c.seconds:.2f} s | {c.bytes / 1e6:,.2f} | "
            f"{r['sample'] / 1e6:,.2f} MB ({r['sample'] / max(1, c.bytes):.1%}) | {c.fetches:,} | "
            f"{c.seconds / s.seconds:.2f}x | {c.bytes / max(1, s.bytes):.3f}x | "
            f"{r['mapped']:,} / {r['exact']:,} / {r['held']:,} of {r['entries']:,} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--records", type=int, default=100_000, help="records per source partition")
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    with two_clusters(args.broker) as clusters:
        src = write_source(clusters.source, clusters.boots[0], args.records, args.seed)
        for label in BATCHES:
            rows += run_batch(clusters.source, clusters.target, clusters.boots, src, label, args)
    write_results(table(rows, args.broker, args.records), args.output, f"shape-{args.broker}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
