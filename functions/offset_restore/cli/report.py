"""``offset-restore report``: download a run's report (HTML, Markdown, JSON)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from offset_restore.cli.arguments import Commands
from offset_restore.cli.aws import add_deployment, aws_client, from_stack
from offset_restore.workflow.executions import fetch_report

__all__ = ["register", "run"]


def register(commands: Commands) -> None:
    report = commands.add_parser(
        "report",
        help="download a run's report (HTML, Markdown, JSON)",
        description="Download a deployed run's report (report.html, report.md, report.json) from the "
        "deployment's bucket. Writes only the files.",
    )
    report.add_argument("--restore-id", required=True, metavar="ID", help="the run's restore id")
    add_deployment(report, "the deployed environment (offset-restore-ENV): its bucket from the stack's outputs")
    report.add_argument("--bucket", metavar="BUCKET", help="the deployment's bucket (or --stack)")
    report.add_argument("--output", default=".", metavar="FOLDER", help="where to put the files (default: .)")
    report.add_argument("--open", action="store_true", help="open report.html in a browser")
    report.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from_stack(args, {"bucket": "BucketName"})
    paths = fetch_report(aws_client(args, "s3"), args.bucket, args.restore_id, Path(args.output))
    out.write("\n".join(str(p) for p in paths) + "\n")
    if args.open:
        import webbrowser

        webbrowser.open(paths[0].resolve().as_uri())
    return 0
