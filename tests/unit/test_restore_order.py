"""The order-independent resume point against brute force, the order check of windows read, and the
whole translation on in-memory partitions served a few records per fetch (so that searches really
leave most of a partition unread)."""

from __future__ import annotations

import collections
import itertools
import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from offset_restore.formats.plan import PlanEntry
from offset_restore.kafka.model import ONE_BATCH, TP, FetchedRecord, PartitionFetch
from offset_restore.snapshot.fingerprint import fingerprint
from offset_restore.snapshot.model import GroupSnapshot, PartitionSnapshot, RecordEvidence
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.restore_order import (
    SHORT_HOLE,
    ObservedPartition,
    disorder_in,
    find_disorder,
    hole_rate_of,
    middle_unread,
    overcounted,
)
from offset_restore.translate.resume_points import NO_KEY, PartitionLog, resume_points
from offset_restore.translate.translation import translate

from tests.disorder import Judgement, Slot, TargetRecord, copy, layouts, random_layout, restored_part
from tests.fake_log import FakeLog, FakeTarget

# -- resume points ------------------------------------------------------------------------------


def brute_force(keys: list[int], c: int) -> tuple[int, int, bool]:
    """(index, duplicates, pulled back) straight from the definition in docs/translation.md."""
    keyed = [i for i, k in enumerate(keys) if k != NO_KEY]
    first, last = keyed[0], keyed[-1]
    unknown = [i for i in range(first + 1, last) if keys[i] == NO_KEY]
    index = next((i for i in keyed if max(keys[: i + 1]) >= c), last + 1)
    pulled = bool(unknown) and unknown[0] < index
    start = unknown[0] if pulled else index
    duplicates = sum(1 for i in range(start, len(keys)) if keys[i] != NO_KEY and keys[i] < c)
    duplicates += sum(1 for i in unknown if i >= start)
    return start, duplicates, pulled


@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(st.one_of(st.integers(0, 40), st.just(NO_KEY)), min_size=1, max_size=60),
    wanted=st.lists(st.integers(0, 45), min_size=1, max_size=10),
)
def test_resume_points_match_the_definition(keys: list[int], wanted: list[int]) -> None:
    log = PartitionLog()
    for i, key in enumerate(keys):
        log.append(100 + 2 * i, None if key == NO_KEY else key, i)
    answers = resume_points(log, wanted)
    if all(k == NO_KEY for k in keys):
        assert answers == {}
        return
    for c in wanted:
        index, duplicates, pulled = brute_force(keys, c)
        answer = answers[c]
        assert (answer.at, answer.duplicates, answer.pulled_back) == (index, duplicates, pulled)
        last = max(i for i, k in enumerate(keys) if k != NO_KEY)
        assert answer.offset == (100 + 2 * index if index <= last else 100 + 2 * last + 1)
        assert answer.exact == (duplicates == 0 and not pulled)


def overcounted_gap(log: PartitionLog, ranges: list[tuple[int, int]]) -> int | None:
    """Where the gap reads read next: the middle of the first over-counted gap (None: none)."""
    gap = overcounted(log, ranges)
    return None if gap is None else middle_unread(gap, ranges)


def test_a_sorted_log_gives_the_first_record_at_or_after_each_offset() -> None:
    log = PartitionLog()
    for i, key in enumerate([3, 4, 7, 8, 9]):
        log.append(i, key, 0)
    answers = resume_points(log, [0, 4, 5, 9, 10])
    assert {c: (a.offset, a.exact, a.beyond) for c, a in answers.items()} == {
        0: (0, True, False),
        4: (1, True, False),
        5: (2, True, False),
        9: (4, True, False),
        10: (5, True, True),
    }


# -- the order check of windows read ------------------------------------------------------------


def observed(*windows: tuple[int, int, list[tuple[int, int | None]]]) -> ObservedPartition:
    seen = ObservedPartition()
    for start, end, records in windows:
        seen.add(start, end, [(o, k, 0) for o, k in records])
    return seen


def test_windows_in_order_with_holes_and_unread_gaps_pass() -> None:
    # 0..9 read with a transaction marker at 5; 10..89 unread; 90..99 read: 80 unread offsets for
    # 80 source offsets (plus the markers' share) between source 9 and 90.
    first: list[tuple[int, int | None]] = [(o, o if o < 5 else o - 1) for o in range(10) if o != 5]
    last: list[tuple[int, int | None]] = [(o, o - 1) for o in range(90, 100)]
    assert find_disorder(observed((0, 10, first), (90, 100, last))) is None


