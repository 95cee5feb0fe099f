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


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_wait_in_a_pipe_is_logged_at_each_change_and_each_minute_and_nothing_else_is() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = ProgressLine(stream, clock=clock)
    waiting = "waiting for groups to be empty; still active: orders (Stable, 1 members: app-7 from /10.0.0.5)"
    progress("groups", 5, 10)  # not a wait: silent, as before
    for second in range(0, 150, 5):  # a poll every 5 s, nothing changes for 150 s
        clock.now = second
        progress(waiting, 1, 2)
    clock.now = 151
    progress("waiting for groups to be empty", 2, 2)  # the member left
    lines = stream.getvalue().splitlines()
    assert len(lines) == 4, lines  # the first look, two heartbeats (60 s, 120 s), the change
    assert all(line[:4].isdigit() and line[19] == "Z" for line in lines), lines
    assert lines[0].endswith("app-7 from /10.0.0.5): 1/2 (50%)") and lines[1].endswith("(50%) (still)"), lines
    assert lines[3].endswith("waiting for groups to be empty: 2/2 (100%)"), lines


def test_a_group_id_with_a_newline_stays_on_its_line_and_a_long_line_is_cut_to_the_terminal() -> None:
    stream = io.StringIO()
    ProgressLine(stream)("waiting for groups to be empty; still active: a\nb (Stable, 1 members)", 0, 1)
    assert stream.getvalue().count("\n") == 1 and "a\\nb" in stream.getvalue()
    terminal = Terminal()
    ProgressLine(terminal)("waiting; still active: " + "g" * 500, 0, 1)
    assert len(terminal.getvalue()) < 300  # the terminal is 80 columns here (no tty: the fallback size)


def test_the_offset_table_keeps_one_row_per_offset_whatever_a_group_id_holds() -> None:
    """A group id with a quote, a tab and a newline (all legal in Kafka): escaped, so each offset is one
    row and the columns stay aligned under the header."""
    from offset_restore.apply.model import OffsetChange
    from offset_restore.cli.apply import offset_table

    rows = offset_table(
        [
            OffsetChange("o'rders\n\tEU", "payments", 0, None, 215, "header", "exact"),
            OffsetChange("b", "payments", 1, 180, 176, "fingerprint", "<=3 duplicates"),
        ]
    )
    assert len(rows) == 3 and all("\n" not in row for row in rows)
    column = rows[0].index("NEW-OFFSET")
    assert rows[1][column:].startswith("176") and rows[2][column:].startswith("215"), rows
    assert "o'rders\\n\\tEU" in rows[2]
