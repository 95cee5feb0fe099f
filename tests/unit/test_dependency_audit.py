"""The CI dependency check: its verdict on pip-audit's report and, where pip-audit's per-version service
does not answer, on the advisories PyPI lists for each project's latest release; and the real script on a
known-vulnerable pin (that one needs PyPI, as installing the project does)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scripts import audit_dependencies
from scripts.audit_dependencies import canonical, fetch_project, registry_finding, verdict

SCRIPT = Path(audit_dependencies.__file__)
CLEAN = {"name": "kafka-python", "version": "3.0.12", "vulns": []}
VULNERABLE = {
    "name": "oldlib",
    "version": "1.0",
    "vulns": [{"id": "PYSEC-2099-1", "aliases": ["GHSA-xxxx"]}, {"id": "GHSA-xxxx", "aliases": ["PYSEC-2099-1"]}],
}
EDITABLE = {"name": "mylib", "skip_reason": "distribution marked as editable"}


def missing(name: str, version: str) -> dict[str, Any]:
    """pip-audit's entry for a pin the per-version service answered 404 for."""
    return {"name": name, "skip_reason": f"Dependency not found on PyPI and could not be audited: {name} ({version})"}


def advisory(id_: str, *aliases: str, fixed_in: tuple[str, ...] = (), withdrawn: str | None = None) -> dict[str, Any]:
    return {"id": id_, "aliases": list(aliases), "fixed_in": list(fixed_in), "withdrawn": withdrawn}


def project(latest: str, *advisories: dict[str, Any], releases: tuple[str, ...] = ()) -> dict[str, Any]:
    """PyPI's project JSON, reduced to what the audit reads."""
    return {
        "info": {"version": latest},
        "releases": {v: [] for v in (*releases, latest)},
        "vulnerabilities": list(advisories),
    }


ECDSA = project(
    "0.19.2",
    advisory("PYSEC-2026-1325", "CVE-2024-23342", "GHSA-wj6h-64fc-37mp"),
    advisory("GHSA-wj6h-64fc-37mp", "CVE-2024-23342", "PYSEC-2026-1325"),
    releases=("0.18.0", "0.19.0", "0.19.1"),
)


def test_a_known_vulnerability_fails_the_check_by_name() -> None:
    lines, counts, status = verdict([CLEAN, VULNERABLE], {}, strict=False)
    assert status == 1 and lines[0] == "VULNERABLE oldlib 1.0: PYSEC-2099-1 (GHSA-xxxx) (pip-audit)"
    assert counts["packages"] == 2 and counts["per_version"] == 2 and counts["vulnerable"] == 1
    assert lines[-1] == "audit: 2 pins; 2 audited by pip-audit's per-version service; 1 vulnerable"


def test_packages_that_could_not_be_audited_are_counted_not_hidden() -> None:
    lines, counts, status = verdict([CLEAN, EDITABLE], {}, strict=False)
    assert (
        status == 0 and counts["not_audited"] == 1 and "NOT AUDITED mylib ?: distribution marked as editable" in lines
    )
    assert "1 not audited (distribution marked as editable)" in lines[-1]
    assert verdict([CLEAN, EDITABLE], {}, strict=True)[2] == 1


def test_the_latest_release_is_judged_by_the_advisories_open_on_it_one_line_per_flaw() -> None:
    lines, counts, status = verdict([missing("ecdsa", "0.19.2")], {"ecdsa": ECDSA}, strict=True)
    assert status == 1 and counts["latest_release"] == 1 and counts["fully_audited"] == 1
    assert lines[0] == (
        "VULNERABLE ecdsa 0.19.2: PYSEC-2026-1325 (CVE-2024-23342, GHSA-wj6h-64fc-37mp) "
        "(PyPI: open on 0.19.2, the latest release)"
    )


def test_a_withdrawn_advisory_does_not_count() -> None:
    clean = project("2.0", advisory("PYSEC-2099-2", withdrawn="2099-01-01T00:00:00Z"))
    _, counts, status = verdict([missing("lib", "2.0")], {"lib": clean}, strict=True)
    assert status == 0 and counts["vulnerable"] == 0 and counts["fully_audited"] == 1


