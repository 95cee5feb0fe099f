"""The monotone search against brute force on in-memory partitions with gaps, prefixes and tails."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping

import pytest
from offset_restore.kafka.model import TP, FetchedRecord, LogBounds, PartitionFetch, Record
from offset_restore.translate.search import MAX_BARREN_ROUNDS, KeyedRecord, PartitionIndex, search_first_at_least

from tests.fake_log import FakeLog


def fake_log(logs: dict[TP, list[tuple[int, int | None]]], per_fetch: int, batch: int = 1) -> FakeLog:
    """Target partitions: offset -> source offset (None: a record without the header), ``per_fetch``
    records an answer at least, in batches of ``batch`` records (the one holding the position whole)."""
    return FakeLog({tp: [_record(o, h) for o, h in log] for tp, log in logs.items()}, batch=batch, per_fetch=per_fetch)


def _record(offset: int, source: int | None) -> FetchedRecord:
    return FetchedRecord(
        offset, 0, None, b"v", (("x-source-offset", str(source).encode()),) if source is not None else ()
    )


def key_of(tp: TP, record: Record) -> int | None:
    for name, value in record.headers:
        if name == "x-source-offset" and value is not None:
            return int(value)
    return None


def brute(log: list[tuple[int, int | None]], wanted: int) -> tuple[int | None, int | None]:
    keyed = [(o, h) for o, h in log if h is not None]
    found = next((o for o, h in keyed if h >= wanted), None)
    below = [o for o, h in keyed if h < wanted]
    return found, (below[-1] if below else None)


def make_log(rng: random.Random) -> list[tuple[int, int | None]]:
    start = rng.randint(0, 1000)
    prefix = rng.randint(0, 30) if rng.random() < 0.3 else 0  # restore into a non-empty topic
    source, offset = rng.randint(0, 500), start
    log: list[tuple[int, int | None]] = []
    for _ in range(prefix):
        log.append((offset, None))
        offset += 1 + (rng.random() < 0.1)
    for _ in range(rng.randint(0, 3000)):
        source += 1 + (rng.randint(0, 20) if rng.random() < 0.05 else 0)  # gaps in the restore
        offset += 1 + (rng.random() < 0.02)  # transaction markers on the target
        log.append((offset, source))
    for _ in range(rng.randint(0, 5) if rng.random() < 0.2 else 0):  # new records after the restore
        offset += 1
        log.append((offset, None))
    return log


@pytest.mark.parametrize("batched", [False, True], ids=["records", "whole batches"])
@pytest.mark.parametrize("seed", range(40))
def test_matches_brute_force(seed: int, batched: bool) -> None:
    rng = random.Random(seed)
    logs = {TP("t", p): make_log(rng) for p in range(rng.randint(1, 5))}
    per_fetch = rng.choice([1, 3, 50, 500])
    fake = fake_log(logs, per_fetch, batch=rng.choice([1, 7, 200, 2000]) if batched else 1)
    wanted = {}
    for tp, log in logs.items():
        keys = [h for _, h in log if h is not None] or [0]
        for n in range(rng.randint(1, 6)):
            wanted[(tp, n)] = (tp, rng.randint(min(keys) - 10, max(keys) + 10), None)
    results, stats = search_first_at_least(wanted, {tp: fake.bounds(tp) for tp in logs}, key_of, fake)
    for job_id, (tp, value, _) in wanted.items():
        found, below = brute(logs[tp], value)
        result = results[job_id]
        assert result.complete, result.reason
        assert (result.found.offset if result.found else None) == found, (job_id, value)
        assert (result.below.offset if result.below else None) == below, (job_id, value)
    for tp, rounds in stats.rounds_per_partition.items():  # at worst, every other round bisects
        searches = sum(1 for job_tp, _, _ in wanted.values() if job_tp == tp)
        assert rounds <= searches * (2 * math.log2(len(logs[tp]) + 2) + 4)


def test_a_good_guess_settles_most_partitions_in_one_round() -> None:
    """Shifted restores with small gaps: the caller's first guess plus one window is enough."""
    rng = random.Random(3)
    logs: dict[TP, list[tuple[int, int | None]]] = {}
    wanted: dict[TP, tuple[TP, int, int | None]] = {}
    for p in range(200):
        tp, shift = TP("t", p), rng.randint(0, 500)
        log: list[tuple[int, int | None]] = []
        source = 100
        for offset in range(2000):
            source += 1 + (rng.random() < 0.01)
            log.append((offset, source))
        logs[tp] = log
        c = rng.randint(150, 2000)
        wanted[tp] = (tp, c, c - 100 + shift % 3)  # a guess a few records off
    fake = fake_log(logs, per_fetch=200)
    results, stats = search_first_at_least(wanted, {tp: fake.bounds(tp) for tp in logs}, key_of, fake)
    assert all(r.complete for r in results.values())
    assert statistics.median(stats.rounds_per_partition.values()) <= 2


