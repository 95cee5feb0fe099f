"""MirrorMaker 2's checkpoints, as it writes them to ``<source alias>.checkpoints.internal`` on the
target: decoding (pure) and reading the topic.

The format is ``org.apache.kafka.connect.mirror.Checkpoint`` (connect-mirror-client 4.1.1), Kafka's
own ``Schema`` types, big-endian: the key is the group (STRING: int16 length, UTF-8), the topic as
it is named on the target, and the partition (INT32); the value a version (INT16, 0), the group's
committed offset on the source (``upstreamOffset``, INT64), MM2's translation of it on the target
(``offset``, INT64) and the commit metadata (STRING). The record's timestamp is when MM2 emitted it.

A translation is a lower bound of where the group's next record is on the target: MM2 answers the
offset sync at or below the group's offset, plus one when it is not exactly that offset
(``OffsetSyncStore.translateDownstream``), and -1 when its oldest sync is already past the group (such
checkpoints are kept out here).
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from offset_restore.kafka.model import TP, Record

__all__ = ["CHECKPOINTS_SUFFIX", "MirrorCheckpoint", "decode_checkpoint", "latest_checkpoints"]

CHECKPOINTS_SUFFIX = ".checkpoints.internal"
_INT16, _INT32, _INT64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class MirrorCheckpoint:
    group: str
    tp: TP
    """The partition as named on the target (MM2 renames topics by its replication policy)."""
    upstream: int
    """The group's committed offset on the source when MM2 read it."""
    downstream: int
    """MM2's translation on the target: at or before the record the group resumes at."""
    metadata: str
    emitted_ms: int


def _string(data: bytes, at: int) -> tuple[str, int]:
    (length,) = _INT16.unpack_from(data, at)
    if length < 0:
        raise ValueError("a null string")
    end = at + 2 + length
    if end > len(data):
        raise ValueError("a string runs past the end")
    return data[at + 2 : end].decode(), end


def decode_checkpoint(record: Record) -> MirrorCheckpoint:
    """One checkpoint record; ``ValueError`` for anything that is not one (a record the caller names)."""
    if record.key is None or record.value is None:
        raise ValueError("no key or no value")
    try:
        group, tp = _key(record.key)
        (version,) = _INT16.unpack_from(record.value, 0)
        if version != 0:
            raise ValueError(f"checkpoint version {version} (this reads version 0)")
        upstream, downstream = _INT64.unpack_from(record.value, 2)[0], _INT64.unpack_from(record.value, 10)[0]
        metadata, _ = _string(record.value, 18)
    except (struct.error, UnicodeDecodeError) as error:
        raise ValueError(str(error)) from None
    return MirrorCheckpoint(group, tp, upstream, downstream, metadata, record.timestamp)


def _key(data: bytes) -> tuple[str, TP]:
    group, at = _string(data, 0)
    topic, at = _string(data, at)
    return group, TP(topic, _INT32.unpack_from(data, at)[0])


def latest_checkpoints(records: Iterable[Record], topic: str) -> Iterator[MirrorCheckpoint]:
    """The last checkpoint of each group-partition (MM2 appends a new one whenever a group moves),
    without the untranslatable ones (downstream -1) and those a tombstone removed. A record that does
    not decode is an error naming it: a wrong topic named as MM2's would give positions nobody wrote."""
    latest: dict[tuple[str, TP], MirrorCheckpoint] = {}
    for record in records:
        if record.value is None and record.key is not None:  # a tombstone: an operator purged the key
            with contextlib.suppress(ValueError, struct.error, UnicodeDecodeError):
                latest.pop(_key(record.key), None)
            continue
        try:
            checkpoint = decode_checkpoint(record)
        except ValueError as error:
            raise ValueError(f"{topic} offset {record.offset} is not a MirrorMaker 2 checkpoint: {error}") from None
        latest[(checkpoint.group, checkpoint.tp)] = checkpoint
    return (c for c in latest.values() if c.downstream >= 0 and c.upstream >= 0)
