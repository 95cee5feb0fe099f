"""``offset-restore snapshots``: list the complete snapshots in a location."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from offset_restore.cli.arguments import Commands
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.storage import open_location
from offset_restore.terminal import printable_line

__all__ = ["register", "run"]


def register(commands: Commands) -> None:
    listing = commands.add_parser(
        "snapshots",
        help="list the complete snapshots in a location",
        description="List the complete snapshots in a folder or s3://bucket/prefix, oldest first, with their "
        "time, id, cluster and counts. Reads only.",
    )
    listing.add_argument("--location", required=True, metavar="LOCATION", help="folder or s3://bucket/prefix")
    listing.add_argument("--cluster", metavar="NAME", help="only this cluster's snapshots")
    listing.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    listing.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    repository = SnapshotRepository(open_location(args.location))
    found = repository.manifests(args.cluster)
    if args.json:
        out.write(
            json.dumps(
                [{"manifest": key, **m.model_dump(mode="json", exclude={"items"})} for key, m in found], indent=2
            )
            + "\n"
        )
        return 0
    if not found:
        out.write(printable_line(f"no complete snapshots in {repository.store.description}") + "\n")
    for key, manifest in found:
        line = (
            f"{manifest.created_at:%Y-%m-%dT%H:%M:%SZ}  {manifest.snapshot_id}  cluster={manifest.cluster}  "
            f"groups={manifest.counts.groups:,}  group-partitions={manifest.counts.group_partitions:,}  {key}"
        )
        out.write(printable_line(line) + "\n")  # a manifest's names are as its writer left them
    return 0
