"""``offset-restore --version`` and the exit statuses in ``--help`` (docs/design.md §5.1)."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import pytest
from offset_restore.cli.main import main


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    shown = capsys.readouterr().out.strip()
    assert shown == f"offset-restore {metadata.version('offset-restore')}; codecs: gzip, snappy, lz4, zstd"


def test_help_lists_every_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    shown = capsys.readouterr().out
    for status in ("0    done", "1    failed", "2    bad usage or bad input", "3    done in part", "130  interrupted"):
        assert status in shown


def test_with_json_an_error_is_also_the_json_document_on_stdout(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "none"
    status = main(["plan", "--snapshot", str(missing), "--bootstrap-servers", "127.0.0.1:1",
                   "--output", str(tmp_path / "plan.json"), "--json"])  # fmt: skip
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert status == 2 and document["exit_status"] == 2 and document["command"] == "plan"
    assert str(missing) in document["error"] and captured.err.startswith("offset-restore plan: error: ")
    assert not (tmp_path / "plan.json").exists()
