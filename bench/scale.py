"""The scale benchmark: every phase of a failover and the whole workflow, on one scenario, beside the
published alternatives run on the same data. ``make bench`` runs it at the default size.

    python -m bench.scale                   # 2,000 groups x 12 partitions over 204 partitions (~5 min)
    python -m bench.scale --scale 10000     # 120,000 group-partitions over 996 partitions
    python -m bench.scale --scale 20000     # the largest: 240,000 group-partitions over 2,004 partitions

Scenario (two fresh local brokers, moto for AWS): topics of 12 partitions, one topic per ten groups'
worth of partitions (the ratio of the largest estate measured). Each source partition holds
``--records`` records, keyed ``<partition>:<offset>`` (a key on one partition only, as a producer's
partitioner leaves keys; the same key on two partitions would say the restore moved records between
them, ``translate/reshaped.py``); the target holds the restored copy: from a random shift on (retention), with
1-3 offsets missing 5% of the time (gaps), the source offset in the ``x-source-offset`` header. Every
group commits on the 12 partitions of one topic at random offsets (a fifth caught up). Then, timed:

1. snapshot of the source with 3 evidence records per position, written to S3;
2. plan: the header search on the target, scored against the true mapping;
3. apply with the CLI path: wait, record, commit, read back and verify every offset;
4. the whole workflow in apply mode through the state machine, on a second target holding the same
   restored copy (the CLI's commits are on the first), checked to commit what the CLI committed.

Baselines on the same data, labelled as re-implementations (``bench/plan_bench.py``,
``bench/apply_bench.py``): timestamp seek and MirrorMaker 2's offset syncs on every position, the
linear scan and kbridge's windowed binary search on a sample, the one-consumer-per-group script on a
sample of groups. Memory is each step's resident growth above the process's level (Linux).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from offset_restore.apply.model import ApplyOptions
from offset_restore.apply.run import run_apply
from offset_restore.devtools import process_memory
from offset_restore.devtools.brokers import BROKER_NAMES, KINDS
from offset_restore.devtools.brokers import started as started_brokers
from offset_restore.devtools.local_aws import BUCKET, local_workflow
from offset_restore.formats.plan import Plan
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.kafka.model import TP, CommittedOffset
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.stores.storage import S3Store
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.run import SnapshotChoice, run_plan
from offset_restore.translate.translation import translate
from offset_restore_handlers.wiring import MEMORY_MB

from bench.apply_bench import one_consumer_per_group
from bench.deployed_estimate import estimate
from bench.deployed_estimate import lines as estimate_lines
from bench.plan_bench import HEADER, PartitionData, mm2, per_search_baselines, score, stamp
from bench.workflow_run import RunFigures, import_baseline_mb, import_seconds, measure

RESULTS = Path(__file__).parent / "results"
PARTITIONS = 12
SNAPSHOT_PHASES = ("describe_groups", "committed_offsets", "log_bounds", "evidence", "assemble")
T = TypeVar("T")


@dataclass
class Step:
    seconds: float
    growth_mb: float | None


def timed(work: Callable[[], T]) -> tuple[T, Step]:
    process_memory.reset_peak()
    base = process_memory.resident_mb()
    started = time.perf_counter()
    result = work()
    seconds = time.perf_counter() - started
    peak = process_memory.peak_mb()
    return result, Step(seconds, None if peak is None or base is None else max(0.0, peak - base))


def build(
    source: KafkaCluster,
    targets: list[KafkaCluster],
    groups: int,
    records: int,
    rng: random.Random,
    group_partitions: int = PARTITIONS,
) -> dict[TP, PartitionData]:
    """The source and identical restored copies on each target; every group committed on the source, on
    ``group_partitions`` of its topic's partitions."""
    topics = [f"scale-{t:03d}" for t in range(max(1, round(groups / 10 / PARTITIONS)))]
    for cluster in (source, *targets):
        cluster.create_topics(dict.fromkeys(topics, PARTITIONS))
    data: dict[TP, PartitionData] = {}
    for topic in topics:
        for p in range(PARTITIONS):
            shift = rng.randint(0, records // 5)
            kept, s = [], shift
            while s < records - 1:  # the newest record is always restored: a backup's tail is complete
                kept.append(s)
                s += 1 + (rng.randint(1, 3) if rng.random() < 0.05 else 0)
            kept.append(records - 1)
            # A key belongs to one partition (a producer's partitioner puts it there): the same key on two
            # partitions is what tells a restore that moved records between them (translate/reshaped.py).
            source.produce(topic, p, ((f"{p}:{s}".encode(), b"v" * 40, [], stamp(s)) for s in range(records)))
            for target in targets:
                target.produce(
                    topic,
                    p,
                    ((f"{p}:{s}".encode(), b"v" * 40, [(HEADER, s.to_bytes(8, "big"))], stamp(s)) for s in kept),
                )
            data[TP(topic, p)] = PartitionData(kept, log_start=shift, log_end=records)
    offsets = {}
    for g in range(groups):
        topic = topics[g % len(topics)]
        offsets[f"scale-group-{g:05d}"] = {
            TP(topic, p): CommittedOffset(records if g % 5 == 0 else rng.randrange(records), None)
            for p in (
                range(PARTITIONS)
                if group_partitions == PARTITIONS
                else sorted(rng.sample(range(PARTITIONS), group_partitions))
            )
        }
    source.alter_offsets_many(offsets)
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=int, default=2000, metavar="GROUPS", help="groups of 12 partitions")
    parser.add_argument(
        "--group-partitions",
        type=int,
        default=PARTITIONS,
        metavar="N",
        help=f"partitions each group commits on, of its topic's {PARTITIONS} (default all)",
    )
    parser.add_argument("--records", type=int, default=200, help="records per source partition")
    parser.add_argument("--sample", type=int, default=200, help="searches for the per-search baselines")
    parser.add_argument("--baseline-groups", type=int, default=100, help="groups for the one-consumer script")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--broker", choices=KINDS, default="local", help="local (default) or apache: Apache Kafka 4.1")
    parser.add_argument(
        "--output",
        type=Path,
        help="default: bench/results/scale.md, or scale-GROUPS[xN].md (scale-apache*.md on apache)",
    )
    parser.add_argument(
        "--no-workflow",
        dest="workflow",
        action="store_false",
        help="skip the whole-workflow run (at 20,000 groups it takes about 40 minutes in moto)",
    )
    args = parser.parse_args(argv)
    if args.scale < 10 or args.scale > 50_000:
        parser.error("--scale must be between 10 and 50,000 groups")
    if not 1 <= args.group_partitions <= PARTITIONS:
        parser.error(f"--group-partitions must be between 1 and {PARTITIONS}")
    rng = random.Random(args.seed)
    gp = args.scale * args.group_partitions
    rows: list[list[str]] = []
    baselines: list[list[str]] = []
    with (
        started_brokers(args.broker, "scale-source", "scale-target", "scale-target-workflow") as brokers,
        KafkaCluster(brokers[0].settings()) as source,
        KafkaCluster(brokers[1].settings()) as target,
        KafkaCluster(brokers[2].settings()) as workflow_target,
    ):
        source_broker, target_broker, workflow_broker = brokers
        data, setup = timed(
            lambda: build(source, [target, workflow_target], args.scale, args.records, rng, args.group_partitions)
        )
        print(f"setup: {len(data):,} partitions, {gp:,} group-partitions in {setup.seconds:.0f} s", file=sys.stderr)
        # The local broker keeps no fence (it does not apply transactional offset commits): unfenced there.
        unfenced = args.broker == "local"
        with local_workflow(source_broker.bootstrap_servers, workflow_broker.bootstrap_servers, unfenced) as flow:
            store = S3Store(BUCKET, "", flow.s3)
            options = SnapshotOptions(groups="scale-group-.*", cluster="src", evidence_records=3)
            snap, step = timed(lambda: run_snapshot(source_broker.settings(), store, options))
            print(f"snapshot: {step.seconds:.1f} s", file=sys.stderr)
            rows.append(
                _row(
                    "snapshot (3 evidence records, to S3)",
                    gp,
                    step,
                    f"{gp / step.seconds:,.0f} group-partitions/s; "
                    + ", ".join(f"{k} {v:.1f} s" for k, v in snap.timings.items() if k in SNAPSHOT_PHASES)
                    + f"; {snap.timings.get('evidence_records_read', 0):,.0f} records read for evidence",
                    _target(gp / step.seconds >= 20_000, "20,000/s"),
                    snap.requests,
                )
            )
            with tempfile.TemporaryDirectory() as folder:
                plan_path = f"{folder}/plan.json"
                choice = SnapshotChoice(location=f"s3://{BUCKET}", cluster="src")
                planned, plan_step = timed(
                    lambda: run_plan(choice, target_broker.settings(), plan_path, PlanOptions(strategies=("header",)))
                )
                plan = Plan.model_validate_json(Path(plan_path).read_text())
                print(f"plan: {plan_step.seconds:.1f} s", file=sys.stderr)
                found = {
                    (TP(e.target_topic, e.partition), e.source_offset): e.target_offset
                    for e in plan.entries
                    if e.target_offset is not None
                }
                ours = score(found, data)
                median = planned.median_rounds_per_partition.get("header", 0.0)
                rows.append(
                    _row(
                        "plan (header search, all group-partitions)",
                        gp,
                        plan_step,
                        f"median {median:g} fetch rounds per partition; skipped {ours['skipped']:,}, "
                        f"duplicated {ours['duplicated']:,}",
                        _target(median <= 2 and not ours["skipped"] and not ours["duplicated"], "<= 2 rounds, exact"),
                        planned.requests,
                    )
                )
                used: list[KafkaCluster] = []

                def connect(settings: ConnectionSettings) -> KafkaCluster:
                    used.append(KafkaCluster(settings))
                    return used[-1]

                (_, applied), step = timed(
                    lambda: run_apply(
                        plan_path,
                        target_broker.settings(unfenced=unfenced),
                        ApplyOptions(wait_timeout_s=0),
                        connect=connect,
                    )
                )
            print(f"apply: {step.seconds:.1f} s", file=sys.stderr)
            offsets = applied.offsets_committed
            commit_s, verify_s = applied.timings.get("commit", 0.0), applied.timings.get("verify", 0.0)
            rows.append(
                _row(
                    "apply (wait, record, re-check, commit, verify, save)",
                    offsets,
                    step,
                    f"{offsets / step.seconds:,.0f} offsets/s; commit {commit_s:.2f} s = "
                    f"{offsets / max(commit_s, 1e-9):,.0f} offsets/s; "
                    + ", ".join(
                        f"{phase} {took:.2f} s" for phase, took in applied.timings.items() if phase != "commit"
                    ),
                    _target(offsets / max(commit_s, 1e-9) >= 20_000, "commit 20,000/s"),
                    dict(used[0].requests_sent),
                )
            )
            rows.append(
                [
                    "verify (read back every offset, fingerprints)",
                    f"{applied.verified:,}",
                    f"{verify_s:.2f} s",
                    f"{applied.verified / max(verify_s, 1e-9):,.0f} offsets/s; failed {len(applied.verify_failed)}",
                    "-",
                    "(in apply)",
                    "(in apply)",
                ]
            )
            ours_run = (plan_step.seconds, planned.requests.get("Fetch", 0) + planned.requests.get("ListOffsets", 0))
            baselines += _plan_baselines(target, plan.entries, data, ours, ours_run, args, rng)
            baselines.append(_consumer_baseline(target_broker.bootstrap_servers, data, offsets, step.seconds, args))
            workflow = None
            if args.workflow:
                workflow = _workflow_row(flow, workflow_target, plan.entries, gp, rows)
    text = _report(args, len(data), setup, rows, baselines, workflow)
    kind = "" if args.broker == "local" else "-apache"
    size = "" if args.scale == 2000 else f"-{args.scale}"
    size += "" if args.group_partitions == PARTITIONS else f"x{args.group_partitions}"
    output = args.output or RESULTS / f"scale{kind}{size}.md"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    print(text)
    return 0


