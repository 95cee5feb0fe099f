from __future__ import annotations

import io

from offset_restore.cli.progress import ProgressLine


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_silent_in_a_pipe() -> None:
    stream = io.StringIO()
    progress = ProgressLine(stream)
    progress("groups", 5, 10)
    progress.finish()
    assert stream.getvalue() == ""


def test_one_rewritten_line_on_a_terminal() -> None:
    stream = Terminal()
    progress = ProgressLine(stream, every_s=0)
    progress("evidence", 50, 200)
    progress("evidence", 200, 200)
    progress.finish()
    text = stream.getvalue()
    assert "evidence: 50/200 (25%)" in text and "evidence: 200/200 (100%)" in text
    assert "\n" not in text and text.endswith("\r\x1b[2K")
