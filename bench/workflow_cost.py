"""The cost model of a failover, from real runs of the workflow (the ASL file, moto's interpreter, the
real handlers, the two local brokers):

    python -m bench.workflow_cost            # runs at ~1,000 and ~10,000 group-partitions

For each size: state transitions and Lambda invocations from the execution history, Lambda
GB-seconds from each handler's duration here times the memory the stack gives it (1,024 MB for
functions that talk to Kafka, 512 MB for the others), and the local wall time. The two sizes give a
linear model (fixed + per group-partition), used for 100,000 group-partitions.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

from offset_restore.cluster_types import TP, CommittedOffset
from offset_restore.kafka_adapter import KafkaCluster
from offset_restore.local_aws import INVOCATIONS, local_workflow
from offset_restore.local_broker import LocalBroker
from offset_restore.snapshot import SnapshotOptions
from offset_restore.snapshot_run import run_snapshot
from offset_restore.storage import S3Store

RESULTS = Path(__file__).parent / "results"
KAFKA_FUNCTIONS = ("Translate", "CheckEmpty", "Commit", "Snapshot")


def one_run(groups: int, name: str) -> dict[str, float]:
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
            INVOCATIONS.clear()
            started = time.perf_counter()
            result = flow.run(
                {
                    "groups": "cost-group-.*",
                    "mode": "apply",
                    "wait": {"timeout_seconds": 60, "interval_seconds": 1},
                },
                name=name,
                timeout_s=900,
            )
            wall = time.perf_counter() - started
            if result["status"] != "SUCCEEDED":
                raise RuntimeError(f"run {name} ended {result['status']}: {result.get('cause')}")
    events = result["history"]
    gb_seconds = sum(seconds * (1.0 if any(k in fn for k in KAFKA_FUNCTIONS) else 0.5) for fn, seconds in INVOCATIONS)
    return {
        "group_partitions": groups * 12,
        "transitions": sum(1 for e in events if e["type"].endswith("StateEntered")),
        "invocations": len(INVOCATIONS),
        "gb_seconds": gb_seconds,
        "wall_s": wall,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=84, help="groups of 12 partitions in the small run")
    parser.add_argument("--large", type=int, default=834, help="groups of 12 partitions in the large run")
    args = parser.parse_args(argv)
    runs = [one_run(args.small, "cost-small"), one_run(args.large, "cost-large")]
    small, large = runs
    span = large["group_partitions"] - small["group_partitions"]

    def model(key: str, size: int) -> float:
        per = (large[key] - small[key]) / span
        return small[key] + per * (size - small["group_partitions"])

    lines = [
        f"Workflow cost model (apply mode, all groups empty; {platform.machine()}, Python "
        f"{platform.python_version()}); measured runs, then the linear model:",
        "",
        "| group-partitions | state transitions | Lambda invocations | Lambda GB-seconds | local wall time |",
        "|---|---|---|---|---|",
    ]
    for run in runs:
        lines.append(
            f"| {run['group_partitions']:,} (measured) | {run['transitions']:,.0f} | {run['invocations']:,.0f} | "
            f"{run['gb_seconds']:.1f} | {run['wall_s']:.1f} s |"
        )
    for size in (1_000, 100_000):
        lines.append(
            f"| {size:,} (model) | {model('transitions', size):,.0f} | {model('invocations', size):,.0f} | "
            f"{model('gb_seconds', size):.1f} | - |"
        )
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "workflow_cost.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