@pytest.mark.parametrize(
    ("windows", "expected"),
    [
        ([(0, 4, [(0, 0), (1, 1), (2, 5), (3, 2)])], "target offset 3 carries source offset 2 after source offset 5"),
        ([(0, 3, [(0, 0), (1, 1), (2, 1)])], "carries source offset 1 again"),
        ([(0, 3, [(0, 0), (1, None), (2, 2)])], "target offset 1 has no offset header between restored records"),
        (
            [(0, 2, [(0, 0), (1, 1)]), (50, 52, [(50, 10), (51, 11)])],
            "48 target offsets between source offsets 1 and 10",
        ),
        (
            [(50, 52, [(50, 60), (51, 61)]), (0, 2, [(0, 0), (1, 70)])],
            "carries source offset 60 after source offset 70",
        ),
    ],
    ids=["inversion", "repeat", "missing-header", "more-records-than-source", "windows-read-in-any-order"],
)
def test_each_contradiction_is_named(windows: list, expected: str) -> None:
    assert expected in (find_disorder(observed(*windows)) or "")


# -- translation on partitions served a few records per fetch -----------------------------------

TOPIC = TP("t", 0)
HEADER = "x-source-offset"


class SmallWindows(FakeTarget):
    """A target with one partition of one-record batches, answering each fetch with ``per_fetch`` records
    (``tests/fake_log.py``)."""

    def __init__(self, layout: list[Slot], per_fetch: int) -> None:
        records = [
            FetchedRecord(
                offset=i,
                timestamp=1_000 + (slot.source if slot.source is not None else 0),
                key=f"k{slot.source}".encode() if slot.source is not None else b"stray",
                value=b"v",
                headers=((HEADER, slot.header.to_bytes(8, "big")),) if slot.header is not None else (),
            )
            for i, slot in enumerate(layout)
        ]
        super().__init__(FakeLog({TOPIC: records}, per_fetch=per_fetch))

    @property
    def records(self) -> list[FetchedRecord]:
        return self.log.records[TOPIC]

    @records.setter
    def records(self, records: list[FetchedRecord]) -> None:
        """New records at the same offsets (new contents or times)."""
        self.log.records[TOPIC] = records


def snapshot(
    n: int,
    positions: Iterable[int],
    evidence: Callable[[int], RecordEvidence] | None = None,
    before: Callable[[int], list[RecordEvidence]] | None = None,
) -> list[GroupSnapshot]:
    """A group at each of ``positions`` of ``n`` records; ``evidence``: source record ``s`` as the snapshot read
    it (default: distinct, 1 ms apart); ``before``: a position's records before it (default: three)."""

    def distinct(s: int) -> RecordEvidence:
        return RecordEvidence(offset=s, timestamp=1_000 + s, fingerprint=fingerprint(f"k{s}".encode(), b"v", ()))

    read = evidence or distinct
    earlier = before or (lambda c: [read(s) for s in range(max(0, c - 3), min(c, n))])
    return [
        GroupSnapshot(
            group=f"g{c}",
            state="Empty",
            partitions=[
                PartitionSnapshot(
                    topic="t",
                    partition=0,
                    committed_offset=c,
                    log_start=0,
                    log_end=n,
                    next=read(c) if c < n else None,
                    before=earlier(c),
                )
            ],
        )
        for c in positions
    ]


def judge(layout: list[Slot], entries: list) -> list[str]:
    """Problems of each mapped entry, by the definition (the layout is the truth)."""
    log = restored_part(
        [
            TargetRecord(i, s.source if s.source is not None else s.header, s.header is not None)
            for i, s in enumerate(layout)
        ]
    )
    judgement = Judgement()
    for entry in entries:
        judgement.judge(entry, log)
    return judgement.problems


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), per_fetch=st.integers(1, 9))
def test_full_order_check_holds_for_any_disorder_in_small_windows(seed: int, per_fetch: int) -> None:
    """``--order-check full`` rests on nothing: any damage, any window size, 0 problems."""
    layout = random_layout(random.Random(seed), 80)
    assert not problems_of_a_plan(layout, 80, per_fetch, strategies=("header",), order_check="full"), layout


def problems_of_a_plan(layout: list[Slot], n: int, per_fetch: int, **options: Any) -> list[str]:
    """The judge's problems with a plan of a group at each of 0..n on ``layout``, read ``per_fetch``
    records a fetch."""
    entries, _ = translate(snapshot(n, range(n + 1)), SmallWindows(layout, per_fetch), PlanOptions(**options))
    return judge(layout, entries)


