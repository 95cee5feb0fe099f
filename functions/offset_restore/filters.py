"""Which groups and topics a run covers: regexes matched against the whole name."""

from __future__ import annotations

import re
from dataclasses import dataclass

from offset_restore.errors import BadInputError

__all__ = ["DEFAULT_EXCLUDE_GROUPS", "NameFilter", "compile_pattern"]

DEFAULT_EXCLUDE_GROUPS = r"__.*|_confluent.*|console-consumer-.*|connect-cluster.*"
"""Internal groups and the throwaway groups of console consumers; replaced by ``--exclude-groups``."""


def compile_pattern(pattern: str | None, option: str) -> re.Pattern[str] | None:
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as error:
        raise BadInputError(f"invalid {option} regex {pattern!r}: {error}") from None


@dataclass(frozen=True)
class NameFilter:
    """``include`` (default: everything) minus ``exclude``, each a full match of the name."""

    include: re.Pattern[str] | None = None
    exclude: re.Pattern[str] | None = None

    @classmethod
    def parse(cls, include: str | None, exclude: str | None, option: str) -> NameFilter:
        return cls(compile_pattern(include, f"--{option}"), compile_pattern(exclude, f"--exclude-{option}"))

    def __call__(self, name: str) -> bool:
        if self.include is not None and not self.include.fullmatch(name):
            return False
        return not (self.exclude is not None and self.exclude.fullmatch(name))
