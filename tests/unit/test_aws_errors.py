"""The operator's commands meet AWS misconfigured as a new user's machine is: no region, no
credentials, an unknown profile, an endpoint that does not answer, a refused call. Each is one line
on stderr that says what to do (no traceback), with exit 2 for missing configuration and 1 for a
failure, and the JSON document on stdout with --json."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from botocore.exceptions import ClientError
from offset_restore.cli.aws import describe_aws_error
from offset_restore.cli.main import main


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


@pytest.fixture
def bare_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No AWS configuration at all, and no instance metadata service to wait for."""
    for name in (
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_ENDPOINT_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    return monkeypatch


def one_line(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    "argv",
    [
        ("status", "--restore-id", "r1", "--stack", "prod"),
        ("report", "--restore-id", "r1", "--stack", "prod"),
        ("start", "--stack", "prod", "--mode", "plan"),
        ("unlock", "--stack", "prod"),
        ("rollback", "--restore-id", "r1", "--stack", "prod", "--bootstrap-servers", "127.0.0.1:9"),
    ],
)
def test_no_region_is_one_line_naming_the_option(bare_machine: pytest.MonkeyPatch, argv: tuple[str, ...]) -> None:
    status, out, err = run(*argv)
    assert status == 2 and out == ""
    assert "no AWS region: give --region REGION" in one_line(err) and err.startswith(f"offset-restore {argv[0]}:")


def test_no_credentials_unknown_profile_and_an_unreachable_endpoint(bare_machine: pytest.MonkeyPatch) -> None:
    status, _, err = run("status", "--restore-id", "r1", "--stack", "prod", "--region", "eu-west-1")
    assert status == 2 and "no AWS credentials: give --profile NAME" in one_line(err)
    status, _, err = run("status", "--restore-id", "r1", "--table", "t", "--profile", "nope")
    assert status == 2 and "The config profile (nope) could not be found" in one_line(err)
    bare_machine.setenv("AWS_ACCESS_KEY_ID", "testing")
    bare_machine.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    bare_machine.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    status, out, err = run("report", "--restore-id", "r1", "--stack", "prod", "--region", "eu-west-1", "--open")
    assert status == 1 and "cannot reach AWS" in one_line(err) and "127.0.0.1:9" in err
    status, out, err = run("start", "--stack", "prod", "--region", "eu-west-1", "--json")
    document = json.loads(out)
    assert status == 1 and document["error"].startswith("cannot reach AWS") and document["exit_status"] == 1


def refused(code: str, message: str = "m") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, "StartExecution")


@pytest.mark.parametrize(
    ("code", "hint"),
    [
        ("AccessDeniedException", "lacks this permission"),
        ("ExpiredTokenException", "credentials have expired"),
        ("UnrecognizedClientException", "not valid here"),
        ("ResourceNotFoundException", "is the deployment in this region"),
        ("ThrottlingException", ""),
    ],
)
def test_a_refused_call_names_the_operation_the_code_and_the_fix(code: str, hint: str) -> None:
    described = describe_aws_error(refused(code, "AWS said so"))
    assert described is not None
    line, status = described
    assert status == 1 and line.startswith(f"AWS refused StartExecution: {code}: AWS said so") and hint in line


def test_other_errors_are_not_taken_for_aws_ones() -> None:
    assert describe_aws_error(ValueError("x")) is None


def test_each_run_of_a_restore_gets_its_own_execution_name() -> None:
    """Step Functions never reuses a name: the same restore id runs again (apply after plan, or once
    the restore is declared complete) under a new one, at most 80 characters."""
    from datetime import UTC, datetime

    from offset_restore.cli.start import execution_name

    first = execution_name("ops-1", datetime(2026, 12, 1, 3, 0, 0, 1, tzinfo=UTC))
    again = execution_name("ops-1", datetime(2026, 12, 1, 3, 0, 0, 2, tzinfo=UTC))
    assert first == "ops-1-20261201T030000000001Z" and first != again
    assert len(execution_name("r" * 128) or "") == 80 and execution_name(None) is None
