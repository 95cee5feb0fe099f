"""An encoder for ``__consumer_offsets`` records written from Apache Kafka's published message
formats (OffsetCommitKey v0-1, GroupMetadataKey v2, OffsetCommitValue v0-3), independent of the
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


def commit_value(offset: int, metadata: str = "", commit_ts: int = 0, version: int = 3, leader_epoch: int = 5) -> bytes:
    head = struct.pack(">hq", version, offset)
    if version == 3:
        head += struct.pack(">i", leader_epoch)
    body = head + _string(metadata) + struct.pack(">q", commit_ts)
    if version == 1:
        body += struct.pack(">q", commit_ts + 86_400_000)  # expire timestamp
    return body
