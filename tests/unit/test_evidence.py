"""Evidence collection against an in-memory log with gaps, checked against a brute-force answer."""

from __future__ import annotations

import random
from collections.abc import Mapping

import pytest
from offset_restore.kafka.model import TP, FetchedRecord, LogBounds, PartitionFetch
from offset_restore.reading.rounds import MAX_UNSERVED_ROUNDS
from offset_restore.snapshot.evidence import RUN_EVIDENCE_RECORDS, collect_evidence
from offset_restore.snapshot.fingerprint import fingerprint

from tests.fake_log import FakeLog


def record(tp: TP, offset: int) -> FetchedRecord:
    return FetchedRecord(offset, 1000 + offset, f"k{offset}".encode(), f"{tp}:{offset}".encode(), ())


def fake_log(logs: dict[TP, list[int]], per_fetch: int, hw: dict[TP, int]) -> FakeLog:
    """Partitions with gappy offsets and a high watermark past the last record (a transaction marker)."""
    records = {tp: [record(tp, o) for o in offsets] for tp, offsets in logs.items()}
    return FakeLog(records, per_fetch=per_fetch, high_watermarks=hw)


def expected(log: list[int], c: int, n: int, start: int, end: int) -> tuple[int | None, list[int]]:
    nxt = next((o for o in log if o >= c), None)
    window_start = max(start, min(c, end) - n)
    before = [o for o in log if window_start <= o < c][-n:]
    return nxt, before


@pytest.mark.parametrize("seed", range(25))
def test_evidence_matches_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    logs, bounds, wanted, hw = {}, {}, {}, {}
    for p in range(rng.randint(1, 4)):
        tp = TP("t", p)
        start = rng.randint(0, 50)
        size = rng.randint(1, 300)
        log = sorted(rng.sample(range(start, start + size * 2), size))  # gaps everywhere
        end = log[-1] + 1 + rng.randint(0, 3)  # trailing gap (e.g. a transaction marker)
        logs[tp], bounds[tp], hw[tp] = log, LogBounds(log[0], end), end
        wanted[tp] = {rng.randint(max(0, log[0] - 5), end + 5) for _ in range(rng.randint(1, 20))}
    n = rng.randint(1, 4)
    fetch = fake_log(logs, per_fetch=rng.randint(1, 40), hw=hw)
    result, stats = collect_evidence(wanted, bounds, n, fetch, offset_header=None)
    for tp, offsets in wanted.items():
        for c in offsets:
            nxt, before = expected(logs[tp], c, n, bounds[tp].start, bounds[tp].end)
            evidence = result[(tp, c)]
            assert (evidence.next.offset if evidence.next else None) == nxt, (tp, c)
            assert [e.offset for e in evidence.before] == before, (tp, c)
            assert evidence.complete
            if evidence.next:
                held = record(tp, evidence.next.offset)
                assert evidence.next.fingerprint == fingerprint(held.key, held.value, held.headers)
    assert stats.incomplete == 0


def test_each_round_fetches_every_partition_once_and_jumps_over_distant_windows() -> None:
    tp0, tp1 = TP("t", 0), TP("t", 1)
    logs = {tp0: list(range(10_000)), tp1: list(range(10_000))}
    fetch = fake_log(logs, per_fetch=500, hw={tp0: 10_000, tp1: 10_000})
    bounds = {tp0: LogBounds(0, 10_000), tp1: LogBounds(0, 10_000)}
    result, stats = collect_evidence({tp0: {5, 9000}, tp1: {7000}}, bounds, 3, fetch, offset_header=None)
    assert stats.rounds == 2
    assert fetch.positions_seen == [{tp0: 2, tp1: 6997}, {tp0: 8997}]
    assert result[(tp0, 9000)].next is not None and [e.offset for e in result[(tp0, 9000)].before] == [8997, 8998, 8999]


def test_a_partition_that_returns_nothing_is_given_up_and_marked_incomplete() -> None:
    tp = TP("t", 0)

    def stuck(
        positions: Mapping[TP, int],
        until: Mapping[TP, int] | None,
        limits: Mapping[TP, int],
        wait_ms: int | None = None,
    ) -> Mapping[TP, PartitionFetch]:
        return {tp: PartitionFetch(positions[tp], [], high_watermark=100, log_start_offset=0)}

    result, stats = collect_evidence({tp: {50}}, {tp: LogBounds(0, 100)}, 3, stuck, offset_header=None)
    assert result[(tp, 50)].complete is False and result[(tp, 50)].next is None
    assert stats.incomplete == 1 and stats.rounds == MAX_UNSERVED_ROUNDS and "no records returned" in stats.notes[0]


def test_a_fetch_error_is_reported_not_guessed() -> None:
    tp = TP("t", 0)

    def failing(
        positions: Mapping[TP, int],
        until: Mapping[TP, int] | None,
        limits: Mapping[TP, int],
        wait_ms: int | None = None,
    ) -> Mapping[TP, PartitionFetch]:
        return {tp: PartitionFetch(positions[tp], error="NotLeaderForPartitionError")}

    result, stats = collect_evidence({tp: {5}}, {tp: LogBounds(0, 10)}, 3, failing, offset_header=None)
    assert result[(tp, 5)].complete is False
    assert "NotLeaderForPartitionError" in stats.notes[0]


