"""Control characters in names are shown, not sent to the terminal (terminal.printable)."""

from __future__ import annotations

from offset_restore.terminal import printable, printable_line


def test_control_characters_become_escapes_and_lines_stay_lines() -> None:
    assert printable("a\rb\x1b[2Jc\x00\x7f\x85") == "a\\rb\\x1b[2Jc\\x00\\x7f\\x85"
    assert printable("line one\n\tline two\n") == "line one\n\tline two\n"
    assert printable("naïve ✓ 名前") == "naïve ✓ 名前"  # text is text


def test_in_a_line_every_control_character_is_shown_a_newline_too() -> None:
    """A summary given as lines, an error or a warning: a newline or tab inside one can only come from a
    name, and would start a line of its own (a forged "groups written" line, or a line overwritten)."""
    assert printable_line("skipped: g\nFAILED: x\tz\r\x1b[2J") == "skipped: g\\nFAILED: x\\tz\\r\\x1b[2J"
    assert printable_line("naïve ✓ 名前") == "naïve ✓ 名前"


def test_line_separators_and_direction_overrides_are_shown_too() -> None:
    """U+2028 and U+2029 end a line in many log viewers and editors; the bidirectional overrides and isolates
    reorder what follows them (a group id could make "skipped" read as "written")."""
    hostile = "g\u2028FAILED\u2029x\u202edenetirw\u2066y\u2069"
    shown = "g\\u2028FAILED\\u2029x\\u202edenetirw\\u2066y\\u2069"
    assert printable(hostile) == shown and printable_line(hostile) == shown
    assert printable("\u200dzero-width joiner is text") == "\u200dzero-width joiner is text"
