"""MirrorMaker 2's checkpoints (kafka/mirror_checkpoints.py, translate/mm2.py): decoding the bytes MM2
4.1.1 wrote in a real run, and the pure rules built on them."""

from __future__ import annotations

import struct
from datetime import UTC, datetime

import pytest
from offset_restore.formats.plan import PlanEntry, Status
from offset_restore.kafka.mirror_checkpoints import MirrorCheckpoint, decode_checkpoint, latest_checkpoints
from offset_restore.kafka.model import TP, FetchedRecord, LogBounds
from offset_restore.snapshot.model import GroupSnapshot, PartitionSnapshot, RecordEvidence
from offset_restore.translate.mm2 import (
    FRESHER_MARGIN_MS,
    Floor,
    Fresher,
    MirrorCheckpoints,
    choose_topic,
    fresher_groups,
    settle,
)

# As MirrorMaker 2 (connect-mirror 4.1.1, IdentityReplicationPolicy) wrote them to
# source.checkpoints.internal: group g1, orders/0, upstream 250 -> downstream 203, no metadata.
REAL_KEY = b"\x00\x02g1\x00\x06orders\x00\x00\x00\x00"
REAL_VALUE = b"\x00\x00" + (250).to_bytes(8, "big") + (203).to_bytes(8, "big") + b"\x00\x00"


def record(key: bytes | None, value: bytes | None, offset: int = 0, timestamp: int = 1_000) -> FetchedRecord:
    return FetchedRecord(offset, timestamp, key, value, ())


def encoded(
    group: str, topic: str, partition: int, upstream: int, downstream: int, metadata: str = ""
) -> tuple[bytes, bytes]:
    def string(text: str) -> bytes:
        return struct.pack(">h", len(text.encode())) + text.encode()

    key = string(group) + string(topic) + struct.pack(">i", partition)
    return key, struct.pack(">hqq", 0, upstream, downstream) + string(metadata)


def test_a_real_checkpoint_decodes() -> None:
    c = decode_checkpoint(record(REAL_KEY, REAL_VALUE, timestamp=1796091318953))
    assert c == MirrorCheckpoint("g1", TP("orders", 0), 250, 203, "", 1796091318953)


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        (None, REAL_VALUE, "no key"),
        (REAL_KEY[:-2], REAL_VALUE, "unpack"),
        (REAL_KEY, b"\x00\x01" + REAL_VALUE[2:], "version 1"),
        (b"\x00\x40g1", REAL_VALUE, "past the end"),
    ],
)
def test_what_is_not_a_checkpoint_is_named_with_its_offset(key: bytes | None, value: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=f"t.checkpoints.internal offset 7 is not a MirrorMaker 2 checkpoint: .*{why}"):
        list(latest_checkpoints([record(key, value, offset=7)], "t.checkpoints.internal"))


def test_the_last_checkpoint_of_a_group_partition_counts_and_untranslatable_ones_are_left_out() -> None:
    records = [
        record(*encoded("g", "t", 0, 10, 5), offset=0),
        record(*encoded("g", "t", 0, 50, 40), offset=1),
        record(*encoded("h", "t", 0, 3, -1), offset=2),
    ]
    assert [(c.group, c.upstream, c.downstream) for c in latest_checkpoints(records, "x")] == [("g", 50, 40)]


def test_a_tombstone_removes_its_group_partitions_checkpoint() -> None:
    key, value = encoded("g", "t", 0, 50, 40)
    records = [record(key, value, offset=0), record(key, None, offset=1), record(*encoded("h", "t", 0, 9, 8), offset=2)]
    assert [c.group for c in latest_checkpoints(records, "x")] == ["h"]


def checkpoint(group: str, upstream: int, downstream: int, emitted_ms: int = 0) -> MirrorCheckpoint:
    return MirrorCheckpoint(group, TP("t", 0), upstream, downstream, "", emitted_ms)


def test_the_floor_is_the_greatest_translation_at_or_below_the_position() -> None:
    # Two groups' checkpoints: any translation of an offset at or below c is at or before c's record.
    table = MirrorCheckpoints("x", [checkpoint("a", 100, 90), checkpoint("b", 120, 95), checkpoint("c", 130, 93)])
    assert table.floor(TP("t", 0), 99) is None
    assert table.floor(TP("t", 0), 100) == Floor(100, 90)
    assert table.floor(TP("t", 0), 125) == Floor(120, 95)
    assert table.floor(TP("t", 0), 500) == Floor(130, 95)  # 93 is lower than a bound already known
    assert table.floor(TP("t", 1), 500) is None


