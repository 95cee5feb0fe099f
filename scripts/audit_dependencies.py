"""Check every installed dependency (runtime and development) and every package the Lambda asset
ships (the pins of ``infra/lambda-requirements.lock``, which may differ from what is installed here)
against known vulnerabilities; exit 1 if any is vulnerable.

Two sources, best first. pip-audit asks PyPI's per-version JSON API, which gives each pin's own
advisories. Where that API does not answer (some networks get 404 for every version), each pin left
over is checked against PyPI's per-project JSON, which lists the advisories still open on the
project's latest release: complete for a pin that is that release; for an older pin, every advisory
still open is counted against it (we cannot see where it was introduced, so we flag rather than
miss), and advisories fixed before the latest release are not seen, so the pin is reported as only
partly audited. The last line gives the coverage in numbers.

Exit status: 1 if a pin is vulnerable (or, with ``--strict``, if any pin is not fully audited);
2 if no source could audit anything (the line says what each source answered); 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name as canonical
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "infra" / "lambda-requirements.lock"
AUDITS = {
    "the installed packages": ["--local"],
    # The lock's pins as they are, with their hashes: nothing to resolve or install (--disable-pip).
    "the Lambda asset's lock": ["--requirement", str(LOCK), "--disable-pip"],
}
# The project itself is installed (editable) but is not a dependency, and PyPI has no such project.
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
PROJECT_JSON = "https://pypi.org/pypi/{}/json"
TIMEOUT = 20  # seconds per request; botocore's project JSON is ~4 MB
WORKERS = 16  # ~130 projects in a few seconds, without hammering the registry
# pip-audit's reason when PyPI's per-version JSON answers 404: the one case the registry can stand in for.
NOT_FOUND = re.compile(
    r"^Dependency not found on PyPI and could not be audited: (?P<name>\S+) \((?P<version>[^()]+)\)$"
)

# How far a pin was audited.
PER_VERSION = "per-version"  # pip-audit: the pin's own advisories
LATEST = "latest"  # the registry, and the pin is the latest release: complete
OLDER = "older"  # the registry, pin older than the latest: advisories fixed before the latest are not seen
NEWER = "newer"  # the registry, pin newer than the latest (a pre-release): what is open on the latest is counted
NONE = "none"  # not audited

Registry = dict[str, dict[str, Any] | str]  # canonical name -> the project JSON, or why there is none


@dataclass(frozen=True)
class Finding:
    """One pin's result: how far it was audited, the advisories against it, and where they (or the gap) come from."""

    name: str
    version: str
    coverage: str
    advisories: tuple[str, ...] = ()
    note: str = ""
    latest: str = ""  # the project's latest release, where the registry was asked


def named(advisories: Iterable[dict[str, Any]]) -> tuple[str, ...]:
    """One entry per vulnerability: PyPI lists a PYSEC and a GHSA record of one flaw, each the other's alias."""
    seen: set[str] = set()
    entries = []
    for advisory in advisories:
        aliases = [a for a in advisory.get("aliases") or [] if a != advisory["id"]]
        if advisory["id"] in seen or seen.intersection(aliases):
            continue
        seen.update([advisory["id"], *aliases])
        entries.append(advisory["id"] + (f" ({', '.join(sorted(aliases))})" if aliases else ""))
    return tuple(entries)


def needs_registry(dependency: dict[str, Any]) -> tuple[str, str] | None:
    """The pin (name, version) when pip-audit skipped it only because the per-version API had no answer."""
    match = NOT_FOUND.match(dependency.get("skip_reason", ""))
    return (match["name"], match["version"]) if match else None


def fixed_at_or_below(pin: Version, fixed_in: Iterable[str]) -> bool:
    """Whether a fix listed for this advisory is in the pin's own release series (same major.minor) at or below it.

    An advisory open on the latest release can have been fixed on an older maintained branch; a fix in
    another series says nothing about this pin, so only the pin's series counts.
    """
    for text in fixed_in:
        try:
            fix = Version(text)
        except InvalidVersion:
            continue
        if fix.release[:2] == pin.release[:2] and fix <= pin:
            return True
    return False


def is_release(pin: Version, project: dict[str, Any]) -> bool:
    """Whether PyPI has the pinned version at all (a pin built elsewhere must not borrow the project's verdict)."""
    releases = project.get("releases")
    if not isinstance(releases, dict):
        return True  # PyPI may drop this deprecated key; then the pin is taken as published
    for text in releases:
        try:
            if Version(text) == pin:
                return True
        except InvalidVersion:
            continue
    return False


