"""The shapes users have, measured at two revisions, side by side: what a change did.

    python -m bench.before_after --before f357c3d                     # every shape, HEAD's work tree after
    python -m bench.before_after --before v1 --after v2 --shapes dense --repeat 3

Each side runs ``bench.user_shapes`` (``--no-memory``) on its own brokers, one after the other: ``--before``
in a detached git worktree of that revision, ``--after`` likewise, or the current work tree when it is not
given (uncommitted changes included). The table gives, per shape and phase, the time, client CPU and bytes
against the operator scan each side measured beside it (ratios, so that the two runs' scans absorb the
machine's drift), then the phase's own wall time. Both sides' full tables are written beside the output
(``<output>.before.md``, ``<output>.after.md``).
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parent.parent

Row = dict[str, str]
"""A row of ``bench.user_shapes``' table, by its column names."""

COLUMNS = ["time vs scan", "CPU vs scan", "bytes vs scan", "wall"]


def parse_table(text: str) -> dict[tuple[str, str], Row]:
    """The rows of ``bench.user_shapes``' results table (the first in ``text``; others may follow it), by
    (shape, phase); a shape names only its first row."""
    all_lines = text.splitlines()
    start = next(i for i, line in enumerate(all_lines) if line.startswith("|"))
    lines = list(itertools.takewhile(lambda line: line.startswith("|"), all_lines[start:]))
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows: dict[tuple[str, str], Row] = {}
    shape = ""
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        row = dict(zip(header, cells, strict=False))
        shape = row["shape"].split(":")[0] or shape
        rows[(shape, row["phase"])] = row
    return rows


def compared(before: dict[tuple[str, str], Row], after: dict[tuple[str, str], Row]) -> list[str]:
    """The before -> after table of every (shape, phase) both sides measured ("-": a column a side's table
    lacks)."""
    lines = ["| shape | phase | " + " | ".join(f"{c}: before -> after" for c in COLUMNS) + " |"]
    lines.append("|---|---|" + "---|" * len(COLUMNS))
    for key, old in before.items():
        new = after.get(key)
        if new is None:
            continue
        cells = [f"{old.get(c, '-')} -> {new.get(c, '-')}" for c in COLUMNS]  # older revisions lack some
        lines.append(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")
    return lines


def run_side(tree: Path, arguments: list[str], output: Path) -> dict[tuple[str, str], Row]:
    """``bench.user_shapes`` run in ``tree`` with that tree's code; its table."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "functions"), str(tree)])}
    command = [sys.executable, "-m", "bench.user_shapes", "--no-memory", "--output", str(output), *arguments]
    print(f"{tree}: {' '.join(command[1:])}", file=sys.stderr)
    subprocess.run(command, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
    return parse_table(output.read_text())


def worktree(stack: ExitStack, revision: str) -> Path:
    """A detached worktree of ``revision``, removed when ``stack`` closes."""
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="before-after-"))) / "tree"
    subprocess.run(["git", "worktree", "add", "--detach", str(folder), revision], cwd=ROOT, check=True)
    stack.callback(subprocess.run, ["git", "worktree", "remove", "--force", str(folder)], cwd=ROOT, check=False)
    return folder


def _work_tree() -> str:
    """The work tree as a table names it: its commit, and whether files differ from it (a result must say
    which code it measured)."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True)
    name = commit.stdout.strip() or "the work tree"
    return f"{name} with uncommitted changes" if changed.stdout.strip() else name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the revision to compare from (a commit, tag or branch)")
    parser.add_argument("--after", default=None, help="the revision to compare to (default: the work tree)")
    parser.add_argument("--shapes", default=None, help="bench.user_shapes' --shapes (default: every shape)")
    parser.add_argument("--broker", default="apache", help="bench.user_shapes' --broker (default: apache)")
    parser.add_argument("--repeat", type=int, default=1, help="bench.user_shapes' --repeat (default: 1)")
    parser.add_argument("--output", default=str(RESULTS / "before-after.md"), help="the table (markdown)")
    parser.add_argument(
        "--saved", action="store_true", help="compare the side tables an earlier run wrote beside --output, not run"
    )
    args = parser.parse_args(argv)
    passed = ["--broker", args.broker]
    passed += ["--repeat", str(args.repeat)] if args.repeat > 1 else []  # revisions before it know no --repeat
    passed += ["--shapes", args.shapes] if args.shapes else []
    output = Path(args.output).resolve()  # each side runs in its own tree: a relative path would land there
    after = args.after or _work_tree()  # named before the run: the tree it measures
    if args.saved:
        old, new = (parse_table(output.with_suffix(f".{side}.md").read_text()) for side in ("before", "after"))
    else:
        with ExitStack() as stack:
            old = run_side(worktree(stack, args.before), passed, output.with_suffix(".before.md"))
            tree = worktree(stack, args.after) if args.after else ROOT
            new = run_side(tree, passed, output.with_suffix(".after.md"))
    command = "python -m bench.before_after " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = [f"# Before ({args.before}) -> after ({after}), {args.broker}", "", f"Command: `{command}`", ""]
    lines += compared(old, new)
    print("\n".join(lines))
    output.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