def _workflow_row(flow: Any, target: KafkaCluster, entries: list[Any], gp: int, rows: list[list[str]]) -> RunFigures:
    """Run the whole workflow on the second target and check it committed what the CLI committed."""
    run_input = {
        "groups": "scale-group-.*",
        "mode": "apply",
        "restore_id": "scale-run",
        "wait": {"timeout_seconds": 60, "interval_seconds": 1},
    }
    workflow = measure(flow, run_input, "scale-run", gp)
    print(f"workflow: {workflow.wall_s:.1f} s", file=sys.stderr)
    statuses = flow.report("scale-run")["statuses"]
    wanted = [e for e in entries if e.target_offset is not None]
    now = target.committed_offsets(sorted({e.group for e in wanted}))
    same = sum(
        1
        for e in wanted
        if (c := now.get(e.group, {}).get(TP(e.target_topic, e.partition))) and c.offset == e.target_offset
    )
    rows.append(
        [
            "whole workflow, apply mode (moto's interpreter, real handlers)",
            f"{gp:,}",
            f"{workflow.wall_s:.1f} s",
            f"{gp / workflow.wall_s:,.0f} group-partitions/s; statuses "
            f"{', '.join(f'{k} {v:,}' for k, v in sorted(statuses.items()))}; on the target as the CLI "
            f"committed: {same:,}/{len(wanted):,}",
            _target(workflow.wall_s < 60, "60 s at 120,000") if gp >= 120_000 else "60 s at 120,000 (not this size)",
            f"{sum(workflow.invocations.values())} Lambda invocations; with a CPU per invocation (as on Lambda) "
            f"the states would take {workflow.critical_path_s():.0f} s (estimate, moto's share included)",
            "see below",
        ]
    )
    return workflow


