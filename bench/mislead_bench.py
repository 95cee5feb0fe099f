"""Headers that mislead and replicas copied twice: what each plan answers, and what the
new checks cost on a restore that is tidy.

    python -m bench.mislead_bench --before d668adf        # the cases, before and now (local broker)
    python -m bench.mislead_bench --broker apache --part bytes --before d668adf   # tidy, Apache Kafka

One fresh target broker (``--broker local``, the default, or ``apache``: Apache Kafka 4.1, which
answers a fetch with the batches asked for, where the local broker sends far more). Every entry is
judged against the truth the benchmark wrote (which source record each target record copies,
whatever its header says: ``tests/disorder.py``):

1. **The misleading cases**, 60 source records and a group at each of 0..60 (61 positions): the
   restore's first records without the header; one wrong header at a committed record (saying an
   earlier offset, a later one the snapshot read, a later one it did not); replicas without headers
   where a region was copied twice close after a match or far after it, batches reordered, workers
   interleaved; records lost before the copy so that the evidence is cut by the restore's start.
   Counted: positions, positions that skip, records skipped, entries called exact that are not,
   bounds below the truth, entries exact.
2. **Bytes on a tidy restore**, partitions of ``--records`` (default 100,000) records in batches of
   about 16 KB (the producer's default): a restore in order with the offset header (header strategy)
   and a replica in order without it (fingerprint strategy), with few (3) and many (300) positions.

``--before REV`` runs the same benchmark with the code of commit REV (a ``git worktree`` on its
``functions/`` first on the path, this tree's benchmark and judge) in a subprocess, and prints both.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from offset_restore.devtools.brokers import KINDS
from offset_restore.devtools.brokers import started as started_brokers
from offset_restore.formats.plan import PlanEntry
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.translation import translate

from bench.order_bench import BASE_MS, VALUE, Counted, measure, snapshot, write
from tests.disorder import HEADER, Slot, copy

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parent.parent
N = 60
Algorithm = Callable[[list, Counted], list[PlanEntry]]


def plan_with(**options: Any) -> Algorithm:
    def run(groups: list, target: Counted) -> list[PlanEntry]:
        return translate(groups, target, PlanOptions(**options))[0]

    return run


def replica(sources: Sequence[int]) -> list[Slot]:
    return [Slot(s, None) for s in sources]


def wrong_header(header: int) -> list[Slot]:
    layout = copy(range(N))
    layout[20] = Slot(20, header)
    return layout


def header_cases() -> dict[str, list[Slot]]:
    return {
        "first 5 records without the header": [*replica(range(5)), *copy(range(5, N))],
        "first 30 records without the header": [*replica(range(30)), *copy(range(30, N))],
        "record 20 says 17 (read by the snapshot)": wrong_header(17),
        "record 20 says 45 (read by the snapshot)": wrong_header(45),
        "record 20 says 70 (past the source)": wrong_header(70),
    }


def replica_cases() -> dict[str, tuple[list[Slot], Sequence[int] | None]]:
    return {
        "copied twice close after (30..34 again after 40)": (
            replica([*range(41), *range(30, 35), *range(41, N)]),
            None,
        ),
        "copied twice far after (10..14 again after 55)": (
            replica([*range(56), *range(10, 15), *range(56, N)]),
            None,
        ),
        "batches reordered (40..44 after 45..49)": (
            replica([*range(40), *range(45, 50), *range(40, 45), *range(50, N)]),
            None,
        ),
        "interleaved workers": (
            replica([s for pair in zip(range(N // 2), range(N // 2, N), strict=True) for s in pair]),
            None,
        ),
        "0..19 lost before the copy (evidence cut)": (replica(range(20, N)), range(20, N)),
    }


def outcome_row(o: Any) -> dict[str, Any]:
    j = o.judgement
    return {
        "case": o.case,
        "algorithm": o.algorithm,
        "positions": j.positions,
        "skipping": j.positions_skipping,
        "skipped": j.skipped,
        "mislabelled": j.mislabelled,
        "below": j.bound_below_truth,
        "bytes": o.bytes,
        "requests": o.requests,
        "seconds": round(o.seconds, 3),
    }


def exact_count(cluster: KafkaCluster, w: Any, groups: list, algorithm: Algorithm) -> int:
    return sum(1 for e in algorithm(groups, Counted(cluster)) if e.exact)


def run_cases(cluster: KafkaCluster) -> list[dict[str, Any]]:
    stamps = {s: BASE_MS + s * 100 for s in range(N)}
    rows: list[dict[str, Any]] = []
    header = {"header, windows (default)": plan_with(), "header, full read": plan_with(order_check="full")}
    for number, (case, layout) in enumerate(header_cases().items()):
        w = write(cluster, f"mislead-h{number}", layout, stamps, N)
        groups = snapshot(w, range(N + 1))
        for o in measure(cluster, case, w, groups, header):
            rows.append({**outcome_row(o), "exact": exact_count(cluster, w, groups, header[o.algorithm])})
    fingerprint = {"fingerprint": plan_with(strategies=("fingerprint",))}
    for number, (case, (layout, sources)) in enumerate(replica_cases().items()):
        w = write(cluster, f"mislead-f{number}", layout, stamps, N)
        groups = snapshot(w, range(N + 1), sources)
        for o in measure(cluster, case, w, groups, fingerprint):
            rows.append({**outcome_row(o), "exact": exact_count(cluster, w, groups, fingerprint[o.algorithm])})
    return rows


BATCH_RECORDS = 200
"""Records per produced batch in part 2: about 16 KB (a 40-byte value, its key and header), the
producer's default batch, so that a window is one batch as a real restore writes it."""