def registry_finding(name: str, version: str, answer: dict[str, Any] | str) -> Finding:
    """The verdict on a pin from PyPI's project JSON, which lists the advisories open on the latest release only."""
    if isinstance(answer, str):
        return Finding(name, version, NONE, note=answer)
    try:
        pin, latest = Version(version), Version(answer["info"]["version"])
    except (InvalidVersion, KeyError, TypeError) as error:
        return Finding(name, version, NONE, note=f"PyPI's project JSON gave no comparable version ({error})")
    if not is_release(pin, answer):
        return Finding(name, version, NONE, note=f"PyPI has no release {version} of {name}")
    open_ = [a for a in answer.get("vulnerabilities") or [] if not a.get("withdrawn")]
    if pin == latest:
        return Finding(name, version, LATEST, named(open_), f"PyPI: open on {latest}, the latest release", str(latest))
    applies = [a for a in open_ if not fixed_at_or_below(pin, a.get("fixed_in") or [])]
    coverage, than = (OLDER, "older") if pin < latest else (NEWER, "newer")
    note = f"PyPI: open on the latest release, {latest}, and counted against this {than} pin"
    return Finding(name, version, coverage, named(applies), note, str(latest))


def pip_audit_finding(dependency: dict[str, Any]) -> Finding:
    """The verdict pip-audit gave on a pin (its own advisories), or its reason for giving none."""
    if "skip_reason" in dependency:
        version = re.search(r"\(([^()]+)\)$", dependency["skip_reason"])
        return Finding(dependency["name"], version[1] if version else "?", NONE, note=dependency["skip_reason"])
    return Finding(
        dependency["name"], dependency["version"], PER_VERSION, named(dependency.get("vulns", [])), "pip-audit"
    )


def findings(dependencies: list[dict[str, Any]], registry: Registry) -> list[Finding]:
    """Each pin's finding: pip-audit's where it had one, else the registry's answer for the project."""
    result = []
    for dependency in dependencies:
        pin = needs_registry(dependency)
        if pin is None:
            result.append(pip_audit_finding(dependency))
        else:
            answer = registry.get(canonical(pin[0]), "PyPI's project JSON was not asked")
            result.append(registry_finding(*pin, answer))
    return result


def tally(results: list[Finding], pip_audit_skips: int) -> dict[str, int]:
    """The counts for the summary and ``--json`` (``audited`` counts pins audited fully or partly)."""
    by = {kind: sum(r.coverage == kind for r in results) for kind in (PER_VERSION, LATEST, OLDER, NEWER, NONE)}
    return {
        "packages": len(results),
        "audited": len(results) - by[NONE],
        "vulnerable": sum(bool(r.advisories) for r in results),
        "not_audited": by[NONE],
        "fully_audited": by[PER_VERSION] + by[LATEST],
        "partly_audited": by[OLDER] + by[NEWER],
        "per_version": by[PER_VERSION],
        "pip_audit_skipped": pip_audit_skips,
        "latest_release": by[LATEST],
        "older_release": by[OLDER],
        "newer_release": by[NEWER],
    }


def summary(counts: dict[str, int], pip_audit_reason: str, gap: str) -> str:
    """The last line: what each source covered, in numbers, so a pass can be read for what it is worth."""
    parts = [f"audit: {counts['packages']} pin{'' if counts['packages'] == 1 else 's'}"]
    if counts["pip_audit_skipped"] == 0:
        parts.append(f"{counts['per_version']} audited by pip-audit's per-version service")
    else:
        parts.append(
            f"pip-audit's per-version service audited {counts['per_version']} and had no answer for "
            f"{counts['pip_audit_skipped']} ('{pip_audit_reason}')"
        )
    checked = counts["latest_release"] + counts["older_release"] + counts["newer_release"]
    if checked:
        parts.append(
            f"{checked} checked against the advisories PyPI lists as open on each project's latest release: "
            f"{counts['latest_release']} at that release, {counts['older_release']} older (advisories fixed "
            "before the latest are not seen)"
            + (f", {counts['newer_release']} newer" if counts["newer_release"] else "")
        )
    if counts["not_audited"]:
        parts.append(f"{counts['not_audited']} not audited ({gap})")
    parts.append(f"{counts['vulnerable']} vulnerable")
    return "; ".join(parts)


