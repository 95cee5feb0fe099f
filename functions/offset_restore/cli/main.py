"""The ``offset-restore`` command (docs/design.md §5.1): one module per subcommand in this package,
each with ``register`` (its options) and ``run`` (parse, call one library function, print).

Exit status: 0 done, 1 failed, 2 bad usage or bad input, 3 done in part, 130 interrupted.
A human summary goes to stdout; with ``--json`` stdout holds one JSON document and the summary goes
to stderr. Progress appears on stderr only when it is a terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from offset_restore.cli import apply, demo, plan, report, rollback, snapshot, snapshots, start, status, unlock
from offset_restore.cli.arguments import StrictParser
from offset_restore.errors import OffsetRestoreError
from offset_restore.kafka.log_safety import keep_secrets_out_of_logs

__all__ = ["build_parser", "main"]

COMMANDS = (snapshot, plan, apply, rollback, unlock, start, status, report, snapshots, demo)
"""In the order ``--help`` lists them: the restore's path first, then the deployed workflow's."""


def build_parser() -> StrictParser:
    parser = StrictParser(
        prog="offset-restore",
        description="Carry Kafka consumer groups to the right offsets on a restored or replica cluster.",
    )
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
    try:
        return int(args.run(args, out, err))
    except OffsetRestoreError as error:
        err.write(f"offset-restore {args.command}: error: {error}\n")
        return error.exit_status
    except KeyboardInterrupt:
        err.write(f"offset-restore {args.command}: interrupted\n")
        return 130