@pytest.mark.parametrize("case", [c for c in layouts(600) if c != "one stray header"])
def test_windows_check_catches_disorder_the_search_reads_around(case: str) -> None:
    """With windows of 8 records over 600, the cases whose damage a search meets or whose extra
    records change the count between reads are found and answered from a whole read. (A lone stray
    header in an unread region is what only ``full`` proves: docs/translation.md.)"""
    layout = layouts(600)[case]
    target = SmallWindows(layout, 8)
    entries, stats = translate(snapshot(600, range(0, 601, 7)), target, PlanOptions(strategies=("header",)))
    assert not judge(layout, entries)
    assert TOPIC in stats.out_of_order


def test_a_sorted_restore_in_small_windows_is_never_read_whole() -> None:
    target = SmallWindows(copy(range(5_000)), 8)
    entries, stats = translate(snapshot(5_000, [7, 2_500, 4_990]), target, PlanOptions(strategies=("header",)))
    assert all(e.exact for e in entries) and not judge(copy(range(5_000)), entries)
    assert (
        not stats.out_of_order and len(target.log.sent) < 200
    )  # a few windows (one-record batches), not 5,000 records


def test_fingerprint_match_beside_a_copy_of_the_next_record_is_not_exact() -> None:
    """Without headers: the evidence is found, but a copy of the next record lies earlier (a repeated
    chunk): resume at the earliest copy, not exact, reading again at most the records up to the match (15:
    target 21-34 the group processed, and the copy of 33 it reads twice)."""
    layout = [Slot(s, None) for s in [*range(30), 25, 26, *range(30, 40)]]
    layout[20] = Slot(33, None)  # a copy of the record a group at 33 would read next
    target = SmallWindows(layout, 100)
    entries, _ = translate(snapshot(40, [33]), target, PlanOptions(strategies=("fingerprint",)))
    (entry,) = entries
    assert (entry.target_offset, entry.exact, entry.max_duplicates) == (20, False, 15)
    assert "copies of the evidence records" in (entry.reason or "")


# -- the mm2 strategy: MM2's translation as a lower bound --------------------------------------------


def mm2_plan(n: int, c: int, downstream: int, upstream: int | None = None, evidence: bool = True) -> PlanEntry:
    """One group at ``c`` on a headerless copy of ``n`` source records (target offset = source offset),
    MM2 having checkpointed source offset ``upstream`` (default ``c``) to ``downstream``."""
    from offset_restore.kafka.mirror_checkpoints import MirrorCheckpoint
    from offset_restore.translate.mm2 import MirrorCheckpoints
    from offset_restore.translate.plan import collect_positions, decide_positions, plan_entries

    target = SmallWindows([Slot(s, None) for s in range(n)], per_fetch=500)
    (group,) = snapshot(n, [c])
    if not evidence:
        group = group.model_copy(
            update={"partitions": [group.partitions[0].model_copy(update={"next": None, "before": []})]}
        )
    table = MirrorCheckpoints(
        "x", [MirrorCheckpoint("other", TOPIC, upstream if upstream is not None else c, downstream, "", 0)]
    )
    options = PlanOptions(strategies=("mm2",))
    decisions, _ = decide_positions(collect_positions([group], options), target, options, mm2=table)
    (entry,) = plan_entries([group], decisions, options)
    return entry


def test_mm2_near_the_evidence_is_made_exact() -> None:
    e = mm2_plan(1_000, 700, downstream=650)
    assert (e.method, e.exact, e.target_offset) == ("mm2", True, 700), e


def test_mm2_far_below_the_evidence_is_made_exact_by_the_evidences_time() -> None:
    # MM2 translates a group far behind its newest sync to a sync far below: more than a scan's worth.
    e = mm2_plan(12_000, 11_000, downstream=1)
    assert (e.method, e.exact, e.target_offset) == ("mm2", True, 11_000), e


def test_mm2_past_the_evidence_is_not_believed() -> None:
    # A translation past the record (MM2 wrong, or a checkpoint of another group at a later offset
    # misfiled): the group resumes at the evidence, the earlier, and nothing is claimed.
    e = mm2_plan(1_000, 700, downstream=720, upstream=690)
    assert (e.method, e.exact, e.target_offset, e.max_duplicates) == ("mm2", False, 700, None), e
    assert "is past the snapshot's evidence" in (e.reason or "")


def test_mm2_without_evidence_is_its_bound_not_exact() -> None:
    e = mm2_plan(1_000, 700, downstream=650, evidence=False)
    assert (e.method, e.exact, e.target_offset, e.max_duplicates) == ("mm2", False, 650, None), e


