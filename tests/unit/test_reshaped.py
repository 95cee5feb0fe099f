"""The pure logic of a topic whose shape changed (translate/reshaped.py): what tells it, and where a
group resumes on every target partition. The property test lays out random re-partitioned restores
(any order, records without headers, groups without a commit) and judges every entry independently."""

from __future__ import annotations

import random

import pytest
from offset_restore.kafka.model import TP, FetchedRecord, LogBounds
from offset_restore.snapshot.fingerprint import fingerprint
from offset_restore.snapshot.model import PartitionSnapshot
from offset_restore.translate.reshaped import Shapes, TopicIndex, _mark_repeats, _Part, map_group

OFFSET, PARTITION = "x-source-offset", "x-source-partition"


def record(at: int, q: int | None, o: int | None, key: bytes | None = b"k", value: bytes = b"v") -> FetchedRecord:
    headers: list[tuple[str, bytes | None]] = []
    if o is not None:
        headers.append((OFFSET, str(o).encode()))
    if q is not None:
        headers.append((PARTITION, str(q).encode()))
    return FetchedRecord(at, 1_000 + at, key, value, tuple(headers))


def printed(r: FetchedRecord) -> str:
    """The fingerprint the snapshot would have taken of ``r`` on the source."""
    return fingerprint(r.key, r.value, r.headers, exclude_header=OFFSET)


def index_of(layout: dict[int, list[tuple[int | None, int | None]]]) -> TopicIndex:
    parts = {}
    for t, rows in layout.items():
        part = _Part()
        for at, (q, o) in enumerate(rows):
            part.add(record(at, q, o), PARTITION, OFFSET)
        parts[t] = part
    _mark_repeats(parts)
    return TopicIndex({t: LogBounds(0, len(rows)) for t, rows in layout.items()}, parts)


def snapshot(committed: dict[int, int], log_end: int) -> list[PartitionSnapshot]:
    return [
        PartitionSnapshot(topic="orders", partition=q, committed_offset=c, log_start=0, log_end=log_end)
        for q, c in sorted(committed.items())
    ]


def test_counts_that_differ_change_the_shape_and_so_does_a_partition_the_target_lacks() -> None:
    shapes = Shapes(OFFSET, PARTITION)
    shapes.compare_counts({"a": "a", "b": "b2", "c": "c"}, {"a": 2, "b": 3}, {"a": 4, "b2": 3, "c": 2}, {"c": 3})
    assert set(shapes.changed) == {"a", "c"}
    assert "had 2 partitions on the source and a has 4" in shapes.changed["a"]
    assert "source partition 2 of c does not exist" in shapes.changed["c"]


def test_a_partition_header_of_another_partition_changes_the_shape_and_its_own_does_not() -> None:
    shapes = Shapes(OFFSET, PARTITION)
    shapes.check_sample("orders", TP("orders", 1), [record(0, 1, 0), record(1, 1, 1)])
    assert shapes.changed == {} and shapes.carries_partition == {"orders"}
    shapes.check_sample("orders", TP("orders", 1), [record(2, 0, 5)])
    assert "carries x-source-partition = 0" in shapes.changed["orders"]


def test_a_keyed_record_that_is_another_partitions_record_changes_the_shape() -> None:
    shapes = Shapes(OFFSET, PARTITION)
    moved = record(0, None, 7, key=b"user-1", value=b"paid")
    shapes.add_records("orders", 0, [(7, printed(moved))])
    shapes.check_sample("orders", TP("orders", 0), [moved])
    assert shapes.changed == {}, "on its own partition it tells nothing"
    shapes.check_sample("orders", TP("orders", 1), [record(0, None, 8, key=b"user-1", value=b"paid")])
    assert shapes.changed == {}, "another source offset: not that record"
    shapes.check_sample("orders", TP("orders", 1), [moved])
    assert "is the source's record 7 of partition 0" in shapes.changed["orders"]


def test_content_two_partitions_share_or_an_unkeyed_record_proves_nothing() -> None:
    shapes = Shapes(OFFSET, PARTITION)
    same = record(0, None, 3, key=b"k", value=b"heartbeat")
    shapes.add_records("t", 0, [(3, printed(same))])
    shapes.add_records("t", 1, [(3, printed(same))])
    shapes.check_sample("t", TP("t", 2), [same])
    unkeyed = record(0, None, 4, key=None, value=b"x")
    shapes.add_records("t", 0, [(4, printed(unkeyed))])
    shapes.check_sample("t", TP("t", 1), [unkeyed])
    assert shapes.changed == {}


def test_a_group_resumes_on_every_target_partition_at_the_first_record_it_has_not_processed() -> None:
    index = index_of({0: [(0, 0), (1, 0), (0, 1), (1, 1)], 1: [(0, 2), (1, 2), (0, 3)]})
    entries = map_group("g", snapshot({0: 3, 1: 1}, 4), "orders", index)
    assert [(e.target_partition, e.target_offset, e.max_duplicates, e.exact) for e in entries] == [
        (0, 3, 0, True),  # (1,1) is the first record not processed; (0,0), (1,0), (0,1) were
        (1, 1, 0, True),  # (1,2) is needed, and (0,3) after it; (0,2) before it was processed
    ]
    assert entries[1].partition == 1 and entries[1].source_positions == {0: 3, 1: 1}


