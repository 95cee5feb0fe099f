"""The records of a v2 record batch read straight from its (decompressed) bytes: what every read of the
plan, the snapshot and apply spends most of its time on (issue 40).

kafka-python builds each record through a generic object and a function call per varint; a dense
partition of a million records spent 60% of a plan there. This reads the same bytes, in the same
format (Kafka's ``DefaultRecord``: length, attributes, timestamp delta, offset delta, key, value,
headers, each length a zig-zag varint), with the one-byte varints inline, and skips a record before the
fetch offset by its length alone (a compressed batch is answered whole: on 1 MB batches a third of the
records decoded were before the position asked for). The batch itself — its CRC, its codec, its
transaction markers — stays kafka-python's (``protocol.checked_batches``); this is pure logic over bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from offset_restore.errors import UnreadableBatchError
from offset_restore.kafka.model import FetchedRecord

__all__ = ["BatchBody", "decode_records"]


def _long_varint(buffer: Sequence[int], pos: int) -> tuple[int, int]:
    """A zig-zag varint of more than one byte (a length of 64 or more, a timestamp delta)."""
    result, shift = 0, 0
    while True:
        byte = buffer[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise UnreadableBatchError("a record's varint is longer than ten bytes: the batch is corrupt")


def _varint(buffer: Sequence[int], pos: int) -> tuple[int, int]:
    """A zig-zag varint; those of one and two bytes (nearly every length, delta and count) inline."""
    byte = buffer[pos]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), pos + 1
    second = buffer[pos + 1]
    if second < 0x80:
        value = (byte & 0x7F) | (second << 7)
        return (value >> 1) ^ -(value & 1), pos + 2
    return _long_varint(buffer, pos)


_NAMES: dict[bytes, str] = {}
"""Header names decoded once: a partition's records carry the same few (the offset header above all)."""


def _headers(buffer: bytes, pos: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    count, pos = _varint(buffer, pos)
    if count < 0:
        raise UnreadableBatchError(f"a record has {count} headers: the batch is corrupt")
    headers = []
    for _ in range(count):
        length, pos = _varint(buffer, pos)
        raw = buffer[pos : pos + max(0, length)]
        pos += max(0, length)
        name = _NAMES.get(raw)
        if name is None:
            name = (
                _NAMES.setdefault(raw, raw.decode("utf-8", "replace"))
                if len(_NAMES) < 1024
                else raw.decode("utf-8", "replace")
            )
        length, pos = _varint(buffer, pos)
        headers.append((name, None if length < 0 else buffer[pos : pos + length]))
        pos += max(0, length)
    return tuple(headers), pos


class BatchBody(NamedTuple):
    """A v2 batch's records as bytes (decompressed), and what each record's fields are relative to."""

    buffer: bytes | bytearray
    pos: int
    """Where the first record starts."""
    record_count: int
    base_offset: int
    first_timestamp: int
    append_time: int | None
    """The batch's max timestamp when the topic stamps at append (``LogAppendTime``: every record has it)."""


def decode_records(body: BatchBody, fetch_offset: int, until: int | None) -> tuple[list[FetchedRecord], bool]:
    """The batch's records at or after ``fetch_offset``, up to the first at or past ``until``; and
    whether ``until`` stopped them. A record whose length does not match what it holds is refused:
    the batch is corrupt."""
    try:  # one copy of the records' bytes, so that each key and value is one slice of it
        return _decode(bytes(body.buffer), body, fetch_offset, until)
    except IndexError:
        raise UnreadableBatchError(
            f"a record of the batch at offset {body.base_offset} runs past the batch: it is corrupt"
        ) from None


def records_before(body: BatchBody, fetch_offset: int, start: int) -> list[FetchedRecord]:
    """The batch's records from ``start`` up to (not including) ``fetch_offset``: the part of a batch
    the broker sent before the offset asked for (``PartitionFetch.earlier``)."""
    found, _ = decode_records(body, start, fetch_offset - 1)
    return [record for record in found if record.offset < fetch_offset]


def _decode(buffer: bytes, body: BatchBody, fetch_offset: int, until: int | None) -> tuple[list[FetchedRecord], bool]:
    pos, base_offset, first_timestamp, append_time = body.pos, body.base_offset, body.first_timestamp, body.append_time
    records: list[FetchedRecord] = []
    size = len(buffer)
    for _ in range(body.record_count):
        length, pos = _varint(buffer, pos)
        end = pos + length
        if length < 0 or end > size:
            raise UnreadableBatchError(f"a record of the batch at offset {base_offset} runs past the batch")
        delta, at = _varint(buffer, pos + 1)  # after the attributes (one byte, unused)
        offset_delta, at = _varint(buffer, at)
        offset = base_offset + offset_delta
        if offset < fetch_offset:
            pos = end  # before the position asked for: skipped by its length, unread
            continue
        length_of, at = _varint(buffer, at)
        key = None if length_of < 0 else buffer[at : at + length_of]
        at += max(0, length_of)
        length_of, at = _varint(buffer, at)
        value = None if length_of < 0 else buffer[at : at + length_of]
        at += max(0, length_of)
        headers, at = _headers(buffer, at) if buffer[at] else ((), at + 1)  # no headers: one zero byte
        if at != end:
            raise UnreadableBatchError(
                f"record {offset} is {length} bytes long but holds {at - pos}: the batch is corrupt"
            )
        timestamp = append_time if append_time is not None else first_timestamp + delta
        records.append(FetchedRecord(offset=offset, timestamp=timestamp, key=key, value=value, headers=headers))
        pos = end
        if until is not None and offset >= until:
            return records, True
    return records, False
