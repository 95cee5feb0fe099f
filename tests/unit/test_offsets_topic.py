"""Decoding ``__consumer_offsets`` records and folding them into last commits as of a time."""

from __future__ import annotations

import struct

import pytest
from offset_restore.kafka.model import TP, FetchedRecord
from offset_restore.snapshot.offsets_topic import (
    CorruptRecordError,
    OffsetCommit,
    OffsetsTopicReader,
    Tombstone,
    decode_record,
)

from tests.offsets_encoding import commit_key, commit_value, group_metadata_key


@pytest.mark.parametrize("value_version", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("key_version", [0, 1])
def test_every_commit_format_decodes(key_version: int, value_version: int) -> None:
    decoded = decode_record(
        commit_key("billing", "orders", 7, key_version),
        commit_value(1234, "meta", 1_700_000_000_000, value_version),
    )
    assert decoded == OffsetCommit("billing", "orders", 7, 1234, "meta", 1_700_000_000_000)


def test_tombstones_and_group_metadata() -> None:
    assert decode_record(commit_key("g", "t", 0), None) == Tombstone("g", "t", 0)
    assert decode_record(group_metadata_key("g"), b"\x00\x03whatever") is None


def test_a_flexible_value_with_tagged_fields_decodes() -> None:
    value = commit_value(99, "m" * 200, 5, version=4, tagged={0: b"\x01" * 16, 7: b""})
    assert decode_record(commit_key("g", "t", 3), value) == OffsetCommit("g", "t", 3, 99, "m" * 200, 5)


@pytest.mark.parametrize("record_type", [3, 5, 8, 11, 17, 30])
def test_kafka_4_record_types_are_skipped_never_read_as_commits(record_type: int) -> None:
    """Types 3 and up (KIP-848 consumer groups, share and streams groups): a key that would parse as
    a commit key still is not one."""
    key = struct.pack(">h", record_type) + commit_key("g", "t", 0)[2:]
    assert decode_record(key, commit_value(1)) is None
    reader = OffsetsTopicReader()
    reader.add("p0", _record(0, key, commit_value(1)))
    assert (reader.commits, reader.corrupt, dict(reader.other)) == ({}, 0, {record_type: 1})


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (None, b"", "no key"),
        (b"\x00", b"", "truncated"),
        (b"\xff\xf9" + b"x" * 10, b"", "negative record type -7"),
        (commit_key("g", "t", 0)[:-2], commit_value(1), "truncated"),
        (commit_key("g", "t", 0) + b"!", commit_value(1), "trailing"),
        (commit_key("g", "t", 0), b"\x00\x09" + b"\x00" * 20, "unsupported value version 9"),
        (commit_key("g", "t", 0), commit_value(1)[:-3], "truncated"),
        (commit_key("g", "t", 0), commit_value(1) + b"\x00", "trailing"),
        (b"\x00\x01\x00\x02\xff\xfe\x00\x01t\x00\x00\x00\x00", commit_value(1), "not UTF-8"),
        (commit_key("g", "t", -1), commit_value(1), "negative partition"),
    ],
)
def test_corrupt_records_are_refused_with_a_reason(key: bytes | None, value: bytes, message: str) -> None:
    with pytest.raises(CorruptRecordError, match=message):
        decode_record(key, value)


def _record(offset: int, key: bytes | None, value: bytes | None, ts: int = 0) -> FetchedRecord:
    return FetchedRecord(offset, ts, key, value, ())


def test_last_commit_at_or_before_as_of_wins_and_tombstones_delete() -> None:
    reader = OffsetsTopicReader(as_of_ms=2_000)
    reader.add("p0", _record(0, commit_key("a", "t", 0), commit_value(10, commit_ts=1_000), 1_000))
    reader.add("p0", _record(1, commit_key("a", "t", 0), commit_value(20, commit_ts=2_000), 2_000))
    reader.add("p0", _record(2, commit_key("a", "t", 0), commit_value(30, commit_ts=3_000), 3_000))  # after as-of
    reader.add("p0", _record(3, commit_key("b", "t", 1), commit_value(5, commit_ts=1_500), 1_500))
    reader.add("p0", _record(4, commit_key("b", "t", 1), None, 1_800))  # deleted before as-of
    reader.add("p0", _record(5, commit_key("c", "t", 2), commit_value(7, commit_ts=1_000), 1_000))
    reader.add("p0", _record(6, commit_key("c", "t", 2), None, 2_500))  # deleted after as-of: still counts
    reader.add("p0", _record(7, b"\x00\x01junk", b"", 1_000))
    assert {k: v.offset for k, v in reader.commits.items()} == {("a", TP("t", 0)): 20, ("c", TP("t", 2)): 7}
    assert (reader.records, reader.corrupt) == (8, 1)
    assert reader.corrupt_examples[0].startswith("p0 offset 7:")
