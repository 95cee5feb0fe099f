"""Check every installed dependency (runtime and development) and every package the Lambda asset
ships (the pins of ``infra/lambda-requirements.lock``, which may differ from what is installed here)
against known vulnerabilities with pip-audit; exit 1 if any is vulnerable.

pip-audit asks PyPI's per-version JSON API. A package it cannot ask about is counted and named as
not audited (exit 0, unless ``--strict``): on a network that blocks that API the check audits
nothing, and says so instead of passing in silence.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "infra" / "lambda-requirements.lock"
AUDITS = {
    "the installed packages": ["--local"],
    # The lock's pins as they are, with their hashes: nothing to resolve or install (--disable-pip).
    "the Lambda asset's lock": ["--requirement", str(LOCK), "--disable-pip"],
}


def main() -> int:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--strict", action="store_true", help="fail when a package could not be audited")
    options.add_argument("--json", metavar="PATH", help="also write the counts as JSON here")
    args = options.parse_args()
    pip_audit = Path(sys.executable).parent / "pip-audit"
    dependencies: dict[tuple[str, str], dict[str, Any]] = {}
    for what, selection in AUDITS.items():
        answer = subprocess.run(
            [str(pip_audit), *selection, "--format", "json", "--progress-spinner", "off"],
            capture_output=True,
            text=True,
            check=False,
        )
        try:
            found = json.loads(answer.stdout)["dependencies"]
        except (ValueError, KeyError):
            print(f"pip-audit gave no report on {what} (exit {answer.returncode}):\n{answer.stderr}", file=sys.stderr)
            return 2
        # A package at the same version in both is one package.
        dependencies.update({(d["name"].lower(), d.get("version", d.get("skip_reason", ""))): d for d in found})
    lines, counts, status = verdict(list(dependencies.values()), strict=args.strict)
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps(counts))
    return status


def verdict(dependencies: list[dict[str, Any]], *, strict: bool) -> tuple[list[str], dict[str, int], int]:
    """What to print, the counts, and the exit status for pip-audit's ``dependencies`` list."""
    vulnerable = [d for d in dependencies if d.get("vulns")]
    skipped = [d for d in dependencies if "skip_reason" in d]
    lines = [f"VULNERABLE {d['name']} {d['version']}: {', '.join(v['id'] for v in d['vulns'])}" for d in vulnerable]
    counts = {
        "packages": len(dependencies),
        "audited": len(dependencies) - len(skipped),
        "vulnerable": len(vulnerable),
        "not_audited": len(skipped),
    }
    lines.append(
        f"pip-audit: {counts['packages']} packages, {counts['audited']} audited, {counts['vulnerable']} vulnerable, "
        f"{counts['not_audited']} could not be audited" + (f" (e.g. {skipped[0]['skip_reason']})" if skipped else "")
    )
    status = 1 if vulnerable or (strict and skipped) else 0
    return lines, counts, status


if __name__ == "__main__":
    sys.exit(main())
