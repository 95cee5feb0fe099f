"""``offset-restore --version`` and the exit statuses in ``--help`` (docs/design.md §5.1)."""

from __future__ import annotations

from importlib import metadata

import pytest
from offset_restore.cli.main import main


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"offset-restore {metadata.version('offset-restore')}"


def test_help_lists_every_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    shown = capsys.readouterr().out
    for status in ("0    done", "1    failed", "2    bad usage or bad input", "3    done in part", "130  interrupted"):
        assert status in shown
