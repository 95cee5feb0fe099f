"""Decisions more than one strategy makes the same way: a group past the restored records
(``beyond``), and the fingerprint apply checks at a resume point (``expected_print``)."""

from __future__ import annotations

from offset_restore.translate.positions import Decision, Position

__all__ = ["beyond", "expected_print"]


def beyond(pos: Position, top: int, offset: int, duplicates: int, note: str) -> Decision:
    """No restored record carries a source offset >= c: pending while the restore has not reached
    the source's end, otherwise resume after the last restored record."""
    c = pos.committed
    last_source = pos.last_source_record
    if last_source is not None and top < last_source:
        return Decision(
            "pending",
            reason=f"the restore has reached source offset {top}; the source had records up to "
            f"{last_source} and the group resumes at {c}{note}",
        )
    what = "caught up" if pos.log_end is not None and c == pos.log_end else "beyond the restored data"
    return Decision(
        "mapped",
        offset,
        "end",
        duplicates == 0,
        duplicates,
        f"group is {what}: resume after the last restored record (source offset {top}){note}",
    )


def expected_print(pos: Position, key: int) -> str | None:
    """The snapshot's fingerprint of the record that carries source offset ``key``, if it has one."""
    return pos.next.fingerprint if pos.next is not None and pos.next.offset == key else None