def test_empty_partition_needs_no_fetch() -> None:
    tp = TP("t", 0)

    def never(
        positions: Mapping[TP, int],
        until: Mapping[TP, int] | None,
        limits: Mapping[TP, int],
        wait_ms: int | None = None,
    ) -> Mapping[TP, PartitionFetch]:
        raise AssertionError("no fetch expected")

    result, stats = collect_evidence({tp: {0, 4}}, {tp: LogBounds(4, 4)}, 3, never, offset_header=None)
    assert result[(tp, 4)].next is None and result[(tp, 0)].complete and stats.rounds == 0


@pytest.mark.parametrize("run", [1, 5, 30, 300, 1_500])
def test_a_window_inside_its_next_records_millisecond_reaches_back_through_it(run: int) -> None:
    """A bulk producer's ``run`` records to a millisecond: a window of 3 that begins inside the next record's
    millisecond reaches back to the last record of an older one (the plan finds each record of that time
    before the position by its identity), up to ``RUN_EVIDENCE_RECORDS``; elsewhere it stays 3."""
    tp = TP("t", 0)
    records = [FetchedRecord(o, 1000 + o // run, f"k{o}".encode(), b"v", ()) for o in range(6_000)]
    log = FakeLog({tp: records}, per_fetch=100, high_watermarks={tp: 6_000})
    positions = {1, 3, 3_000 + run // 2, 3_000 + run - 1, 3_001, 5_999}
    result, stats = collect_evidence({tp: positions}, {tp: log.bounds(tp)}, 3, log, offset_header=None)
    for c in positions:
        evidence = result[(tp, c)]
        assert evidence.next is not None and evidence.next.offset == c and evidence.complete
        started = c - c % run  # the first record of the next record's millisecond
        reach = min(c, max(3, c - started + 1))  # to the newest record of an older millisecond
        if reach > 3:  # read in passes of 3 x 8^k records, the last capped
            longest = next(size for size in (24, 192, 1_000, 1_000) if size >= min(reach, RUN_EVIDENCE_RECORDS))
            reach = min(c, longest)
        assert [e.offset for e in evidence.before] == list(range(c - reach, c)), (c, len(evidence.before))
    assert stats.incomplete == 0


@pytest.mark.parametrize("first", [40, 60], ids=["first-inside", "first-outside"])
@pytest.mark.parametrize("run", [4, 30])
def test_dense_windows_inside_their_millisecond_are_lengthened_from_what_was_read(run: int, first: int) -> None:
    """Positions every few records, four or thirty records to a millisecond (a busy producer): the windows
    inside their next record's millisecond get the longer window from the records this pass read already,
    the same evidence a second pass would read, and no record is read twice."""
    tp = TP("t", 0)
    records = [FetchedRecord(o, 1000 + o // run, f"k{o}".encode(), b"v", ()) for o in range(2_000)]
    log = FakeLog({tp: records}, per_fetch=2_000, high_watermarks={tp: 2_000})  # whole batches: one answer
    # From 60 (outside its millisecond), the next 30 records apart: every window inside is lengthened from
    # what the first pass read, and no second pass is needed for the 24-record ones.
    positions = {first, *range(first + 30, 2_000, 7)}
    result, stats = collect_evidence({tp: positions}, {tp: log.bounds(tp)}, 3, log, offset_header=None)
    for c in positions:
        started = c - c % run
        reach = c - started + 1 if c - started + 1 > 3 else 3
        if reach > 3:
            reach = min(c, next(size for size in (24, 192, 1_000) if size >= reach))
        assert [e.offset for e in result[(tp, c)].before] == list(range(c - reach, c)), c
    if run == 4:  # read once from the first window on; only the first position's longer window reads back
        assert stats.records_read <= 2_000 - (first - 3) + (25 if first == 40 else 0)


def grown(log: list[FetchedRecord], c: int, n: int, start: int, end: int) -> list[int]:
    """The window the passes give ``c``: ``n`` records, lengthened 8 times (to 1,000 at most) while it lies in
    its next record's millisecond."""
    nxt = next((r for r in log if r.offset >= c), None)
    size = n
    while True:
        window_start = max(start, min(c, end) - size)
        before = [r for r in log if window_start <= r.offset < c][-size:]
        inside = nxt is not None and len(before) >= size and before[0].timestamp >= nxt.timestamp
        if not inside or size >= RUN_EVIDENCE_RECORDS:
            return [r.offset for r in before]
        size = min(RUN_EVIDENCE_RECORDS, size * 8)


@pytest.mark.parametrize("seed", range(40))
def test_windows_lengthened_from_memory_or_by_a_pass_are_the_same_windows(seed: int) -> None:
    """Any run length, identical records or not, gaps, any answer size: every window is the one the passes'
    definition gives, whether a pass read it or it was lengthened from the records read before."""
    rng = random.Random(seed)
    tp = TP("t", 0)
    run = rng.choice([1, 2, 4, 30, 300, 2_000])
    same = rng.random() < 0.5
    offsets = sorted(rng.sample(range(4_000), rng.randint(5, 3_000)))
    log = [
        FetchedRecord(o, 1000 + i // run, b"k" if same else f"k{o}".encode(), b"v", ()) for i, o in enumerate(offsets)
    ]
    end = offsets[-1] + 1
    fetch = FakeLog({tp: log}, per_fetch=rng.choice([1, 7, 100, 5_000]), high_watermarks={tp: end})
    wanted = {rng.randrange(offsets[0], end + 1) for _ in range(rng.randint(1, 60))}
    n = rng.randint(1, 5)
    result, stats = collect_evidence({tp: wanted}, {tp: LogBounds(offsets[0], end)}, n, fetch, offset_header=None)
    for c in wanted:
        assert [e.offset for e in result[(tp, c)].before] == grown(log, c, n, offsets[0], end), c
    assert stats.incomplete == 0
