"""What a restore that ended short never brings a group: the one count the header, whole-read,
checkpoint and re-partitioned entries all give (pure arithmetic on source offsets, as of the snapshot)."""

from __future__ import annotations

__all__ = ["first_never_restored", "never_restored"]


def first_never_restored(committed: int, top: int | None) -> int:
    """The first source offset a group had not processed that a restore ending at ``top`` (None: it
    brought none) never brings: its position, or the record after ``top`` when that comes later."""
    return committed if top is None else max(committed, top + 1)


def never_restored(committed: int, top: int | None, last_source: int) -> int:
    """At most how many records (source offsets, as of the snapshot) from ``first_never_restored`` to
    the source's last the group will never read: the one count every kind of entry gives."""
    return max(0, last_source - first_never_restored(committed, top) + 1)
