"""The ``offset-restore`` command (docs/design.md §5.1): one module per subcommand in this package,
each with ``register`` (its options) and ``run`` (parse, call one library function, print).

Exit status: 0 done, 1 failed, 2 bad usage or bad input, 3 done in part, 130 interrupted.
A human summary goes to stdout; with ``--json`` stdout holds one JSON document and the summary goes
to stderr. Progress appears on stderr only when it is a terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from importlib import metadata
from typing import TextIO

from offset_restore.cli import (
    apply,
    approve,
    demo,
    migrate,
    plan,
    report,
    rollback,
    snapshot,
    snapshots,
    start,
    status,
    unlock,
)
from offset_restore.cli.arguments import StrictParser
from offset_restore.cli.aws import describe_aws_error
from offset_restore.errors import OffsetRestoreError
from offset_restore.kafka.log_safety import keep_secrets_out_of_logs
from offset_restore.kafka.protocol import readable_codecs
from offset_restore.terminal import printable_line

__all__ = ["build_parser", "main"]

COMMANDS = (snapshot, plan, apply, migrate, rollback, unlock, start, approve, status, report, snapshots, demo)
"""In the order ``--help`` lists them: the restore's path first, then the deployed workflow's."""


EXIT_STATUS = """exit status (every command):
  0    done
  1    failed: a cluster or AWS unreachable, a broker error, a group that failed or did not verify
  2    bad usage or bad input: nothing was read or written where that could be checked first
  3    done in part: pending or unmapped entries, groups skipped, a lock still held
  130  interrupted (Ctrl-C)"""


def version() -> str:
    """The installed distribution's version (a source checkout without metadata says so)."""
    try:
        return metadata.version("offset-restore")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> StrictParser:
    parser = StrictParser(
        prog="offset-restore",
        description="Carry Kafka consumer groups to the right offsets on a restored or replica cluster.",
        epilog=EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    codecs = ", ".join(f"{codec}{'' if found else ' (missing)'}" for codec, found in readable_codecs().items())
    parser.add_argument("--version", action="version", version=f"offset-restore {version()}; codecs: {codecs}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=StrictParser)
    for command in COMMANDS:
        command.register(commands)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    keep_secrets_out_of_logs()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:
        return int(stop.code or 0)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # what a printed next command repeats
    try:
        return int(args.run(args, out, err))
    except OffsetRestoreError as error:
        return _failed(args, out, err, str(error), error.exit_status)
    except KeyboardInterrupt:
        return _failed(args, out, err, "interrupted", 130)
    except Exception as error:
        described = describe_aws_error(error)  # AWS configuration and refusals: one line, not a traceback
        if described is None:
            raise
        return _failed(args, out, err, *described)


def _failed(args: argparse.Namespace, out: TextIO, err: TextIO, message: str, status: int) -> int:
    """The error on stderr in one line; with ``--json`` also as the one JSON document on stdout (a
    script reading stdout learns what went wrong, not only that nothing came)."""
    err.write(f"offset-restore {args.command}: {'error: ' if status != 130 else ''}{printable_line(message)}\n")
    if getattr(args, "json", False):
        out.write(json.dumps({"command": args.command, "error": message, "exit_status": status}, indent=2) + "\n")
    return status
