"""The cost model of a failover, from real runs of the workflow (the ASL file, moto's interpreter, the
real handlers, the two local brokers):

    python -m bench.workflow_cost            # runs at ~1,000 and ~10,000 group-partitions

Each run's figures come from the run itself (``bench/workflow_run.py``): state transitions from the
execution history (plus the distributed Map's child executions), Lambda invocations and GB-seconds
from the invocations, DynamoDB items written and read and S3 requests counted at the AWS
client. Two sizes give a linear model per figure, ``fixed + per_group_partition x N``, printed with
its coefficients and used for 100,000 group-partitions.
"""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Callable
from pathlib import Path

from offset_restore.devtools.local_aws import local_workflow
from offset_restore.devtools.local_broker import LocalBroker
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP, CommittedOffset
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.stores.storage import S3Store

from bench.workflow_run import PRICES, S3_GETS, S3_PUTS, RunFigures, measure

RESULTS = Path(__file__).parent / "results"


def one_run(groups: int, name: str) -> RunFigures:
    with (
        LocalBroker("cost-source") as source_broker,
        LocalBroker("cost-target") as target_broker,
        KafkaCluster(source_broker.settings()) as source,
        KafkaCluster(target_broker.settings()) as target,
    ):
        topics = [f"cost-{t:03d}" for t in range(max(1, groups // 100))]
        source.create_topics(dict.fromkeys(topics, 12))
        target.create_topics(dict.fromkeys(topics, 12))
        for topic in topics:
            for p in range(12):
                pairs = [(f"k{i}".encode(), f"{topic}/{p}/{i}".encode()) for i in range(20)]
                source.produce(topic, p, [(k, v, [], None) for k, v in pairs])
                restored = [(k, v, [("x-source-offset", i.to_bytes(8, "big"))], None) for i, (k, v) in enumerate(pairs)]
                target.produce(topic, p, restored)
        offsets = {
            f"cost-group-{g:05d}": {TP(topics[g % len(topics)], p): CommittedOffset(g % 20, None) for p in range(12)}
            for g in range(groups)
        }
        source.alter_offsets_many(offsets)
        with local_workflow(source_broker.bootstrap_servers, target_broker.bootstrap_servers) as flow:
            run_snapshot(
                source_broker.settings(),
                S3Store("offset-restore", "", flow.s3),
                SnapshotOptions(groups="cost-group-.*", cluster="src"),
            )
            run_input = {
                "groups": "cost-group-.*",
                "mode": "apply",
                "wait": {"timeout_seconds": 60, "interval_seconds": 1},
            }
            return measure(flow, run_input, name, groups * 12)


FIGURES: dict[str, Callable[[RunFigures], float]] = {
    "state transitions": lambda f: f.transitions,
    "Lambda invocations": lambda f: sum(f.invocations.values()),
    "Lambda GB-seconds": lambda f: f.gb_seconds,
    "DynamoDB items written": lambda f: f.dynamodb_writes,
    "DynamoDB items read": lambda f: f.dynamodb_reads,
    "S3 PUT/LIST": lambda f: f.count(S3_PUTS),
    "S3 GET": lambda f: f.count(S3_GETS),
    "US$ (list prices)": lambda f: f.dollars(),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=84, help="groups of 12 partitions in the small run")
    parser.add_argument("--large", type=int, default=834, help="groups of 12 partitions in the large run")
    args = parser.parse_args(argv)
    runs = [one_run(args.small, "cost-small"), one_run(args.large, "cost-large")]
    small, large = runs
    span = large.group_partitions - small.group_partitions
    models = {}
    for name, read in FIGURES.items():
        per = (read(large) - read(small)) / span
        models[name] = (read(small) - per * small.group_partitions, per)

    def cell(name: str, value: float) -> str:
        return f"{value:,.4f}" if name.startswith("US$") else f"{value:,.1f}" if "GB" in name else f"{value:,.0f}"

    lines = [
        f"Workflow cost model (apply mode, all groups empty; {platform.machine()}, Python "
        f"{platform.python_version()}); two measured runs, then the linear model:",
        "",
        "| group-partitions | " + " | ".join(FIGURES) + " | local wall time |",
        "|---|" + "---|" * (len(FIGURES) + 1),
    ]
    for run in runs:
        values = " | ".join(cell(name, read(run)) for name, read in FIGURES.items())
        lines.append(f"| {run.group_partitions:,} (measured) | {values} | {run.wall_s:.1f} s |")
    for size in (1_000, 10_000, 100_000):
        values = " | ".join(cell(name, fixed + per * size) for name, (fixed, per) in models.items())
        lines.append(f"| {size:,} (model) | {values} | - |")
    lines += ["", "The model, per figure (N = group-partitions):", ""]
    lines += [f"- {name} = {fixed:,.4g} + {per:.6g} x N" for name, (fixed, per) in models.items()]
    lines += [
        "",
        "Prices: " + ", ".join(f"{k} ${v:.3g}" for k, v in PRICES.items()) + " (US East list prices; "
        "GB-seconds use the local durations, so they are an upper bound for the Kafka-bound handlers and "
        "dominated by moto for the DynamoDB-bound ones).",
    ]
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "workflow_cost.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
