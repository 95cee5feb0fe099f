"""A plan's compact JSON in pieces: byte for byte ``Plan.model_dump_json(exclude=...)``, a slice of entries at
a time.

Apply saves the plan it works on at every safe point, and seals it whole before each save. Written as one
string, a plan of 240,000 entries (170 MB of JSON) was held four times over at once — the serializer's
buffer, the string, its bytes, and the file read back to check its version — more than the entries
themselves. In pieces, a save holds one slice of entries' JSON; a unit test holds the pieces to the
one-string form, so a plan sealed by either verifies under the other.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import TypeAdapter

from offset_restore.formats.plan import Plan, PlanEntry

__all__ = ["ENTRIES_PER_PIECE", "json_pieces"]

ENTRIES_PER_PIECE = 1000
"""Entries serialized in one call: large enough that the call's own cost disappears, small enough to be
a few hundred kilobytes."""

_ENTRIES: TypeAdapter[list[PlanEntry]] = TypeAdapter(list[PlanEntry])
_BEFORE_ENTRIES = set(list(Plan.model_fields)[: list(Plan.model_fields).index("entries")])
"""The plan's fields written before its entries (pydantic writes the model's fields in order, then extras)."""


def json_pieces(plan: Plan, exclude: dict[str, Any] | None = None) -> Iterator[bytes]:
    """The pieces of ``plan.model_dump_json(exclude=exclude).encode()``, in order. ``exclude`` as pydantic
    takes it; its ``"entries"`` part applies to each entry."""
    rest = {name: part for name, part in (exclude or {}).items() if name != "entries"} or None
    each = (exclude or {}).get("entries")
    shell = plan.model_copy(update={"entries": []}).model_dump_json(exclude=rest).encode()
    # Where the entries go is found by length, not by looking for them: a name, or a field a later version
    # added to a cluster's reference, may hold the same bytes.
    before = plan.model_dump_json(include=_BEFORE_ENTRIES, exclude=rest).encode()
    head = before[:-1] + b',"entries":[' if len(before) > 2 else b'{"entries":['
    assert shell.startswith(head + b"]"), "pydantic writes a plan's fields in the model's order"
    yield head
    entries = plan.entries
    for start in range(0, len(entries), ENTRIES_PER_PIECE):
        piece = _ENTRIES.dump_json(entries[start : start + ENTRIES_PER_PIECE], exclude=each)
        yield (b"," + piece[1:-1]) if start else piece[1:-1]
    yield shell[len(head) :]
