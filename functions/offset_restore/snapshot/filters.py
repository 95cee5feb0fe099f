"""Which groups and topics a run covers: regexes matched against the whole name.

Patterns are compiled with RE2, which matches in time linear in the name: a pattern pasted in an
incident (``(a+)+$`` and the like) cannot hang a snapshot or a Lambda on backtracking. RE2 has no
backreferences or lookarounds; such a pattern is refused with RE2's reason.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import re2  # type: ignore[import-untyped]

from offset_restore.errors import BadInputError

__all__ = ["DEFAULT_EXCLUDE_GROUPS", "MAX_PATTERN_LENGTH", "NameFilter", "Pattern", "compile_pattern"]

DEFAULT_EXCLUDE_GROUPS = r"__.*|_confluent.*|console-consumer-.*|connect-cluster.*"
"""Internal groups and the throwaway groups of console consumers; replaced by ``--exclude-groups``."""

MAX_PATTERN_LENGTH = 4096
"""Longer patterns are refused: nobody types them, and RE2's memory grows with the pattern."""


class Pattern(Protocol):
    pattern: str

    def fullmatch(self, text: str) -> Any: ...


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would print parse errors to stderr; ours say it better
    return options


def pattern_for(names: Iterable[str]) -> str:
    """An RE2 pattern that fully matches exactly ``names`` (each name's metacharacters escaped): what a
    printed ``--allow-rewind`` suggests, so that ``'a|.*'`` rewinds that group alone and ``orders(1)``
    its own."""
    return "|".join(re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", name) for name in names)


def rewind_option(names: Iterable[str]) -> str:
    """``--allow-rewind=PATTERN`` for ``names``, quoted for a POSIX shell (a group id may hold quotes,
    ``;``, ``$(...)`` or a newline, all legal in Kafka), joined to its option so a pattern beginning with
    ``-`` is not taken for another option: safe to paste."""
    return f"--allow-rewind={shlex.quote(pattern_for(names))}"


def compile_pattern(pattern: str | None, option: str) -> Pattern | None:
    """Compile a user's pattern, or raise ``BadInputError`` naming the option and the reason."""
    if pattern is None:
        return None
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise BadInputError(f"{option} regex is {len(pattern)} characters long; at most {MAX_PATTERN_LENGTH}")
    if "\x00" in pattern:
        raise BadInputError(f"{option} regex contains a NUL character")
    try:
        return re2.compile(pattern, options=_options())  # type: ignore[no-any-return,unused-ignore]
    except re2.error as error:
        reason = error.args[0].decode(errors="replace") if error.args and isinstance(error.args[0], bytes) else error
        raise BadInputError(
            f"invalid {option} regex {pattern!r}: {reason} (patterns use RE2 syntax: no backreferences or lookarounds)"
        ) from None


@dataclass(frozen=True)
class NameFilter:
    """``include`` (default: everything) minus ``exclude``, each a full match of the name."""

    include: Pattern | None = None
    exclude: Pattern | None = None

    @classmethod
    def parse(cls, include: str | None, exclude: str | None, option: str) -> NameFilter:
        return cls(compile_pattern(include, f"--{option}"), compile_pattern(exclude, f"--exclude-{option}"))

    def __call__(self, name: str) -> bool:
        if self.include is not None and not self.include.fullmatch(name):
            return False
        return not (self.exclude is not None and self.exclude.fullmatch(name))
