"""Side by side with the real alternatives: MirrorMaker 2 and kafka-consumer-groups, from
Apache Kafka 4.1.1's own jars, on the same data as offset-restore. ``make compare`` runs it.

    python -m bench.compare                       # 4 partitions x 100,000 records
    python -m bench.compare --records 20000       # quicker

The scenario, on Apache Kafka (one source, three targets, each its own single-node cluster):
- the source topic: ``--partitions`` x ``--records`` records (100-byte values, keys ``p:i``); the first
  1% of half the partitions is deleted before anything is copied (a retention loss), so offsets differ;
- groups at many lags, drawn per partition: caught up, 5 behind, far behind, before the loss, and
  partitions some groups never committed; plus live groups, consumers still running on the source:
  they commit further every 0.3 s from before the snapshot until the source stops;
- **MirrorMaker 2** (dedicated mode, one process, group offset sync on) replicates the source to two
  replicas, ``offset.lag.max`` 100 (its default) on one and 0 on the other, while the live groups run;
  then the source stops (the failover) once MM2 has checkpointed every group's final offset;
- **offset-restore**: its scheduled snapshot is taken while the live groups run (before their last
  moves, as a schedule would); (a) on MM2's lag-100 replica: plan (default strategies, MM2's
  checkpoints included) and apply; (b) on a restore copy (a copy of the records that survived, each
  with its source offset in the ``x-source-offset`` header): plan and apply, and Apache Kafka's own
  ``kafka-consumer-groups --reset-offsets --from-file plan.csv --execute`` timed on the same plan;
- **the workflow** (the automated path): the state machine through moto's Step Functions interpreter
  with the real handlers (``devtools/local_aws.py``), on MM2's lag-100 replica from the same snapshot
  (copied to the workflow's bucket), default strategies (mm2 among them), ``allow_rewind`` as the
  CLI's apply has it. A plan-mode execution's entries must equal the CLI's plan entry for entry, the
  apply-mode execution's entries the CLI's applied plan, and the offsets it commits the CLI's (the run
  stops and says where they differ); its rollback then puts back MM2's offsets before the CLI applies,
  so each row's offsets are its own work.

The truth for each group-partition is the source's final committed offset ``c``: the group must read
next the target copy of source record ``c`` (or the end, when it had read everything; or the first
record, when ``c`` was lost before the copy). Each target is read whole once to place every record;
each tool's committed offset is then exact, N records early (duplicates) or N records late (skipped).

Writes ``bench/results/compare.md`` (the table, with the broker, versions and machine),
``bench/results/compare.svg`` (duplicates and skips per tool) and ``bench/results/compare.json`` (every
group-partition: its truth, what each tool committed).
"""

from __future__ import annotations

import argparse
import bisect
import io
import itertools
import json
import os
import platform
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from offset_restore.cli.main import main as cli
from offset_restore.devtools.apache_broker import ApacheBroker, java_tool
from offset_restore.devtools.local_aws import BUCKET, REGION, TABLE, Workflow, local_workflow
from offset_restore.devtools.mirror_maker import Flow, MirrorMaker
from offset_restore.formats.plan import Plan, PlanEntry
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP, CommittedOffset
from offset_restore.reading.whole import read_partition
from offset_restore.snapshot.fingerprint import DEFAULT_OFFSET_HEADER
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import open_location

from bench.compare_chart import svg
from bench.workflow_run import measure

RESULTS = Path(__file__).with_name("results")
BASE_MS = 1_764_000_000_000
TOPIC = "orders"
CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
KAFKA_VERSION = "4.1.1"

Key = tuple[str, int]  # group, partition


@dataclass
class Tool:
    name: str
    committed: dict[Key, int]
    seconds: float
    note: str = ""
    methods: dict[str, int] = field(default_factory=dict)
    label: str = ""
    """A short name for the chart."""
    where: str = "lag100"
    """The target it resumes on (``placement``'s key): ``lag100``, ``lag0`` or ``copy``."""