def test_mm2_declines_a_position_below_every_checkpoint() -> None:
    e = mm2_plan(1_000, 100, downstream=650, upstream=600)
    assert e.status == "unmapped" and "no checkpoint of t/0 in x at or below source offset 100" in (e.reason or ""), e


def test_mm2_checkpoints_past_the_log_end_describe_another_log_and_are_not_trusted() -> None:
    e = mm2_plan(1_000, 700, downstream=1_500, upstream=600)
    assert e.status == "unmapped" and "translates past the target's log end 1000" in (e.reason or ""), e


# -- issue 29: headers that mislead, fingerprints that overclaim -----------------------------------


def replica_layout(rng: random.Random, n: int) -> list[Slot]:
    """A replica without headers (MirrorMaker 2, MSK Replicator) damaged the way replication damages
    it: a region copied twice (a task restarted), batches reordered or interleaved."""
    return [Slot(s.source, None) for s in random_layout(rng, n) if s.source is not None]


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), per_fetch=st.integers(1, 9))
def test_fingerprint_exact_only_where_true_on_a_damaged_replica(seed: int, per_fetch: int) -> None:
    """Property: the fingerprint strategy never skips, calls exact only what is, on any damage."""
    layout = replica_layout(random.Random(seed), 60)
    assert not problems_of_a_plan(layout, 60, per_fetch, strategies=("fingerprint",)), layout


def busy_replica(rng: random.Random, n: int) -> tuple[SmallWindows, list[GroupSnapshot]]:
    """A complete replica without headers (every record at its source offset) of a busy partition: tens of
    records in one millisecond, runs of identical records (heartbeats, retries), and a snapshot of a group
    at each of 0..n whose evidence reaches back through its next record's millisecond, as the snapshot's, up to
    a cap that a millisecond may outrun."""
    times: list[int] = []
    contents: list[int] = []
    now = 1_000
    while len(times) < n:
        now += rng.choice((0, 1, 1, 5))
        same = rng.random() < 0.3  # a run of identical records
        for _ in range(rng.randint(1, 12)):
            times.append(now)
            contents.append(-1 if same else len(contents))
    times, contents = times[:n], contents[:n]
    target = SmallWindows([Slot(s, None) for s in range(n)], rng.randint(1, 9))
    target.records = [
        r._replace(key=f"k{contents[r.offset]}".encode(), timestamp=times[r.offset]) for r in target.records
    ]

    def evidence(s: int) -> RecordEvidence:
        return RecordEvidence(
            offset=s, timestamp=times[s], fingerprint=fingerprint(f"k{contents[s]}".encode(), b"v", ())
        )

    reach = rng.choice((3, 6, 1_000))  # the snapshot's cap (1,000): a millisecond can hold more

    def before(c: int) -> list[RecordEvidence]:
        start = max(0, c - 3)
        while c < n and start > 0 and times[start - 1] == times[c] and c - start < reach:
            start -= 1  # through the next record's millisecond
        return [evidence(s) for s in range(start, c)]

    return target, snapshot(n, range(n + 1), evidence, before)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_a_complete_busy_replica_is_always_bounded(seed: int) -> None:
    """Property: on a complete replica of a busy partition with identical records, every position is mapped,
    skips nothing, and says how many records it reads again at most, never below the truth: identical
    records leave a position unproven, never unbounded."""
    rng = random.Random(seed)
    n = rng.randint(5, 60)
    target, groups = busy_replica(rng, n)
    entries, _ = translate(groups, target, PlanOptions(strategies=("fingerprint",)))
    layout = [Slot(s, None) for s in range(n)]
    assert not judge(layout, entries), judge(layout, entries)
    unbounded = [
        (e.source_offset, e.status, e.reason) for e in entries if e.exact is False and e.max_duplicates is None
    ]
    assert not unbounded, unbounded


