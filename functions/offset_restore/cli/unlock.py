"""``offset-restore unlock``: show who holds a target cluster's lock, and break a dead run's lock."""

from __future__ import annotations

import argparse
import shlex
from datetime import UTC, datetime
from typing import Any, TextIO

from offset_restore.apply.locks import TargetLock
from offset_restore.cli.arguments import Commands
from offset_restore.cli.aws import add_deployment, aws_client, from_stack
from offset_restore.errors import BadInputError
from offset_restore.terminal import printable_line

__all__ = ["register", "run"]


def register(commands: Commands) -> None:
    unlock = commands.add_parser(
        "unlock",
        help="show who holds a target cluster's lock, and break a dead run's lock",
        description="Without --owner: show the holder and its expiry (exit 3 while held). With --owner: break "
        "the lock if that owner still holds it (the one you were shown), so a crashed run does not block the "
        "target until its lock expires.",
    )
    add_deployment(
        unlock,
        "the deployed environment (offset-restore-ENV): its lock table and target cluster are read from the "
        "stack's outputs; or give --lock-table and --target-cluster",
    )
    unlock.add_argument("--lock-table", metavar="TABLE", help="DynamoDB table holding the lock")
    unlock.add_argument(
        "--target-cluster",
        metavar="NAME",
        help="the target cluster's name: the lock of the cluster id last locked under it (and a lock "
        "keyed by the name itself)",
    )
    unlock.add_argument(
        "--cluster-id", metavar="ID", help="the target cluster's id as its brokers report it (the lock's key)"
    )
    unlock.add_argument("--owner", metavar="OWNER", help="break the lock if this owner holds it")
    unlock.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.stack is None and args.lock_table and not (args.target_cluster or args.cluster_id):
        raise BadInputError("give --stack ENV, or --target-cluster NAME or --cluster-id ID with --lock-table")
    if args.stack is None and args.cluster_id is not None:
        from_stack(args, {"lock_table": "LockTableName"})
    else:
        from_stack(args, {"lock_table": "LockTableName", "target_cluster": "TargetClusterName"})
    lock = _lock(args, aws_client(args, "dynamodb"))
    held = lock.holder()
    if held is None:
        out.write(printable_line(f"target cluster {lock.label} is not locked") + "\n")
        return 0
    owner, until = held
    shown = datetime.fromtimestamp(until, UTC).isoformat()
    if args.owner is None:
        where = (
            f"--stack={shlex.quote(args.stack)}"
            if args.stack
            else f"--lock-table={shlex.quote(args.lock_table)} --cluster-id={shlex.quote(lock.cluster)}"
        )
        out.write(
            printable_line(
                f"target cluster {lock.label} is locked by {owner} until {shown}; if that run is dead, "
                f"break it with: offset-restore unlock {where} --owner={shlex.quote(owner)}"
            )
            + "\n"
        )
        return 3
    if owner != args.owner or not lock.break_lock(args.owner):
        raise BadInputError(f"the lock of {lock.label} is held by {owner}, not {args.owner}: not broken")
    out.write(printable_line(f"broke the lock of target cluster {lock.label} held by {owner} (until {shown})") + "\n")
    return 0


def _lock(args: argparse.Namespace, dynamodb: Any) -> TargetLock:
    """The lock by the id given, or by the id last locked under the name given (the name's own key too)."""
    if args.cluster_id:
        return TargetLock(args.lock_table, dynamodb, args.cluster_id, "unlock", name=args.target_cluster)
    return TargetLock.named(args.lock_table, dynamodb, args.target_cluster, "unlock")
