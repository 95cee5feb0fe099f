"""The verification answers a check from the one before the commit only when it is the same question of
the same records (``ReadRecords.problems``); any other check of the partition is asked of the records."""

from __future__ import annotations

from collections.abc import Iterable

from offset_restore.apply.anchors import ReadRecords, checked
from offset_restore.formats.plan import PlanEntry
from offset_restore.kafka.model import TP, FetchedRecord, LogBounds, PartitionIdentity
from offset_restore.snapshot.fingerprint import fingerprint

TOPIC = TP("orders", 0)
SAME = PartitionIdentity("id-1", 3)


class SameLog:
    """A target whose partition is still the log the records were read from (nothing is read again)."""

    def partition_identities(self, partitions: Iterable[TP]) -> dict[TP, PartitionIdentity]:
        return dict.fromkeys(partitions, SAME)

    def log_bounds(self, partitions: Iterable[TP]) -> dict[TP, LogBounds]:
        return dict.fromkeys(partitions, LogBounds(0, 100))


def entry(group: str, offset: int, key: bytes) -> PlanEntry:
    return PlanEntry(
        group=group, topic="orders", partition=0, target_topic="orders", source_offset=offset,
        target_offset=offset, method="header", status="committed",
        expected_fingerprint=fingerprint(key, b"v", ()), anchor_offset=offset, anchor_timestamp=1_000 + offset,
    )  # fmt: skip


def read(*entries: PlanEntry, passed: Iterable[PlanEntry] = ()) -> ReadRecords:
    """What the check before the commit read (each entry's record, with its planned key) and which checks passed."""
    offsets = [e.target_offset for e in entries if e.target_offset is not None]
    return ReadRecords(
        records={(TOPIC, o): FetchedRecord(o, 1_000 + o, b"k", b"v", ()) for o in offsets},
        asked={TOPIC: set(offsets)},
        identities={TOPIC: SAME},
        held={(TOPIC, checked(e)) for e in passed},
    )


def test_a_check_passed_before_is_not_asked_again_and_another_is() -> None:
    right, wrong = entry("a", 5, b"k"), entry("b", 6, b"other key")
    answers = dict(
        (e.group, problem)
        for e, problem in read(right, wrong, passed=[right]).problems(SameLog(), {TOPIC: [right, wrong]}, None)  # type: ignore[arg-type]
    )
    assert answers["a"] is None
    assert answers["b"] is not None and "another record is there" in answers["b"]


def test_a_check_that_differs_in_anything_it_asks_is_asked_again() -> None:
    """The same offset, another fingerprint: a held answer is for the whole question, not for the offset."""
    passed = entry("a", 5, b"k")
    asked = passed.model_copy(update={"expected_fingerprint": fingerprint(b"other key", b"v", ())})
    [(_, problem)] = read(passed, passed=[passed]).problems(SameLog(), {TOPIC: [asked]}, None)  # type: ignore[arg-type]
    assert problem is not None and "another record is there" in problem
