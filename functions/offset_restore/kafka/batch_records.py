"""The record batches of a fetch answer and their records, decoded by a compiled reader: what every read of
the plan, the snapshot and apply spends most of its time on.

The reader is aiokafka's record module (``aiokafka.record``, Cython; used here as a decoder only, without
its asyncio client): its batches check their CRC-32C, decompress with cramjam (every codec Kafka has) and
yield records about four times faster than a Python decoder of the same bytes. It is not a documented
API of aiokafka, so the version is pinned (pyproject.toml) and ``tests/unit/test_batch_records.py`` fails
if the shape of what it yields changes. The framing — where each batch starts and ends in the answer, a
batch cut short by the size limit left out — is read here from the batch headers, so a batch's bytes can
be decoded again later (``records_before``). kafka-python keeps the I/O.
"""

from __future__ import annotations

import struct
from collections.abc import Container, Iterator
from typing import Any

from aiokafka.errors import KafkaError as ReaderError
from aiokafka.errors import UnsupportedCodecError
from aiokafka.record.memory_records import MemoryRecords

from offset_restore.errors import UnreadableBatchError
from offset_restore.kafka.model import NO_TIMESTAMP, FetchedRecord, Record

__all__ = ["LOG_OVERHEAD", "abort_marker", "batches", "decode_records", "records_before"]

LOG_OVERHEAD = 12
"""A batch's base offset (8 bytes) and length (4), before the length counts."""
_ABORT = 0
"""A control record's type (its key: version, then type, each two bytes) for an abort marker."""


def batches(data: bytes) -> Iterator[tuple[int, bytes, Any]]:
    """The whole record batches of a partition's answer, each with its base offset and bytes, checked against
    its CRC-32C before use as the Java consumer checks them (``check.crcs``): a batch corrupt on disk or in
    flight is never read. A batch cut short by the answer's size limit ends the answer (the next fetch reads it)."""
    at, size = 0, len(data)
    while at + LOG_OVERHEAD <= size:
        (length,) = struct.unpack_from(">i", data, at + 8)
        end = at + LOG_OVERHEAD + length
        if length <= 0 or end > size:
            return
        raw = data[at:end]
        base = int.from_bytes(raw[:8], "big", signed=True)
        try:
            batch = MemoryRecords(raw).next_batch()
            valid = batch is not None and batch.validate_crc()
        except (ReaderError, ValueError, struct.error) as error:
            raise _corrupt(base, error) from None
        if batch is None:
            return
        if not valid:
            raise UnreadableBatchError(
                f"the record batch at offset {base} fails its CRC-32C check (corrupt on the broker's disk or on the "
                "way): nothing was read from it and nothing written; run again (a flaw on the way passes), else "
                "check the broker's log segment"
            )
        yield base, raw, batch
        at = end


def decode_records(
    batch: Any,
    base_offset: int,
    fetch_offset: int,
    until: int | None,
    records: list[Record],
    keep: Container[int] | None = None,
) -> bool:
    """Append the batch's records at or after ``fetch_offset``, up to the first at or past ``until``, to
    ``records``; True when ``until`` stopped them. ``keep``: only the records at these offsets (a reader of
    a few offsets in a run need not build the rest; every record is still read and checked). A batch of
    format 2 (its records' offsets at or after its base offset) wanted whole is taken in one step: a
    dense read's batches are nearly all wanted whole. A legacy batch's base offset is its last record's."""
    try:
        whole = keep is None and base_offset >= fetch_offset and getattr(batch, "magic", None) == 2  # none before
        if whole and (until is None or batch.next_offset <= until):
            records.extend(batch)  # every record wanted and none at ``until``: taken at C speed
            return False
        for record in batch:
            offset = record.offset
            if offset < fetch_offset or (keep is not None and offset not in keep):
                continue
            records.append(record if record.timestamp is not None else _without_time(record))
            if until is not None and offset >= until:
                return True
    except (ReaderError, ValueError, IndexError, struct.error, UnicodeDecodeError) as error:
        raise _corrupt(base_offset, error) from None
    return False


def _without_time(record: Any) -> Record:
    """A record of message format 0, which has no timestamp: given Kafka's ``NO_TIMESTAMP`` (-1), as the Java
    consumer gives it, so every reader holds an integer (the reader's own record says None)."""
    return FetchedRecord(record.offset, NO_TIMESTAMP, record.key, record.value, ())


def records_before(raw: bytes, fetch_offset: int, start: int) -> list[Record]:
    """A batch's records (its bytes, ``raw``) from ``start`` up to (not including) ``fetch_offset``: the part
    of a batch the broker sent before the offset asked for (``PartitionFetch.earlier``)."""
    found: list[Record] = []
    for base, _, batch in batches(raw):
        decode_records(batch, base, start, fetch_offset - 1, found)
    return [record for record in found if record.offset < fetch_offset]


def abort_marker(batch: Any) -> bool:
    """Whether a control batch is a transaction's abort marker (not its commit marker)."""
    record = next(iter(batch), None)
    key = record.key if record is not None else None
    return bool(key is not None and len(key) >= 4 and int.from_bytes(key[2:4], "big", signed=True) == _ABORT)


def _corrupt(base_offset: int, error: BaseException) -> UnreadableBatchError:
    """A batch the reader cannot read: corrupt (a length that lies, a codec's stream broken), or compressed
    with a codec this install cannot decode."""
    if isinstance(error, UnsupportedCodecError):
        return UnreadableBatchError(
            f"the record batch at offset {base_offset} is compressed with a codec this install cannot decode "
            f"({error}): install the package with its dependencies (pip install offset-restore brings cramjam; "
            "`offset-restore --version` lists what this install reads)"
        )
    return UnreadableBatchError(
        f"the record batch at offset {base_offset} cannot be read ({type(error).__name__}: {error}): it is corrupt; "
        "nothing was read from it and nothing written"
    )
