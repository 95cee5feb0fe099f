"""What a state returns to the state machine is bounded: Step Functions carries at most 256 KB between
states, and a large estate has tens of thousands of groups (the full lists live in DynamoDB and the
report)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["NAMES_IN_OUTPUT", "first_names"]


NAMES_IN_OUTPUT = 20
"""Group names a step returns per list; the counts are whole. A state's payload is limited to 256 KB
and a large estate has tens of thousands of groups: the full lists live in DynamoDB and the report."""


def first_names(names: Sequence[str]) -> list[str]:
    return list(names[:NAMES_IN_OUTPUT])
