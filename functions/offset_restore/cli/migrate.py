"""``offset-restore migrate``: the source is up (a planned migration, a drill, a failback), so every group
moves exactly — wait until the groups stop on the source, snapshot them then, wait until the target holds
their records, plan and apply (migration/run.py). Without ``--execute``: a preview that waits for nothing
and commits nothing."""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from pydantic import ValidationError

from offset_restore.apply.model import WAIT_TIMEOUT_S, ApplyOptions
from offset_restore.cli.apply import apply_status, preview_parts, report_parts
from offset_restore.cli.arguments import (
    Commands,
    add_allow_rewind,
    add_connection,
    add_execute,
    add_plan_key,
    add_remove_static_members,
    add_selection,
    add_source_connection,
    add_unfenced,
    connection_settings,
    previewing,
    rewind_groups,
    sealing,
    seconds,
    selection,
    source_connection_settings,
    target_lock,
    write_result,
)
from offset_restore.cli.plan import plan_summary
from offset_restore.cli.progress import ProgressLine
from offset_restore.errors import BadInputError
from offset_restore.formats.plan import PlanSummary
from offset_restore.migration.run import Migration, MigrationResult, run_migration
from offset_restore.migration.source import STARTED_AGAIN, active_phrase
from offset_restore.translate.options import PLAN_DEFAULTS, PlanOptions
from offset_restore.translate.run import parse_strategies, parse_topic_map
from offset_restore.validation import describe

__all__ = ["register", "run"]


def register(commands: Commands) -> None:
    migrate = commands.add_parser(
        "migrate",
        help="move every group exactly while the source is up: wait for it to stop there, snapshot, wait for the "
        "target to catch up, plan and apply",
        description="A planned migration, a drill or a failback: wait until the selected groups are empty on the "
        "source (their consumers stopped; named while waiting), take the final snapshot then, plan again until "
        "every entry is exact (the replica or restore has brought the records at every committed position), then "
        "apply as 'apply --execute' does. Without --execute: look once on the source, snapshot, plan once and "
        "preview the apply; nothing is committed.",
    )
    add_source_connection(migrate)
    add_connection(migrate)
    migrate.add_argument(
        "--snapshots", required=True, metavar="LOCATION", help="folder or s3://bucket/prefix for the final snapshot"
    )
    migrate.add_argument("--plan", required=True, metavar="PLAN_LOCATION", help="the plan file (written, then applied)")
    add_selection(migrate)
    migrate.add_argument(
        "--strategies",
        default=",".join(PLAN_DEFAULTS.strategies),
        metavar="LIST",
        help="as plan's (default: %(default)s)",
    )
    migrate.add_argument("--offset-header", default=PLAN_DEFAULTS.offset_header, metavar="NAME", help="as plan's")
    migrate.add_argument(
        "--topic-map", action="append", default=[], metavar="SRC_TOPIC=TGT_TOPIC", help="a renamed topic (repeatable)"
    )
    migrate.add_argument("--mm2-checkpoints-topic", metavar="TOPIC", help="as plan's")
    migrate.add_argument("--restore-id", metavar="ID", help="the plan's restore id (default: restore-<time>-<random>)")
    migrate.add_argument("--target-cluster", metavar="NAME", help="the target's name (default: its cluster id)")
    migrate.add_argument(
        "--wait-timeout",
        type=seconds(0, 7 * 86_400),
        default=float(WAIT_TIMEOUT_S),
        metavar="SECONDS",
        help="how long to wait for the groups to stop on the source, then to be empty on the target (default: "
        "%(default)g)",
    )
    migrate.add_argument(
        "--catch-up-timeout",
        type=seconds(0, 7 * 86_400),
        default=900.0,
        metavar="SECONDS",
        help="how long to plan again while some entry is not exact: the target has not yet brought the records at "
        "every committed position (default: %(default)g); then nothing is written",
    )
    migrate.add_argument(
        "--poll-interval", type=seconds(0.1, 3600), default=5.0, metavar="SECONDS", help="default: %(default)s"
    )
    migrate.add_argument(
        "--on-wait-timeout",
        choices=["fail", "commit_empty"],
        default="fail",
        help="when groups stay active on the source or the target: write nothing, or move the others (default: fail)",
    )
    add_allow_rewind(migrate, "also move back the groups matching GROUP_REGEX that are past the mapped offset on the "
                     "target (as apply's)")  # fmt: skip
    add_execute(migrate)
    add_remove_static_members(migrate)
    add_plan_key(migrate)
    add_unfenced(migrate)
    migrate.add_argument("--lock-table", metavar="TABLE", help="DynamoDB table for the single-writer lock (as apply's)")
    migrate.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    migrate.set_defaults(run=run)


