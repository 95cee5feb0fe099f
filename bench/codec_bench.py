"""Compressed topics end to end: snapshot, plan and apply on a topic of each codec, beside the
same data uncompressed and a one-pass scan of the same target.

    python -m bench.codec_bench                          # lz4 beside none (the smoke row of make bench)
    python -m bench.codec_bench --codecs none,gzip,snappy,lz4,zstd --records 100000

Each codec: a source topic of ``--partitions`` x ``--records`` records (JSON-like 120-byte values that
compress as real payloads do), written by kafka-python's producer with that codec in 16 KB batches;
20 groups at random positions on every partition; the restore on the target with the same codec,
each record with ``x-source-offset``, the backup's first 1% lost. Every plan entry must be the truth
(target offset = source offset - loss) and exact; apply must verify every partition. Counted at the
client: seconds, record-batch bytes received, Fetch requests. ``bench.user_shapes`` measures the
full compressed shapes (1 MB batches, dense partitions); this is the smoke test that every codec runs at
the speed of the uncompressed path.
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import time
from datetime import UTC, datetime
from typing import Any

from offset_restore.apply.commit import apply_plan
from offset_restore.apply.model import ApplyOptions
from offset_restore.formats.plan import ClusterRef, Plan
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP, CommittedOffset
from offset_restore.snapshot.live import SnapshotOptions, take_snapshot
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.translation import translate

from bench.bytes_bench import Cost, measured, scan
from bench.two_clusters import Row, bench_parser, produce, two_clusters, write_results

LOSS = 0.01
GROUPS = 20


def value(rng: random.Random, i: int) -> bytes:
    """A payload of the kind producers compress: field names repeat, numbers and ids do not."""
    return (
        f'{{"order":{i},"customer":"c-{rng.randrange(10**6):06d}","amount":{rng.randrange(10**5)},'
        f'"currency":"EUR","status":"{rng.choice(("new", "paid", "shipped"))}","note":"{rng.randbytes(12).hex()}"}}'
    ).encode()


def write(
    source: KafkaCluster, target: KafkaCluster, boots: tuple[str, str], codec: str, args: argparse.Namespace
) -> tuple[str, int]:
    topic = f"codec-{codec}-{int(time.time() * 1000)}"
    source.create_topics({topic: args.partitions})
    target.create_topics({topic: args.partitions})
    lost = int(args.records * LOSS)
    for p in range(args.partitions):
        rng = random.Random(args.seed * 100 + p)
        rows: list[Row] = [
            (p, f"{p}:{i}".encode(), value(rng, i), [], 1_700_000_000_000 + i) for i in range(args.records)
        ]
        compression = None if codec == "none" else codec
        produce(boots[0], topic, rows, codec=compression)
        restored = [(p, k, v, [("x-source-offset", i.to_bytes(8, "big"))], t) for i, (_, k, v, _, t) in enumerate(rows)]
        produce(boots[1], topic, restored[lost:], codec=compression)
    rng = random.Random(args.seed)
    offsets = {
        f"{topic}-g{g}": {
            TP(topic, p): CommittedOffset(rng.randrange(lost, args.records + 1), None) for p in range(args.partitions)
        }
        for g in range(GROUPS)
    }
    failed = source.alter_offsets_many(offsets)
    assert not any(e for errors in failed.values() for e in errors.values())
    return topic, lost


def run_codec(
    source: KafkaCluster, target: KafkaCluster, boots: tuple[str, str], codec: str, args: argparse.Namespace
) -> dict[str, Any]:
    started = time.perf_counter()
    topic, lost = write(source, target, boots, codec, args)
    print(f"{codec}: wrote in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    snapshot, snap_cost = measured(
        source, lambda: take_snapshot(source, SnapshotOptions(groups=f"{topic}-g.*", evidence_records=3))
    )
    groups = list(snapshot.groups)
    (entries, _), plan_cost = measured(target, lambda: translate(groups, target, PlanOptions()))
    wrong = [e for e in entries if e.target_offset != e.source_offset - lost or not e.exact]
    assert not wrong, f"{codec}: {len(wrong)} entries off the truth or not exact, e.g. {wrong[0]}"
    plan = Plan(
        restore_id=f"codec-{codec}", snapshot_id=snapshot.manifest.snapshot_id, created_at=datetime.now(UTC),
        source=ClusterRef(cluster="source"), target=ClusterRef(cluster="target"), entries=entries,
    )  # fmt: skip
    options = ApplyOptions(wait_timeout_s=0, on_wait_timeout="commit_empty")
    report, apply_cost = measured(target, lambda: apply_plan(plan, target, options, save=lambda _: None))
    assert not report.verify_failed and report.verified == len(entries), report.verify_failed[:3]
    wanted: dict[TP, list[int]] = {}
    for e in entries:
        wanted.setdefault(e.target, []).append(e.source_offset)
    _, scan_cost = measured(target, lambda: scan(target, wanted))
    return {
        "codec": codec,
        "snapshot": snap_cost,
        "plan": plan_cost,
        "apply": apply_cost,
        "scan": scan_cost,
        "entries": len(entries),
    }


def table(rows: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    lines = [
        f"# Compressed topics ({args.broker}, {platform.machine()}, Python {platform.python_version()}, "
        f"{datetime.now(UTC):%Y-%m-%d})",
        "",
        f"Command: `python -m bench.codec_bench --broker {args.broker} --codecs {args.codecs} --records {args.records} "
        f"--partitions {args.partitions}`. {GROUPS} groups on each of {args.partitions} partitions of "
        f"{args.records:,} records; every entry exact and the truth, every partition verified.",
        "",
        "| codec | snapshot | plan | apply (anchors, commit, verify) | plan MB read | plan Fetch requests | "
        "one-pass scan | plan time vs scan | plan bytes vs scan |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        plan: Cost = r["plan"]
        scan_cost: Cost = r["scan"]
        lines.append(
            f"| {r['codec']} | {r['snapshot'].seconds:.2f} s | {plan.seconds:.2f} s | {r['apply'].seconds:.2f} s | "
            f"{plan.bytes / 1e6:,.2f} | {plan.fetches:,} | "
            f"{scan_cost.seconds:.2f} s, {scan_cost.bytes / 1e6:,.1f} MB | "
            f"{plan.seconds / scan_cost.seconds:.3f}x | {plan.bytes / max(1, scan_cost.bytes):.4f}x |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--codecs", default="none,lz4", help="comma-separated: none, gzip, snappy, lz4, zstd")
    parser.add_argument("--records", type=int, default=100_000, help="records per partition")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--seed", type=int, default=32)
    args = parser.parse_args(argv)
    with two_clusters(args.broker) as clusters:
        rows = [
            run_codec(clusters.source, clusters.target, clusters.boots, codec.strip(), args)
            for codec in args.codecs.split(",")
        ]
    write_results(table(rows, args), args.output, f"codec-{args.broker}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