def test_the_checkpoint_topic_is_the_only_one_or_the_one_named() -> None:
    assert choose_topic(["orders", "a.checkpoints.internal"], None) == "a.checkpoints.internal"
    assert choose_topic(["orders"], None) is None
    assert choose_topic(["a.checkpoints.internal", "b.checkpoints.internal"], "b.checkpoints.internal") == (
        "b.checkpoints.internal"
    )
    with pytest.raises(ValueError, match="several MirrorMaker 2 checkpoint topics"):
        choose_topic(["a.checkpoints.internal", "b.checkpoints.internal"], None)


def test_a_checkpoint_emitted_after_the_snapshot_is_recorded_and_a_rewind_moves_the_position() -> None:
    completed = datetime(2026, 12, 1, tzinfo=UTC)
    at = int(completed.timestamp() * 1000)
    later = at + FRESHER_MARGIN_MS + 1
    evidence = RecordEvidence(offset=40, timestamp=1, fingerprint="0" * 32)
    group = GroupSnapshot(
        group="g",
        state="Empty",
        partitions=[
            PartitionSnapshot(topic="t", partition=p, committed_offset=40, next=evidence, log_start=0) for p in range(5)
        ],
    )
    table = MirrorCheckpoints(
        "x",
        [
            MirrorCheckpoint("g", TP("t", 0), 60, 50, "m", later),  # moved on: settled on the entry
            MirrorCheckpoint("g", TP("t", 1), 70, 60, "", at),  # not after the snapshot: the snapshot stands
            MirrorCheckpoint("g", TP("t", 2), 40, 30, "", later),  # the same offset: nothing to change
            MirrorCheckpoint("g", TP("t", 3), 20, 15, "r", at + 1),  # rewound after the snapshot: from there
            MirrorCheckpoint("g", TP("t", 4), 90, 80, "", at + 5),  # forward, but within the clocks' margin
        ],
    )
    found: dict = {}
    (moved,) = fresher_groups([group], table, completed, {}, found)
    assert [p.committed_offset for p in moved.partitions] == [40, 40, 40, 20, 40]
    assert moved.partitions[3].next is None and moved.partitions[3].metadata == "r"
    assert moved.partitions[0] is group.partitions[0] and moved.partitions[4] is group.partitions[4]
    assert sorted(found) == [("g", "t", 0), ("g", "t", 3)] and found[("g", "t", 0)].snapshot_offset == 40


def entry(target_offset: int | None, status: Status = "mapped") -> PlanEntry:
    return PlanEntry(
        group="g", topic="t", partition=0, target_topic="t", source_offset=40, target_offset=target_offset,
        method="fingerprint" if target_offset is not None else None, exact=target_offset is not None,
        max_duplicates=0, status=status, expected_fingerprint="f", anchor_offset=target_offset,
    )  # fmt: skip


NEWER = Fresher(40, MirrorCheckpoint("g", TP("t", 0), 60, 50, "", 0))


def test_a_group_that_moved_on_resumes_at_the_later_of_the_two_lower_bounds() -> None:
    ahead = settle(entry(35), NEWER, LogBounds(0, 100))  # MM2's translation is further
    assert (ahead.source_offset, ahead.target_offset, ahead.method, ahead.exact, ahead.anchor_offset) == (
        60, 50, "mm2", False, None
    )  # fmt: skip
    assert "moved on, it resumes at MM2's translation 50" in (ahead.reason or "")
    kept = settle(entry(55), NEWER, LogBounds(0, 100))  # the snapshot's exact position is further
    assert (kept.target_offset, kept.method, kept.exact) == (55, "fingerprint", True)
    assert "not past the snapshot's mapped entry" in (kept.reason or "")
    placed = settle(entry(None, "unmapped"), NEWER, LogBounds(0, 100))  # no strategy placed the snapshot's
    assert (placed.status, placed.target_offset, placed.method) == ("mapped", 50, "mm2")


def test_a_translation_off_the_targets_log_is_not_used_and_one_below_it_resumes_at_its_start() -> None:
    off = settle(entry(35), NEWER, LogBounds(0, 45))  # past the log end: another log's checkpoint
    assert (off.target_offset, off.method) == (35, "fingerprint") and "not on the target's log" in (off.reason or "")
    gone = settle(entry(None, "unmapped"), NEWER, None)  # the partition does not exist on the target
    assert gone.status == "unmapped"
    start = settle(entry(None, "unmapped"), NEWER, LogBounds(70, 100))  # translated below the log start
    assert (start.status, start.target_offset) == ("mapped", 70)


def test_a_table_says_whether_any_checkpoint_is_newer_than_a_moment() -> None:
    moment = datetime(2026, 12, 1, tzinfo=UTC)
    at = int(moment.timestamp() * 1000)
    assert not MirrorCheckpoints("x", [checkpoint("a", 1, 1, at)]).newer_than(moment)
    assert MirrorCheckpoints("x", [checkpoint("a", 1, 1, at), checkpoint("b", 2, 2, at + 1)]).newer_than(moment)
