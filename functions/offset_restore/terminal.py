"""Text for a terminal: names and messages shown with their control characters as escapes, so a
group id cannot rewrite the operator's screen. Below every stage: the CLI and the demo both print with it."""

from __future__ import annotations

import re

__all__ = ["printable", "printable_line"]

_UNSEEN = "\u2028\u2029\u202a-\u202e\u2066-\u2069"
"""Characters a terminal or a log viewer acts on as it would on a control: the line and paragraph separators
(a line break to many viewers), and the bidirectional overrides and isolates (they reorder what follows)."""
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_UNSEEN}]")


def printable(text: str) -> str:
    """``text`` for a terminal: control characters other than the line breaks and tabs it is made of
    shown as escapes (``\\r``, ``\\x1b``): a group id holding a carriage return would overwrite its
    line, an escape sequence would rewrite the terminal. (A newline inside a name is not told from a
    line's end here; the JSON document carries every name exactly.)"""
    return _CONTROL.sub(lambda m: "\\r" if m.group() == "\r" else _escape(m.group()), text)


_LINE_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_UNSEEN}]")
_NAMED = {"\r": "\\r", "\n": "\\n", "\t": "\\t"}


def printable_line(text: str) -> str:
    """One line for a terminal: every control character shown as an escape, line breaks and tabs too
    (they can only come from a name or a message inside the line)."""
    return _LINE_CONTROL.sub(lambda m: _NAMED.get(m.group(), _escape(m.group())), text)


def _escape(character: str) -> str:
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
