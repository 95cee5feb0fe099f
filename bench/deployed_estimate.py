"""The deployed workflow's length, estimated from a local run (issue 18, "estimated honestly").

A local run of the workflow measures moto as much as the handlers: moto runs in each handler's thread
and its DynamoDB Query alone took most of the 900 s at 120,000 group-partitions. The estimate keeps
what a deployment would keep and replaces what it would not:

1. **The handlers' own time**, measured: each invocation's duration less the time spent inside AWS
   requests (``Invocation.own_seconds``: wall time for an invocation that ran alone, thread CPU time
   for Map iterations that overlapped, moto's share taken out of each).
2. **Lambda's CPU share**: a function gets CPU in proportion to its memory, one vCPU at 1,769 MB
   ([Lambda: memory and computing power][lambda-memory]); this machine's core counts as one vCPU, so
   own time is scaled by 1,769 / memory for functions set below it (``wiring.MEMORY_MB``; 1,024 MB
   would be x1.73, 512 MB x3.46).
3. **Each AWS request at a cited latency**, counted in the run: DynamoDB 10 ms a request (it is
   "single-digit millisecond" [dynamodb]); S3 50 ms a request plus its bytes at 50 MB/s (small S3
   requests have "median latencies ... in the range of tens of milliseconds" [s3-latency]; the
   bandwidth is an assumption below what one connection reaches in a region); any other service
   (SNS, CloudWatch, Step Functions from a handler) 50 ms.
4. **Each Kafka request at 2 ms** (MSK in the handler's region, another zone: an assumption; the local
   brokers answer in well under a millisecond, so this is added on top). Requests a reader pipelines
   count as if sent one after another, and the local brokers' own time is already inside the own
   time that step 2 scales: both make the estimate longer than the truth, never shorter.
5. **A cold start for every invocation**: the handlers' import time measured in a fresh interpreter
   plus 250 ms for the environment itself (an assumption; the Init phase is described in
   [cold-start]); environments kept warm between invocations would save this.
6. **The states one after another**, each Map in rounds of its ``MaxConcurrency`` (the longest
   invocation of each round), plus 100 ms for each state transition on the way (an assumption: Step
   Functions publishes no transition latency).

[lambda-memory]: https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html
[dynamodb]: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Introduction.html
[s3-latency]: https://docs.aws.amazon.com/whitepapers/latest/s3-optimizing-performance-best-practices/timeouts-and-retries-for-latency-sensitive-applications.html
[cold-start]: https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html

    python -m bench.deployed_estimate bench/results/workflow-invocations-120000.json

reads the invocations a ``bench.scale`` run saved and prints the estimate again (the constants can be
changed without running the workflow again).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offset_restore_handlers.wiring import MEMORY_MB, ONE_VCPU_MB

from bench.workflow_run import MAP_CONCURRENCY

DYNAMODB_REQUEST_S = 0.010
S3_REQUEST_S = 0.050
S3_BYTES_PER_S = 50e6
OTHER_REQUEST_S = 0.050
KAFKA_REQUEST_S = 0.002
ENVIRONMENT_START_S = 0.250
STATE_TRANSITION_S = 0.100


def aws_seconds(calls: dict[str, int]) -> float:
    total = 0.0
    for name, count in calls.items():
        service = name.split(".", 1)[0]
        if name == "s3.Bytes":
            total += count / S3_BYTES_PER_S
        elif name.startswith("dynamodb.Items"):
            continue  # item counts, not requests
        elif service == "dynamodb":
            total += count * DYNAMODB_REQUEST_S
        elif service == "s3":
            total += count * S3_REQUEST_S
        else:
            total += count * OTHER_REQUEST_S
    return total


@dataclass
class Estimate:
    cold_start_s: float
    transitions: int
    own: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    moto: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    deployed: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    requests: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))

    def path_s(self, function: str) -> float:
        """This function's share of the run: its invocations in rounds of the Map's concurrency."""
        ordered = sorted(self.deployed[function], reverse=True)
        width = MAP_CONCURRENCY.get(function, 1)
        return sum(ordered[i] for i in range(0, len(ordered), width))

    def total_s(self) -> float:
        return sum(self.path_s(f) for f in self.deployed) + self.transitions * STATE_TRANSITION_S


def estimate(invocations: list[dict[str, Any]], transitions: int, import_s: float) -> Estimate:
    """``invocations``: as ``bench.workflow_run`` saves them (function, own_seconds, moto_seconds,
    aws_calls, kafka_requests)."""
    result = Estimate(cold_start_s=import_s + ENVIRONMENT_START_S, transitions=transitions)
    for invocation in invocations:
        name = invocation["function"]
        own = invocation["own_seconds"] * max(1.0, ONE_VCPU_MB / MEMORY_MB[name])
        calls = invocation["aws_calls"]
        waits = aws_seconds(calls) + invocation["kafka_requests"] * KAFKA_REQUEST_S
        result.own[name] += invocation["own_seconds"]
        result.moto[name] += invocation["moto_seconds"]
        result.deployed[name].append(result.cold_start_s + own + waits)
        result.requests[name].update(calls)
        result.requests[name]["kafka"] += invocation["kafka_requests"]
    return result


def lines(found: Estimate, group_partitions: int) -> list[str]:
    rows = [
        "",
        f"Estimated deployed run at {group_partitions:,} group-partitions (`bench/deployed_estimate.py` states the "
        "method and cites its latencies): each invocation's own time here (moto's time inside it taken out), scaled "
        "to Lambda's CPU share for its memory, plus every AWS and Kafka request it made at the cited latency, plus a "
        f"cold start ({found.cold_start_s:.2f} s); Maps in rounds of their concurrency; "
        f"{STATE_TRANSITION_S * 1000:.0f} ms a state transition.",
        "",
        "| handler | invocations | own time here (sum) | moto's time here (sum) | requests (AWS; Kafka) "
        "| deployed, on the run's path |",
        "|---|---|---|---|---|---|",
    ]
    for name in sorted(found.deployed):
        calls = found.requests[name]
        aws = sum(v for k, v in calls.items() if k not in ("kafka", "s3.Bytes") and not k.startswith("dynamodb.Items"))
        rows.append(
            f"| {name} | {len(found.deployed[name])} | {found.own[name]:.1f} s | {found.moto[name]:.1f} s | "
            f"{aws:,}; {calls['kafka']:,} | {found.path_s(name):.1f} s |"
        )
    verdict = "met" if found.total_s() < 60 else "MISSED"
    target = f" (target 60 s at 120,000: {verdict})" if group_partitions >= 120_000 else ""
    rows += [
        f"| state transitions | {found.transitions} | | | | {found.transitions * STATE_TRANSITION_S:.1f} s |",
        f"| **whole run** | | {sum(found.own.values()):.1f} s | {sum(found.moto.values()):.1f} s | | "
        f"**{found.total_s():.1f} s**{target} |",
    ]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("saved", type=Path, help="a workflow-invocations-*.json a bench.scale run wrote")
    args = parser.parse_args(argv)
    saved = json.loads(args.saved.read_text())
    found = estimate(saved["invocations"], saved["transitions"], saved["import_s"])
    print("\n".join(lines(found, saved["group_partitions"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