def test_an_older_pin_carries_what_is_still_open_and_is_only_partly_audited() -> None:
    lines, counts, status = verdict([missing("ecdsa", "0.18.0")], {"ecdsa": ECDSA}, strict=False)
    assert status == 1 and counts["older_release"] == 1 and counts["partly_audited"] == 1
    assert lines[0].startswith("VULNERABLE ecdsa 0.18.0: PYSEC-2026-1325")
    assert "PARTLY AUDITED ecdsa 0.18.0: the latest is 0.19.2; advisories fixed before it are not seen" in lines


def test_an_older_pin_with_nothing_open_passes_but_says_what_is_not_seen() -> None:
    lib = project("3.0", releases=("2.5",))
    lines, counts, status = verdict([missing("lib", "2.5"), CLEAN], {"lib": lib}, strict=False)
    assert status == 0 and counts["audited"] == 2 and counts["fully_audited"] == 1
    assert lines[-1] == (
        "audit: 2 pins; pip-audit's per-version service audited 1 and had no answer for 1 "
        "('Dependency not found on PyPI and could not be audited'); 1 checked against the advisories PyPI lists "
        "as open on each project's latest release: 0 at that release, 1 older (advisories fixed before the latest "
        "are not seen); 0 vulnerable"
    )
    assert verdict([missing("lib", "2.5")], {"lib": lib}, strict=True)[2] == 1


def test_a_fix_only_in_the_pins_own_series_clears_an_older_pin() -> None:
    flaw = advisory("PYSEC-2099-3", fixed_in=("1.4.7", "2.1.1"))
    lib = project("2.1.0", flaw, releases=("1.4.6", "1.4.7", "1.5.0"))
    assert registry_finding("lib", "1.4.7", lib).advisories == ()  # fixed on its branch
    assert registry_finding("lib", "1.4.6", lib).advisories == ("PYSEC-2099-3",)
    assert registry_finding("lib", "1.5.0", lib).advisories == ("PYSEC-2099-3",)  # 1.4.7 says nothing about 1.5


def test_versions_compare_as_versions_and_names_as_pep_503() -> None:
    assert registry_finding("lib", "1.0", project("1.0.0")).coverage == "latest"
    assert registry_finding("lib", "1.1rc1", project("1.0", releases=("1.1rc1",))).coverage == "newer"
    assert canonical("Zope.Interface") == canonical("zope_interface") == "zope-interface"
    _, counts, _ = verdict(
        [missing("Typing_Extensions", "4.16.0")], {"typing-extensions": project("4.16.0")}, strict=True
    )
    assert counts["latest_release"] == 1


def test_a_version_pypi_never_published_is_not_audited() -> None:
    finding = registry_finding("lib", "1.0+local", project("1.0"))
    assert finding.coverage == "none" and finding.note == "PyPI has no release 1.0+local of lib"


def test_nothing_audited_by_any_source_exits_2_and_says_what_each_answered() -> None:
    down = "PyPI's project JSON unreachable (<urlopen error timed out>)"
    lines, counts, status = verdict([missing("a", "1.0"), missing("b", "2.0")], {"a": down, "b": down}, strict=False)
    assert status == 2 and counts["audited"] == 0
    assert "audit: FAILED: no source could audit any pin" in lines[-2]
    assert "had no answer for 2 ('Dependency not found on PyPI" in lines[-1]
    assert "2 not audited (PyPI's project JSON unreachable (<urlopen error timed out>))" in lines[-1]


def test_an_unreachable_registry_is_an_answer_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit_dependencies, "PROJECT_JSON", "http://127.0.0.1:9/pypi/{}/json")
    answer = fetch_project("ecdsa")
    assert isinstance(answer, str) and answer.startswith("PyPI's project JSON unreachable (")


def test_the_script_fails_on_a_known_vulnerable_pin(tmp_path: Path) -> None:
    """The whole chain, pip-audit then the registry, on a real file: pycrypto's last release has open advisories."""
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("pycrypto==2.6.1\n")
    answer = subprocess.run(
        [sys.executable, str(SCRIPT), "--requirement", str(requirements)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert answer.returncode == 1, answer.stdout + answer.stderr
    assert "VULNERABLE pycrypto 2.6.1: " in answer.stdout and "PYSEC-2017-94" in answer.stdout