def _target(met: bool, what: str) -> str:
    return f"{what} ({'met' if met else 'MISSED'})"


def _row(name: str, size: int, step: Step, rate: str, target: str, requests: dict[str, int]) -> list[str]:
    asked = {k: v for k, v in requests.items() if v}
    return [
        name,
        f"{size:,}",
        f"{step.seconds:.2f} s",
        rate,
        target,
        f"{sum(asked.values()):,} ({', '.join(f'{k} {v}' for k, v in sorted(asked.items()))})",
        _mb(step.growth_mb),
    ]


def _mb(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f} MB"


def _plan_baselines(
    target: KafkaCluster,
    entries: list[Any],
    data: dict[TP, PartitionData],
    ours: dict[str, Any],
    ours_run: tuple[float, int],
    args: argparse.Namespace,
    rng: random.Random,
) -> list[list[str]]:
    """Rows: algorithm, searches, time per search (ratio), fetch requests per search (ratio), precision."""
    positions = sorted({(TP(e.target_topic, e.partition), e.source_offset) for e in entries})
    our_time, our_requests = ours_run[0] / len(positions), ours_run[1] / len(positions)

    def row(name: str, searches: int, seconds: float, requests: float, result: dict[str, Any]) -> list[str]:
        per_s, per_r = seconds / searches, requests / searches
        return [
            name,
            f"{searches:,}",
            f"{per_s * 1000:.3f} ms ({per_s / our_time:,.1f}x)",
            f"{per_r:.4f} ({per_r / our_requests:,.1f}x)" if requests else "0 (syncs made while replicating)",
            f"{result['duplicated']:,} / {result['skipped']:,} (worst partition "
            f"{result['max_duplicates_in_a_partition']})",
        ]

    rows = [row("offset-restore header search (this project)", len(positions), ours_run[0], ours_run[1], ours)]
    started = time.perf_counter()
    syncs = score({(tp, c): mm2(data[tp], c) for tp, c in positions}, data)
    rows.append(
        row(
            "MirrorMaker 2 offset syncs (offset.lag.max=100, 64 kept)",
            len(positions),
            time.perf_counter() - started,
            0,
            syncs,
        )
    )
    before = target.requests_sent.get("Fetch", 0) + target.requests_sent.get("ListOffsets", 0)
    started = time.perf_counter()
    seek_options = PlanOptions(strategies=("timestamp",), timestamp_margin_ms=0)  # offsetsForTimes: no margin
    timestamped, _ = translate(_groups_of(entries, data), target, seek_options)
    seconds = time.perf_counter() - started
    seek = score(
        {
            (TP(e.target_topic, e.partition), e.source_offset): e.target_offset
            for e in timestamped
            if e.target_offset is not None
        },
        data,
    )
    after = target.requests_sent.get("Fetch", 0) + target.requests_sent.get("ListOffsets", 0)
    rows.append(
        row(
            "timestamp seek (first record at or after the committed record's time)",
            len(positions),
            seconds,
            after - before,
            seek,
        )
    )
    sample = rng.sample(positions, min(args.sample, len(positions)))
    for run in per_search_baselines(target, sample, data):
        rows.append(row(f"{run.name} (sample)", len(sample), run.seconds, run.requests, run.result))
    return rows


