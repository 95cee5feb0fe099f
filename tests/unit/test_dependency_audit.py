"""The CI dependency check's verdict on pip-audit reports (the network may not reach the service)."""

from __future__ import annotations

from scripts.audit_dependencies import verdict

CLEAN = {"name": "kafka-python", "version": "3.0.12", "vulns": []}
VULNERABLE = {"name": "oldlib", "version": "1.0", "vulns": [{"id": "PYSEC-2099-1"}, {"id": "GHSA-xxxx"}]}
SKIPPED = {"name": "boto3", "skip_reason": "Dependency not found on PyPI and could not be audited: boto3 (1.44)"}


def test_a_known_vulnerability_fails_the_check_by_name() -> None:
    lines, counts, status = verdict([CLEAN, VULNERABLE], strict=False)
    assert status == 1 and lines[0] == "VULNERABLE oldlib 1.0: PYSEC-2099-1, GHSA-xxxx"
    assert counts == {"packages": 2, "audited": 2, "vulnerable": 1, "not_audited": 0}


def test_packages_that_could_not_be_audited_are_counted_not_hidden() -> None:
    lines, counts, status = verdict([CLEAN, SKIPPED], strict=False)
    assert status == 0 and counts["not_audited"] == 1 and "1 could not be audited (e.g. Dependency" in lines[-1]
    assert verdict([CLEAN, SKIPPED], strict=True)[2] == 1