def test_a_region_copied_twice_after_the_match_is_not_exact() -> None:
    """0..40, then 30..34 again, then 41..59: a group at 35 matches its evidence once and reads 30..34
    again after it. Close after the match, the window reads the copies; far after it (300 records
    on), only counting shows them: the target holds 5 more records than the source between the match
    and a later one."""
    near = [Slot(s, None) for s in [*range(41), *range(30, 35), *range(41, 60)]]
    far = [Slot(s, None) for s in [*range(300), *range(30, 35), *range(300, 400)]]
    for layout, n, why in ((near, 60, "copies of the evidence records"), (far, 400, "5 more records between")):
        entries, _ = translate(
            snapshot(n, [20, 35, n - 5]), SmallWindows(layout, 4), PlanOptions(strategies=("fingerprint",))
        )
        by_c = {e.source_offset: e for e in entries}
        assert (by_c[35].target_offset, by_c[35].exact, by_c[35].max_duplicates) == (35, False, None), by_c[35]
        assert why in (by_c[35].reason or "")
        assert by_c[n - 5].exact and by_c[n - 5].target_offset == n  # past the second copy: exact
        assert not judge(layout, entries)


def test_evidence_cut_by_the_restores_start_is_exact() -> None:
    """Source records 0..2 were lost before the copy: the target begins at the group's committed
    record 3, found once by its own fingerprint — exact, as the whole sequence would be."""
    layout = [Slot(s, None) for s in range(3, 40)]
    (entry,) = translate(snapshot(40, [3]), SmallWindows(layout, 5), PlanOptions(strategies=("fingerprint",)))[0]
    assert (entry.target_offset, entry.exact, entry.method) == (0, True, "fingerprint"), entry


def test_records_without_the_header_before_the_restore_are_found_by_their_evidence() -> None:
    """The restore's first batch had no header: 0..4 without it, 5.. with it. Every group committed
    in the first batch resumes at its own record, not at 5."""
    layout = [*(Slot(s, None) for s in range(5)), *copy(range(5, 40))]
    for order_check in ("windows", "full"):
        entries, _ = translate(
            snapshot(40, range(41)),
            SmallWindows(layout, 4),
            PlanOptions(strategies=("header",), order_check=order_check),
        )
        assert not judge(layout, entries), order_check
        by_c = {e.source_offset: e for e in entries}
        assert [by_c[c].target_offset for c in range(6)] == list(range(6)), order_check
        assert by_c[2].exact and by_c[2].method == "fingerprint" and "no offset header" in (by_c[2].reason or "")


@pytest.mark.parametrize("header", [15, 45], ids=["below", "above"])
def test_one_wrong_header_at_the_committed_record_is_not_skipped(header: int) -> None:
    """Record 20 carries header 15 (or 45): its content is the snapshot's record 20. The group at 20
    resumes there, not exact; the reason says the header and the content disagree."""
    layout = copy(range(40))
    layout[20] = Slot(20, header)
    entries, stats = translate(snapshot(40, range(41)), SmallWindows(layout, 4), PlanOptions(strategies=("header",)))
    assert not judge(layout, entries)
    by_c = {e.source_offset: e for e in entries}
    assert by_c[20].target_offset == 20 and not by_c[20].exact
    assert "but its content is the snapshot's record 20" in (by_c[20].reason or "")
    assert TOPIC in stats.out_of_order


def test_a_wrong_header_moved_far_from_where_the_headers_fall_is_still_compared() -> None:
    """Record 16 carries header 51, and 17 records (63-79) were written after it before 17-62: the headers
    fall back only 18 records later, past the recent ones a fall compares. Groups at 17-51 resume by the
    headers at target 16, which is record 16 they processed: its content says so, so they resume after it
    (found by the full-order property, seed 37217451)."""
    layout = [*copy(range(16)), Slot(16, 51), *copy(range(63, 80)), *copy(range(17, 63))]
    entries, _ = translate(
        snapshot(80, range(81)), SmallWindows(layout, 1), PlanOptions(strategies=("header",), order_check="full")
    )
    assert not judge(layout, entries)
    by_c = {e.source_offset: e for e in entries}
    assert [by_c[c].target_offset for c in (16, 17, 51)] == [16, 17, 17]
    assert "the header is wrong" in (by_c[16].reason or "")


def test_a_prefix_too_long_to_compare_resumes_at_the_log_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """More records without the header before the first restored one than a whole read holds: the
    evidence is not compared there, so a group whose record the headers lack resumes at the start."""
    from offset_restore.translate import header_reads

    monkeypatch.setattr(header_reads, "MAX_HELD_RECORDS", 3)
    layout = [*(Slot(s, None) for s in range(10)), *copy(range(10, 40))]
    entries, _ = translate(
        snapshot(40, [2, 20]), SmallWindows(layout, 4), PlanOptions(strategies=("header",), order_check="full")
    )
    by_c = {e.source_offset: e for e in entries}
    assert (by_c[2].target_offset, by_c[2].exact, by_c[2].max_duplicates) == (0, False, None)
    assert "were not compared with the snapshot's evidence" in (by_c[2].reason or "")
    assert (by_c[20].target_offset, by_c[20].exact) == (20, True)
    assert not judge(layout, entries)