def test_records_without_a_source_header_are_read_and_counted_as_possible_duplicates() -> None:
    index = index_of({0: [(0, 0), (None, None), (0, 1)]})
    (entry,) = map_group("g", snapshot({0: 2}, 2), "orders", index)
    assert (entry.target_offset, entry.max_duplicates, entry.exact) == (1, 2, False)
    assert "lack a source header" in (entry.reason or "")


def test_a_source_partition_without_a_commit_is_read_from_its_first_record() -> None:
    index = index_of({0: [(0, 0), (1, 0), (0, 1), (1, 1)]})
    (entry,) = map_group("g", snapshot({0: 2}, 2), "orders", index)
    assert (entry.target_offset, entry.exact) == (1, False)
    assert "no commit on source partition 1" in (entry.reason or "")


def test_a_group_waits_while_the_restore_has_not_reached_its_position() -> None:
    index = index_of({0: [(0, 0), (1, 0)], 1: [(0, 1)]})
    entries = map_group("g", snapshot({0: 5, 1: 1}, 10), "orders", index)
    assert {e.status for e in entries} == {"pending"}
    assert all(e.holds for e in entries)
    assert "reached source offset 1 of source partition 0" in (entries[0].reason or "")


@pytest.mark.parametrize("seed", range(300))
def test_no_record_a_source_position_needs_is_ever_skipped(seed: int) -> None:
    """Random re-partitioned restores: in source order or shuffled, some records without headers, some
    restored twice (on one partition or two), groups without a commit on some source partition. Judged
    by a reader that knows nothing of the index: nothing needed lies before a resume point; the bounds of
    a group's entries cover every record it reads twice (processed before, or a second copy); exact only
    where nothing is read twice."""
    rng = random.Random(seed)
    sources, targets, n = rng.randint(1, 4), rng.randint(1, 4), rng.randint(0, 30)
    rows = [(q, o) for q in range(sources) for o in range(n)]
    if rng.random() < 0.3 and rows:
        rows += rng.sample(rows, rng.randint(1, min(5, len(rows))))  # a region restored again
    if rng.random() < 0.5:
        rows.sort(key=lambda r: r[1])  # interleaved in source order, the usual restore
    else:
        rng.shuffle(rows)
    layout: dict[int, list[tuple[int | None, int | None]]] = {t: [] for t in range(targets)}
    for q, o in rows:
        lost = rng.random() < 0.05
        layout[rng.randrange(targets)].append((None, None) if lost else (q, o))
    committed = {q: rng.randint(0, n) for q in range(sources) if rng.random() < 0.85} or {0: 0}
    entries = map_group("g", snapshot(committed, n), "orders", index_of(layout))
    mapped = [e for e in entries if e.status == "mapped"]
    if len(mapped) < len(entries):
        return  # pending: the restore has not reached a position (its own test)
    resume = {e.target_partition: e.target_offset for e in mapped}
    read: dict[tuple[int, int], int] = {}
    twice = 0
    for t, on in layout.items():
        r = resume[t]
        assert r is not None
        for at, (p, s) in enumerate(on):
            needed = p is None or s is None or p not in committed or s >= committed[p]
            assert not needed or at >= r, (seed, t, at, r)
            if at < r:
                continue
            if p is None or s is None:
                twice += 1  # unknown: may be anything
            elif p in committed and s < committed[p]:
                twice += 1
            else:
                read[(p, s)] = read.get((p, s), 0) + 1
    twice += sum(copies - 1 for copies in read.values())
    assert sum(e.max_duplicates or 0 for e in mapped) >= twice, (seed, twice, mapped)
    if all(e.exact for e in mapped):
        assert twice == 0, (seed, mapped)


def test_a_header_past_int64_or_not_a_number_is_a_record_of_unknown_source() -> None:
    """A lying header (a 19-digit decimal >= 2**63, text, a negative 8-byte value) neither crashes the
    index nor places the record: its source is unknown, so the group reads it and is not exact."""
    part = _Part()
    for at, (q, o) in enumerate(
        [(b"0", b"9223372036854775808"), (b"x", b"3"), (b"0", (-1).to_bytes(8, "big", signed=True))]
    ):
        part.add(FetchedRecord(at, 0, b"k", b"v", ((OFFSET, o), (PARTITION, q))), PARTITION, OFFSET)
    assert list(part.unknown) == [0, 1, 2] and part.by_source == {}


def test_records_missing_before_the_restored_ones_are_counted_per_source_partition_once() -> None:
    """Source partition 0's records 2..4 are missing (a gap of the backup), partition 1 lacks none; every
    target partition's first unprocessed record carries another partition's or a later offset, so an anchor
    would count what lies elsewhere. The count is per source partition, on the first entry, by hand: 3."""
    index = index_of({0: [(0, 0), (1, 0), (1, 1), (0, 5)], 1: [(0, 1), (1, 2), (0, 6), (1, 3)]})
    entries = map_group("g", snapshot({0: 2, 1: 2}, 7), "orders", index)
    assert [(e.target_partition, e.target_offset) for e in entries] == [(0, 3), (1, 1)]
    assert [e.lost_before for e in entries] == [3, None]
    assert "source partition 0: 3" in (entries[0].reason or "")
    whole = index_of({0: [(0, 0), (0, 1), (0, 2)], 1: [(1, 0), (1, 1)]})
    assert all(e.lost_before is None for e in map_group("g", snapshot({0: 1, 1: 1}, 3), "orders", whole))