def verdict(
    dependencies: list[dict[str, Any]], registry: Registry, *, strict: bool
) -> tuple[list[str], dict[str, int], int]:
    """What to print, the counts, and the exit status for pip-audit's ``dependencies`` and the registry's answers."""
    results = findings(dependencies, registry)
    skips = [d["skip_reason"] for d in dependencies if "skip_reason" in d]
    counts = tally(results, len(skips))
    lines = [f"VULNERABLE {r.name} {r.version}: {', '.join(r.advisories)} ({r.note})" for r in results if r.advisories]
    lines += [f"NOT AUDITED {r.name} {r.version}: {r.note}" for r in results if r.coverage == NONE]
    lines += [
        f"PARTLY AUDITED {r.name} {r.version}: the latest is {r.latest}; advisories fixed before it are not seen"
        for r in sorted(results, key=lambda r: r.name.lower())
        if r.coverage in (OLDER, NEWER)
    ]
    status = 1 if counts["vulnerable"] else 0
    if not status and counts["audited"] == 0:
        status = 2
        lines.append(
            "audit: FAILED: no source could audit any pin (tried: pip-audit's per-version service, PyPI's project JSON)"
        )
    elif not status and strict and counts["fully_audited"] < counts["packages"]:
        status = 1
        lines.append(f"audit: --strict: only {counts['fully_audited']} of {counts['packages']} fully audited")
    gap = next((r.note for r in results if r.coverage == NONE), "")
    lines.append(summary(counts, skips[0].split(":")[0] if skips else "", gap))
    return lines, counts, status


def fetch_project(name: str) -> dict[str, Any] | str:
    """PyPI's project JSON for ``name``, or why there is none (one retry: a transient error must not fail CI)."""
    request = urllib.request.Request(PROJECT_JSON.format(name), headers={"Accept": "application/json"})
    error: Exception | None = None
    for _ in range(2):
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                return dict(json.load(response))
        except urllib.error.HTTPError as http_error:
            if http_error.code == 404:
                return f"PyPI has no project {name}"
            error = http_error
        except (OSError, ValueError) as other:
            error = other
    return f"PyPI's project JSON unreachable ({error})"


def ask_registry(dependencies: list[dict[str, Any]]) -> Registry:
    """The project JSON of every project pip-audit could not audit, fetched a few at a time."""
    names = sorted({canonical(pin[0]) for d in dependencies if (pin := needs_registry(d))})
    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(zip(names, pool.map(fetch_project, names), strict=True))


def run_pip_audit(what: str, selection: list[str]) -> list[dict[str, Any]] | str:
    """pip-audit's ``dependencies`` for one selection, or why it gave no report."""
    pip_audit = Path(sys.executable).parent / "pip-audit"
    answer = subprocess.run(
        [str(pip_audit), *selection, "--format", "json", "--progress-spinner", "off"],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        return list(json.loads(answer.stdout)["dependencies"])
    except (ValueError, KeyError):
        return f"pip-audit gave no report on {what} (exit {answer.returncode}):\n{answer.stderr}"


def pins_key(dependency: dict[str, Any]) -> tuple[str, str]:
    """A package at the same version in two selections is one pin."""
    pin = needs_registry(dependency)
    version = pin[1] if pin else dependency.get("version", dependency.get("skip_reason", ""))
    return canonical(dependency["name"]), version


def main() -> int:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--strict", action="store_true", help="also fail unless every pin is fully audited")
    options.add_argument("--json", metavar="PATH", help="also write the counts as JSON here")
    options.add_argument(
        "--requirement",
        metavar="FILE",
        help="audit only this file's pins (each pinned with ==; hashes optional), not the installed packages and lock",
    )
    args = options.parse_args()
    audits = AUDITS
    if args.requirement:
        audits = {args.requirement: ["--requirement", args.requirement, "--disable-pip", "--no-deps"]}
    with ThreadPoolExecutor(len(audits)) as pool:
        reports = list(pool.map(run_pip_audit, audits, audits.values()))
    dependencies: dict[tuple[str, str], dict[str, Any]] = {}
    for report in reports:
        if isinstance(report, str):
            print(f"audit: FAILED: {report}", file=sys.stderr)
            return 2
        dependencies.update({pins_key(d): d for d in report if canonical(d["name"]) != canonical(PROJECT)})
    found = list(dependencies.values())
    lines, counts, status = verdict(found, ask_registry(found), strict=args.strict)
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps(counts))
    return status


if __name__ == "__main__":
    sys.exit(main())