# -- holes in the restore (issue 40) --------------------------------------------------------------

SEARCH_ONLY = PlanOptions(strategies=("header",), whole_when_cheaper=False)
"""The search's path alone: these partitions are small enough that the cost model would read them whole."""


def test_a_restore_with_holes_everywhere_is_searched_not_read_whole() -> None:
    """Every 7th source record missing (compaction, a filter, a lossy backup): a group whose next record
    is missing resumes at the next restored one, exact, its gap named, and the partition is not read whole
    (no target record as recent as the missing one lies before it: ListOffsets by its timestamp)."""
    layout = copy(s for s in range(5_000) if s % 7 != 6)
    target = SmallWindows(layout, 8)
    positions = [6, 13, 700, 2_505, 4_999, 1_234]  # the first five on holes
    entries, stats = translate(snapshot(5_000, positions), target, SEARCH_ONLY)
    assert not judge(layout, entries) and all(e.exact for e in entries)
    assert not stats.out_of_order and not stats.fetch_rounds.get("header (whole partitions)")
    assert len(target.log.sent) < 400  # a few windows a position, not 4,286 records
    by_c = {e.source_offset: e for e in entries}
    assert by_c[6].target_offset == 6 and "source records 6..6 are not in the restore" in (by_c[6].reason or "")


def test_a_missing_record_written_elsewhere_earlier_is_found_by_a_whole_read() -> None:
    """Record 700 missing at its place but written before it (a worker's batch out of place): a record as
    recent as it lies before the one found, so the hole is not believed and the partition is read whole."""
    layout = copy(range(1_000))
    moved = layout.pop(700)
    layout.insert(300, moved)
    target = SmallWindows(layout, 8)
    entries, stats = translate(snapshot(1_000, [700]), target, SEARCH_ONLY)
    assert not judge(layout, entries) and stats.fetch_rounds["header (whole partitions)"] > 0
    [entry] = entries
    assert entry.target_offset is not None and entry.target_offset <= 300  # the copy is read, not skipped
    assert TOPIC in stats.out_of_order  # the whole read saw the batch out of place, and says so


def test_a_restore_that_rewrote_timestamps_proves_no_hole_and_is_read_whole() -> None:
    """Every record given the restore's own time: the lookup by the snapshot's time answers the log start,
    so a hole is never believed on such a target (nor on a broker that does not look timestamps up)."""
    layout = copy(s for s in range(1_000) if s % 7 != 6)
    target = SmallWindows(layout, 8)
    target.records = [r._replace(timestamp=9_999_999) for r in target.records]
    entries, stats = translate(snapshot(1_000, [13]), target, SEARCH_ONLY)
    assert not judge(layout, entries) and stats.fetch_rounds["header (whole partitions)"] > 0
    [entry] = entries
    assert "a target record as recent as the snapshot's lies before it" in (entry.reason or ""), entry.reason


class LargeBatches(SmallWindows):
    """Batches larger than 16 KB: a read asked below ``needs`` bytes comes back cut (nothing decoded),
    but for one asked ``ONE_BATCH`` (alone in its request: a broker sends it whole)."""

    def __init__(self, layout: list[Slot], per_fetch: int, needs: int) -> None:
        super().__init__(layout, per_fetch)
        self.needs, self.asked = needs, list[int]()

    def fetch(
        self,
        positions: Mapping[TP, int],
        *,
        partition_max_bytes: int | Mapping[TP, int] = 0,
        until: Mapping[TP, int] | None = None,
        max_wait_ms: int | None = None,
    ) -> dict[TP, PartitionFetch]:
        answers = super().fetch(positions, partition_max_bytes=partition_max_bytes, until=until)
        for tp, position in positions.items():
            limit = partition_max_bytes if isinstance(partition_max_bytes, int) else partition_max_bytes[tp]
            self.asked.append(limit)
            if limit < self.needs and limit != ONE_BATCH:
                answers[tp] = PartitionFetch(position, [], len(self.records), 0, None, -1)
        return answers


