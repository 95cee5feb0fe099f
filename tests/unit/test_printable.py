"""Control characters in names are shown, not sent to the terminal (cli/arguments.printable)."""

from __future__ import annotations

from offset_restore.cli.arguments import printable


def test_control_characters_become_escapes_and_lines_stay_lines() -> None:
    assert printable("a\rb\x1b[2Jc\x00\x7f\x85") == "a\\rb\\x1b[2Jc\\x00\\x7f\\x85"
    assert printable("line one\n\tline two\n") == "line one\n\tline two\n"
    assert printable("naïve ✓ 名前") == "naïve ✓ 名前"  # text is text
