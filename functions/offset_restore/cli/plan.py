"""``offset-restore plan``: translate a snapshot's positions to target offsets and write the plan."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import TextIO, get_args

from pydantic import ValidationError

from offset_restore.apply.run import PlanFile, Sealing
from offset_restore.cli.arguments import (
    ALL_OF_IT,
    Commands,
    add_connection,
    add_group_choice,
    add_plan_key,
    connection_settings,
    iso_time,
    margin_ms,
    restore_complete,
    write_result,
)
from offset_restore.cli.progress import ProgressLine
from offset_restore.errors import BadInputError
from offset_restore.formats.plan import PlanSummary
from offset_restore.snapshot.health import age_phrase, age_seconds
from offset_restore.terminal import printable_line
from offset_restore.translate.checkpoints import DynamoCheckpoints
from offset_restore.translate.document import ProblemKind
from offset_restore.translate.options import PLAN_DEFAULTS, OrderCheck, PlanOptions
from offset_restore.translate.run import (
    PlanResult,
    SnapshotChoice,
    parse_strategies,
    parse_topic_map,
    run_plan,
)
from offset_restore.validation import describe

__all__ = ["plan_summary", "register", "run"]


def register(commands: Commands) -> None:
    plan = commands.add_parser(
        "plan",
        help="translate a snapshot's positions to target offsets and write the plan",
        description="Find, for every group-partition of a snapshot, the target offset of the first restored "
        "record whose source offset is >= the committed one. Reads the target; writes only the plan.",
    )
    add_connection(plan)
    plan.add_argument(
        "--snapshot",
        required=True,
        metavar="LOCATION",
        help="a snapshot's manifest.json, or a location holding snapshots (default: the latest)",
    )
    plan.add_argument("--snapshot-id", metavar="ID", help="with a location: this snapshot")
    plan.add_argument(
        "--snapshot-as-of",
        type=iso_time,
        metavar="TIME",
        help="with a location: the newest snapshot taken at or before TIME",
    )
    plan.add_argument("--source-cluster", metavar="NAME", help="with a location holding several clusters")
    plan.add_argument("--output", required=True, metavar="PLAN_LOCATION", help="file or s3://bucket/key for the plan")
    add_plan_key(plan, trust=False)
    plan.add_argument(
        "--strategies",
        default=",".join(PLAN_DEFAULTS.strategies),
        metavar="LIST",
        help="strategies in the order to try (default: %(default)s)",
    )
    plan.add_argument(
        "--offset-header",
        default=PLAN_DEFAULTS.offset_header,
        metavar="NAME",
        help="header holding the source offset in restored records (default: %(default)s)",
    )
    plan.add_argument(
        "--partition-header",
        default=PLAN_DEFAULTS.partition_header,
        metavar="NAME",
        help="header holding the source partition in restored records: what maps a topic the restore "
        "re-partitioned (default: %(default)s)",
    )
    plan.add_argument(
        "--topic-map", action="append", default=[], metavar="SRC_TOPIC=TGT_TOPIC", help="a renamed topic (repeatable)"
    )
    add_group_choice(plan, "only the snapshot's groups")
    plan.add_argument(
        "--order-check",
        choices=get_args(OrderCheck),
        default=PLAN_DEFAULTS.order_check,
        help="windows: check the order of every window the header search reads and read a partition whole "
        "only when something contradicts a restore in order; full: read every partition whole, proof that does "
        "not rest on the order of records not read (default: %(default)s)",
    )
    plan.add_argument(
        "--timestamp-margin-ms",
        type=margin_ms,
        default=PLAN_DEFAULTS.timestamp_margin_ms,
        metavar="MS",
        help="the timestamp strategy resumes this much earlier than the clock skew it sees on the target "
        "(default: %(default)s)",
    )
    plan.add_argument(
        "--restore-complete",
        action="append",
        nargs="?",
        const=ALL_OF_IT,
        metavar="TOPIC[/PARTITION]",
        help="the restore is finished and will bring nothing more: all of it (no value), or these source topics or "
        "partitions (repeatable, or comma-separated). A group waiting for records the restore never brought resumes "
        "after the last restored record instead of staying pending, and what it will never read is counted; each "
        "pending entry's reason says what this would cost",
    )
    plan.add_argument(
        "--source-stopped-at",
        type=iso_time,
        metavar="TIME",
        help="when the source stopped serving its consumers (its failure, the alarm's time): a live group's "
        "exposure counts what it processed after the snapshot up to then, not up to the plan (default: up to the "
        "plan, an upper bound that grows with the clock)",
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
    plan.add_argument(
        "--mm2-checkpoints-topic",
        metavar="TOPIC",
        help="MirrorMaker 2's checkpoint topic on the target, for the mm2 strategy (default: the target's only "
        "<source alias>.checkpoints.internal; none: the strategy steps aside)",
    )
    plan.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    plan.set_defaults(run=run)


def _exposure(s: PlanSummary) -> str:
    """What the plan cannot see: the groups live at the snapshot read again what they processed since."""
    unknown = s.entries_exposure_unknown
    untold = f"{unknown:,} partitions without an earlier snapshot to say whether their groups moved" if unknown else ""
    idle = s.groups_assumed_idle
    assumed = f"{idle:,} groups idle at both snapshots, assumed idle since (0 read again)" if idle else ""
    if not s.groups_live:
        said = "; ".join(part for part in (untold, assumed) if part)
        return said or "no group was live (none read again what it processed after it)"
    also = "".join(f"; {part}" for part in (untold, assumed) if part)
    return f"{s.groups_live:,} groups were live: about {s.exposure_total:,} records they may read again{also}"


def _options(args: argparse.Namespace) -> PlanOptions:
    """The plan's settings from the command line, checked by the model the workflow's input uses."""
    try:
        return PlanOptions(
            strategies=parse_strategies(args.strategies),
            offset_header=args.offset_header,
            partition_header=args.partition_header,
            topic_map=parse_topic_map(args.topic_map),
            target_cluster=args.target_cluster,
            order_check=args.order_check,
            mm2_checkpoints_topic=args.mm2_checkpoints_topic,
            timestamp_margin_ms=args.timestamp_margin_ms,
            restore_complete=restore_complete(args.restore_complete),
            source_stopped_at=args.source_stopped_at,
        )
    except ValidationError as error:
        raise BadInputError(f"plan: {describe(error)}") from None


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.snapshot_id and args.snapshot_as_of:
        raise BadInputError("give --snapshot-id or --snapshot-as-of, not both")
    options = _options(args)
    checkpoints = None
    if args.checkpoint_table:
        import boto3

        checkpoints = DynamoCheckpoints(args.checkpoint_table, boto3.client("dynamodb"))
    connection = connection_settings(args)
    progress = ProgressLine(err)
    try:
        result = run_plan(
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
    _seal(args, err)
    document = result.model_dump(mode="json")
    age = None
    if result.snapshot_positions_at is not None and result.created_at is not None:
        age = age_phrase(result.snapshot_positions_at, result.created_at)
        document["snapshot_age_seconds"] = round(age_seconds(result.snapshot_positions_at, result.created_at), 1)
    write_result(args, out, err, json.dumps(document, indent=2, ensure_ascii=False), plan_summary(result, age))
    return 0 if result.summary.pending == 0 and result.summary.unmapped == 0 else 3


def _seal(args: argparse.Namespace, err: TextIO) -> None:
    """The plan sealed whole from the start (apply/seal.py). A key that cannot be made here (a read-only
    home) leaves it unsealed, said: its first apply seals it."""
    key = Path(args.plan_key) if args.plan_key else None
    try:
        Sealing(enabled=True, key_path=key, create=True).seal_new(PlanFile(args.output))
    except (BadInputError, OSError) as error:
        err.write(
            f"warning: the plan was not sealed ({printable_line(str(error))}): an edit before its first apply "
            "would not be seen; give --plan-key a writable key file\n"
        )


def plan_summary(result: PlanResult, snapshot_age: str | None = None) -> list[str]:
    """The human summary; ``snapshot_age`` is ``offsets as of 14 min before this run``."""
    s = result.summary
    methods = ", ".join(f"{count} {method}" for method, count in s.by_method.items()) or "none"
    lines = [
        f"Plan {result.restore_id} from snapshot {result.snapshot_id} "
        f"({result.source_cluster} -> {result.target_cluster})",
        *([f"  snapshot age      {snapshot_age}"] if snapshot_age else []),
        f"  group-partitions  {s.entries:,} in {s.groups:,} groups",
        f"  mapped            {s.mapped:,} ({methods}); exact {s.exact:,}",
        f"  pending           {s.pending:,}",
        f"  unmapped          {s.unmapped:,}",
        f"  duplicates bound  {s.max_duplicates_total:,} records at most, as of the snapshot's positions"
        + (f"; {s.entries_without_bound:,} entries without a bound" if s.entries_without_bound else ""),
        f"  after the snapshot {_exposure(s)}",
        *(
            [f"  never restored    at most {s.never_restored_total:,} records the groups had not processed"]
            if s.never_restored_total
            else []
        ),
        *(
            [f"  delivered again   {s.redelivered_total:,} records share groups had acknowledged past their start"]
            if s.redelivered_total
            else []
        ),
        f"  took              {result.duration_s:.2f} s, {sum(result.requests.values()):,} Kafka requests, "
        f"fetch rounds {result.fetch_rounds or '{}'}",
        f"  written to        {result.location}" + (f" and {result.csv}" if result.csv else ""),
    ]
    if result.fresher_from_mm2:
        lines.append(
            f"  from MirrorMaker 2 {result.fresher_from_mm2:,} group-partitions have a checkpoint newer than the "
            "snapshot (the fresher wins; each entry says how)"
        )
    for partition, why in list(result.out_of_order.items())[:10]:
        lines.append(f"  out of order: {partition}: {why} (read whole; resume points do not depend on order)")
    if len(result.out_of_order) > 10:
        lines.append(f"  ... and {len(result.out_of_order) - 10} more partitions out of order in the plan")
    for why in result.reshaped.values():
        lines.append(
            f"  shape changed: {why}; its groups are mapped on every target partition or held (see the entries)"
        )
    if result.csv_left_out_count:
        named = ", ".join(result.csv_left_out)
        more = result.csv_left_out_count - len(result.csv_left_out)
        lines.append(
            f"  left out of the CSV: {result.csv_left_out_count:,} groups held whole, as apply holds them: {named}"
            + (f", and {more:,} more" if more > 0 else "")
        )
    if result.csv_formula_count:
        named = ", ".join(result.csv_formulas) + (
            ", ..." if result.csv_formula_count > len(result.csv_formulas) else ""
        )
        lines.append(
            f"  in the CSV: {result.csv_formula_count:,} groups whose id or topic begins with =, +, - or @ ({named}): "
            "kafka-consumer-groups reads them as names, a spreadsheet would run them as formulas; do not open the "
            "CSV in one"
        )
    if result.csv_unmapped_topics:
        topics = ", ".join(f"{topic} ({count:,})" for topic, count in result.csv_unmapped_topics.items())
        lines.append(
            f"  not in the CSV: the unmapped partitions of {topics}; their groups' other lines are there, as apply "
            "writes them (their consumers start those partitions from their reset policy)"
        )
    lines += [problem_line(kind) for kind in result.problems]
    more = s.pending + s.unmapped - sum(kind.count for kind in result.problems)
    if more > 0:
        lines.append(f"  ... and {more:,} more in the plan")
    return lines


_MISSING_TOPIC = re.compile(r"topic (\S+) does not exist on the target")


def problem_line(kind: ProblemKind) -> str:
    """One line per kind of pending or unmapped entry, with the groups it touches and, for a topic the
    target does not have, the option that maps it to the name it was restored under."""
    groups = ", ".join(kind.groups) + (", ..." if kind.count > len(kind.groups) else "")
    line = f"  {kind.status}: {kind.reason} ({kind.count:,} group-partitions; groups {groups})"
    if _MISSING_TOPIC.search(kind.reason or ""):
        line += f" — restored under another name? --topic-map {kind.topic}=TARGET_TOPIC"
    return line
