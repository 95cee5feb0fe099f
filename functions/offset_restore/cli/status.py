"""``offset-restore status``: a run's mappings, counts per status and what needs attention."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from offset_restore.cli.arguments import Commands
from offset_restore.cli.aws import add_deployment, aws_client, from_stack
from offset_restore.terminal import printable_line
from offset_restore.translate.mapping_store import MappingStore
from offset_restore.workflow.executions import run_status

__all__ = ["register", "run"]


def register(commands: Commands) -> None:
    status = commands.add_parser("status", help="a run's mappings: counts per status and what needs attention")
    status.add_argument("--restore-id", required=True, metavar="ID")
    add_deployment(status, "the deployed environment (offset-restore-ENV): its table from the stack's outputs")
    status.add_argument("--table", metavar="TABLE", help="the deployment's DynamoDB table (or --stack)")
    status.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    status.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from_stack(args, {"table": "LockTableName"})
    status = run_status(MappingStore(args.table, aws_client(args, "dynamodb")), args.restore_id)
    needs = 3 if status["attention"] else 0  # as start's: a run with something left is not done
    if args.json:
        out.write(json.dumps(status, indent=2) + "\n")
        return needs
    s = status["summary"]
    out.write(
        f"Restore {args.restore_id}: {s['entries']:,} group-partitions in {s['groups']:,} groups; "
        f"{s['mapped']:,} mapped ({s['exact']:,} exact); statuses {status['statuses']}\n"
    )
    if status["attention"]:
        out.write(f"needs attention: {printable_line(', '.join(status['attention'][:20]))}\n")
    return needs
