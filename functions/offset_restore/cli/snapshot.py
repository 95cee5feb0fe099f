"""``offset-restore snapshot``: record every consumer group's committed offsets and the evidence to
find them again, from a live cluster or a restored copy of ``__consumer_offsets``."""

from __future__ import annotations

import argparse
from typing import TextIO

from offset_restore.cli.arguments import (
    Commands,
    add_connection,
    add_selection,
    connection_settings,
    iso_time,
    selection,
    write_result,
)
from offset_restore.cli.progress import ProgressLine
from offset_restore.errors import BadInputError
from offset_restore.snapshot.fingerprint import DEFAULT_OFFSET_HEADER
from offset_restore.snapshot.run import SnapshotResult, run_snapshot, run_snapshot_from_export
from offset_restore.snapshot.summary import snapshot_summary
from offset_restore.stores.storage import open_location
from offset_restore.terminal import printable_line

__all__ = ["empty_reason", "register", "run"]


def register(commands: Commands) -> None:
    snap = commands.add_parser(
        "snapshot",
        help="record every consumer group's committed offsets and the evidence to find them again",
        description="Record consumer group positions of a cluster (or of a restored __consumer_offsets "
        "copy) to a folder or s3://bucket/prefix.",
    )
    add_connection(snap, required=False)
    snap.add_argument("--output", required=True, metavar="LOCATION", help="folder or s3://bucket/prefix")
    add_selection(snap)
    snap.add_argument(
        "--offset-header",
        default=DEFAULT_OFFSET_HEADER,
        metavar="NAME",
        help="header left out of fingerprints (a restore adds it; default: %(default)s)",
    )
    snap.add_argument(
        "--origin-search",
        action="store_true",
        help="a failback's snapshot of a cluster a restore wrote: for each group that processed records produced "
        "here after the restore, find the last restored record before it (one probe per such partition, then a "
        "search; migrate always does)",
    )
    snap.add_argument(
        "--cluster",
        metavar="NAME",
        help="name of the cluster in the snapshot's path (default: the cluster id it reports)",
    )
    snap.add_argument("--snapshot-id", metavar="ID", help="default: the start time and a random suffix")
    snap.add_argument(
        "--from-offsets-topic",
        metavar="TOPIC",
        help="read positions from a restored copy of __consumer_offsets in TOPIC instead",
    )
    snap.add_argument(
        "--as-of",
        type=iso_time,
        metavar="TIME",
        help="with --from-offsets-topic: the last commits at or before TIME (ISO-8601); with --from-export: when "
        "the export was taken (default: the file's modification time)",
    )
    snap.add_argument(
        "--from-export",
        metavar="FILE",
        help="read positions from a file of kafka-consumer-groups --describe (recommended: it holds groups with "
        "members too) or --reset-offsets ... --export output instead (no cluster is read: leave out "
        "--bootstrap-servers, give --cluster)",
    )
    snap.add_argument(
        "--export-group",
        metavar="GROUP",
        help="with --from-export: the group of a one-group export (topic,partition,offset lines)",
    )
    snap.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    snap.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    _check_sources(args)
    options = selection(args, cluster=args.cluster, snapshot_id=args.snapshot_id, origin_search=args.origin_search)
    store = open_location(args.output)
    if args.from_export:
        result = run_snapshot_from_export(args.from_export, store, options, group=args.export_group, as_of=args.as_of)
        return _finish(args, out, err, result)
    connection = connection_settings(args)
    progress = ProgressLine(err)
    try:
        result = run_snapshot(
            connection, store, options, offsets_topic=args.from_offsets_topic, as_of=args.as_of, progress=progress
        )
    finally:
        progress.finish()
    return _finish(args, out, err, result)


def _finish(args: argparse.Namespace, out: TextIO, err: TextIO, result: SnapshotResult) -> int:
    """0, or 3 (done in part) for a snapshot of no group: written, since an empty source is a fact
    worth recording, but nothing could be restored from it. (A filter that matched nothing never
    gets here: it fails with exit status 2 and writes nothing, snapshot/run.py.)"""
    write_result(args, out, err, result.model_dump_json(indent=2), snapshot_summary(result))
    if result.counts.groups:
        return 0
    err.write(f"offset-restore snapshot: {printable_line(empty_reason(result))}\n")
    return 3


def empty_reason(result: SnapshotResult) -> str:
    """Why a snapshot without a filter holds no group, in one line."""
    if result.source != "cluster":
        why = f"the {result.source} source holds no offset commit"
    elif result.listed_groups:
        why = f"its {result.listed_groups:,} groups are all left out by the default --exclude-groups"
    else:
        why = "it has no consumer group at all"
    return (
        f"no group to snapshot on cluster {result.cluster}: {why}; the empty snapshot {result.snapshot_id} is "
        "written, but a restore from it would restore nothing"
    )


def _check_sources(args: argparse.Namespace) -> None:
    """One source of positions: the cluster (live or a restored __consumer_offsets), or an export."""
    if args.as_of and not (args.from_offsets_topic or args.from_export):
        raise BadInputError("--as-of goes with --from-offsets-topic or --from-export")
    if args.export_group and not args.from_export:
        raise BadInputError("--export-group goes with --from-export")
    if args.from_export and (args.bootstrap_servers or args.from_offsets_topic):
        raise BadInputError("--from-export reads no cluster: leave out --bootstrap-servers and --from-offsets-topic")
    if not args.from_export and not args.bootstrap_servers:
        raise BadInputError("--bootstrap-servers is required (or --from-export FILE)")
