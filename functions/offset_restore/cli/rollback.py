"""``offset-restore rollback``: with ``--execute``, put back the target offsets an apply replaced;
without it, preview every change (as ``apply``).

The previous offsets come from the applied plan file (``--plan``), or, for a run the deployed
workflow applied (from the console or an alarm), from the mappings its commits saved in DynamoDB
(``--restore-id ID --stack ENV``)."""

from __future__ import annotations

import argparse
from typing import TextIO

from offset_restore.apply.model import ApplyOptions, ApplyReport, Progress
from offset_restore.apply.run import PlanFile, rollback_workflow_run, run_rollback
from offset_restore.cli.apply import write_apply_report, write_preview
from offset_restore.cli.arguments import (
    Commands,
    add_allow_rewind,
    add_connection,
    add_execute,
    add_group_choice,
    add_plan_key,
    add_remove_static_members,
    add_unfenced,
    chosen_groups,
    connection_settings,
    previewing,
    rewind_groups,
    sealing,
    seconds,
    target_lock,
)
from offset_restore.cli.aws import add_deployment, aws_client, from_stack
from offset_restore.cli.progress import ProgressLine
from offset_restore.errors import BadInputError
from offset_restore.formats.plan import Plan
from offset_restore.snapshot.filters import NameFilter
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.runs import RunRecord

__all__ = ["register", "run"]


def register(commands: Commands) -> None:
    rollback = commands.add_parser(
        "rollback",
        help="put back the target offsets an apply replaced",
        description="Put back the target offsets an apply replaced: those of a plan file (--plan), or those a "
        "deployed workflow run committed (--restore-id ID --stack ENV). Without --execute, a preview.",
    )
    add_connection(rollback)
    source = rollback.add_argument_group("what to roll back (one of)")
    source.add_argument("--plan", metavar="PLAN_LOCATION", help="the applied plan (updated in place)")
    source.add_argument(
        "--restore-id",
        metavar="ID",
        help="a run of the deployed workflow: its previous offsets from the deployment's table (with --stack, "
        "or --lock-table and --target-cluster)",
    )
    add_group_choice(rollback, "only the run's groups")
    rollback.add_argument(
        "--target-cluster", metavar="NAME", help="the target's name if the plan used --target-cluster"
    )
    add_unfenced(rollback)
    rollback.add_argument("--lock-table", metavar="TABLE", help="DynamoDB table for the single-writer lock")
    add_deployment(
        rollback,
        "with --restore-id: the deployed environment (offset-restore-ENV); its table and target cluster are read "
        "from the stack's outputs",
    )
    rollback.add_argument(
        "--wait-timeout",
        type=seconds(0, 7 * 86_400),
        default=0.0,
        metavar="SECONDS",
        help="how long to wait for active groups to become empty; those still active then are left and "
        "named (default: %(default)s, no wait)",
    )
    rollback.add_argument(
        "--poll-interval", type=seconds(0.1, 3600), default=5.0, metavar="SECONDS", help="how often to look again"
    )
    add_allow_rewind(
        rollback,
        "also roll back the groups matching GROUP_REGEX (alone: every group) whose offsets moved past what apply "
        "wrote (their consumers ran on the target); without it such groups are left alone and reported",
    )
    add_execute(rollback)
    add_remove_static_members(rollback)
    add_plan_key(rollback)
    rollback.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    rollback.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    preview = previewing(args)
    if (args.plan is None) == (args.restore_id is None):
        raise BadInputError("give --plan PLAN_LOCATION (an applied plan file) or --restore-id ID (a workflow run)")
    wait = ApplyOptions(
        wait_timeout_s=0 if preview else args.wait_timeout,
        poll_interval_s=args.poll_interval,
        on_wait_timeout="commit_empty",
        rewind_groups=rewind_groups(args),
        dry_run=preview,
        groups=chosen_groups(args),
        remove_static_members=args.remove_static_members,
    )
    progress = ProgressLine(err)
    try:
        of = _of_workflow_run if args.restore_id else _of_plan_file
        plan, report = of(args, wait, err, progress)
    finally:
        progress.finish()
    if preview:
        return write_preview(args, plan, report, out, err)
    return write_apply_report(args, plan, report, out, err, "Rollback")


def _of_plan_file(
    args: argparse.Namespace, wait: ApplyOptions, err: TextIO, progress: Progress
) -> tuple[Plan, ApplyReport]:
    if args.stack:
        raise BadInputError("--stack goes with --restore-id, not --plan")
    plan_file = PlanFile(args.plan)
    connection = connection_settings(args, err)
    lock = target_lock(args, args.target_cluster or plan_file.load().target.cluster)
    return run_rollback(
        args.plan,
        connection,
        target_name=args.target_cluster,
        lock=lock,
        wait=wait,
        sealing=sealing(args, create=False),
        progress=progress,
    )


def _of_workflow_run(
    args: argparse.Namespace, wait: ApplyOptions, err: TextIO, progress: Progress
) -> tuple[Plan, ApplyReport]:
    from_stack(args, {"lock_table": "LockTableName", "target_cluster": "TargetClusterName"})
    groups = chosen_groups(args) or NameFilter()
    dynamodb = aws_client(args, "dynamodb")
    recorded, committed_id = RunRecord(args.lock_table, dynamodb).target_of(args.restore_id)
    if recorded is not None and recorded != args.target_cluster:
        raise BadInputError(
            f"restore {args.restore_id} was applied to cluster {recorded}, not {args.target_cluster}: nothing written"
        )
    mappings = MappingStore(args.lock_table, dynamodb)
    lock = target_lock(args, args.target_cluster)
    return rollback_workflow_run(
        args.restore_id,
        mappings,
        connection_settings(args, err),
        lock=lock,
        wait=wait,
        groups=groups,
        cluster_id=committed_id,
        progress=progress,
    )