def _groups_of(entries: list[Any], data: dict[TP, PartitionData]) -> list[Any]:
    """The snapshot's view of each group, rebuilt from the plan for the timestamp strategy."""
    from offset_restore.snapshot.model import GroupSnapshot, PartitionSnapshot, RecordEvidence

    by_group: dict[str, list[PartitionSnapshot]] = {}
    for e in entries:
        d = data[TP(e.target_topic, e.partition)]
        c = e.source_offset
        by_group.setdefault(e.group, []).append(
            PartitionSnapshot(
                topic=e.topic,
                partition=e.partition,
                committed_offset=c,
                log_start=0,
                log_end=d.log_end,
                next=RecordEvidence(offset=c, timestamp=stamp(c), fingerprint="") if c < d.log_end else None,
            )
        )
    return [GroupSnapshot(group=g, state="Empty", partitions=p) for g, p in by_group.items()]


def _consumer_baseline(
    servers: str, data: dict[TP, PartitionData], offsets: int, ours_s: float, args: argparse.Namespace
) -> list[str]:
    topics = sorted({tp.topic for tp in data})
    sample = {
        f"scale-baseline-{g:05d}": {(topics[g % len(topics)], p): 0 for p in range(PARTITIONS)}
        for g in range(args.baseline_groups)
    }
    seconds = one_consumer_per_group(servers, sample)
    rate = args.baseline_groups * PARTITIONS / seconds
    ours = offsets / ours_s
    return [
        "one consumer per group committing (the common script), re-implemented (sample)",
        f"{args.baseline_groups * PARTITIONS:,} offsets",
        f"{rate:,.0f} offsets/s (ours {ours:,.0f}/s with wait, re-check and verify)",
        f"{ours / rate:,.1f}x slower than this project",
        "no re-check, no verification",
    ]


