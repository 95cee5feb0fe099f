"""Measure one run of the workflow (moto's interpreter, the real handlers, the local brokers): what a
bill and a memory setting depend on, read from the run itself.

- state transitions: every state entered in the execution's history, plus one per child execution
  of the distributed Translate Map (each child enters one state; moto keeps children out of the
  parent's history);
- Lambda invocations and GB-seconds: each handler's duration here times the memory the stack gives
  it (``offset_restore_handlers.wiring.MEMORY_MB``). The duration is the wall
  time of an invocation that ran alone, and the thread's CPU time of one that overlapped others in a
  Map (ten handlers sharing two cores and one interpreter mostly wait for each other);
- AWS requests the handlers made, by operation, and DynamoDB items written and read;
- each handler's peak memory: the resident memory it added above the process's level (handlers that
  ran alone; Map iterations overlap, their figure is the Map's together) plus what importing the
  handlers costs a fresh process (``import_baseline_mb``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from offset_restore.devtools.local_aws import ASL, AWS_CALLS, FUNCTIONS, INVOCATIONS, Workflow
from offset_restore_handlers.wiring import MEMORY_MB

_STATES = json.loads(ASL.read_text())["States"]
MAP_CONCURRENCY = {"Translate": _STATES["Translate"]["MaxConcurrency"], "Commit": _STATES["Commit"]["MaxConcurrency"]}
CHILD_STATES_PER_TRANSLATE = 1
PRICES = {
    "transition": 0.025 / 1000,
    "lambda_request": 0.20 / 1e6,
    "gb_second": 0.0000166667,
    "dynamodb_write": 0.625 / 1e6,
    "dynamodb_read": 0.125 / 1e6,
    "s3_put": 0.005 / 1000,
    "s3_get": 0.0004 / 1000,
}
"""US East list prices (Step Functions Standard, Lambda x86, DynamoDB on demand, S3 Standard)."""

S3_PUTS = ("s3.PutObject", "s3.ListObjectsV2", "s3.ListObjects", "s3.CopyObject")
S3_GETS = ("s3.GetObject", "s3.HeadObject")


@dataclass
class RunFigures:
    group_partitions: int
    wall_s: float
    status: str
    transitions: int
    invocations: Counter[str] = field(default_factory=Counter)
    seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    gb_seconds: float = 0.0
    calls: Counter[str] = field(default_factory=Counter)
    peak_growth_mb: dict[str, float] = field(default_factory=dict)
    overlapping: set[str] = field(default_factory=set)
    durations: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    saved: list[dict[str, Any]] = field(default_factory=list)
    """Each invocation as ``bench.deployed_estimate`` reads it: own time (moto's left out), moto's
    time, AWS requests by operation and S3 bytes, Kafka requests."""

    def critical_path_s(self) -> float:
        """The run's length if every invocation had its own CPU, as on Lambda: the states one after
        another, each Map in rounds of its MaxConcurrency. An estimate from this run's durations, which
        include moto's share of the AWS work (done in the handler's thread here)."""
        total = 0.0
        for name, durations in self.durations.items():
            width = MAP_CONCURRENCY.get(name, 1)
            ordered = sorted(durations, reverse=True)
            total += sum(ordered[i] for i in range(0, len(ordered), width))  # the longest of each round
        return total

    def count(self, names: tuple[str, ...]) -> int:
        return sum(self.calls[name] for name in names)

    @property
    def dynamodb_writes(self) -> int:
        return self.calls["dynamodb.ItemsWritten"]

    @property
    def dynamodb_reads(self) -> int:
        """Items read; billed at most one read unit each (items here are well under 4 KB)."""
        return self.calls["dynamodb.ItemsRead"]

    def dollars(self) -> float:
        p = PRICES
        return (
            self.transitions * p["transition"]
            + sum(self.invocations.values()) * p["lambda_request"]
            + self.gb_seconds * p["gb_second"]
            + self.dynamodb_writes * p["dynamodb_write"]
            + self.dynamodb_reads * p["dynamodb_read"]
            + self.count(S3_PUTS) * p["s3_put"]
            + self.count(S3_GETS) * p["s3_get"]
        )


def measure(flow: Workflow, run_input: dict[str, Any], name: str, group_partitions: int) -> RunFigures:
    INVOCATIONS.clear()
    AWS_CALLS.clear()
    started = time.perf_counter()
    result = flow.run(run_input, name=name, timeout_s=3600)
    wall = time.perf_counter() - started
    if result["status"] != "SUCCEEDED":
        for failed in (i for i in INVOCATIONS if i.trace):  # what the run's cause summarizes, in full
            print(f"{failed.function} failed:\n{failed.trace}", file=sys.stderr)
        raise RuntimeError(f"run {name} ended {result['status']}: {result.get('cause')}")
    figures = RunFigures(
        group_partitions=group_partitions,
        wall_s=wall,
        status=result["status"],
        transitions=sum(1 for e in result["history"] if e["type"].endswith("StateEntered")),
        calls=Counter(AWS_CALLS),
    )
    for invocation in INVOCATIONS:
        short = invocation.function.removeprefix("offset-restore-")
        figures.invocations[short] += 1
        duration = invocation.seconds if invocation.alone else invocation.cpu_seconds
        figures.seconds[short] += duration
        figures.durations[short].append(duration)
        figures.gb_seconds += duration * MEMORY_MB[short] / 1024
        if invocation.peak_growth_mb is not None:
            figures.peak_growth_mb[short] = max(figures.peak_growth_mb.get(short, 0.0), invocation.peak_growth_mb)
        if not invocation.alone:
            figures.overlapping.add(short)
        figures.saved.append(
            {
                "function": short,
                "own_seconds": invocation.own_seconds,
                "moto_seconds": invocation.aws_seconds if invocation.alone else invocation.aws_cpu_seconds,
                "aws_calls": dict(invocation.aws_calls),
                "kafka_requests": invocation.kafka_requests,
                "kafka_calls": dict(invocation.kafka_calls),
                "wall_seconds": invocation.seconds,
                "alone": invocation.alone,
                "gc_seconds": invocation.gc_seconds if invocation.alone else invocation.gc_cpu_seconds,
                "error": invocation.error,
                **({"trace": invocation.trace} if invocation.trace else {}),
            }
        )
    figures.transitions += figures.invocations["Translate"] * CHILD_STATES_PER_TRANSLATE
    return figures


def import_seconds() -> float:
    """How long a fresh interpreter takes to import every handler (a cold Lambda's Init phase)."""
    modules = sorted({h.rsplit(".", 1)[0] for h in FUNCTIONS.values()})
    code = f"import importlib, time\nt = time.perf_counter()\nfor m in {modules!r}: importlib.import_module(m)\n"
    code += "print(time.perf_counter() - t)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return float(out.strip().splitlines()[-1])


def import_baseline_mb() -> float:
    """Peak resident memory of a fresh interpreter that imports every handler (a cold Lambda's floor)."""
    code = (
        "import importlib, json\n"
        f"for m in {sorted({h.rsplit('.', 1)[0] for h in FUNCTIONS.values()})!r}: importlib.import_module(m)\n"
        "from offset_restore.devtools import process_memory\n"
        "print(json.dumps(process_memory.peak_mb()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return float(json.loads(out.strip().splitlines()[-1]) or 0.0)