def test_a_limit_learned_by_the_shape_sample_is_asked_from_the_first_read_on() -> None:
    """Issue 40: 1 MB batches (compressed) come back cut below their size, and every read learned it
    again through empty rounds, a partial batch each. Learned once (the shape sample), asked after."""
    target = LargeBatches(copy(range(5_000)), 8, needs=200_000)
    entries, _ = translate(snapshot(5_000, [7, 2_500, 4_990]), target, SEARCH_ONLY)
    assert all(e.exact for e in entries) and not judge(copy(range(5_000)), entries)
    small = [limit for limit in target.asked if limit < 200_000 and limit != ONE_BATCH]
    # the sample's three cut reads (at 16 KB twice: the broker given its time first), then never again
    assert small == [16 * 1024, 16 * 1024, 64 * 1024], target.asked
    assert ONE_BATCH in target.asked  # then one batch a read, not 256 KB over it


def _log(rows: list[tuple[int, int]]) -> PartitionLog:
    log = PartitionLog()
    for offset, key in rows:
        log.append(offset, key, 0)
    return log


def test_an_overcounted_gap_is_read_in_its_middle_and_only_when_it_is_the_first_problem() -> None:
    """Two windows far apart with 1,000 offsets more between them than source records: the gap's
    unread middle is where to read (aborted transactions look so until read). Headers that fall back
    are another problem: no gap to read, the partition is in disorder."""
    windows = [(0, 100), (1_200, 1_300)]
    rows = [(o, o) for o in range(100)] + [(o, o - 1_000) for o in range(1_200, 1_300)]
    assert "more records than the source had" in (disorder_in(_log(rows), windows) or "")
    assert overcounted_gap(_log(rows), windows) == 649  # between target 99 and 1,200
    read_middle = [(0, 100), (649, 700), (1_200, 1_300)]  # the middle read: a hole (aborted), no record
    assert overcounted_gap(_log(rows), read_middle) == 700  # read on where the hole goes on
    explained = [(0, 1_300)]  # all read: the extra offsets are holes, nothing over-counted
    assert disorder_in(_log(rows), explained) is None and overcounted_gap(_log(rows), explained) is None
    fallen = [*rows[:100], (1_200, 50), *rows[101:]]
    assert "carries source offset 50" in (disorder_in(_log(fallen), windows) or "")
    assert overcounted_gap(_log(fallen), windows) is None
    in_order = [(o, o) for o in range(100)] + [(o, o) for o in range(1_200, 1_300)]
    assert overcounted_gap(_log(in_order), windows) is None
    later = [(0, 1_300), (2_500, 2_600)]  # the gap explained, but its far side falls back further on
    fallen_later = [
        *[(o, o) for o in range(1_300)],
        (2_500, 2_400),
        (2_501, 1_000),
        *[(o, o) for o in range(2_502, 2_600)],
    ]
    assert overcounted_gap(_log(fallen_later[:1_301]), later) == 1_899  # before the fall is read: the gap
    assert "more records than the source had" in (disorder_in(_log(fallen_later), later) or "")  # the first named
    assert overcounted_gap(_log(fallen_later), later) is None  # no gap read could put it in order


def test_a_fingerprint_scan_takes_from_the_time_searchs_window_what_it_holds() -> None:
    """A replica without headers: each position's scan starts at the record the time search found, in
    the window that found it, and does not ask for it again (a header-less plan read each such batch
    twice). The answers stay those of the definition."""
    n, committed = 400, [50, 170, 290]
    layout = [Slot(s, None) for s in range(n)]
    target = SmallWindows(layout, 40)
    entries, _ = translate(snapshot(n, committed), target, PlanOptions(strategies=("fingerprint",)))
    assert not judge(layout, entries)
    assert sorted(e.target_offset or -1 for e in entries) == committed and all(e.exact for e in entries)
    starts = [c - 3 for c in committed]  # the oldest evidence: the first record as recent, where the scan starts
    sent = collections.Counter(offset for _, offset in target.log.sent)  # one-record batches: by offset
    assert [sent[s] for s in starts] == [1, 1, 1], sent


def test_headers_falling_back_are_seen_as_windows_are_read_and_overlaps_left_to_the_whole_check() -> None:
    in_order = observed((0, 10, [(o, o) for o in range(10)]), (500, 510, [(o, o) for o in range(500, 510)]))
    assert in_order.fallen is None
    later_lower = observed(
        (0, 10, [(o, 100 + o) for o in range(10)]), (500, 510, [(o, o - 450) for o in range(500, 510)])
    )
    assert later_lower.fallen == "target offset 500 carries source offset 50 after source offset 109 at target offset 9"
    earlier_higher = observed((500, 510, [(o, o) for o in range(500, 510)]), (0, 10, [(o, 600 + o) for o in range(10)]))
    assert earlier_higher.fallen is not None and "source offset 500 after source offset 609" in earlier_higher.fallen
    inside = observed((0, 4, [(0, 0), (1, 5), (2, 3), (3, 6)]))
    assert inside.fallen == "target offset 2 carries source offset 3 after source offset 5 at target offset 1"
    overlapping = observed((0, 10, [(o, o) for o in range(10)]), (5, 15, [(o, o - 8) for o in range(5, 15)]))
    assert overlapping.fallen is None  # the keyed spans overlap: disorder_in decides on all of it
    assert disorder_in(*overlapping.merged()) is not None


