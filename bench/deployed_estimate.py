"""The deployed workflow's length, estimated from a local run, every assumption stated.

A local run of the workflow measures moto as much as the handlers: moto runs in each handler's thread
and its DynamoDB Query alone took most of the 1,480 s at 120,000 group-partitions. The estimate keeps
what a deployment would keep and replaces what it would not:

1. **The handlers' own time**, measured: each invocation's duration less the time spent inside AWS
   requests (``Invocation.own_seconds``: wall time for an invocation that ran alone, thread CPU time
   for Map iterations that overlapped, the time inside ``BaseClient._make_api_call`` taken out of each)
   and less the full garbage collections (generation 2) its thread ran: one walks every object of the
   process, moto's tables of the run's 360,000 items among them (at 120,000 group-partitions 10.7 s of
   them in all; one Commit batch ran 7.7 s of collections beside 0.5 s of its own work, the others
   0.4 s and none), while a Lambda's heap holds only its handler's objects (the young generations'
   collections, which follow the handler's own allocations, stay in; a full one of a handler's own
   heap is left out too, an error toward a shorter estimate: 61 ms for every handler imported and a
   Commit batch's 3,000 mappings, 110,000 objects, on this machine while loaded). Only while none of
   the invocation's AWS requests is in flight: that wall time is taken out as AWS time.
2. **botocore's own CPU for each request, given back.** The span step 1 takes out holds moto's work
   and also botocore's, in the handler's thread: validating, serializing and signing the request,
   parsing the answer (a DynamoDB answer is walked attribute by attribute). A Lambda does that part
   too, so each request is charged its measured CPU (``CLIENT_CPU_S``, from
   ``bench/results/client-cost.md``, ``python -m bench.client_cost``: a real botocore client with the
   HTTP send stubbed by a hook that reads the request body and returns a ready answer of the
   workflow's size, the thread's CPU time per request, the median of 5 rounds, on this machine's
   core). Measured at botocore 1.44.8, with the mapping store's reading of items from the JSON itself
   (``stores/raw_items.py``): a Query page 24 ms (2,092 mappings of 498 bytes, as many as fit
   DynamoDB's 1 MB page: 11.6 us a mapping; botocore's own parser took 67 us), BatchGetItem of 100
   whole mappings 2.1 ms (7.5 ms parsed by botocore), BatchWriteItem of 25 mappings 3.5 ms, PutItem
   0.34 ms (GetItem, UpdateItem, DeleteItem and other DynamoDB requests alike), S3 PutObject 0.34 ms
   plus 0.45 ns a byte (its CRC32 checksum), GetObject 0.43 ms (and any other S3 request),
   other service). Every request is charged as a full one (a Query as a whole page, a batch as 25 or
   100 whole items, every S3 byte as a PutObject byte): an upper bound where requests are smaller
   (Translate's status reads get few or no items back). One exception: moto's Query pages held more
   than DynamoDB's would (the 120,000 run's 56 pages, 2,143 mappings an average page), so there the
   two full reads are charged 2% short (0.2 s each for Summarize and Report). Two measurements on an
   idle machine agreed within 4%; on a loaded one they came out up to 15% higher.
3. **Lambda's CPU share**: a function gets CPU in proportion to its memory, one vCPU at 1,769 MB
   ([Lambda: memory and computing power][lambda-memory]); this machine's core counts as one vCPU, so
   steps 1 and 2 are scaled by 1,769 / memory for functions set below it (``wiring.MEMORY_MB``;
   1,024 MB would be x1.73, 512 MB x3.46).
4. **Each AWS request at a cited latency**, counted in the run: DynamoDB 10 ms a request (it is
   "single-digit millisecond" [dynamodb]); S3 50 ms a request plus its bytes at 50 MB/s (small S3
   requests have "median latencies ... in the range of tens of milliseconds" [s3-latency]; the
   bandwidth is an assumption below what one connection reaches in a region); any other service
   (SNS, CloudWatch, Step Functions from a handler) 50 ms. Requests the handlers send a few at once
   (``stores/in_flight.py``, ``IN_FLIGHT`` = 8: every DynamoDB batch request, and the S3 objects
   Prepare and Summarize write) wait in rounds: an invocation's ``n`` of them are charged
   ``ceil(n / 8) + 1`` latencies (the one more for a last round that is not full); their bytes and
   botocore's CPU are charged in full, one after another.
5. **Each Kafka request at 2 ms** (MSK in the handler's region, another zone: an assumption; the local
   brokers answer in well under a millisecond, so this is added on top). Requests a reader pipelines
   count as if sent one after another, and the local brokers' own time is already inside the own
   time that step 3 scales: both make the estimate longer than the truth, never shorter.
6. **A cold start for every invocation**: the handlers' import time measured in a fresh interpreter
   plus 250 ms for the environment itself (an assumption; the Init phase is described in
   [cold-start]); environments kept warm between invocations would save this.
7. **The states one after another**, each Map in rounds of its ``MaxConcurrency`` (the longest
   invocation of each round), plus 100 ms for each state transition **on the run's path** (an
   assumption: Step Functions publishes no transition latency). The path holds the serial states and,
   for each Map, one iteration's states per round: a Map's iterations run in parallel ([Map
   state][map-state]), so the transitions of the iterations of one round overlap as their
   invocations do. The run's count (``transitions``: every state entered in the execution's history,
   plus the distributed Map's child executions) holds each iteration's; ``Estimate.path_transitions``
   takes them out (iterations = the Map's invocations, each entering its processor's states once)
   and puts one round's back per round. At 120,000 group-partitions: 18 of the 122.

[lambda-memory]: https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html
[dynamodb]: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Introduction.html
[s3-latency]: https://docs.aws.amazon.com/whitepapers/latest/s3-optimizing-performance-best-practices/timeouts-and-retries-for-latency-sensitive-applications.html
[cold-start]: https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html
[map-state]: https://docs.aws.amazon.com/step-functions/latest/dg/state-map.html

Not modelled: DynamoDB's throughput limits. Every mapping of a restore shares one partition key
(``RESTORE#<id>``), and one partition takes at most 1,000 write units a second; a new on-demand
table 4,000 writes a second at first. The estimate assumes no request is throttled.

    python -m bench.deployed_estimate bench/results/workflow-invocations-120000.json

reads the invocations a ``bench.scale`` run saved and prints the estimate again (the constants can be
changed without running the workflow again).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offset_restore.devtools.local_aws import ASL
from offset_restore.stores.in_flight import IN_FLIGHT
from offset_restore_handlers.wiring import MEMORY_MB, ONE_VCPU_MB

from bench.workflow_run import MAP_CONCURRENCY

DYNAMODB_REQUEST_S = 0.010
S3_REQUEST_S = 0.050
S3_BYTES_PER_S = 50e6
OTHER_REQUEST_S = 0.050
KAFKA_REQUEST_S = 0.002
ENVIRONMENT_START_S = 0.250
STATE_TRANSITION_S = 0.100
ALARM_TO_START_S = 1.0
"""An alarm's state change to the execution's start (CloudWatch sends the event to EventBridge, whose
rule starts the state machine): an assumption; neither service publishes a delivery latency."""
AFTER_LAST_COMMIT = 2
"""The states after the last commit is verified: the report (ReportApply) and the lock's release."""
TARGET_S = 30.0
"""The failover target: 120,000 group-partitions from the alarm to the last commit verified in under 30 s."""

