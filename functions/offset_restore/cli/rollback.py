"""``offset-restore rollback``: with ``--execute``, put back the target offsets an apply replaced;
without it, preview every change (as ``apply``)."""

from __future__ import annotations

import argparse
from typing import TextIO

from offset_restore.apply.commit import ApplyOptions
from offset_restore.apply.run import PlanFile, run_rollback
from offset_restore.cli.apply import write_apply_report, write_preview
from offset_restore.cli.arguments import (
    Commands,
    add_connection,
    add_execute,
    connection_settings,
    previewing,
    seconds,
    target_lock,
)

__all__ = ["register", "run"]


def register(commands: Commands) -> None:
    rollback = commands.add_parser("rollback", help="put back the target offsets an apply replaced")
    add_connection(rollback)
    rollback.add_argument("--plan", required=True, metavar="PLAN_LOCATION", help="the applied plan (updated in place)")
    rollback.add_argument(
        "--target-cluster", metavar="NAME", help="the target's name if the plan used --target-cluster"
    )
    rollback.add_argument("--lock-table", metavar="TABLE", help="DynamoDB table for the single-writer lock")
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
    rollback.add_argument(
        "--allow-rewind",
        action="store_true",
        help="also roll back groups whose offsets moved past what apply wrote (their consumers ran on the "
        "target); without it such groups are left alone and reported",
    )
    add_execute(rollback)
    rollback.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    rollback.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    preview = previewing(args)
    plan_file = PlanFile(args.plan)
    connection = connection_settings(args)
    lock = target_lock(args, args.target_cluster or plan_file.load().target.cluster)
    wait = ApplyOptions(
        wait_timeout_s=0 if preview else args.wait_timeout,
        poll_interval_s=args.poll_interval,
        on_wait_timeout="commit_empty",
        allow_rewind=args.allow_rewind,
        dry_run=preview,
    )
    plan, report = run_rollback(args.plan, connection, target_name=args.target_cluster, lock=lock, wait=wait)
    if preview:
        return write_preview(args, plan, report, out, err)
    return write_apply_report(args, plan, report, out, err, "Rollback")
