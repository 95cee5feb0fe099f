"""The reliability and security figures of the README, from real runs of the tests that prove them:

    python -m bench.reliability              # or: make figures

It runs the fault, target-reset, concurrency, fuzz and security tests with ``FAULT_TRIALS`` trials per
fault pattern and ``FUZZ_EXAMPLES`` cases per input kind (more than CI runs); each test records what
it tried and how it ended (``tests/figures.py``). Then the dependency audit. The tables go to
``bench/results/reliability.md`` and to stdout. Exit 1 when any test failed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).parents[1]
TESTS = [
    "tests/reliability",
    "tests/fuzz",
    "tests/infra/test_stack.py::test_the_whole_app_synthesizes_with_no_cdk_nag_finding",
    "tests/infra/test_stack.py::test_every_statement_on_any_resource_has_a_recorded_reason",
    "tests/e2e/test_workflow.py::test_the_cli_and_the_workflow_exclude_each_other_on_one_target",
]


def run_tests(figures: Path, fault_trials: int, fuzz_examples: int) -> int:
    env = {
        **os.environ,
        "OFFSET_RESTORE_FIGURES": str(figures),
        "FAULT_TRIALS": str(fault_trials),
        "FUZZ_EXAMPLES": str(fuzz_examples),
    }
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "timeout=900",
        "--durations=10",
        *TESTS,
    ]
    return subprocess.run(command, cwd=ROOT, env=env, check=False).returncode


def audit() -> dict[str, int]:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "audit.json"
        subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "audit_dependencies.py"), "--json", str(out)], check=False
        )
        return dict(json.loads(out.read_text())) if out.exists() else {}


def _table(title: str, header: str, align: str, rows: list[str]) -> list[str]:
    return ["", f"### {title}", "", f"| {header} |", f"|{align}|", *(f"| {row} |" for row in rows)]


def _yes(value: object) -> str:
    return "yes" if value else "NO"


def tables(records: list[dict[str, Any]], audited: dict[str, int]) -> str:
    kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in records:
        kind[row["kind"]].append(row)
    network: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in kind["network"]:
        network[(row["phase"], row["fault"])].append(row)
    security = [f"{r['check']} | {r['found']} | {r.get('note', '')}" for r in kind["security"]]
    if audited:
        security.append(
            f"dependencies with known vulnerabilities (`make audit`) | {audited['vulnerable']} | {audited['packages']} "
            f"pins: {audited['fully_audited']} fully audited, {audited['partly_audited']} partly (older than their "
            f"latest release), {audited['not_audited']} not audited"
        )
    lines = _table(
        "Network faults (a TCP proxy between us and the broker)",
        "phase | fault | runs | faults injected | correct (after a re-run where one was needed)",
        "---|---|---:|---:|---:",
        [
            f"{phase} | {fault} | {len(rows)} | {sum(r['injected'] for r in rows)} | "
            f"{sum(bool(r['correct']) for r in rows)}/{len(rows)}"
            for (phase, fault), rows in network.items()
        ],
    )
    lines += _table(
        "Target reset between plan and apply (the broker restarted empty)",
        "path | target after the restart | refused, nothing written",
        "---|---|---:",
        [f"{r['path']} | {r['case']} | {_yes(r['correct'])}" for r in kind["target_reset"]],
    )
    lines += _table(
        "Concurrency",
        "trial | double commits | correct",
        "---|---:|---:",
        [f"{r['trial']} | {r['double_commits']} | {_yes(r['correct'])}" for r in kind["concurrency"]],
    )
    lines += _table(
        "Crashes (apply and rollback killed with SIGKILL at each step, then rolled back)",
        "step | runs | groups holding a mix of planned and previous offsets | rollbacks that restored exactly",
        "---|---:|---:|---:",
        [f"{r['step']} | {r['runs']} | {r['mixed']} | {r['restored_exactly']}/{r['runs']}" for r in kind["crash"]],
    )
    lines += _table(
        "Hostile input (hypothesis)",
        "input kind | cases tried | failures found",
        "---|---:|---:",
        [f"{r['input']} | {r['cases']:,} | {r['failures']}" for r in kind["fuzz"]],
    )
    lines += _table("Security", "check | found | ", "---|---:|---", security)
    return "\n".join(lines[1:]) + "\n"


def main() -> int:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--fault-trials", type=int, default=3, help="runs per fault pattern (default: %(default)s)")
    options.add_argument("--fuzz-examples", type=int, default=2000, help="cases per input kind (default: %(default)s)")
    options.add_argument("--output", type=Path, default=RESULTS / "reliability.md")
    args = options.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        figures = Path(folder) / "figures.jsonl"
        status = run_tests(figures, args.fault_trials, args.fuzz_examples)
        records = [json.loads(line) for line in figures.read_text().splitlines()] if figures.exists() else []
    text = (
        f"## Reliability and security figures\n\n`python -m bench.reliability --fault-trials {args.fault_trials} "
        f"--fuzz-examples {args.fuzz_examples}` on {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; tests {'passed' if status == 0 else 'FAILED'}.\n\n" + tables(records, audit())
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(text)
    return 0 if status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
