"""What a position costs on the wire: snapshot, plan and apply on partitions far larger than a fetch.

    python -m bench.bytes_bench --broker apache              # both shapes, Apache Kafka 4.1
    python -m bench.bytes_bench --shape sparse --records 200000

Two shapes, written by kafka-python's producer in its default 16 KB batches (the Java
client's default too), 100-byte values, no compression:
- sparse: 20 partitions x 100,000 records; 5 groups commit on every partition (100 group-partitions);
- dense: 200 partitions x 5,000 records; 400 groups commit on every partition (80,000).
The target holds a restore of the source from a backup that lost the first 1% of every partition
(so every offset differs), each record with its source offset in the ``x-source-offset`` header.
Committed offsets are uniform over the restored range. Plans are checked against the truth (target
offset = source offset - loss): a wrong entry fails the run.

Counted at the client, per phase: seconds, bytes of record batches received
(``KafkaCluster.fetched_bytes``) and Fetch requests. A "batch" is the size of one record batch as the
broker returns it (measured, not assumed), so "batches per position" compares with the floor of
two batches: one batch holds the position, one more the evidence before it.

Baseline in the same run, on the same target: a one-pass header scan (every partition read once, in
order, each committed position settled on the way): the best honest alternative that needs no
search. It reads every byte of the topic once, and knows nothing about evidence or verification.
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from offset_restore.apply.commit import apply_plan
from offset_restore.apply.model import ApplyOptions
from offset_restore.devtools.brokers import KINDS
from offset_restore.devtools.brokers import started as started_brokers
from offset_restore.formats.plan import ClusterRef, Plan, PlanSummary
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP, CommittedOffset
from offset_restore.reading.rounds import AtEnd, FetchRounds, Served, fetch_from, read_forward
from offset_restore.snapshot.fingerprint import DEFAULT_OFFSET_HEADER
from offset_restore.snapshot.headers import parse_offset_header
from offset_restore.snapshot.live import SnapshotOptions, take_snapshot
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.translation import translate

RESULTS = Path(__file__).parent / "results"
BASE_MS = 1_700_000_000_000
LOSS = 0.01
SHAPES = {"sparse": (20, 100_000, 5), "dense": (200, 5_000, 400)}
T = TypeVar("T")


@dataclass
class Cost:
    seconds: float
    bytes: int
    fetches: int


def measured(cluster: KafkaCluster, work: Callable[[], T]) -> tuple[T, Cost]:
    bytes_before, fetches_before = cluster.fetched_bytes, cluster.requests_sent.get("Fetch", 0)
    started = time.perf_counter()
    result = work()
    seconds = time.perf_counter() - started
    return result, Cost(seconds, cluster.fetched_bytes - bytes_before, cluster.requests_sent["Fetch"] - fetches_before)


def _value(rng: random.Random) -> bytes:
    return rng.randbytes(100)


def write(source: KafkaCluster, target: KafkaCluster, topic: str, partitions: int, records: int, seed: int) -> int:
    """The source topic, and its restore on the target; returns the records lost per partition."""
    lost = int(records * LOSS)
    source.create_topics({topic: partitions})
    target.create_topics({topic: partitions})
    for p in range(partitions):
        rng = random.Random(seed * 1000 + p)
        values = [_value(rng) for _ in range(records)]
        source.produce(topic, p, ((f"{p}:{i}".encode(), values[i], [], BASE_MS + i) for i in range(records)))
        target.produce(
            topic,
            p,
            (
                (f"{p}:{i}".encode(), values[i], [(DEFAULT_OFFSET_HEADER, i.to_bytes(8, "big"))], BASE_MS + i)
                for i in range(lost, records)
            ),
        )
    return lost


def commit_groups(
    source: KafkaCluster, topic: str, partitions: int, records: int, groups: int, lost: int, seed: int
) -> str:
    rng = random.Random(seed)
    prefix = f"{topic}-g"
    offsets = {
        f"{prefix}{g}": {
            TP(topic, p): CommittedOffset(rng.randrange(lost, records + 1), None) for p in range(partitions)
        }
        for g in range(groups)
    }
    failed = {g: e for g, errors in source.alter_offsets_many(offsets).items() for e in errors.values() if e}
    assert not failed, failed
    return f"{prefix}.*"


def one_batch(cluster: KafkaCluster, topic: str, partitions: int) -> int:
    """The size of one record batch as the broker returns it: a fetch with a 1-byte limit gets the
    first batch whole (and nothing more)."""
    sizes = [
        cluster.fetch({TP(topic, p): 100}, partition_max_bytes=1)[TP(topic, p)].size for p in range(min(5, partitions))
    ]
    return max(1, sum(sizes) // len(sizes))


def scan(target: KafkaCluster, wanted: dict[TP, list[int]]) -> dict[tuple[TP, int], int]:
    """The one-pass header scan: each partition read once, each committed position settled when the
    first record with a source offset >= it goes by."""
    found: dict[tuple[TP, int], int] = {}
    pending = {tp: sorted(set(offsets)) for tp, offsets in wanted.items()}

    def take(tp: TP, outcome: Served | AtEnd) -> int | None:
        if isinstance(outcome, AtEnd):
            return None
        todo = pending[tp]
        for record in outcome.answer.records:
            source = parse_offset_header(dict(record.headers).get(DEFAULT_OFFSET_HEADER))
            while todo and source is not None and source >= todo[0]:
                found[(tp, todo.pop(0))] = record.offset
        return outcome.answer.read_to

    rounds = FetchRounds(fetch_from(target), partition_bytes=1 << 20)
    failed = read_forward(rounds, {tp: target.log_bounds([tp])[tp].start for tp in wanted}, take)
    assert not failed, failed
    return found


def run_shape(name: str, source: KafkaCluster, target: KafkaCluster, args: argparse.Namespace) -> list[dict[str, Any]]:
    partitions, records, groups = SHAPES[name]
    records = args.records or records
    topic = f"bytes-{name}-{int(time.time())}"
    started = time.perf_counter()
    lost = write(source, target, topic, partitions, records, args.seed)
    pattern = commit_groups(source, topic, partitions, records, groups, lost, args.seed)
    print(
        f"{name}: wrote {partitions} x {records:,} records twice in {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    batch = one_batch(target, topic, partitions)

    snapshot, snap_cost = measured(
        source, lambda: take_snapshot(source, SnapshotOptions(groups=pattern, evidence_records=3))
    )
    wanted: dict[TP, list[int]] = {}
    for group in snapshot.groups:
        for p in group.partitions:
            wanted.setdefault(TP(p.topic, p.partition), []).append(p.committed_offset)
    distinct = sum(len({o for o in offsets if o < records}) for offsets in wanted.values())

    (entries, _), plan_cost = measured(target, lambda: translate(snapshot.groups, target, PlanOptions()))
    wrong = [e for e in entries if e.target_offset != e.source_offset - lost]
    assert not wrong, f"{len(wrong)} entries off the truth, e.g. {wrong[0]}"
    plan = Plan(
        restore_id=f"bytes-{name}",
        snapshot_id=snapshot.manifest.snapshot_id,
        created_at=datetime.now(UTC),
        source=ClusterRef(cluster="source", bootstrap_servers="-"),
        target=ClusterRef(cluster="target", bootstrap_servers="-"),
        entries=entries,
        summary=PlanSummary(),
        offset_header=DEFAULT_OFFSET_HEADER,
    )
    options = ApplyOptions(wait_timeout_s=0, poll_interval_s=0.1, on_wait_timeout="commit_empty")
    report, apply_cost = measured(target, lambda: apply_plan(plan, target, options, save=lambda _: None))
    assert not report.groups_failed and not report.verify_failed, (report.groups_failed, report.verify_failed[:3])

    found, scan_cost = measured(target, lambda: scan(target, wanted))
    missed = [key for key in found if found[key] != key[1] - lost]
    assert not missed, missed[:3]
    total = sum(map(len, wanted.values()))
    shape = f"{name}: {partitions} x {records:,} records, {groups} groups"
    shape += f" ({total:,} group-partitions, {distinct:,} positions)"
    return [
        {"shape": shape, "phase": phase, "cost": cost, "distinct": distinct, "batch": batch, "scan": scan_cost}
        for phase, cost in (
            ("snapshot (3 evidence records)", snap_cost),
            ("plan", plan_cost),
            ("apply (anchors, commit, verify)", apply_cost),
            ("one-pass header scan (baseline)", scan_cost),
        )
    ]


def table(rows: list[dict[str, Any]], kind: str) -> list[str]:
    lines = [
        f"# Bytes per position ({kind}, {platform.machine()}, Python {platform.python_version()}, "
        f"{datetime.now(UTC):%Y-%m-%d})",
        "",
        "Command: `python -m bench.bytes_bench --broker " + kind + "`. Counted at the client: record-batch bytes "
        "received and Fetch requests; a batch is the measured size of one record batch on these partitions.",
        "",
        "| shape | phase | time | MB read | Fetch requests | bytes / position | batches / position | time vs scan "
        "| bytes vs scan |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        c: Cost = r["cost"]
        per = c.bytes / max(1, r["distinct"])
        lines.append(
            f"| {r['shape']} | {r['phase']} | {c.seconds:.2f} s | {c.bytes / 1e6:,.1f} | {c.fetches:,} | "
            f"{per / 1024:,.1f} KB | {per / r['batch']:,.1f} | {c.seconds / r['scan'].seconds:.2f}x | "
            f"{c.bytes / max(1, r['scan'].bytes):.3f}x |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--broker", choices=KINDS, default="apache", help="apache (default) or local")
    parser.add_argument("--shape", choices=[*SHAPES, "both"], default="both")
    parser.add_argument("--records", type=int, default=0, help="records per partition (default: the shape's)")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--output", default=None, help="results file (default: bench/results/bytes-<broker>.md)")
    args = parser.parse_args(argv)
    shapes = list(SHAPES) if args.shape == "both" else [args.shape]
    rows: list[dict[str, Any]] = []
    with (
        started_brokers(args.broker, "bytes-source", "bytes-target") as brokers,
        KafkaCluster(brokers[0].settings()) as source,
        KafkaCluster(brokers[1].settings()) as target,
    ):
        for name in shapes:
            rows.extend(run_shape(name, source, target, args))
    lines = table(rows, args.broker)
    print("\n".join(lines))
    output = Path(args.output) if args.output else RESULTS / f"bytes-{args.broker}.md"
    output.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
