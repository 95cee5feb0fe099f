"""``offset-restore report``: download a run's report (HTML, Markdown, JSON)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from offset_restore.cli.arguments import Commands
from offset_restore.cli.operations import fetch_report

__all__ = ["register", "run"]


def register(commands: Commands) -> None:
    report = commands.add_parser("report", help="download a run's report (HTML, Markdown, JSON)")
    report.add_argument("--restore-id", required=True, metavar="ID")
    report.add_argument("--bucket", required=True, metavar="BUCKET", help="the deployment's bucket")
    report.add_argument("--output", default=".", metavar="FOLDER", help="where to put the files (default: .)")
    report.add_argument("--open", action="store_true", help="open report.html in a browser")
    report.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import boto3

    paths = fetch_report(boto3.client("s3"), args.bucket, args.restore_id, Path(args.output))
    out.write("\n".join(str(p) for p in paths) + "\n")
    if args.open:
        import webbrowser

        webbrowser.open(paths[0].resolve().as_uri())
    return 0
