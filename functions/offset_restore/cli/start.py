"""``offset-restore start``: start a run of a deployed state machine and follow it until it ends."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import TextIO

from offset_restore.cli.arguments import ALL_OF_IT, Commands, add_group_choice, iso_time, restore_complete, write_result
from offset_restore.cli.aws import add_deployment, aws_client, from_stack
from offset_restore.errors import BadInputError
from offset_restore.files import read_bounded
from offset_restore.workflow.executions import follow, run_ending, start_run

__all__ = ["register", "run"]


def register(commands: Commands) -> None:
    start = commands.add_parser(
        "start",
        help="start a run of a deployed state machine and follow it until it ends",
        description="Start a run of the deployed workflow (plan, apply, rollback or migrate) and follow it "
        "until it ends, printing its progress; the exit status says how the run ended.",
    )
    add_deployment(start, "the deployed environment (offset-restore-ENV): its state machine from the stack's outputs")
    start.add_argument("--state-machine", metavar="ARN", help="the deployed workflow (or --stack)")
    start.add_argument("--input", metavar="FILE", help="the execution input (JSON file); options below override")
    start.add_argument(
        "--mode",
        choices=["plan", "apply", "rollback", "migrate"],
        help="plan only, plan and commit, roll back --restore-id, or migrate (the source is up: wait until the "
        "groups stop there, snapshot them, commit every one exactly)",
    )
    add_group_choice(start, "only the groups")
    start.add_argument(
        "--restore-id",
        metavar="ID",
        help="the restore this run belongs to: the same id again continues it (its execution is named ID-<time>)",
    )
    start.add_argument(
        "--restore-complete",
        action="append",
        nargs="?",
        const=ALL_OF_IT,
        metavar="TOPIC[/PARTITION]",
        help="the restore is finished (all of it, or these source topics or partitions): entries waiting for "
        "records it never brought resume after the last restored record (as plan --restore-complete)",
    )
    start.add_argument(
        "--source-stopped-at",
        type=iso_time,
        metavar="TIME",
        help="when the source stopped serving its consumers: exposure is counted up to then (as plan "
        "--source-stopped-at)",
    )
    start.add_argument("--no-follow", action="store_true", help="start and return at once")
    start.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    start.set_defaults(run=run)


def execution_name(restore_id: str | None, now: datetime | None = None) -> str | None:
    """An execution's name for a run of ``restore_id``: unique per run (Step Functions never reuses a
    name), so the same restore id can run again — to apply what a plan run showed, or to finish a
    restore declared complete. At most 80 characters, as Step Functions allows."""
    if restore_id is None:
        return None
    stamp = f"{(now or datetime.now(UTC)):%Y%m%dT%H%M%S%fZ}"
    return f"{restore_id[: 80 - len(stamp) - 1]}-{stamp}"


MAX_INPUT_BYTES = 256 * 1024
"""The largest execution input Step Functions accepts (256 KiB); a larger file could not start a run."""


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from_stack(args, {"state_machine": "StateMachineArn"})
    run_input: dict[str, object] = {}
    if args.input:
        data = read_bounded(args.input, limit=MAX_INPUT_BYTES, what="--input", kind="an execution input")
        try:
            loaded = json.loads(data)
        except ValueError as error:
            raise BadInputError(f"--input {args.input}: {error}") from None
        if not isinstance(loaded, dict):
            raise BadInputError(f"--input {args.input} must hold a JSON object")
        run_input.update(loaded)
    for key in ("mode", "groups", "restore_id"):
        if getattr(args, key) is not None:
            run_input[key] = getattr(args, key)
    if args.restore_complete:
        run_input["restore_complete"] = restore_complete(args.restore_complete)
    if args.source_stopped_at is not None:
        run_input["source_stopped_at"] = args.source_stopped_at.isoformat()
    sfn = aws_client(args, "stepfunctions")
    execution = start_run(sfn, args.state_machine, run_input, execution_name(args.restore_id))
    err.write(f"started {execution}\n")
    if args.no_follow:
        out.write(json.dumps({"execution_arn": execution}) + "\n" if args.json else f"{execution}\n")
        return 0
    described = follow(sfn, execution, err)
    status, lines = run_ending(described)
    result = {
        "execution_arn": execution,
        "status": described["status"],
        "error": described.get("error"),
        "cause": described.get("cause"),
        "ended": lines,
        "exit_status": status,
    }
    write_result(args, out, err, json.dumps(result, indent=2), lines)
    return status
