"""``offset-restore status``: a run's mappings, counts per status and what needs attention."""

from __future__ import annotations

import argparse
import json
import time
from typing import TextIO

from offset_restore.cli.arguments import Commands
from offset_restore.cli.aws import add_deployment, aws_client, from_stack
from offset_restore.stores.mappings import MappingStore
from offset_restore.terminal import printable_line
from offset_restore.workflow.approval import waiting
from offset_restore.workflow.executions import run_status

__all__ = ["register", "run"]


def register(commands: Commands) -> None:
    status = commands.add_parser(
        "status",
        help="a run's mappings: counts per status and what needs attention",
        description="Show a deployed run's mappings: how many are in each status, what needs attention, and "
        "whether it waits for an approval. Reads the deployment's table; writes nothing.",
    )
    status.add_argument("--restore-id", required=True, metavar="ID", help="the run's restore id")
    add_deployment(status, "the deployed environment (offset-restore-ENV): its table from the stack's outputs")
    status.add_argument("--table", metavar="TABLE", help="the deployment's DynamoDB table (or --stack)")
    status.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    status.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from_stack(args, {"table": "LockTableName"})
    dynamodb = aws_client(args, "dynamodb")
    gate = waiting(args.table, dynamodb, args.restore_id)
    if gate is not None and not args.json:  # the approval gate first: a run waiting there has no mappings written
        out.write(printable_line(f"Restore {args.restore_id}: {gate[0].phrase(time.time())}") + "\n")
    status = run_status(MappingStore(args.table, dynamodb), args.restore_id)
    if gate is not None:
        status["approval"] = gate[0].phrase(time.time())
    # As start's: a run with something left is not done — groups that need attention, or an approval gate
    # that did not let the run through (denied, timed out, still waiting, or an approval not yet delivered).
    held_at_gate = gate is not None and (gate[0].status != "approved" or not gate[0].delivered)
    needs = 3 if status["attention"] or held_at_gate else 0
    if args.json:
        out.write(json.dumps(status, indent=2) + "\n")
        return needs
    s = status["summary"]
    said = (
        f"Restore {args.restore_id}: {s['entries']:,} group-partitions in {s['groups']:,} groups; "
        f"{s['mapped']:,} mapped ({s['exact']:,} exact); statuses {status['statuses']}"
    )
    out.write(printable_line(said) + "\n")
    if status["attention"]:
        out.write(f"needs attention: {printable_line(', '.join(status['attention'][:20]))}\n")
    return needs