def test_a_partition_whose_headers_fall_back_is_searched_no_further_and_read_whole() -> None:
    """Source offsets 6,000-11,999 written twice: the search's third window shows the headers falling
    back, and the partition's searches stop there (it is read whole, and answered as the definition
    says) instead of reading on to six."""
    n = 20_000
    layout = [Slot(s, s) for s in range(12_000)] + [Slot(s, s) for s in range(6_000, n)]
    entries, stats = translate(snapshot(n, [3_000, 9_000, 15_000]), SmallWindows(layout, 50), PlanOptions())
    assert not judge(layout, entries)
    assert stats.fetches["header"] <= 3 and stats.fetches["header (whole partitions)"] > 0, dict(stats.fetches)


# The whole-partition answers take C-speed paths when every offset is held or every record placed; they must
# answer what the record-by-record loops answer.


def _slow_hole_rate(offsets: list[int], ranges: list[tuple[int, int]]) -> float:
    read = sum(e - s for s, e in ranges)
    holes = 0
    for low, high in itertools.pairwise(offsets):
        gap = high - low - 1
        if 0 < gap <= SHORT_HOLE and any(s <= low and high < e for s, e in ranges):
            holes += gap
    return holes / read if read else 0.0


def _slow_restored_range(log: PartitionLog) -> tuple[int, int, int, int] | None:
    low, high = log.carried()
    keyed = [i for i in range(len(high)) if high[i] != NO_KEY]
    if not keyed:
        return None
    return keyed[0], keyed[-1], min(low[i] for i in keyed), max(high[i] for i in keyed)


@settings(max_examples=300, deadline=None)
@given(
    gaps=st.lists(st.sampled_from([1, 1, 1, 2, 3, 9]), min_size=0, max_size=40),
    keys=st.lists(st.one_of(st.just(NO_KEY), st.integers(30, 80)), min_size=40, max_size=40),
    every_record_keyed=st.booleans(),
    start=st.integers(0, 5),
    spans=st.dictionaries(st.integers(0, 39), st.tuples(st.integers(0, 20), st.integers(20, 90)), max_size=3),
)
def test_the_whole_partition_answers_match_the_record_by_record_ones(
    gaps: list[int], keys: list[int], every_record_keyed: bool, start: int, spans: dict[int, tuple[int, int]]
) -> None:
    if every_record_keyed:
        keys = [40 if key == NO_KEY else key for key in keys]
    offsets = [start]
    for gap in gaps[: len(keys) - 1]:  # one offset a key: the log and the slow count see the same records
        offsets.append(offsets[-1] + gap)
    log = PartitionLog()
    for offset, key in zip(offsets, keys, strict=False):
        log.append(offset, None if key == NO_KEY else key, 0)
    log.spans = {i: span for i, span in spans.items() if i < len(log)}
    ranges = [(offsets[0], offsets[-1] + 1)]
    assert hole_rate_of(log, ranges) == _slow_hole_rate(offsets, ranges)
    assert log.restored_range() == _slow_restored_range(log)


@pytest.mark.parametrize("per_fetch", [8, 50])
@pytest.mark.parametrize("lost", [1, 4])
def test_a_record_numbered_as_the_lost_one_before_it_is_never_skipped_by_a_search(per_fetch: int, lost: int) -> None:
    """600 records, groups every 7 and one at 300: records lost before source 300 and 300 written with the
    lost one's header. The headers rise around it, so the order check sees nothing; no group skips it, read
    in windows or whole."""
    layout = [*copy(range(300 - lost)), Slot(300, 299), *copy(range(301, 600))]
    for order_check in ("windows", "full"):
        entries, _ = translate(
            snapshot(600, sorted({300, *range(0, 601, 7)})),
            SmallWindows(layout, per_fetch),
            PlanOptions(strategies=("header",), order_check=order_check),
        )
        assert not judge(layout, entries), order_check
        at_300 = next(e for e in entries if e.source_offset == 300)
        assert at_300.status == "pending" or at_300.target_offset == 300 - lost, (order_check, at_300)
