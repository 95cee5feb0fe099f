"""``offset-restore approve`` and ``deny``: answer a run waiting at its approval gate, as the caller's
AWS identity (recorded in the run's record and its report)."""

from __future__ import annotations

import argparse
import time
from typing import TextIO

from offset_restore.cli.arguments import Commands
from offset_restore.cli.aws import add_deployment, aws_client, from_stack
from offset_restore.errors import BadInputError
from offset_restore.terminal import printable_line
from offset_restore.workflow.approval import answer

__all__ = ["register", "run_approve", "run_deny"]


def register(commands: Commands) -> None:
    for name, verb, run in (
        ("approve", "let a run waiting at its approval gate write its plan", run_approve),
        ("deny", "end a run waiting at its approval gate with nothing written", run_deny),
    ):
        command = commands.add_parser(
            name,
            help=verb,
            description=f"{verb[0].upper()}{verb[1:]}. The answer is recorded with your AWS identity (STS "
            "GetCallerIdentity) and the time, in the run's record and its report; a question is answered once.",
        )
        command.add_argument("--restore-id", required=True, metavar="ID", help="the run's restore id")
        add_deployment(command, "the deployed environment (offset-restore-ENV): its table from the stack's outputs")
        command.add_argument("--table", metavar="TABLE", help="the deployment's DynamoDB table (or --stack)")
        command.add_argument("--reason", metavar="TEXT", help="why, recorded with the answer")
        command.set_defaults(run=run)


def run_approve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    return _answer(args, out, approve=True)


def run_deny(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    return _answer(args, out, approve=False)


def _answer(args: argparse.Namespace, out: TextIO, *, approve: bool) -> int:
    from_stack(args, {"table": "LockTableName"})
    reason = args.reason.strip() if args.reason else None
    if reason is not None and (not reason or len(reason) > 500 or not reason.isprintable()):
        raise BadInputError("--reason: give up to 500 printable characters")
    who = str(aws_client(args, "sts").get_caller_identity()["Arn"])
    answered = answer(
        args.table,
        aws_client(args, "dynamodb"),
        aws_client(args, "stepfunctions"),
        args.restore_id,
        approve=approve,
        who=who,
        now=time.time(),
        reason=reason,
    )
    out.write(printable_line(f"restore {args.restore_id}: {answered.phrase(time.time())}") + "\n")
    return 0
