"""Apply benchmark: commit a plan of 10,000 groups x 12 partitions to empty groups, with verification.

    python -m bench.apply_bench                          # 10,000 groups over 84 topics x 12 partitions
    python -m bench.apply_bench --groups 1000            # a quick look
    python -m bench.apply_bench --broker apache          # on Apache Kafka, under the cluster's fence

A fresh target broker gets 84 topics x 12 partitions of 100 records each; the plan (built in memory,
saved to a plan file) maps every group-partition to a random offset with the fingerprint of the record
there, as a header or fingerprint mapping would. The apply is the CLI's (``run_apply``): the fence taken
(on Apache Kafka; the local broker keeps none, so it runs unfenced there), the plan read and its seals
checked, wait (all empty), read the current offsets, the previous offsets saved to the plan and its
journal, re-check and commit group by group, read back and verify every record, save.
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from offset_restore.apply.model import ApplyOptions
from offset_restore.apply.run import PlanFile, Sealing, run_apply
from offset_restore.devtools.brokers import BROKER_NAMES, KINDS, started
from offset_restore.formats.plan import ClusterRef, Plan, PlanEntry, PlanSummary
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.snapshot.fingerprint import fingerprint

RESULTS = Path(__file__).parent / "results"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=84)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--records", type=int, default=100)
    parser.add_argument(
        "--baseline-groups", type=int, default=300, help="groups committed by the one-consumer-per-group baseline"
    )
    parser.add_argument("--broker", choices=KINDS, default="local", help="the target broker's kind (default: local)")
    args = parser.parse_args(argv)
    rng = random.Random(11)
    with started(args.broker, "bench-apply") as [broker], KafkaCluster(broker.settings()) as target:
        names = [f"bench-apply-{t:03d}" for t in range(args.topics)]
        target.create_topics(dict.fromkeys(names, args.partitions))
        prints = {}
        for name in names:
            for p in range(args.partitions):
                pairs = [(f"k{i}".encode(), f"{name}/{p}/{i}".encode()) for i in range(args.records)]
                target.produce(name, p, ((k, v, [], None) for k, v in pairs))
                prints[(name, p)] = [fingerprint(k, v, []) for k, v in pairs]
        entries = []
        for g in range(args.groups):
            topic = names[g % len(names)]
            for p in range(args.partitions):
                offset = rng.randrange(args.records)
                entries.append(
                    PlanEntry(
                        group=f"bench-apply-group-{g:05d}",
                        topic=topic,
                        partition=p,
                        target_topic=topic,
                        source_offset=offset + 10,
                        target_offset=offset,
                        method="header",
                        exact=True,
                        max_duplicates=0,
                        status="mapped",
                        expected_fingerprint=prints[(topic, p)][offset],
                    )
                )
        plan = Plan(
            restore_id="bench",
            snapshot_id="bench",
            created_at=datetime.now(UTC),
            source=ClusterRef(cluster="src"),
            target=ClusterRef(cluster=target.cluster_id),
            entries=entries,
            summary=PlanSummary.of(entries),
        )
        with tempfile.TemporaryDirectory() as folder:
            PlanFile(f"{folder}/plan.json").save(plan)
            sealing = Sealing(enabled=True, key_path=Path(folder, "plan.key"), create=True)
            counted: list[KafkaCluster] = []

            def connect(settings: ConnectionSettings) -> KafkaCluster:
                counted.append(KafkaCluster(settings))
                return counted[-1]

            # The local broker keeps no fence (it does not apply transactional offset commits): unfenced there.
            settings = broker.settings(unfenced=args.broker == "local")
            began = time.perf_counter()
            _, report = run_apply(
                f"{folder}/plan.json",
                settings,
                ApplyOptions(wait_timeout_s=0),
                connect=connect,
                sealing=sealing,
            )
            wall = time.perf_counter() - began
            saved = Path(folder, "plan.json").stat().st_size
            journal = sum(f.stat().st_size for f in Path(folder, "plan.json.journal").iterdir())
        requests = dict(counted[0].requests_sent)
        sample = {
            f"bench-apply-baseline-{g:05d}": {
                (names[g % len(names)], p): rng.randrange(args.records) for p in range(args.partitions)
            }
            for g in range(args.baseline_groups)
        }
        baseline_s = one_consumer_per_group(broker.bootstrap_servers, sample)
    offsets = report.offsets_committed
    baseline_rate = args.baseline_groups * args.partitions / baseline_s
    lines = [
        f"Apply benchmark: {args.groups:,} groups x {args.partitions} partitions over {args.topics} topics "
        f"({BROKER_NAMES[args.broker]}); {platform.machine()}, Python {platform.python_version()}.",
        "",
        f"Command: `python -m bench.apply_bench --broker {args.broker} --groups {args.groups}`. The CLI's apply "
        "(`run_apply`): fence, seal, journal, wait, read, save, commit, verify, save.",
        "",
        "| offsets committed | groups | wall time | offsets/s | verified | plan file | journal | Kafka requests |",
        "|---|---|---|---|---|---|---|---|",
        f"| {offsets:,} | {len(report.groups_committed):,} | {wall:.2f} s | {offsets / wall:,.0f} "
        f"| {report.verified:,} (failed {len(report.verify_failed)}) | {saved / 1e6:.1f} MB | {journal / 1e6:.1f} MB | "
        f"{sum(requests.values()):,}: {', '.join(f'{k} {v}' for k, v in sorted(requests.items()))} |",
    ]
    lines += ["", "Phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in report.timings.items())]
    lines += [
        "",
        f"Baseline in the same run, one consumer per group committing (the common script, re-implemented: a "
        f"KafkaConsumer per group, commit, close; no wait, no re-check, no verification): {args.baseline_groups:,} "
        f"groups x {args.partitions} partitions in {baseline_s:.2f} s = {baseline_rate:,.0f} offsets/s; this "
        f"project, with all of those, is {offsets / wall / baseline_rate:.1f}x faster.",
    ]
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / ("apply.md" if args.broker == "local" else f"apply-{args.broker}.md")).write_text(text)
    print(text)
    return 0


def one_consumer_per_group(bootstrap_servers: str, offsets: dict[str, dict[tuple[str, int], int]]) -> float:
    """The usual script: for each group a consumer joins nothing, commits the group's offsets and
    closes. Returns the seconds it took."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    started = time.perf_counter()
    for group, positions in offsets.items():
        consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, group_id=group, enable_auto_commit=False)
        consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in positions.items()})
        consumer.close()
    return time.perf_counter() - started


if __name__ == "__main__":
    sys.exit(main())
