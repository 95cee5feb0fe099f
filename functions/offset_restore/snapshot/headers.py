"""The number a restore writes in a record's header (its source offset, its source partition), read one
way everywhere: the header strategy, a re-partitioned topic's index, apply's anchor checks."""

from __future__ import annotations

from offset_restore.kafka.model import FetchedRecord

__all__ = ["int_header", "parse_offset_header"]


def parse_offset_header(value: bytes | None) -> int | None:
    """An offset header as decimal ASCII or an 8-byte big-endian integer; None for an absent value.
    Kafka offsets are signed 64-bit: a decimal past 2**63 - 1 is not one (nor could the plan hold it)."""
    if value is None:
        return None
    if 0 < len(value) <= 19 and value.isdigit() and int(value) < 2**63:
        return int(value)
    if len(value) == 8:
        number = int.from_bytes(value, "big", signed=True)
        if number >= 0:
            return number
    raise ValueError(value)


def int_header(record: FetchedRecord, name: str) -> int | None:
    """Header ``name`` of ``record`` as ``parse_offset_header`` reads it; None when the record lacks it
    or it holds no such number (a reader that must not stop on one: the record's source is unknown)."""
    for header, value in record.headers:
        if header == name:
            try:
                return parse_offset_header(value)
            except ValueError:
                return None
    return None