def test_without_a_guess_interpolation_needs_few_rounds() -> None:
    tp = TP("t", 0)
    log: list[tuple[int, int | None]] = [(o, 5_000 + 3 * o) for o in range(1_000_000)]
    fake = fake_log({tp: log}, per_fetch=100)
    results, stats = search_first_at_least(
        {"j": (tp, 5_000 + 3 * 777_777 + 1, None)}, {tp: fake.bounds(tp)}, key_of, fake
    )
    assert results["j"].found is not None and results["j"].found.offset == 777_778
    assert stats.rounds <= 4


def test_a_partition_that_stops_answering_gives_up_with_a_reason() -> None:
    tp = TP("t", 0)

    def silent(
        positions: Mapping[TP, int],
        until: Mapping[TP, int] | None,
        limits: Mapping[TP, int],
        wait_ms: int | None = None,
    ) -> Mapping[TP, PartitionFetch]:
        return {tp: PartitionFetch(positions[tp], [], high_watermark=100, log_start_offset=0)}

    results, _ = search_first_at_least({"j": (tp, 50, None)}, {tp: LogBounds(0, 100)}, key_of, silent)
    assert not results["j"].complete and "no records returned" in (results["j"].reason or "")


def test_many_searches_in_large_batches_read_each_batch_once() -> None:
    """50 searches in a partition of 20 batches (1 MB compressed batches hold thousands of records):
    the records of a batch before the position asked for are kept, not asked for again."""
    tp = TP("t", 0)
    log: list[tuple[int, int | None]] = [(o, o) for o in range(100_000)]
    fake = fake_log({tp: log}, per_fetch=1, batch=5_000)
    rng = random.Random(7)
    indexes: dict[TP, PartitionIndex] = {}  # shared, as the header strategy shares them between its searches
    for _ in range(2):  # e.g. the committed offsets, then the records before them
        values = [rng.randrange(100_000) for _ in range(25)]
        wanted = {n: (tp, v, max(0, v + rng.randint(-3_000, 3_000))) for n, v in enumerate(values)}  # guesses off
        results, _ = search_first_at_least(wanted, {tp: fake.bounds(tp)}, key_of, fake, indexes=indexes)
        for n, (_, value, _) in wanted.items():
            found = results[n].found
            assert found is not None and found.offset == value
    repeated = [b for b in set(fake.sent) if fake.sent.count(b) > 1]
    assert not repeated, f"batches sent more than once: {sorted(repeated)}"


def test_the_records_of_a_batch_below_the_log_start_are_not_read() -> None:
    """DeleteRecords moved the log start inside a batch: the broker still sends the batch from its
    base, but its records below the start are gone and answer no search."""
    tp = TP("t", 0)
    fake = fake_log({tp: [(o, o) for o in range(1_000)]}, per_fetch=1, batch=100)
    fake.deleted_below[tp] = 50
    results, _ = search_first_at_least({"j": (tp, 10, 60)}, {tp: fake.bounds(tp)}, key_of, fake)
    assert results["j"].found is not None and results["j"].found.offset == 50
    assert results["j"].below is None
    # The records were deleted after the plan read the bounds: the broker's log start says so.
    results, _ = search_first_at_least({"j": (tp, 10, 60)}, {tp: LogBounds(0, 1_000)}, key_of, fake)
    assert not results["j"].complete or results["j"].found == KeyedRecord(50, 50), results["j"]


def test_a_partition_without_the_key_is_given_up_after_a_few_windows_when_the_caller_says_so() -> None:
    """A replica written without the header: its searches stop after MAX_BARREN_ROUNDS windows
    (incomplete, said why) instead of reading window after window; a partition not named keeps going
    (a restore whose first records lack the header finds it further on)."""
    replica, prefixed = TP("t", 0), TP("t", 1)
    logs: dict[TP, list[tuple[int, int | None]]] = {
        replica: [(o, None) for o in range(100_000)],
        prefixed: [(o, None) for o in range(2_000)] + [(o, o - 2_000) for o in range(2_000, 10_000)],
    }
    fake = fake_log(logs, per_fetch=100)
    wanted = {"r": (replica, 500, 500), "p": (prefixed, 500, 0)}
    results, stats = search_first_at_least(wanted, {tp: fake.bounds(tp) for tp in logs}, key_of, fake, barren={replica})
    assert not results["r"].complete and "no record with the key" in (results["r"].reason or "")
    assert stats.rounds_per_partition[replica] == MAX_BARREN_ROUNDS
    found = results["p"].found
    assert results["p"].complete and found is not None and found.offset == 2_500
