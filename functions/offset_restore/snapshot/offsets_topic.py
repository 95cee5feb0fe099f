"""Decode a restored copy of ``__consumer_offsets`` into a snapshot (docs/design.md §2.1, alternative source).

Record formats (Apache Kafka's ``OffsetCommitKey``/``OffsetCommitValue``/``GroupMetadataKey``): a key
starts with an int16 version; versions 0 and 1 are offset commits (group, topic: int16-length UTF-8
strings; partition: int32), version 2 is group metadata (skipped). A value starts with an int16
version: v0 and v2 ``offset int64, metadata string, commit_timestamp int64``; v1 adds
``expire_timestamp int64``; v3 puts ``leader_epoch int32`` after the offset; v4 (the first flexible
version) has v3's fields with a compact metadata string (unsigned-varint length + 1) and tagged
fields at the end. A null value is a tombstone: the commit was deleted. All integers are big-endian.

Kafka 4 writes more record types to the same topic: a key's first int16 is its record type, and
types 3 and up hold the groups of the new consumer protocol (KIP-848), share and streams groups —
membership and assignments, never positions (their offsets are ordinary type-1 commits). They are
skipped and counted by type; only types 0 and 1 are ever read as commits.
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from offset_restore.kafka.model import TP, LogBounds, Record
from offset_restore.reading.rounds import AtEnd, Fetch, FetchRounds, Served, read_forward
from offset_restore.snapshot.filters import NameFilter
from offset_restore.snapshot.model import GroupSnapshot, PartitionSnapshot, SnapshotManifest, new_snapshot_id

__all__ = [
    "CorruptRecordError",
    "OffsetCommit",
    "OffsetsTopicReader",
    "Tombstone",
    "decode_record",
    "record_type",
    "snapshot_from_commits",
]


class CorruptRecordError(ValueError):
    """A record that is not a well-formed offsets-topic record; counted and skipped."""


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    group: str
    topic: str
    partition: int
    offset: int
    metadata: str | None
    commit_timestamp: int


@dataclass(frozen=True, slots=True)
class Tombstone:
    group: str
    topic: str
    partition: int


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.pos, self.what = data, 0, what

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise CorruptRecordError(f"{self.what} is truncated at byte {self.pos}")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return int(value)

    def varint(self) -> int:
        """An unsigned varint (flexible versions' lengths and counts)."""
        value, shift = 0, 0
        while True:
            byte = self.take(">B")
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise CorruptRecordError(f"{self.what} varint is too long at byte {self.pos}")

    def raw(self, length: int) -> bytes:
        if length < 0 or self.pos + length > len(self.data):
            raise CorruptRecordError(f"{self.what} field of {length} bytes is truncated at byte {self.pos}")
        self.pos += length
        return self.data[self.pos - length : self.pos]

    def compact_string(self) -> str | None:
        length = self.varint() - 1
        if length < 0:
            return None
        try:
            return self.raw(length).decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptRecordError(f"{self.what} string before byte {self.pos} is not UTF-8") from None

    def tagged_fields(self) -> None:
        """Skip a flexible version's tagged fields (none that a position needs)."""
        for _ in range(self.varint()):
            self.varint()
            self.raw(self.varint())

    def string(self) -> str | None:
        length = self.take(">h")
        if length < 0:
            return None
        if self.pos + length > len(self.data):
            raise CorruptRecordError(f"{self.what} string of {length} bytes is truncated at byte {self.pos}")
        raw = self.data[self.pos : self.pos + length]
        self.pos += length
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptRecordError(f"{self.what} string at byte {self.pos - length} is not UTF-8") from None

    def done(self) -> None:
        if self.pos != len(self.data):
            raise CorruptRecordError(f"{self.what} has {len(self.data) - self.pos} unexpected trailing bytes")


def record_type(key: bytes | None) -> int:
    """The record type a key starts with (its int16 version before Kafka 4)."""
    if key is None:
        raise CorruptRecordError("record has no key")
    record = _Reader(key, "key").take(">h")
    if record < 0:
        raise CorruptRecordError(f"negative record type {record}")
    return record


def decode_record(key: bytes | None, value: bytes | None) -> OffsetCommit | Tombstone | None:
    """An offset commit, a tombstone, or None for records that are not offset commits."""
    if record_type(key) not in (0, 1):
        return None  # group metadata and the newer groups' records: membership, not positions
    assert key is not None
    reader = _Reader(key, "key")
    reader.take(">h")
    group = reader.string()
    topic = reader.string()
    partition = reader.take(">i")
    reader.done()
    if group is None or topic is None or partition < 0:
        raise CorruptRecordError("key has a null group or topic, or a negative partition")
    if value is None:
        return Tombstone(group, topic, partition)
    body = _Reader(value, "value")
    version = body.take(">h")
    if version not in (0, 1, 2, 3, 4):
        raise CorruptRecordError(f"unsupported value version {version}")
    offset = body.take(">q")
    if version >= 3:
        body.take(">i")  # leader epoch: not carried to another cluster
    metadata = body.compact_string() if version >= 4 else body.string()
    commit_timestamp = body.take(">q")
    if version == 1:
        body.take(">q")  # expire timestamp
    if version >= 4:
        body.tagged_fields()
    body.done()
    return OffsetCommit(group, topic, partition, offset, metadata or None, commit_timestamp)


@dataclass
class OffsetsTopicReader:
    """Folds records, in log order per partition, into the last commit per group-partition."""

    as_of_ms: int | None = None
    commits: dict[tuple[str, TP], OffsetCommit] = field(default_factory=dict)
    records: int = 0
    other: Counter[int] = field(default_factory=Counter)
    """Records that are not offset commits, by record type (2: classic group metadata; 3 and up:
    Kafka 4's groups of the newer protocols)."""
    corrupt: int = 0
    corrupt_examples: list[str] = field(default_factory=list)

    def add(self, where: str, record: Record) -> None:
        self.records += 1
        try:
            decoded = decode_record(record.key, record.value)
        except CorruptRecordError as error:
            self.corrupt += 1
            if len(self.corrupt_examples) < 20:
                self.corrupt_examples.append(f"{where} offset {record.offset}: {error}")
            return
        if decoded is None:
            self.other[record_type(record.key)] += 1
            return
        key = (decoded.group, TP(decoded.topic, decoded.partition))
        if isinstance(decoded, Tombstone):
            if self.as_of_ms is None or record.timestamp <= self.as_of_ms:
                self.commits.pop(key, None)
            return
        when = decoded.commit_timestamp if decoded.commit_timestamp >= 0 else record.timestamp
        if self.as_of_ms is not None and when > self.as_of_ms:
            return
        self.commits[key] = decoded

    def read(
        self,
        topic: str,
        bounds: Mapping[TP, LogBounds],
        fetch: Fetch,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        """Read every partition of ``topic`` from start to end, one fetch round for all at a time."""
        starts = {tp: b.start for tp, b in bounds.items() if tp.topic == topic and b.end > b.start}
        total = sum(bounds[tp].end - bounds[tp].start for tp in starts)

        def take(tp: TP, outcome: Served | AtEnd) -> int | None:
            if isinstance(outcome, AtEnd):
                return None
            for record in outcome.answer.records:
                self.add(str(tp), record)
            return outcome.answer.read_to

        # A whole log is wanted: large limits (the offsets topic's batches are large and compacted).
        rounds = FetchRounds(fetch, ends={tp: bounds[tp].end for tp in starts}, partition_bytes=1024 * 1024)
        failed = read_forward(
            rounds, starts, take, after_round=(lambda: progress(self.records, total)) if progress else None
        )
        for tp, failure in sorted(failed.items()):
            self.corrupt_examples.append(f"{tp}: stopped reading: {failure.reason}")


def snapshot_from_commits(
    commits: Iterable[OffsetCommit],
    *,
    group_filter: NameFilter,
    topic_filter: NameFilter,
    cluster: str,
    snapshot_id: str | None,
    created_at: datetime,
    as_of: datetime | None,
    source: Literal["offsets-topic", "export"] = "offsets-topic",
) -> tuple[SnapshotManifest, list[GroupSnapshot]]:
    """Groups as the backup saw them; no state, log bounds or evidence (the source is gone)."""
    by_group: dict[str, list[OffsetCommit]] = {}
    for commit in commits:
        if commit.offset >= 0 and group_filter(commit.group) and topic_filter(commit.topic):
            by_group.setdefault(commit.group, []).append(commit)
    groups = [
        GroupSnapshot(
            group=group,
            state="Unknown",
            partitions=[
                PartitionSnapshot(
                    topic=c.topic,
                    partition=c.partition,
                    committed_offset=c.offset,
                    metadata=c.metadata,
                    evidence_complete=False,
                )
                for c in sorted(entries, key=lambda c: (c.topic, c.partition))
            ],
        )
        for group, entries in sorted(by_group.items())
    ]
    manifest = SnapshotManifest(
        snapshot_id=snapshot_id or new_snapshot_id(created_at),
        cluster=cluster,
        created_at=created_at,
        completed_at=datetime.now(UTC),
        source=source,
        as_of=as_of,
    )
    return manifest, groups