def _workflow_lines(workflow: RunFigures) -> list[str]:
    baseline_mb = import_baseline_mb()
    lines = [
        "",
        f"The workflow run, handler by handler. Memory: {baseline_mb:.0f} MB for a fresh interpreter importing "
        "the handlers + the most the process grew during one invocation, moto's own allocations for it "
        "included (the S3 objects it stores, the items it copies for a query), so above the handler's own; "
        "`bench.handler_memory` measures handlers alone. * = Map iterations overlapped, the figure is theirs "
        "together. Duration: wall time, or thread CPU time for overlapping iterations.",
        "",
        "| handler | invocations | duration (sum) | process memory | Lambda memory |",
        "|---|---|---|---|---|",
    ]
    for name in sorted(workflow.invocations):
        growth = workflow.peak_growth_mb.get(name)
        limit = MEMORY_MB[name]
        shared = "*" if name in workflow.overlapping else ""
        peak = "n/a" if growth is None else f"{baseline_mb + growth:,.0f} MB{shared}"
        lines.append(f"| {name} | {workflow.invocations[name]} | {workflow.seconds[name]:.1f} | {peak} | {limit} MB |")
    import_s = import_seconds()
    saved = {
        "group_partitions": workflow.group_partitions,
        "transitions": workflow.transitions,
        "import_s": import_s,
        "invocations": workflow.saved,
    }
    (RESULTS / f"workflow-invocations-{workflow.group_partitions}.json").write_text(json.dumps(saved, indent=1))
    lines += estimate_lines(estimate(workflow.saved, workflow.transitions, import_s), workflow.group_partitions)
    lines += [
        "",
        f"Billing figures of this run: {workflow.transitions:,} state transitions, "
        f"{sum(workflow.invocations.values())} Lambda invocations, {workflow.gb_seconds:,.1f} GB-s (local "
        f"durations), {workflow.dynamodb_writes:,} DynamoDB items written, {workflow.dynamodb_reads:,} DynamoDB "
        f"items read, S3 {workflow.count(('s3.PutObject',)):,} PUT / {workflow.count(('s3.GetObject',)):,} GET / "
        f"{workflow.count(('s3.ListObjectsV2',)):,} LIST: ${workflow.dollars():.4f} at list prices.",
    ]
    return lines


def _report(
    args: argparse.Namespace,
    partitions: int,
    setup: Step,
    rows: list[list[str]],
    baselines: list[list[str]],
    workflow: RunFigures | None,
) -> str:
    gp = args.scale * args.group_partitions
    lines = [
        f"Scale benchmark: {args.scale:,} groups x {args.group_partitions} partitions = {gp:,} group-partitions over "
        f"{partitions:,} partitions, {args.records} records per source partition; {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}; {BROKER_NAMES[args.broker]} and moto "
        f"(setup {setup.seconds:.0f} s). `python -m bench.scale --scale {args.scale} --broker {args.broker}"
        f"{'' if args.group_partitions == PARTITIONS else f' --group-partitions {args.group_partitions}'}"
        f"{'' if args.workflow else ' --no-workflow'}`.",
        "",
        "| phase | size | wall time | rate and result | target | Kafka requests | process memory added |",
        "|---|---|---|---|---|---|---|",
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        "Same run, same data — the published alternatives, re-implemented from their algorithms:",
        "",
        "| algorithm | searches | time per search (ratio) | requests per search (ratio) | duplicated / skipped |",
        "|---|---|---|---|---|",
        *("| " + " | ".join(row) + " |" for row in baselines[:-1]),
        "",
        "| apply alternative | size | rate | ratio | notes |",
        "|---|---|---|---|---|",
        "| " + " | ".join(baselines[-1]) + " |",
    ]
    if workflow is None:
        lines += ["", "The whole workflow was not run (`--no-workflow`)."]
    else:
        lines += _workflow_lines(workflow)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
