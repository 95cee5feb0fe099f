"""Peak memory of ``offset-restore plan`` (the CLI, in its own process) as the restore grows:

    python -m bench.plan_memory --groups 20000      # 240,000 group-partitions (the largest target size)
    python -m bench.plan_memory --groups 2000 --broker local

The snapshot is written straight to a folder (3 evidence records per position, as the scheduled
snapshot takes them), in two layouts: groups sharing positions (groups of a topic at 50 offsets, as
the handler benchmark has them) and every group-partition at a position of its own (the plan's own
state grows with distinct positions, so this is the harder one). The target is a broker holding the
restored copy of every partition (200 records each, the first 7 lost, the source offset in the
``x-source-offset`` header), so the plan does its real work: the header search on every partition,
the plan document and the CSV written. The CLI runs in a child process that reports its peak
resident memory (``VmHWM``, what an operator's laptop or a container's limit counts); the plan is then
checked entry by entry against the truth.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from offset_restore.devtools.brokers import BROKER_NAMES, KINDS
from offset_restore.devtools.brokers import started as started_brokers
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.snapshot.fingerprint import DEFAULT_OFFSET_HEADER
from offset_restore.snapshot.live import SnapshotStream, count_groups
from offset_restore.snapshot.model import SnapshotManifest
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.storage import open_location

from bench.handler_memory import PARTITIONS, VALUE, groups, record_key

RESULTS = Path(__file__).parent / "results"
RECORDS = 200
LOST = 7
TARGET_MB = 512

RUNNER = """
import json, sys
from offset_restore.cli.main import main
from offset_restore.devtools import process_memory
status = main(sys.argv[1:])
print(json.dumps({"status": status, "peak_mb": process_memory.peak_mb()}))
"""


def write_snapshot(folder: Path, count: int, distinct: bool) -> str:
    created = datetime.now(UTC)
    manifest = SnapshotManifest(
        snapshot_id="plan-memory",
        cluster="src",
        created_at=created,
        completed_at=created,
        counts=count_groups(groups(count, distinct)),
    )
    stream = SnapshotStream(manifest=manifest, groups=groups(count, distinct))
    return SnapshotRepository(open_location(str(folder))).write(stream)


def write_target(target: KafkaCluster, count: int) -> int:
    topics = sorted({p.topic for g in groups(count) for p in g.partitions})
    target.create_topics({topic: PARTITIONS for topic in topics})
    for topic in topics:
        for p in range(PARTITIONS):
            target.produce(
                topic,
                p,
                (
                    (record_key(i), VALUE, [(DEFAULT_OFFSET_HEADER, i.to_bytes(8, "big"))], 1_700_000_000_000 + i)
                    for i in range(LOST, RECORDS)
                ),
            )
    return len(topics) * PARTITIONS


def run_plan(bootstrap: str, snapshot: Path, output: Path) -> dict[str, float]:
    argv = ["plan", "--bootstrap-servers", bootstrap, "--snapshot", str(snapshot), "--output", str(output)]
    argv += ["--csv", str(output.with_suffix(".csv")), "--json"]
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RUNNER, *argv], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    answer = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}
    if done.returncode or answer.get("status") != 0:
        raise RuntimeError(f"plan failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return {"peak_mb": answer["peak_mb"], "seconds": seconds}


def check(plan_path: Path, count: int) -> tuple[int, int]:
    """Every entry against the truth (target offset = source offset - LOST); returns the entries and
    the distinct positions among them."""
    entries = json.loads(plan_path.read_text())["entries"]
    wrong = [e for e in entries if e["target_offset"] != e["source_offset"] - LOST]
    if wrong or len(entries) != count * PARTITIONS:
        raise AssertionError(f"{len(wrong)} entries off the truth of {len(entries)}: {wrong[:2]}")
    return len(entries), len({(e["topic"], e["partition"], e["source_offset"]) for e in entries})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=2_000, help="groups of 12 partitions (default: %(default)s)")
    parser.add_argument("--broker", choices=KINDS, default="apache", help="the target's kind (default: apache)")
    parser.add_argument("--output", type=Path, help="results file (default: bench/results/plan_memory-<N>.md)")
    args = parser.parse_args(argv)
    rows: list[str] = []
    with tempfile.TemporaryDirectory() as scratch, started_brokers(args.broker, "plan-memory") as brokers:
        folder = Path(scratch)
        started = time.perf_counter()
        with KafkaCluster(brokers[0].settings()) as target:
            partitions = write_target(target, args.groups)
        print(f"setup {time.perf_counter() - started:.0f} s ({partitions} partitions)", file=sys.stderr)
        for layout, distinct in (("groups share positions", False), ("a position per group-partition", True)):
            write_snapshot(folder / layout, args.groups, distinct)
            plan = folder / f"{distinct}-plan.json"
            figures = run_plan(brokers[0].settings().bootstrap_servers, folder / layout, plan)
            entries, positions = check(plan, args.groups)
            verdict = "met" if figures["peak_mb"] < TARGET_MB else "MISSED"
            rows.append(
                f"| {entries:,} | {layout}: {positions:,} | {figures['peak_mb']:,.0f} MB | < {TARGET_MB} MB "
                f"({verdict}) | {figures['seconds']:.1f} s | {plan.stat().st_size / 1e6:,.0f} MB |"
            )
            print(rows[-1], file=sys.stderr)
    lines = [
        f"`offset-restore plan` peak memory ({BROKER_NAMES[args.broker]}, {platform.machine()}, Python "
        f"{platform.python_version()}, {datetime.now(UTC):%Y-%m-%d}). `python -m bench.plan_memory --groups "
        f"{args.groups} --broker {args.broker}`: a snapshot of {args.groups:,} groups x {PARTITIONS} partitions "
        f"with 3 evidence records each, the target {partitions:,} partitions of {RECORDS - LOST} restored records.",
        "",
        "| group-partitions | distinct positions | peak resident memory (CLI process) | target "
        "| wall time (with start-up) | plan document |",
        "|---|---|---|---|---|---|",
        *rows,
    ]
    text = "\n".join(lines) + "\n"
    output = args.output or RESULTS / f"plan_memory-{args.groups}.md"
    output.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
