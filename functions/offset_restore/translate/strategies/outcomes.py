"""Decisions more than one strategy makes the same way: a group past the restored records
(``beyond``), and the fingerprint apply checks at a resume point (``expected_print``)."""

from __future__ import annotations

from offset_restore.translate.never_restored import first_never_restored, never_restored
from offset_restore.translate.positions import Decision, Position

__all__ = ["beyond", "expected_print", "unread_phrase", "with_unrestored_tail"]


def beyond(pos: Position, top: int, offset: int, duplicates: int, note: str, *, complete: bool = False) -> Decision:
    """No restored record carries a source offset >= c: pending while the restore has not reached
    the source's end, otherwise resume after the last restored record. ``complete``: the restore was
    declared finished where it stopped (``restore_complete``): the group resumes after the last
    restored record, and what it will never read is counted."""
    c = pos.committed
    last_source = pos.last_source_record
    short = last_source is not None and top < last_source
    if short and not complete:
        return Decision("pending", reason=_pending_reason(pos, top, note))
    unread: int | None = None
    if short:
        assert last_source is not None
        unread = never_restored(c, top, last_source)
        why = (
            f"the restore was declared complete at source offset {top} (the source had records up to "
            f"{last_source}): resume after the last restored record; {unread_phrase(c, last_source, unread)}{note}"
        )
    else:
        what = "caught up" if pos.log_end is not None and c == pos.log_end else "beyond the restored data"
        assumed = "; this assumes the restore is complete: the snapshot knows no source log end (an export)"
        why = f"group is {what}: resume after the last restored record (source offset {top}){note}"
        why += assumed if last_source is None else ""
    return Decision("mapped", offset, "end", duplicates == 0, duplicates, why, never_read=unread)


def with_unrestored_tail(decision: Decision, pos: Position, top: int) -> Decision:
    """A mapped entry on a partition whose restore was declared complete at source offset ``top``: the
    records after it the group had not processed will never be on the target — counted, at most (source
    offsets, as of the snapshot). Entries that already count theirs (an end) are left as they are."""
    last_source = pos.last_source_record
    if decision.status != "mapped" or decision.never_read is not None or last_source is None:
        return decision
    first, unread = first_never_restored(pos.committed, top), never_restored(pos.committed, top, last_source)
    if not unread:
        return decision._replace(never_read=0)
    said = (
        f"the restore was declared complete at source offset {top}: source records {first}..{last_source} "
        f"(at most {unread:,}) will never be read"
    )
    return decision._replace(never_read=unread, reason=f"{decision.reason}; {said}" if decision.reason else said)


def _pending_reason(pos: Position, top: int, note: str) -> str:
    """Why the entry waits, and what declaring the restore complete there would cost the group."""
    c, last_source = pos.committed, pos.last_source_record
    assert last_source is not None
    unread = never_restored(c, top, last_source)
    scope = f"{pos.source.topic}/{pos.source.partition}"
    return (
        f"the restore has reached source offset {top}; the source had records up to {last_source} and the group "
        f"resumes at {c}{note}. If the restore is finished, declare it complete (plan --restore-complete {scope}, "
        f'or "restore_complete" in the execution input): the group then resumes after the last restored record '
        f"and {unread_phrase(c, last_source, unread)}"
    )


def unread_phrase(c: int, last_source: int, unread: int) -> str:
    if unread == 0:
        return f"misses nothing it had not processed (it had processed the source's records up to {c - 1})"
    return f"would never read source records {c}..{last_source} (at most {unread:,} records it had not processed)"


def expected_print(pos: Position, key: int) -> str | None:
    """The snapshot's fingerprint of the record that carries source offset ``key``, if it has one."""
    return pos.next.fingerprint if pos.next is not None and pos.next.offset == key else None