CLIENT_CPU_S: dict[str, float] = {
    "dynamodb.Query": 0.0243,  # a full 1 MB page: 2,092 mappings at 11.6 us (items read raw, stores/raw_items.py)
    "dynamodb.BatchGetItem": 0.00205,
    "dynamodb.BatchWriteItem": 0.00350,
    "dynamodb.PutItem": 0.00034,
    "s3.PutObject": 0.00034,
    "s3.Bytes": 0.45e-9,
    "s3.GetObject": 0.00043,
    "s3.ListObjectsV2": 0.00037,
    "sns.Publish": 0.00023,
}
"""botocore's CPU per request (per byte for ``s3.Bytes``), as ``bench/results/client-cost.md`` measured it."""
CLIENT_CPU_LIKE = {"dynamodb": "dynamodb.PutItem", "s3": "s3.GetObject"}
"""The figure charged for a request not measured: a small one of its service; SNS's for other services."""

_STATES = json.loads(ASL.read_text())["States"]
ITERATION_STATES = {
    name: len((_STATES[name].get("ItemProcessor") or _STATES[name]["Iterator"])["States"]) for name in MAP_CONCURRENCY
}
"""The states one iteration of each Map enters (its processor's; each one Task state)."""


def aws_seconds(calls: dict[str, int], function: str = "") -> float:
    """The wait for an invocation's AWS requests: each at its service's latency, those sent a few at
    once (``overlapped``) in rounds of ``IN_FLIGHT``."""
    total = 0.0
    for name, count in calls.items():
        service = name.split(".", 1)[0]
        if name == "s3.Bytes":
            total += count / S3_BYTES_PER_S
            continue
        if name.startswith("dynamodb.Items"):
            continue  # item counts, not requests
        waits = math.ceil(count / IN_FLIGHT) + 1 if count and overlapped(function, name) else count
        latency = {"dynamodb": DYNAMODB_REQUEST_S, "s3": S3_REQUEST_S}.get(service, OTHER_REQUEST_S)
        total += waits * latency
    return total