def _migration(args: argparse.Namespace, preview: bool) -> Migration:
    try:
        return Migration(
            snapshot=selection(args),
            plan=PlanOptions(
                strategies=parse_strategies(args.strategies),
                offset_header=args.offset_header,
                topic_map=parse_topic_map(args.topic_map),
                target_cluster=args.target_cluster,
                mm2_checkpoints_topic=args.mm2_checkpoints_topic,
            ),
            apply=ApplyOptions(
                wait_timeout_s=args.wait_timeout,
                poll_interval_s=args.poll_interval,
                on_wait_timeout=args.on_wait_timeout,
                rewind_groups=rewind_groups(args),
                dry_run=preview,
                remove_static_members=args.remove_static_members,
            ),
            catch_up_timeout_s=args.catch_up_timeout,
            restore_id=args.restore_id,
        )
    except ValidationError as error:
        raise BadInputError(f"migrate: {describe(error)}") from None
    except ValueError as error:
        raise BadInputError(str(error)) from None


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    preview = previewing(args)
    migration = _migration(args, preview)
    source, target = source_connection_settings(args, err), connection_settings(args, err)
    progress = ProgressLine(err)
    try:
        result = run_migration(
            source,
            target,
            args.snapshots,
            args.plan,
            migration,
            lock=target_lock(args, args.target_cluster),
            sealing=sealing(args, create=not preview),
            progress=progress,
        )
    finally:
        progress.finish()
    return _write(args, result, out, err, preview)


def _write(args: argparse.Namespace, result: MigrationResult, out: TextIO, err: TextIO, preview: bool) -> int:
    """What happened on the source and the target, then the apply's own report, as one summary and one
    JSON document; 3 when something was left: groups still active on the source, or a target that did
    not catch up (nothing written)."""
    lines, document = migration_lines(result, args.catch_up_timeout), _document(result)
    status = 3
    if result.applied is not None:
        plan, report = result.applied
        parts = preview_parts(args, plan, report) if preview else report_parts(args, plan, report, "Migration")
        document["apply"], more = parts
        lines += more
        status = 0 if preview else apply_status(report)
        if status == 0 and result.left_on_source and not preview:
            status = 3
    write_result(args, out, err, json.dumps(document, indent=2, ensure_ascii=False), lines)
    return status


def migration_lines(result: MigrationResult, catch_up_timeout_s: float) -> list[str]:
    stopped, s = result.source, result.plan.summary
    again = started_again(result)
    stayed = len(stopped.stopped) - len(again)
    lines = [
        f"Migration {result.plan.restore_id}: {stayed:,} of {len(stopped.groups):,} groups stopped on "
        f"the source after {stopped.waited_s:.1f} s ({stopped.polls} looks)"
        + (f"; {len(again):,} more stopped, then started again before their write" if again else ""),
        *(
            [f"  still active on the source, not moved: {active_phrase(result.left_on_source)}"]
            if result.left_on_source
            else []
        ),
        *(f"  {group}: {why}; not moved" for group, why in again.items()),
        f"  final snapshot    {result.snapshot.snapshot_id} ({result.snapshot.counts.group_partitions:,} "
        f"group-partitions) in {result.snapshot.location}",
    ]
    if result.caught_up:
        lines.append(
            f"  target caught up  every one of {s.entries:,} group-partitions exact after {result.plans} plans "
            f"({result.caught_up_s:.1f} s)"
        )
    else:
        lines += [
            f"  NOT CAUGHT UP     {s.not_exact:,} of {s.entries:,} group-partitions not exact after {result.plans} "
            f"plans ({result.caught_up_s:.1f} s of {catch_up_timeout_s:g}); " + _not_caught_up_outcome(result),
            *_never_mapped(s),
            *_never_proven(s),
            *plan_summary(result.plan)[1:],
        ]
    return lines


def _never_mapped(s: PlanSummary) -> list[str]:
    """Entries no later plan maps, not waited for: said apart from those the target may still bring."""
    if not s.held:
        return []
    return [
        f"  CANNOT BE MAPPED  {s.held:,} of them are of a topic whose shape changed on the target, which no record "
        "maps (no partition header): not waited for, as a later plan reads the same topic; keep those groups on "
        "the source, or give the target the topic with the source's partitions (the reasons are below)"
    ]


def _never_proven(s: PlanSummary) -> list[str]:
    """Entries no later plan proves, not waited for: the way forward named."""
    if not s.unprovable:
        return []
    return [
        f"  CANNOT BE PROVEN  {s.unprovable:,} of them are not exact for records the target already holds (moved "
        "before the position, copied twice, or identical: the reasons are below), which no later plan changes: not "
        "waited for. Write those groups where they resume early (offset-restore apply --execute with this run's "
        "--plan: they read again what lies between), or keep them on the source"
    ]


def started_again(result: MigrationResult) -> dict[str, str]:
    """The groups the last look before their write found running again on the source (not moved)."""
    skipped = result.applied[1].groups_skipped if result.applied else {}
    return {g: why for g, why in sorted(skipped.items()) if why.startswith(STARTED_AGAIN)}


def _not_caught_up_outcome(result: MigrationResult) -> str:
    if result.applied is None:
        return "nothing was written"
    if result.preview:
        return "previewed as they are"
    return "the groups proven exact are moved, the others not (each named below)"


def _document(result: MigrationResult) -> dict[str, Any]:
    return {
        "restore_id": result.plan.restore_id,
        "source": {
            "groups": result.source.groups,
            "still_active": {g: i.state for g, i in result.source.still_active.items()},
            "left_on_source": {g: i.state for g, i in result.left_on_source.items()},
            "waited_s": result.source.waited_s,
            "polls": result.source.polls,
        },
        "snapshot": result.snapshot.model_dump(mode="json"),
        "plan": result.plan.model_dump(mode="json"),
        "plans": result.plans,
        "caught_up": result.caught_up,
        "caught_up_s": result.caught_up_s,
        "applied": result.applied is not None,
    }