def write_batches(cluster: KafkaCluster, topic: str, layout: list[Slot], stamps: dict[int, int], n: int) -> Any:
    """``order_bench.write`` in batches of ``BATCH_RECORDS``."""
    w = write(cluster, topic, layout[:BATCH_RECORDS], stamps, n)
    for start in range(BATCH_RECORDS, len(layout), BATCH_RECORDS):
        rows = [
            (f"k{s.source}".encode(), VALUE, [(HEADER, s.header.to_bytes(8, "big"))] if s.header is not None else [],
             stamps[s.source])
            for s in layout[start : start + BATCH_RECORDS]
            if s.source is not None
        ]  # fmt: skip
        cluster.produce(topic, 0, iter(rows))
    w.layout = layout
    return w


def run_bytes(cluster: KafkaCluster, n: int, rng: random.Random) -> list[dict[str, Any]]:
    stamps = {s: BASE_MS + s for s in range(n)}
    rows = []
    for number, (case, layout, algorithm) in enumerate(
        [
            ("restore in order, offset header", copy(range(n)), plan_with()),
            ("replica in order, no header", replica(range(n)), plan_with(strategies=("fingerprint",))),
        ]
    ):
        w = write_batches(cluster, f"mislead-bytes-{number}", layout, stamps, n)
        for count in (3, 300):
            groups = snapshot(w, sorted(rng.sample(range(n), count)))
            (o,) = measure(cluster, f"{case}, {count} positions", w, groups, {"this code": algorithm})
            rows.append({**outcome_row(o), "exact": sum(1 for e in algorithm(groups, Counted(cluster)) if e.exact)})
    return rows


def measure_here(args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    with started_brokers(args.broker, "mislead-bench") as (broker,), KafkaCluster(broker.settings()) as cluster:
        cases = run_cases(cluster) if args.part in ("both", "cases") else []
        tidy = run_bytes(cluster, args.records, random.Random(args.seed)) if args.part in ("both", "bytes") else []
        return {"cases": cases, "bytes": tidy}


def measure_before(rev: str, args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    """The same benchmark with the code of commit ``rev`` (its ``functions/`` first on the path)."""
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / "before"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev], check=True, capture_output=True
        )
        try:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "functions"), str(ROOT)])}
            command = [sys.executable, "-m", "bench.mislead_bench", "--json", "--records", str(args.records),
                       "--seed", str(args.seed), "--broker", args.broker, "--part", args.part]  # fmt: skip
            out = subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True, text=True)
            return json.loads(out.stdout.splitlines()[-1])
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


def table(rows: list[dict[str, Any]], before: list[dict[str, Any]] | None, bytes_too: bool) -> list[str]:
    head = "| case | strategy | code | positions | positions skipping | records skipped | called exact, not |"
    head += " bound below truth | exact |"
    rule = "|---|---|---|---|---|---|---|---|---|"
    if bytes_too:
        head += " bytes read | fetch requests | time |"
        rule += "---|---|---|"
    lines = [head, rule]
    earlier = {(r["case"], r["algorithm"]): r for r in before or []}
    for row in rows:
        for code, r in (("before", earlier.get((row["case"], row["algorithm"]))), ("now", row)):
            if r is None:
                continue
            line = (
                f"| {r['case']} | {r['algorithm']} | {code} | {r['positions']} | {r['skipping']} | {r['skipped']:,} |"
                f" {r['mislabelled']} | {r['below']} | {r['exact']} |"
            )
            if bytes_too:
                line += f" {r['bytes'] / 1e6:,.3f} MB | {r['requests']:,} | {r['seconds']:.2f} s |"
            lines.append(line)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000, help="records per partition of the tidy restores")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--before", metavar="REV", help="also measure the code of this commit, on the same data")
    parser.add_argument("--json", action="store_true", help="print the measurements as one JSON line only")
    parser.add_argument("--broker", choices=KINDS, default="local", help="local (default) or apache")
    parser.add_argument("--part", choices=("both", "cases", "bytes"), default="both", help="which part to run")
    args = parser.parse_args(argv)
    now = measure_here(args)
    if args.json:
        print(json.dumps(now))
        return 0
    before = measure_before(args.before, args) if args.before else None
    lines = [
        f"# Headers that mislead, replicas copied twice: {platform.machine()}, Python "
        f"{platform.python_version()}, {'Apache Kafka 4.1' if args.broker == 'apache' else 'local broker'}",
        "",
        f"Command: `python -m bench.mislead_bench {' '.join(argv if argv is not None else sys.argv[1:])}`. "
        "Judged against the records the benchmark wrote (tests/disorder.py).",
        "",
        "## 1. The cases (60 source records, 61 committed positions each)",
        "",
        *table(now["cases"], before["cases"] if before else None, bytes_too=False),
        "",
        f"## 2. Bytes on a tidy restore ({args.records:,} records per partition)",
        "",
        *table(now["bytes"], before["bytes"] if before else None, bytes_too=True),
        "",
    ]
    report = "\n".join(lines)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"mislead-{args.broker}-{args.part}.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