def overlapped(function: str, name: str) -> bool:
    """Requests the handlers send through ``stores/in_flight.py``."""
    return (
        name in ("dynamodb.BatchWriteItem", "dynamodb.BatchGetItem")
        or (name == "s3.PutObject" and function in ("Prepare", "Summarize"))
        or (name == "s3.GetObject" and function == "Summarize")  # the work items, read again
    )


def client_cpu_seconds(calls: dict[str, int]) -> float:
    """botocore's own CPU for these requests (``CLIENT_CPU_S``), in the handler's thread."""
    total = 0.0
    for name, count in calls.items():
        if name.startswith("dynamodb.Items"):
            continue  # item counts, not requests
        like = CLIENT_CPU_LIKE.get(name.split(".", 1)[0], "sns.Publish")
        total += count * CLIENT_CPU_S.get(name, CLIENT_CPU_S[like])
    return total


@dataclass
class Estimate:
    cold_start_s: float
    transitions: int
    """Every state entered, each Map iteration's included (as the run counted them)."""
    own: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    client: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    moto: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    deployed: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    requests: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    collections_s: float = 0.0
    """Full garbage collections the handlers' threads ran here, left out of their own time (``gc_seconds``)."""
    errors_recorded: bool = False
    """The run saved each invocation's error (older saved runs did not)."""
    failed: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    """Per function, the errors of invocations that failed (each retried by the state machine, charged as run)."""

    def rounds(self, function: str) -> int:
        return math.ceil(len(self.deployed[function]) / MAP_CONCURRENCY.get(function, 1))

    def path_s(self, function: str) -> float:
        """This function's share of the run: its invocations in rounds of the Map's concurrency."""
        ordered = sorted(self.deployed[function], reverse=True)
        width = MAP_CONCURRENCY.get(function, 1)
        return sum(ordered[i] for i in range(0, len(ordered), width))

    def path_transitions(self) -> int:
        """The transitions on the run's path: the Maps' iterations' taken out, one round's put back per round."""
        parallel = sum(len(self.deployed[name]) * states for name, states in ITERATION_STATES.items())
        rounds = sum(self.rounds(name) * states for name, states in ITERATION_STATES.items())
        return self.transitions - parallel + rounds

    def total_s(self) -> float:
        return sum(self.path_s(f) for f in self.deployed) + self.path_transitions() * STATE_TRANSITION_S

    def verified_s(self) -> float:
        """Alarm to last commit verified: the run less the report and the lock's release (the last Lock
        invocation) after it, plus the alarm's way to the execution's start."""
        locks = self.deployed.get("Lock", [])
        after = self.path_s("Report") + (locks[-1] if len(locks) > 1 else 0.0) + AFTER_LAST_COMMIT * STATE_TRANSITION_S
        return ALARM_TO_START_S + self.total_s() - after


