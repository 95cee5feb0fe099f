"""``offset-restore start``: start a run of a deployed state machine and follow it until it ends."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from offset_restore.cli.arguments import Commands
from offset_restore.cli.aws import add_deployment, aws_client, from_stack
from offset_restore.errors import BadInputError
from offset_restore.terminal import printable_line
from offset_restore.workflow.executions import follow, start_run

__all__ = ["register", "run"]


def register(commands: Commands) -> None:
    start = commands.add_parser("start", help="start a run of a deployed state machine and follow it until it ends")
    add_deployment(start, "the deployed environment (offset-restore-ENV): its state machine from the stack's outputs")
    start.add_argument("--state-machine", metavar="ARN", help="the deployed workflow (or --stack)")
    start.add_argument("--input", metavar="FILE", help="the execution input (JSON file); options below override")
    start.add_argument("--mode", choices=["plan", "apply"], help="plan only, or plan and commit")
    start.add_argument("--groups", metavar="REGEX", help="only these groups")
    start.add_argument("--restore-id", metavar="ID", help="names the run and its execution")
    start.add_argument("--no-follow", action="store_true", help="start and return at once")
    start.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    start.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from_stack(args, {"state_machine": "StateMachineArn"})
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
    sfn = aws_client(args, "stepfunctions")
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
            printable_line(
                f"{described['status']}" + (f": {result['error']}: {result['cause']}" if result["error"] else "")
            )
            + "\n"
        )
    return 0 if described["status"] == "SUCCEEDED" else 1