def run_cli(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    status = cli(list(argv), out, err)
    if status not in (0, 3):
        raise SystemExit(f"offset-restore {argv[0]} failed ({status}):\n{out.getvalue()}{err.getvalue()}")
    return out.getvalue()


# -- the source ------------------------------------------------------------------------------------


def records_of(
    p: int, records: int, seed: int, lost: int, per_ms: int = 1
) -> Iterator[tuple[bytes, bytes, list[Any], int]]:
    """A partition's records, ``per_ms`` to a millisecond (a bulk producer puts tens in one)."""
    rng = random.Random(seed * 1000 + p)
    for i in range(records):
        value = rng.randbytes(100)
        if i >= lost:
            yield f"{p}:{i}".encode(), value, [], BASE_MS + i // per_ms


def write_source(source: KafkaCluster, args: argparse.Namespace) -> dict[int, int]:
    """The topic, and the retention loss on half its partitions; returns the records lost per partition."""
    source.create_topics({TOPIC: args.partitions})
    lost = {p: (args.records // 100 if p % 2 == 0 else 0) for p in range(args.partitions)}
    for p in range(args.partitions):
        source.produce(TOPIC, p, records_of(p, args.records, args.seed, 0, getattr(args, "per_ms", 1)))
    source.delete_records({TP(TOPIC, p): n for p, n in lost.items() if n})
    return lost


def write_copy(copy: KafkaCluster, args: argparse.Namespace, lost: dict[int, int]) -> None:
    """A restore copy: what survived, each record with its source offset in the header."""
    copy.create_topics({TOPIC: args.partitions})
    for p in range(args.partitions):
        copy.produce(
            TOPIC,
            p,
            (
                (k, v, [(DEFAULT_OFFSET_HEADER, int(k.split(b":")[1]).to_bytes(8, "big"))], ts)
                for k, v, _, ts in records_of(p, args.records, args.seed, lost[p], getattr(args, "per_ms", 1))
            ),
        )


def static_groups(args: argparse.Namespace, lost: dict[int, int]) -> dict[str, dict[int, int]]:
    """Groups at many lags; some partitions never committed."""
    rng = random.Random(args.seed)
    n = args.records
    lags: list[Callable[[], int]] = [
        lambda: n,  # caught up
        lambda: n - 5,  # a few behind
        lambda: rng.randrange(n // 10, n - n // 10),  # far behind
        lambda: rng.randrange(0, max(1, n // 100)),  # before the retention loss (where there was one)
    ]
    groups: dict[str, dict[int, int]] = {}
    for g in range(args.groups):
        offsets = {p: rng.choice(lags)() for p in range(args.partitions) if rng.random() > 0.15}
        if offsets:
            groups[f"cmp-g{g:02d}"] = offsets
    return groups


@contextmanager
def live_groups(source: ApacheBroker, args: argparse.Namespace) -> Iterator[dict[str, dict[int, int]]]:
    """Consumers still running on the source: each live group commits further every 0.3 s until the
    context ends (the source stops); the dict holds their latest commits (the truth at the end)."""
    n = args.records
    state = {f"cmp-live{g}": {p: n // 2 + 1_000 * g for p in range(args.partitions)} for g in range(args.live)}
    stop = threading.Event()

    def move(cluster: KafkaCluster) -> None:
        step = max(1, n // 2_000)
        while not stop.is_set():
            moved = {g: {p: min(n, o + step) for p, o in by_p.items()} for g, by_p in state.items()}
            errors = cluster.alter_offsets_many(
                {g: {TP(TOPIC, p): CommittedOffset(o, None) for p, o in by_p.items()} for g, by_p in moved.items()}
            )
            for g, by_tp in errors.items():  # the truth is what was committed
                state[g].update({tp.partition: moved[g][tp.partition] for tp, error in by_tp.items() if not error})
            stop.wait(0.3)

    with KafkaCluster(source.settings()) as cluster:
        move_once = threading.Thread(target=move, args=(cluster,), daemon=True)
        move_once.start()
        try:
            yield state
        finally:
            stop.set()
            move_once.join()


def commit_static(source: KafkaCluster, groups: dict[str, dict[int, int]]) -> None:
    offsets = {g: {TP(TOPIC, p): CommittedOffset(o, None) for p, o in by_p.items()} for g, by_p in groups.items()}
    failed = {g: e for g, errors in source.alter_offsets_many(offsets).items() for e in errors.values() if e}
    assert not failed, failed


# -- MirrorMaker 2 ----------------------------------------------------------------------------------


def wait_settled(mm2: MirrorMaker, replicas: list[ApacheBroker], groups: list[str], quiet_s: float = 5.0) -> None:
    """Until the groups' offsets MM2 synced to every replica stop changing for ``quiet_s`` (five of its
    1 s checkpoint and sync intervals). Not "until each checkpoint names the group's final offset":
    MM2 emits a checkpoint only when its translation moves (``MirrorCheckpointTask.checkpointIsMoreRecent``),
    so with ``offset.lag.max`` 100 the last checkpoint of a group can name an older source offset."""
    clusters = [KafkaCluster(r.settings()) for r in replicas]
    try:
        last: list[dict[Key, int]] = []
        quiet_since = time.monotonic()

        def settled() -> bool:
            nonlocal last, quiet_since
            now = [
                {
                    (g, tp.partition): c.offset
                    for g, f in cluster.committed_offsets(groups).items()
                    for tp, c in f.items()
                }
                for cluster in clusters
            ]
            if now != last:
                last, quiet_since = now, time.monotonic()
            return time.monotonic() - quiet_since >= quiet_s

        mm2.wait_for("the synced offsets to settle", settled, timeout_s=600)
    finally:
        for cluster in clusters:
            cluster.close()


def wait_replicated(mm2: MirrorMaker, replicas: list[ApacheBroker], ends: dict[int, int]) -> None:
    for replica in replicas:
        with KafkaCluster(replica.settings()) as cluster:

            def done(cluster: KafkaCluster = cluster) -> bool:
                if TOPIC not in cluster.topic_partitions():
                    return False
                bounds = cluster.log_bounds([TP(TOPIC, p) for p in ends])
                return all(bounds[TP(TOPIC, p)].end >= n for p, n in ends.items())

            mm2.wait_for(f"every record on {replica.name}", done, timeout_s=900)


def offsets_of(cluster: KafkaCluster, groups: list[str]) -> dict[Key, int]:
    found = cluster.committed_offsets(groups).items()
    return {(g, tp.partition): c.offset for g, by_tp in found for tp, c in by_tp.items() if tp.topic == TOPIC}


def committed_on(replica: ApacheBroker, groups: list[str]) -> dict[Key, int]:
    with KafkaCluster(replica.settings()) as cluster:
        return offsets_of(cluster, groups)


# -- truth and outcomes ------------------------------------------------------------------------------


@dataclass
class Placed:
    """One target partition as read whole: each record's target offset and the source offset its key
    names, and the log end."""

    offsets: list[int]
    sources: list[int]
    end: int

    def want(self, c: int) -> int:
        """The truth: the target offset of the first record whose source offset is at least ``c``."""
        i = bisect.bisect_left(self.sources, c)
        return self.offsets[i] if i < len(self.offsets) else self.end

    def records_between(self, low: int, high: int) -> int:
        return bisect.bisect_left(self.offsets, high) - bisect.bisect_left(self.offsets, low)


def placement(replica: ApacheBroker, partitions: int) -> dict[int, Placed]:
    """Every target partition read whole, once. The source offsets must grow with the target's: a
    copy with repeated or reordered records (an MM2 task restarted mid-copy) would need another
    truth, so the run stops and says so."""
    placed = {}
    with KafkaCluster(replica.settings()) as cluster:
        for p in range(partitions):
            tp = TP(TOPIC, p)
            records = [r for r in read_partition(cluster, tp) if r.key]
            sources = [int(r.key.split(b":")[1]) for r in records if r.key]
            if any(b <= a for a, b in itertools.pairwise(sources)):
                raise SystemExit(f"{replica.name} {TOPIC}/{p} holds records out of source order: no single truth")
            placed[p] = Placed([r.offset for r in records], sources, cluster.log_bounds([tp])[tp].end)
    return placed


def outcomes(tool: Tool, truth: dict[Key, int], placed: dict[int, Placed]) -> dict[str, Any]:
    """Exact / duplicates / skipped per group-partition: the committed offset against the target
    offset of the first record whose source offset is at least the truth. A group-partition left
    without an offset resumes by ``auto.offset.reset``: with ``latest``, Kafka's default, it skips
    every record from its position to the end (``latest_skips``)."""
    exact = early = late = missing = 0
    duplicates = skipped = worst_dup = worst_skip = latest_skips = 0
    for (group, p), c in truth.items():
        log = placed[p]
        want, got = log.want(c), tool.committed.get((group, p))
        if got is None:
            missing, latest_skips = missing + 1, latest_skips + log.records_between(want, log.end)
        elif got == want:
            exact += 1
        elif got < want:
            n = log.records_between(got, want)
            early, duplicates, worst_dup = early + 1, duplicates + n, max(worst_dup, n)
        else:
            n = log.records_between(want, got)
            late, skipped, worst_skip = late + 1, skipped + n, max(worst_skip, n)
    return {
        "exact": exact,
        "early": early,
        "duplicates": duplicates,
        "worst_dup": worst_dup,
        "late": late,
        "skipped": skipped,
        "worst_skip": worst_skip,
        "missing": missing,
        "latest_skips": latest_skips,
    }


# -- offset-restore -------------------------------------------------------------------------------


def plan_with_cli(name: str, snapshots: Path, target: ApacheBroker, work: Path, *more: str) -> tuple[Tool, Path, Path]:
    """``offset-restore plan`` as an operator runs it (default strategies unless ``more`` says, a CSV
    beside the plan); the tool's time so far is the plan's, its methods counted and its mapped
    offsets taken from the plan (what apply would write)."""
    plan, csv = work / f"{name}.json", work / f"{name}.csv"
    started = time.perf_counter()
    run_cli("plan", "--snapshot", str(snapshots), "--bootstrap-servers", target.bootstrap_servers,
            "--output", str(plan), "--csv", str(csv), *more)  # fmt: skip
    seconds = time.perf_counter() - started
    entries = Plan.model_validate_json(plan.read_text()).entries
    planned = {
        (e.group, e.partition): e.target_offset for e in entries if e.status == "mapped" and e.target_offset is not None
    }
    return Tool(name, planned, seconds, note=f"plan {seconds:.1f} s", methods=methods_of(entries)), plan, csv


def methods_of(entries: list[PlanEntry]) -> dict[str, int]:
    """How the entries were placed (``fingerprint exact``, ``mm2``, ``unmapped``...), counted."""
    methods: dict[str, int] = {}
    for e in entries:
        how = f"{e.method or e.status}{' exact' if e.exact else ''}"
        methods[how] = methods.get(how, 0) + 1
    return methods


def applied(tool: Tool, plan: Path, target: ApacheBroker, groups: list[str]) -> Tool:
    """``offset-restore apply``, timed onto the tool's plan time; what the target then holds."""
    started = time.perf_counter()
    # --allow-rewind: MM2 synced offsets to its replica first; without it apply keeps a group that is
    # already further (a safety for groups that consumed on the target), and the row would show MM2's.
    run_cli(
        "apply", "--plan", str(plan), "--bootstrap-servers", target.bootstrap_servers, "--allow-rewind", "--execute"
    )
    took = time.perf_counter() - started
    tool.note = f"plan {tool.seconds:.1f} s + apply {took:.1f} s"
    tool.seconds += took
    tool.committed = committed_on(target, groups)
    return tool


def consumer_groups_tool(csv: Path, target: ApacheBroker, groups: list[str], seconds_before: float) -> Tool:
    selected = [flag for g in groups for flag in ("--group", g)]
    started = time.perf_counter()
    done = java_tool(
        CONSUMER_GROUP_COMMAND,
        ["--bootstrap-server", target.bootstrap_servers, "--reset-offsets", "--from-file", str(csv), "--execute",
         *selected],
        log4j=target.log4j,
        timeout_s=600,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    if done.returncode != 0 or "Error:" in done.stdout:
        raise SystemExit(f"kafka-consumer-groups failed:\n{done.stdout}{done.stderr}")
    return Tool(
        "offset-restore plan + kafka-consumer-groups --from-file (restore copy)",
        committed_on(target, groups),
        seconds_before + seconds,
        note=f"kafka-consumer-groups itself: {seconds:.1f} s (a JVM start included)",
        label="kafka-consumer-groups + the plan's CSV",
    )


# -- the workflow ---------------------------------------------------------------------------------

WORKFLOW_RESTORE = "cmp-workflow"
APPLY_OWNED = {
    "outcome",
    "previous_target_offset",
    "previous_metadata",
    "previous_recorded",
    "previous_seal",
    "verified",
}
"""What apply (or rollback) records into an entry: the plan-mode comparison leaves these out."""
APPLIED_FIELDS = ("status", "target_offset", "previous_target_offset", "verified")
"""What both applies record of an entry, compared after them (the CLI's seal is its own)."""


@dataclass
class WorkflowRun:
    """The workflow's row, and the entries it answered: in plan mode (DynamoDB after the Translate
    steps) and after its apply mode's Commit steps."""

    tool: Tool
    planned: list[PlanEntry]
    applied: list[PlanEntry]
    invocations: dict[str, int]


def copy_snapshot(workflow: Workflow, snapshots: Path) -> str:
    """The CLI's snapshot in the workflow's bucket, under the keys the Snapshot function writes
    (``snapshots/<cluster>/...``); returns its cluster's name (the run's ``source_cluster``)."""
    for path in sorted(p for p in snapshots.rglob("*") if p.is_file()):
        workflow.s3.put_object(Bucket=BUCKET, Key=path.relative_to(snapshots).as_posix(), Body=path.read_bytes())
    _, manifest = SnapshotRepository(open_location(str(snapshots))).latest(None)
    return manifest.cluster


def execute(workflow: Workflow, run_input: dict[str, Any], name: str) -> dict[str, Any]:
    done = workflow.run(run_input, name=name, timeout_s=900)
    if done["status"] != "SUCCEEDED":
        raise SystemExit(f"the workflow's execution {name} ended {done['status']}: {done.get('cause')}")
    return done


def workflow_tool(source: ApacheBroker, target: ApacheBroker, snapshots: Path, groups: list[str]) -> WorkflowRun:
    """The state machine on MM2's replica, as the automated failover runs it: a plan-mode execution
    (its entries, for the comparison with the CLI's plan), then the apply-mode execution, timed (its
    Translate and Commit steps are the CLI's plan and apply); what the target then holds is the row.
    Its rollback-mode execution then puts back what MM2 had synced, so the CLI's apply starts where
    this one did; the run stops if the replica does not hold MM2's offsets again."""
    before = committed_on(target, groups)
    with local_workflow(source.bootstrap_servers, target.bootstrap_servers) as flow:
        run_input = {
            "restore_id": WORKFLOW_RESTORE,
            "source_cluster": copy_snapshot(flow, snapshots),
            "pending_retries": 0,
        }
        mappings = MappingStore(TABLE, boto3.client("dynamodb", region_name=REGION))
        execute(flow, {**run_input, "mode": "plan"}, f"{WORKFLOW_RESTORE}-plan")
        planned = mappings.entries(WORKFLOW_RESTORE)
        # allow_rewind: as the CLI's apply has it (MM2 synced offsets to the replica first).
        figures = measure(
            flow, {**run_input, "mode": "apply", "allow_rewind": True}, f"{WORKFLOW_RESTORE}-apply", len(planned)
        )
        applied = mappings.entries(WORKFLOW_RESTORE)
        committed = committed_on(target, groups)
        execute(flow, {"mode": "rollback", "restore_id": WORKFLOW_RESTORE}, f"{WORKFLOW_RESTORE}-rollback")
    back = committed_on(target, groups)
    if back != before:
        changed = sorted(k for k in {*back, *before} if back.get(k) != before.get(k))
        raise SystemExit(
            f"the workflow's rollback left {len(changed)} group-partitions off MM2's offsets: {changed[:5]}"
        )
    steps = {name: figures.seconds[name] for name in ("Translate", "Commit")}
    tool = Tool(
        "offset-restore's workflow on MM2's replica (lag 100): Step Functions (moto), the real handlers",
        committed,
        figures.wall_s,
        note=f"execution {figures.wall_s:.1f} s (translate {steps['Translate']:.1f} s + commit "
        f"{steps['Commit']:.1f} s, {sum(figures.invocations.values())} Lambda invocations)",
        methods=methods_of(planned),
        label="offset-restore workflow (MM2 replica)",
    )
    return WorkflowRun(tool, planned, applied, dict(figures.invocations))


def differences(name: str, cli: list[PlanEntry], flow: list[PlanEntry], fields: tuple[str, ...] | None) -> list[str]:
    """Where the workflow's entries differ from the CLI's: one line per group-partition (``fields``
    None: every field of the plan but those apply records)."""

    def answers(entries: list[PlanEntry]) -> dict[tuple[str, str, int, int | None], dict[str, Any]]:
        found = {}
        for e in entries:
            dumped = e.model_dump(mode="json")
            kept = (
                {k: v for k, v in dumped.items() if k not in APPLY_OWNED}
                if fields is None
                else {k: dumped[k] for k in fields}
            )
            found[(e.group, e.topic, e.partition, e.target_partition)] = kept
        return found

    by_cli, by_flow = answers(cli), answers(flow)
    lines = []
    for key in sorted({*by_cli, *by_flow}, key=str):
        a, b = by_cli.get(key), by_flow.get(key)
        if a != b:
            if a is None or b is None:
                lines.append(f"{name} {key}: {'only the workflow' if a is None else 'only the CLI'} has it")
            else:
                lines.append(
                    f"{name} {key}: "
                    + "; ".join(
                        f"{k} CLI {a.get(k)!r} workflow {b.get(k)!r}" for k in sorted({*a, *b}) if a.get(k) != b.get(k)
                    )
                )
    return lines


def same_as_cli(
    cli: Tool, cli_planned: list[PlanEntry], cli_applied: list[PlanEntry], flow: WorkflowRun
) -> dict[str, int]:
    """The workflow's row against the CLI's, entry for entry: the plans (every field but what apply
    records), the applied entries (status, offset, previous offset, verification) and the offsets on
    the replica. Stops the run, naming the differences, when they differ; returns what was compared."""
    wrong = differences("plan", cli_planned, flow.planned, None)
    wrong += differences("applied", cli_applied, flow.applied, APPLIED_FIELDS)
    wrong += [
        f"committed {key}: CLI {cli.committed.get(key)} workflow {flow.tool.committed.get(key)}"
        for key in sorted({*cli.committed, *flow.tool.committed})
        if cli.committed.get(key) != flow.tool.committed.get(key)
    ]
    if wrong:
        raise SystemExit(
            f"the workflow's row differs from the CLI's (differences: {len(wrong)}):\n" + "\n".join(wrong[:40])
        )
    return {"entries": len(cli_planned), "committed": len(cli.committed)}


# -- the run --------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> tuple[list[tuple[Tool, dict[str, Any]]], dict[str, Any]]:
    facts: dict[str, Any] = {}
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="compare-") as folder:
        work = Path(folder)
        brokers = [ApacheBroker(name) for name in ("cmp-source", "cmp-mm2-lag100", "cmp-mm2-lag0", "cmp-copy")]
        for broker in brokers:
            stack.callback(broker.stop)
            broker.launch()
        for broker in brokers:
            broker.wait_ready()
        source_broker, lag100, lag0, copy_broker = brokers
        with KafkaCluster(source_broker.settings()) as source, KafkaCluster(copy_broker.settings()) as copy:
            started = time.perf_counter()
            lost = write_source(source, args)
            write_copy(copy, args, lost)
            statics = static_groups(args, lost)
            commit_static(source, statics)
        facts["write_s"] = time.perf_counter() - started
        print(f"wrote {args.partitions} x {args.records:,} records twice in {facts['write_s']:.0f} s", file=sys.stderr)

        flows = [Flow(lag100, 100, "lag100"), Flow(lag0, 0, "lag0")]
        mm2 = stack.enter_context(MirrorMaker(source_broker, flows))
        mm2_started = time.perf_counter()
        snapshots = work / "snapshots"
        with live_groups(source_broker, args) as live:
            ends = {p: args.records - n for p, n in lost.items()}
            wait_replicated(mm2, [lag100, lag0], ends)
            facts["mm2_replicated_s"] = time.perf_counter() - mm2_started
            snap_started = time.perf_counter()
            run_cli("snapshot", "--bootstrap-servers", source_broker.bootstrap_servers, "--groups", "cmp-.*",
                    "--output", str(snapshots))  # fmt: skip
            facts["snapshot_s"] = time.perf_counter() - snap_started
            time.sleep(args.live_after_s)  # the live groups move on after the scheduled snapshot
        truth = {(g, p): o for g, by_p in {**statics, **live}.items() for p, o in by_p.items()}
        moved = {(g, p) for g, by_p in live.items() for p in by_p}
        if not moved:
            raise SystemExit("no live group: the scenario needs a group still consuming after the snapshot (--live)")
        groups = sorted({g for g, _ in truth})
        wait_settled(mm2, [lag100, lag0], groups)
        facts["mm2_synced_s"] = time.perf_counter() - mm2_started
        mm2.stop()  # the failover
        facts["mm2_log"] = mm2.log()

        tools = [
            Tool(
                "MirrorMaker 2 offset sync, offset.lag.max=100",
                committed_on(lag100, groups),
                0.0,
                label="MM2, lag.max 100",
            ),
            Tool(
                "MirrorMaker 2 offset sync, offset.lag.max=0",
                committed_on(lag0, groups),
                0.0,
                label="MM2, lag.max 0",
                where="lag0",
            ),
        ]
        mm2_only, _, _ = plan_with_cli("mm2-only", snapshots, lag100, work, "--strategies", "mm2")
        mm2_only.name = "offset-restore's mm2 strategy alone on MM2's replica (lag 100), its plan"
        mm2_only.label = "offset-restore, mm2 alone (MM2 replica)"
        on_mm2, plan, _ = plan_with_cli("on-mm2", snapshots, lag100, work)
        on_mm2.name = "offset-restore on MM2's replica (lag 100): snapshot + MM2 checkpoints"
        on_mm2.label = "offset-restore (MM2 replica)"
        cli_planned = Plan.model_validate_json(plan.read_text()).entries  # before apply records into it
        # The workflow first, on the replica as MM2 left it (its rollback puts that back for the CLI).
        flow = workflow_tool(source_broker, lag100, snapshots, groups)
        tools += [mm2_only, applied(on_mm2, plan, lag100, groups)]
        facts["workflow_same"] = same_as_cli(
            on_mm2, cli_planned, Plan.model_validate_json(plan.read_text()).entries, flow
        )
        facts["workflow_invocations"] = flow.invocations
        tools.append(flow.tool)
        on_copy, plan, csv = plan_with_cli("on-copy", snapshots, copy_broker, work)
        on_copy.name = "offset-restore on a restore copy (offset header): snapshot only"
        on_copy.label = "offset-restore (restore copy)"
        on_copy.where = "copy"
        # Kafka's own tool first, on groups not yet on the copy: what it commits is its own work.
        kcg = consumer_groups_tool(csv, copy_broker, groups, on_copy.seconds)
        kcg.where = "copy"
        tools.append(applied(on_copy, plan, copy_broker, groups))
        tools.append(kcg)
        places = {"lag100": placement(lag100, args.partitions), "lag0": placement(lag0, args.partitions)}
        places["copy"] = placement(copy_broker, args.partitions)
        facts["group_partitions"], facts["live_group_partitions"] = len(truth), len(moved)
        facts["details"] = {
            f"{g}/{p}": {"truth": c, "want": {w: places[w][p].want(c) for w in places}}
            | {t.name: t.committed.get((g, p)) for t in tools}
            for (g, p), c in sorted(truth.items())
        }
        subsets = {
            "seen": {k: c for k, c in truth.items() if k not in moved},
            "moved": {k: c for k, c in truth.items() if k in moved},
            "all": truth,
        }
        results = [(t, {name: outcomes(t, part, places[t.where]) for name, part in subsets.items()}) for t in tools]
        cli_row, flow_row = (next(o for t, o in results if t is row) for row in (on_mm2, flow.tool))
        if cli_row != flow_row:
            raise SystemExit(f"the workflow's outcomes differ from the CLI's: {flow_row} where the CLI has {cli_row}")
        facts["workflow_outcomes"] = flow_row["all"]
        return results, facts


# -- the report -----------------------------------------------------------------------------------


def table(results: list[tuple[Tool, dict[str, Any]]], facts: dict[str, Any], args: argparse.Namespace) -> list[str]:
    seen = facts["group_partitions"] - facts["live_group_partitions"]
    lines = [
        f"# Side by side with MirrorMaker 2 and kafka-consumer-groups (Apache Kafka {KAFKA_VERSION}, "
        f"{datetime.now(UTC):%Y-%m-%d})",
        "",
        f"Command: `make compare` (`python -m bench.compare --partitions {args.partitions} --records "
        f"{args.records}`). Machine: {platform.machine()}, {_cpus()} cores, Python {platform.python_version()}; "
        f"brokers, MirrorMaker 2 and kafka-consumer-groups from Maven Central's {KAFKA_VERSION} jars, each broker "
        "its own single-node KRaft cluster on this machine.",
        "",
        f"{facts['group_partitions']:,} group-partitions over {args.partitions} partitions of {args.records:,} "
        "records, the first 1% of every other partition lost before the copy. The truth: each group's final "
        "offset on the source. Exact: the group reads next the copy of that record; early: it reads records "
        "again (duplicates); late: it never reads some (skipped); not committed: the tool wrote nothing, so the "
        "group resumes by `auto.offset.reset` (with `latest`, Kafka's default, it skips to the end).",
        "",
        f"## The {seen:,} group-partitions whose final position the snapshot saw",
        "",
        *_rows(results, "seen"),
        "",
        f"## The {facts['live_group_partitions']:,} live group-partitions, still moving after the snapshot",
        "",
        "Consumers kept committing for "
        f"{args.live_after_s:.0f} s after offset-restore's scheduled snapshot, until the source stopped: no "
        "snapshot saw their final positions; MirrorMaker 2 synced them until the end.",
        "",
        *_rows(results, "moved"),
        "",
        f"Time at the failover: MirrorMaker 2 has nothing left to do if it kept up (it replicated all "
        f"{args.partitions * args.records:,} records in {facts['mm2_replicated_s']:.1f} s and synced offsets "
        f"all along; its offsets settled {facts['mm2_synced_s']:.1f} s after it started); offset-restore plans "
        f"and applies then (its snapshot, taken while MM2 ran, took {facts['snapshot_s']:.1f} s); "
        "kafka-consumer-groups applies offset-restore's CSV (the plan's time included, a JVM start too); the "
        "workflow's time is its apply-mode execution's, on moto's interpreter in this process (every state, "
        "moto's own work included).",
        "",
        *_workflow_lines(facts),
        "",
        "![where each tool resumes every group-partition](compare.svg)",
    ]
    return lines


def _workflow_lines(facts: dict[str, Any]) -> list[str]:
    """What the bench checked of the workflow's row against the CLI's (it stops when they differ)."""
    same, flow = facts["workflow_same"], facts["workflow_outcomes"]
    calls = ", ".join(f"{n} {name}" for name, n in sorted(facts["workflow_invocations"].items()))
    return [
        "The workflow's row matches the CLI's on MM2's replica entry for entry (checked by the run, which stops "
        f"where they differ): the {same['entries']:,} entries of its plan-mode execution are the CLI plan's (every "
        "field but those apply records), the entries after its apply-mode execution are the applied plan's (status, "
        f"offset, previous offset, verification), and the {same['committed']:,} offsets it committed are those the "
        f"CLI's apply committed: {flow['exact']:,} exact, {flow['early']:,} early ({flow['duplicates']:,} records read "
        f"twice), {flow['late']:,} late ({flow['skipped']:,} records skipped) and {flow['missing']:,} not committed "
        f"of all {facts['group_partitions']:,} group-partitions, live ones included. Its "
        f"apply-mode execution's Lambda invocations: {calls}. Its rollback-mode execution then put back MM2's "
        "offsets (checked) before the CLI applied.",
    ]


def _rows(results: list[tuple[Tool, dict[str, Any]]], subset: str) -> list[str]:
    lines = [
        "| tool | exact | early (records read twice; worst) | late (records skipped; worst) "
        "| not committed (records skipped with `latest`) | time at the failover | how |",
        "|---|---|---|---|---|---|---|",
    ]
    for tool, by_subset in results:
        o = by_subset[subset]
        how = tool.note or ""
        if tool.methods:
            how += ("; " if how else "") + ", ".join(f"{n} {m}" for m, n in sorted(tool.methods.items()))
        lines.append(
            f"| {tool.name} | {o['exact']:,} | {o['early']:,} ({o['duplicates']:,}; {o['worst_dup']:,}) | "
            f"{o['late']:,} ({o['skipped']:,}; {o['worst_skip']:,}) | {o['missing']:,} ({o['latest_skips']:,}) | "
            f"{tool.seconds:.1f} s | {how} |"
        )
    return lines


def _cpus() -> int:
    return os.cpu_count() or 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--records", type=int, default=100_000, help="records per partition (default 100,000)")
    parser.add_argument("--groups", type=int, default=24, help="groups at fixed lags (default 24)")
    parser.add_argument("--live", type=int, default=3, help="live groups, committing until the source stops")
    parser.add_argument(
        "--live-after-s",
        type=float,
        default=15.0,
        help="how long they run after the snapshot (longer than the 10 s a newer MM2 checkpoint must clear)",
    )
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--output", default=str(RESULTS / "compare.md"))
    args = parser.parse_args(argv)
    results, facts = run(args)
    lines = table(results, facts, args)
    print("\n".join(lines))
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("\n".join(lines) + "\n")
    output.with_suffix(".svg").write_text(svg([(t.label or t.name, o["all"]) for t, o in results]))
    output.with_suffix(".mm2.log").write_text(facts["mm2_log"])
    output.with_suffix(".json").write_text(json.dumps(facts["details"], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
