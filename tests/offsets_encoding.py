"""An encoder for ``__consumer_offsets`` records written from Apache Kafka's published message
formats (OffsetCommitKey v0-1, GroupMetadataKey v2, OffsetCommitValue v0-4), independent of the
decoder under test."""

from __future__ import annotations

import struct


def _string(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def commit_key(group: str, topic: str, partition: int, version: int = 1) -> bytes:
    return struct.pack(">h", version) + _string(group) + _string(topic) + struct.pack(">i", partition)


def group_metadata_key(group: str) -> bytes:
    return struct.pack(">h", 2) + _string(group)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    return bytes([*out, value])


def commit_value(
    offset: int,
    metadata: str = "",
    commit_ts: int = 0,
    version: int = 3,
    leader_epoch: int = 5,
    tagged: dict[int, bytes] | None = None,
) -> bytes:
    head = struct.pack(">hq", version, offset)
    if version >= 3:
        head += struct.pack(">i", leader_epoch)
    if version >= 4:  # flexible: compact string, then tagged fields
        raw = metadata.encode()
        fields = b"".join(_uvarint(tag) + _uvarint(len(data)) + data for tag, data in sorted((tagged or {}).items()))
        return head + _uvarint(len(raw) + 1) + raw + struct.pack(">q", commit_ts) + _uvarint(len(tagged or {})) + fields
    body = head + _string(metadata) + struct.pack(">q", commit_ts)
    if version == 1:
        body += struct.pack(">q", commit_ts + 86_400_000)  # expire timestamp
    return body
