"""The record fingerprint: a stable hash that finds the same record on another cluster.

Definition (so that any tool can compute it): SHA-256 over, in this order,
``field(key)``, ``field(value)``, the number of kept headers as a 4-byte big-endian integer, and
``field(name as UTF-8) field(value)`` for each kept header in record order; where ``field(None)`` is the
four bytes ``ff ff ff ff`` and ``field(b)`` is ``len(b)`` as a 4-byte big-endian integer followed by
``b``. Kept headers are all headers except the restore's offset header (by default
``x-source-offset``) and ``x-source-partition``, which a restore adds and the source record never
had. The fingerprint is the first 32 hex digits (128 bits) of the digest. Offsets, timestamps and
partition are left out on purpose: they are what changes in a restore.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from offset_restore.kafka.model import Record

__all__ = ["DEFAULT_OFFSET_HEADER", "DEFAULT_PARTITION_HEADER", "fingerprint"]

DEFAULT_OFFSET_HEADER = "x-source-offset"
DEFAULT_PARTITION_HEADER = "x-source-partition"
"""The header a restore adds with the source partition; like the offset header, a restore adds it, so
it is left out of every fingerprint (on the source as on the target)."""
_NULL = b"\xff\xff\xff\xff"


def fingerprint(
    key: bytes | None,
    value: bytes | None,
    headers: Iterable[tuple[str, bytes | None]] = (),
    *,
    exclude_header: str | None = DEFAULT_OFFSET_HEADER,
) -> str:
    """The fingerprint of the module docstring, its fields joined and hashed at once (one call into the
    hash, not one a field: a snapshot and a plan fingerprint hundreds of thousands of records)."""
    parts = [_length(key), key or b"", _length(value), value or b""]
    kept = [(name, data) for name, data in headers if name != exclude_header and name != DEFAULT_PARTITION_HEADER]
    parts.append(len(kept).to_bytes(4, "big"))
    for name, data in kept:
        encoded = name.encode("utf-8")
        parts += (_length(encoded), encoded, _length(data), data or b"")
    return hashlib.sha256(b"".join(parts)).hexdigest()[:32]


def _length(data: bytes | None) -> bytes:
    """A field's length prefix: ``ff ff ff ff`` for None (its bytes then empty)."""
    return _NULL if data is None else len(data).to_bytes(4, "big")


def record_fingerprint(record: Record, exclude_header: str | None = DEFAULT_OFFSET_HEADER) -> str:
    """``fingerprint`` of a record read (its key, value and headers, the offset header left out)."""
    return fingerprint(record.key, record.value, record.headers, exclude_header=exclude_header)
