"""The number a restore writes in a record's header (its source offset, its source partition), read one
way everywhere: the header strategy, a re-partitioned topic's index, apply's anchor checks."""

from __future__ import annotations

from offset_restore.kafka.model import Record

__all__ = ["LARGEST_BINARY_OFFSET", "int_header", "parse_offset_header"]


LARGEST_BINARY_OFFSET = 2**56 - 1
"""The largest offset read from 8 binary bytes. No partition reaches 2**56 offsets (at a million records a
second, 2,283 years); a value past it is another encoding read as big-endian: a little-endian number
(its low byte first), or text."""


def parse_offset_header(value: bytes | None) -> int | None:
    """An offset header in one of exactly two encodings: ASCII decimal digits (no sign, no spaces; a
    signed 64-bit offset, so at most 2**63 - 1), or an 8-byte big-endian integer of at most
    ``LARGEST_BINARY_OFFSET``. None for an absent value; ``ValueError`` for anything else — never read
    as another number: 8 bytes of text that are not all digits (``"      12"``, space-padded: its first
    byte alone puts it past 2**61) and a little-endian number (``0c 00 .. 00``: past 2**56 whenever its
    low byte is not 0) are both refused."""
    if value is None:
        return None
    if value.isdigit() and (len(value) < 19 or (len(value) == 19 and int(value) < 2**63)):  # b"".isdigit() is False
        return int(value)
    if len(value) == 8:
        number = int.from_bytes(value, "big", signed=True)
        if 0 <= number <= LARGEST_BINARY_OFFSET:
            return number
    raise ValueError(value)


def int_header(record: Record, name: str) -> int | None:
    """Header ``name`` of ``record`` as ``parse_offset_header`` reads it; None when the record lacks it
    or it holds no such number (a reader that must not stop on one: the record's source is unknown)."""
    for header, value in record.headers:
        if header == name:
            try:
                return parse_offset_header(value)
            except ValueError:
                return None
    return None
