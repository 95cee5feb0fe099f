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
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "timeout=900", *TESTS]
    return subprocess.run(command, cwd=ROOT, env=env, check=False).returncode


def audit() -> dict[str, int]:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "audit.json"
        subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "audit_dependencies.py"), "--json", str(out)], check=False
        )
        return dict(json.loads(out.read_text())) if out.exists() else {}


def tables(records: list[dict[str, Any]], audited: dict[str, int]) -> str:
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in records:
        by_kind[row["kind"]].append(row)
    lines = ["### Network faults (a TCP proxy between us and the broker)", ""]
    lines += ["| phase | fault | runs | faults injected | correct after a re-run |", "|---|---|---:|---:|---:|"]
    network: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in by_kind["network"]:
        network[(row["phase"], row["fault"])].append(row)
    for (phase, fault), rows in network.items():
        correct = sum(bool(r["correct"]) for r in rows)
        lines.append(
            f"| {phase} | {fault} | {len(rows)} | {sum(r['injected'] for r in rows)} | {correct}/{len(rows)} |"
        )
    lines += ["", "### Target reset between plan and apply (the broker restarted empty)", ""]
    lines += ["| path | target after the restart | runs | refused, nothing written |", "|---|---|---:|---:|"]
    for row in by_kind["target_reset"]:
        lines.append(f"| {row['path']} | {row['case']} | 1 | {'yes' if row['correct'] else 'NO'} |")
    lines += ["", "### Concurrency", ""]
    lines += ["| trial | double commits | correct |", "|---|---:|---:|"]
    for row in by_kind["concurrency"]:
        lines.append(f"| {row['trial']} | {row['double_commits']} | {'yes' if row['correct'] else 'NO'} |")
    lines += ["", "### Hostile input (hypothesis)", ""]
    lines += ["| input kind | cases tried | failures found |", "|---|---:|---:|"]
    for row in by_kind["fuzz"]:
        lines.append(f"| {row['input']} | {row['cases']:,} | {row['failures']} |")
    lines += ["", "### Security", ""]
    lines += ["| check | found | |", "|---|---:|---|"]
    for row in by_kind["security"]:
        lines.append(f"| {row['check']} | {row['found']} | {row.get('note', '')} |")
    if audited:
        lines.append(
            f"| dependencies with known vulnerabilities (pip-audit) | {audited['vulnerable']} | "
            f"{audited['audited']} of {audited['packages']} packages audited; {audited['not_audited']} could not be "
            "(the vulnerability service is unreachable from this network) |"
        )
    return "\n".join(lines) + "\n"


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