def estimate(invocations: list[dict[str, Any]], transitions: int, import_s: float) -> Estimate:
    """``invocations``: as ``bench.workflow_run`` saves them (function, own_seconds, moto_seconds,
    aws_calls, kafka_requests; gc_seconds and error where the run recorded them)."""
    result = Estimate(cold_start_s=import_s + ENVIRONMENT_START_S, transitions=transitions)
    for invocation in invocations:
        name = invocation["function"]
        calls = invocation["aws_calls"]
        client = client_cpu_seconds(calls)
        own = (invocation["own_seconds"] + client) * max(1.0, ONE_VCPU_MB / MEMORY_MB[name])
        waits = aws_seconds(calls, name) + invocation["kafka_requests"] * KAFKA_REQUEST_S
        result.own[name] += invocation["own_seconds"]
        result.client[name] += client
        result.moto[name] += invocation["moto_seconds"]
        result.deployed[name].append(result.cold_start_s + own + waits)
        result.requests[name].update(calls)
        result.requests[name]["kafka"] += invocation["kafka_requests"]
        result.collections_s += invocation.get("gc_seconds", 0.0)
        result.errors_recorded = result.errors_recorded or "error" in invocation
        if invocation.get("error"):
            result.failed[name][str(invocation["error"]).split(":", 1)[0]] += 1
    return result


def lines(found: Estimate, group_partitions: int) -> list[str]:
    rows = [
        "",
        f"Estimated deployed run at {group_partitions:,} group-partitions (`bench/deployed_estimate.py` states the "
        "method and cites its latencies): each invocation's own time here (the time inside AWS requests taken out) "
        "plus botocore's measured CPU for its requests (`bench/results/client-cost.md`), scaled to Lambda's CPU share "
        "for its memory, plus every AWS and Kafka request it made at the cited latency, plus a "
        f"cold start ({found.cold_start_s:.2f} s); Maps in rounds of their concurrency; "
        f"{STATE_TRANSITION_S * 1000:.0f} ms a state transition on the run's path (the serial states, one "
        "iteration's per Map round). DynamoDB throttling is not modelled.",
        "",
        "| handler | invocations | own time here (sum) | botocore CPU, charged (sum) | moto's time here (sum) "
        "| requests (AWS; Kafka) | deployed, on the run's path |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in sorted(found.deployed):
        calls = found.requests[name]
        aws = sum(v for k, v in calls.items() if k not in ("kafka", "s3.Bytes") and not k.startswith("dynamodb.Items"))
        rows.append(
            f"| {name} | {len(found.deployed[name])} | {found.own[name]:.1f} s | {found.client[name]:.1f} s | "
            f"{found.moto[name]:.1f} s | {aws:,}; {calls['kafka']:,} | {found.path_s(name):.1f} s |"
        )
    verdict = "met" if found.verified_s() < TARGET_S else "MISSED"
    target = f" (target {TARGET_S:.0f} s at 120,000: {verdict})" if group_partitions >= 120_000 else ""
    path = found.path_transitions()
    rows += [
        f"| state transitions on the path | {path} of {found.transitions} | | | | | "
        f"{path * STATE_TRANSITION_S:.1f} s |",
        f"| **whole run** | | {sum(found.own.values()):.1f} s | {sum(found.client.values()):.1f} s | "
        f"{sum(found.moto.values()):.1f} s | | **{found.total_s():.1f} s** |",
        f"| **alarm to last commit verified** (the alarm's way to the start, {ALARM_TO_START_S:.0f} s, assumed; "
        "the report and the lock's release after it left out) | | | | | | "
        f"**{found.verified_s():.1f} s**{target} |",
        "",
        f"Left out of the own time: {found.collections_s:.1f} s of full garbage collections (generation 2) the "
        "handlers' threads ran here; each walks every object of this process, moto's tables among them. Failed "
        "invocations (retried by the state machine; charged as they ran): "
        + (
            "; ".join(
                f"{name} {', '.join(f'{n} {error}' for error, n in errors.items())}"
                for name, errors in sorted(found.failed.items())
            )
            or ("none" if found.errors_recorded else "not recorded by this run")
        )
        + ".",
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
