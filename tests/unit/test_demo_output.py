"""``demo --output`` empties only a folder a demo wrote: a folder given by mistake keeps its files."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from offset_restore.cli.main import main
from offset_restore.devtools.demo import MARKER, RUNS, clear_output


def test_a_folder_holding_other_files_is_refused_and_nothing_deleted(tmp_path: Path) -> None:
    (tmp_path / "thesis.tex").write_text("years of work")
    out, err = io.StringIO(), io.StringIO()
    assert main(["demo", "--output", str(tmp_path)], out=out, err=err) == 2
    assert "holds files no demo wrote" in err.getvalue() and "nothing was deleted" in err.getvalue()
    assert (tmp_path / "thesis.tex").read_text() == "years of work"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thesis.tex"]


def test_a_file_is_refused(tmp_path: Path) -> None:
    given = tmp_path / "notes.txt"
    given.write_text("kept")
    with pytest.raises(Exception, match="is a file, not a folder"):
        clear_output(given)
    assert given.read_text() == "kept"


@pytest.mark.parametrize("marked", [True, False], ids=["marked", "an older demo's runs"])
def test_a_demo_folder_is_emptied_and_marked(tmp_path: Path, marked: bool) -> None:
    (tmp_path / RUNS[0]).mkdir()
    (tmp_path / RUNS[0] / "report.html").write_text("old")
    if marked:
        (tmp_path / MARKER).write_text("")
    clear_output(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [MARKER]


def test_a_new_folder_is_made_and_marked(tmp_path: Path) -> None:
    clear_output(tmp_path / "a" / "b")
    assert (tmp_path / "a" / "b" / MARKER).is_file()
