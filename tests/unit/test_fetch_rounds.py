"""The fetch-round rules, with scripted answers: what each answer means, asked again, bounded."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

import pytest
from offset_restore.kafka.model import TP, FetchedRecord, PartitionFetch
from offset_restore.reading.rounds import (
    MAX_PARTITION_BYTES,
    MAX_UNSERVED_ROUNDS,
    ONE_BATCH,
    PATIENT_WAIT_MS,
    POINT_READ_BYTES,
    RUN_BYTES,
    RUN_ROUND_BYTES,
    STOP_MARGIN,
    AtEnd,
    Failed,
    FetchRounds,
    Served,
    Unserved,
    read_forward,
)

from tests.fake_log import Broker, FakeLog

A, B = TP("t", 0), TP("t", 1)


def _records(start: int, count: int) -> list[FetchedRecord]:
    return [FetchedRecord(o, 1000 + o, b"k", b"v", ()) for o in range(start, start + count)]


def _answer(position: int, count: int, hw: int) -> PartitionFetch:
    records = _records(position, min(count, max(0, hw - position)))
    return PartitionFetch(position, records=records, high_watermark=hw, next_offset=-1, size=100 * len(records))


class Script:
    """A broker that serves at most ``per_round`` partitions a round (the first ones asked), two
    records each; the others come back empty below their end, as a full response leaves them.
    ``busy``: one that reads partitions one by one until its wait runs out (Tansu under load), so
    that given ``PATIENT_WAIT_MS`` it serves them all."""

    def __init__(
        self, ends: Mapping[TP, int], per_round: int, never: frozenset[TP] = frozenset(), busy: bool = False
    ) -> None:
        self.ends, self.per_round, self.never, self.busy = ends, per_round, never, busy
        self.asked: list[list[TP]] = []
        self.waits: list[int | None] = []
        self.limits: list[dict[TP, int]] = []

    def __call__(
        self,
        positions: Mapping[TP, int],
        until: Mapping[TP, int] | None,
        limits: Mapping[TP, int],
        wait_ms: int | None = None,
    ) -> Mapping[TP, PartitionFetch]:
        self.asked.append(list(positions))
        self.waits.append(wait_ms)
        self.limits.append(dict(limits))
        return self.answers(positions, limits, wait_ms)

    def answers(
        self, positions: Mapping[TP, int], limits: Mapping[TP, int], wait_ms: int | None
    ) -> Mapping[TP, PartitionFetch]:
        per_round = len(positions) if self.busy and wait_ms == PATIENT_WAIT_MS else self.per_round
        out = {}
        for i, (tp, position) in enumerate(positions.items()):
            served = i < per_round and tp not in self.never
            out[tp] = _answer(position, 2 if served else 0, self.ends[tp])
        return out


def _read_all(
    fetch: Callable[..., Mapping[TP, PartitionFetch]], ends: Mapping[TP, int]
) -> tuple[dict, dict, FetchRounds]:
    seen: dict[TP, list[int]] = {tp: [] for tp in ends}

    def take(tp: TP, outcome: Served | AtEnd) -> int | None:
        if isinstance(outcome, AtEnd):
            return None
        seen[tp].extend(r.offset for r in outcome.answer.records)
        return outcome.answer.read_to

    rounds = FetchRounds(fetch)
    failed = read_forward(rounds, dict.fromkeys(ends, 0), take)
    return seen, failed, rounds


def test_an_empty_answer_below_the_end_is_asked_again_first_and_every_record_is_read() -> None:
    script = Script({A: 6, B: 6}, per_round=1)
    seen, failed, rounds = _read_all(script, {A: 6, B: 6})
    assert failed == {}
    assert seen == {A: list(range(6)), B: list(range(6))}
    # The partition left empty goes first next round, so the two take turns.
    assert [asked[0] for asked in script.asked[:3]] == [A, B, A]
    assert rounds.rounds == 6 and rounds.records == 12 and rounds.bytes == 1200


def test_a_partition_empty_round_after_round_fails_with_why_and_the_others_finish() -> None:
    script = Script({A: 6, B: 4}, per_round=2, never=frozenset({B}))
    seen, failed, rounds = _read_all(script, {A: 6, B: 4})
    assert seen[A] == list(range(6)) and seen[B] == []
    assert set(failed) == {B} and failed[B].log_start is None
    assert f"no records returned at {B} offset 0, below its end 4, {MAX_UNSERVED_ROUNDS} rounds" in failed[B].reason
    assert rounds.rounds == MAX_UNSERVED_ROUNDS


def test_the_end_known_from_an_answer_closes_a_partition_without_another_round() -> None:
    script = Script({A: 4}, per_round=1)
    seen, failed, rounds = _read_all(script, {A: 4})
    assert seen[A] == [0, 1, 2, 3] and failed == {} and rounds.rounds == 2


def test_what_each_answer_means() -> None:
    answers = {
        A: PartitionFetch(5, high_watermark=5),  # empty at the end
        B: PartitionFetch(3, high_watermark=9, next_offset=4),  # a transaction marker only: served
        TP("t", 2): PartitionFetch(2, high_watermark=9),  # empty below the end
        TP("t", 3): PartitionFetch(1, error="OffsetOutOfRangeError", log_start_offset=7),
        TP("t", 4): PartitionFetch(8, error="OffsetOutOfRangeError", log_start_offset=7),
        TP("t", 5): PartitionFetch(1, error="TopicAuthorizationFailedError"),
        TP("t", 7): PartitionFetch(4, error="NotLeaderForPartitionError", high_watermark=-1, retriable=True),
    }
    rounds = FetchRounds(lambda positions, until, limits, wait_ms: answers, ends={A: 3})
    positions = {tp: answer.fetch_offset for tp, answer in answers.items()} | {TP("t", 6): 0}
    outcome = rounds.round(positions)
    assert outcome[A] == AtEnd(5)
    served = outcome[B]
    assert isinstance(served, Served) and served.answer.read_to == 4
    assert outcome[TP("t", 2)] == Unserved(9)
    assert outcome[TP("t", 3)] == Failed(f"fetch of {TP('t', 3)} at 1 failed (OffsetOutOfRangeError)", 7)
    assert outcome[TP("t", 4)] == Failed(f"fetch of {TP('t', 4)} at 8 failed (OffsetOutOfRangeError)", None)
    assert outcome[TP("t", 5)] == Failed(f"fetch of {TP('t', 5)} at 1 failed (TopicAuthorizationFailedError)")
    assert outcome[TP("t", 7)] == Unserved(-1)  # a leader moving: asked again
    assert outcome[TP("t", 6)] == Failed(f"fetch of {TP('t', 6)} at 0 got no answer")


def test_an_end_the_caller_knew_counts_when_the_answer_reports_none() -> None:
    rounds = FetchRounds(
        lambda positions, until, limits, wait_ms: {A: PartitionFetch(4, high_watermark=-1)}, ends={A: 4}
    )
    assert rounds.round({A: 4}) == {A: AtEnd(4)}
    rounds = FetchRounds(
        lambda positions, until, limits, wait_ms: {A: PartitionFetch(3, high_watermark=-1)}, ends={A: 4}
    )
    assert rounds.round({A: 3}) == {A: Unserved(4)}


def test_until_is_passed_to_the_fetch() -> None:
    got: list[Mapping[TP, int] | None] = []

    def fetch(
        positions: Mapping[TP, int],
        until: Mapping[TP, int] | None,
        limits: Mapping[TP, int],
        wait_ms: int | None = None,
    ) -> Mapping[TP, PartitionFetch]:
        got.append(until)
        return {A: _answer(0, 2, 2)}

    FetchRounds(fetch).round({A: 0}, {A: 1})
    assert got == [{A: 1}]


def test_a_partition_left_unserved_is_asked_next_with_a_larger_limit() -> None:
    """Its batches may be larger than the limit (only the first partition of a request gets an
    oversized batch whole): asked again first with the broker given its time, then, empty still, the
    limit grows 4x a round; past 64 KB the partition is asked alone for one batch (``ONE_BATCH``),
    then, if even that comes back empty, 4x on up to MAX_PARTITION_BYTES."""
    asked: list[dict[TP, int]] = []
    waits: list[int | None] = []

    def fetch(
        positions: Mapping[TP, int],
        until: Mapping[TP, int] | None,
        limits: Mapping[TP, int],
        wait_ms: int | None = None,
    ) -> Mapping[TP, PartitionFetch]:
        asked.append(dict(limits))
        waits.append(wait_ms)
        return {tp: _answer(position, 2 if tp == A else 0, 100) for tp, position in positions.items()}

    rounds = FetchRounds(fetch)
    for _ in range(8):
        rounds.round({A: 0, B: 0})
    assert [limits[A] for limits in asked] == [POINT_READ_BYTES] * 8
    assert [limits[B] for limits in asked] == [
        16 << 10,
        16 << 10,
        64 << 10,
        ONE_BATCH,
        256 << 10,
        1 << 20,
        4 << 20,
        8 << 20,
    ]
    assert asked[-1][B] == MAX_PARTITION_BYTES
    assert waits == [None] + [PATIENT_WAIT_MS] * 7


def test_a_busy_brokers_empty_answers_are_asked_again_patiently_and_no_limit_grows() -> None:
    """Partitions a busy broker left empty are not taken for large batches: the next round gives it
    its time, every record is read, and no limit grows (a limit grown to ``ONE_BATCH`` would cost
    every later read a request a partition: 1,445 Fetch requests for one work item of 2,000
    group-partitions against the local broker, 3 when it was idle)."""
    ends = {TP("t", p): 6 for p in range(5)}
    broker = Script(ends, per_round=1, busy=True)
    seen, failed, rounds = _read_all(broker, ends)
    assert not failed and all(offsets == list(range(6)) for offsets in seen.values())
    assert rounds.limits == {} and all(set(limits.values()) == {POINT_READ_BYTES} for limits in broker.limits)
    assert broker.waits[:2] == [None, PATIENT_WAIT_MS]  # the second round asks again those the first left


def test_a_partition_read_one_batch_at_a_time_measures_its_batches() -> None:
    """A ``ONE_BATCH`` read costs a batch: the largest one read is what a point read of it is priced at."""
    sizes = iter([0, 0, 0, 180_000, 150_000])  # unserved at 16 KB twice and 64 KB, then one batch a round

    def fetch(
        positions: Mapping[TP, int],
        until: Mapping[TP, int] | None,
        limits: Mapping[TP, int],
        wait_ms: int | None = None,
    ) -> Mapping[TP, PartitionFetch]:
        size = next(sizes)
        answer = _answer(positions[A], 2 if size else 0, 100)
        return {A: replace(answer, size=size)}

    rounds = FetchRounds(fetch)
    for _ in range(5):
        rounds.round({A: 0})
    assert rounds.limits[A] == ONE_BATCH and rounds.batch_bytes == {A: 180_000}


def test_a_retriable_error_is_asked_again_and_named_when_it_does_not_pass() -> None:
    """A leader moving during a rolling restart must not end a read: the partition is asked again,
    and only an error that lasts the whole bound fails it, with the error named."""
    answers = iter(
        [{A: PartitionFetch(0, error="NotLeaderForPartitionError", retriable=True)}] * 2 + [{A: _answer(0, 2, 2)}]
    )
    seen, failed, _ = _read_all(lambda positions, until, limits, wait_ms: next(answers), {A: 2})
    assert failed == {} and seen[A] == [0, 1]
    stuck = FetchRounds(
        lambda positions, until, limits, wait_ms: {A: PartitionFetch(0, error="KafkaStorageError", retriable=True)}
    )
    outcomes = [stuck.round({A: 0})[A] for _ in range(MAX_UNSERVED_ROUNDS)]
    assert all(isinstance(o, Unserved) for o in outcomes[:-1])
    assert outcomes[-1] == Failed(f"no records returned at {A} offset 0, the last answer: KafkaStorageError, 10 rounds")


class Priced(Script):
    """A broker whose records each take ``per_offset`` bytes (in batches of ``batch`` bytes): an
    answer holds what its limit buys, 10,000 records a partition."""

    def __init__(self, per_offset: float, batch: int = 0) -> None:
        super().__init__({}, per_round=0)
        self.per_offset, self.batch = per_offset, batch

    def answers(
        self, positions: Mapping[TP, int], limits: Mapping[TP, int], wait_ms: int | None
    ) -> Mapping[TP, PartitionFetch]:
        out = {}
        for tp, position in positions.items():
            answer = _answer(position, max(1, int(max(1, limits[tp]) / self.per_offset)), 10_000)
            size = int(len(answer.records) * self.per_offset)
            out[tp] = replace(answer, size=size, bytes_per_offset=self.per_offset, largest_batch_bytes=self.batch)
        return out


def test_offsets_that_point_reads_would_cover_back_to_back_are_read_as_one_run() -> None:
    """Once an answer measured what an offset takes, a reader's run (``run_end``: wanted offsets
    within a point read's offsets of each other) is asked at the bytes it spans, at most RUN_BYTES;
    an offset far from the next is still a point read, and so is a partition not yet measured."""
    fetch = Priced(100.0)  # a point read of 16 KB covers 163 offsets
    rounds = FetchRounds(fetch)
    assert rounds.run_end(A, [(0, 1), (100, 101)]) is None  # not measured yet
    rounds.round({A: 0, B: 0})
    wanted = [0, 150, 300, 450, 5_000]  # 150 apart: one run up to 450; 5,000 is far
    assert rounds.run_end(A, ((o, o + 1) for o in wanted)) == 451
    assert rounds.run_end(A, [(600, 700), (800, 801), (1_000, 1_001)]) == 801  # 200 > 163 offsets: cut there
    rounds.round({A: 0, B: 0}, reach={A: 451, B: 1})
    assert fetch.limits[-1] == {A: 45_100, B: POINT_READ_BYTES}
    rounds.round({A: 0}, reach={A: 1_000_000})
    assert fetch.limits[-1] == {A: RUN_BYTES}


def test_a_run_asks_whole_multiples_of_the_largest_batch_seen() -> None:
    """Apache Kafka cuts the batch a limit ends in, and its first bytes are thrown away: a run over
    batches of 1,000 bytes asks 46,000 bytes for 45,100 (46 batches whole), and at most RUN_BYTES
    rounded down to whole batches."""
    fetch = Priced(100.0, batch=1_000)
    rounds = FetchRounds(fetch)
    rounds.round({A: 0})
    rounds.round({A: 0}, reach={A: 451})
    rounds.round({A: 0}, reach={A: 1_000_000})
    assert [limits[A] for limits in fetch.limits] == [POINT_READ_BYTES, 46_000, RUN_BYTES // 1_000 * 1_000]


def test_no_run_is_asked_over_batches_larger_than_64_kb() -> None:
    """Over 1 MB batches a run saves a request beside each megabyte, and the local broker, rounding a
    limit up to whole batches, would send one more: each read stays a point read."""
    fetch = Priced(100.0, batch=1 << 20)
    rounds = FetchRounds(fetch)
    rounds.round({A: 0})
    rounds.round({A: 0}, reach={A: 50_000})
    assert [limits[A] for limits in fetch.limits] == [POINT_READ_BYTES, POINT_READ_BYTES]


def test_runs_of_many_partitions_share_a_rounds_bytes() -> None:
    """Memory holds a round's answers: 2,000 partitions read as runs at once ask RUN_ROUND_BYTES in all
    (32 KB each here), never 2,000 MB; each still asks at least a point read."""
    fetch = Priced(1_000.0)
    rounds = FetchRounds(fetch)
    tps = [TP("t", p) for p in range(2_000)]
    rounds.round(dict.fromkeys(tps, 0))
    rounds.round(dict.fromkeys(tps, 0), reach=dict.fromkeys(tps, 1_000_000))
    assert set(fetch.limits[-1].values()) == {RUN_ROUND_BYTES // 2_000}
    rounds.round(dict.fromkeys(tps[:5], 0), reach=dict.fromkeys(tps[:5], 1_000_000))
    assert set(fetch.limits[-1].values()) == {RUN_BYTES}
    fetch = Priced(4_000.0)
    rounds = FetchRounds(fetch)
    many = [TP("u", p) for p in range(10_000)]
    rounds.round(dict.fromkeys(many, 0))
    rounds.round(dict.fromkeys(many, 0), reach=dict.fromkeys(many, 1_000_000))
    assert set(fetch.limits[-1].values()) == {POINT_READ_BYTES}


def test_a_run_is_never_asked_over_batches_read_one_at_a_time() -> None:
    """A partition read ``ONE_BATCH`` (batches over 64 KB) keeps it: a range limit below such a batch
    in a shared request comes back cut short, and would grow the partition's limit past one batch."""
    fetch = Priced(100.0)
    rounds = FetchRounds(fetch, limits={A: ONE_BATCH})
    rounds.round({A: 0})
    rounds.round({A: 0}, reach={A: 5_000})
    assert [limits[A] for limits in fetch.limits] == [ONE_BATCH, ONE_BATCH]


def test_a_probe_the_broker_left_unserved_is_asked_again_not_given_up() -> None:
    """The whole read's probes (``whole_read._probed``): a busy broker that left one empty is asked
    again, patiently, so the partition is priced (and read whole where cheaper), not searched a
    window at a time; a partition never served is left out for the search to report."""
    from offset_restore.translate.strategies.whole_read import _probed

    C = TP("t", 2)
    script = Script({A: 6, B: 6, C: 6}, per_round=1, never=frozenset({C}))
    answers = _probed(FetchRounds(script), {A: 0, B: 0, C: 0})
    assert set(answers) == {A, B}
    assert all(answer.records[0].offset == 0 for answer in answers.values())


class Batched(Script):
    """Apache Kafka over batches of ``records`` offsets of ``sizes(n)`` bytes each (batch ``n``): an
    answer is the batch holding the position and every batch after it that fits the limit, its bytes
    the limit (the batch the limit ends in is cut, and thrown away); a first batch larger than the
    limit is sent whole only to a request's first partition, the others get nothing."""

    def __init__(self, records: int, sizes: Callable[[int], int], end: int = 10_000) -> None:
        super().__init__({}, per_round=0)
        self.records, self.sizes, self.end = records, sizes, end
        self.sent = 0

    def answers(
        self, positions: Mapping[TP, int], limits: Mapping[TP, int], wait_ms: int | None
    ) -> Mapping[TP, PartitionFetch]:
        out = {}
        for i, (tp, position) in enumerate(positions.items()):
            n, whole, spent = position // self.records, [], 0
            while n * self.records < self.end and spent + self.sizes(n) <= limits[tp]:
                whole.append(self.sizes(n))
                spent, n = spent + self.sizes(n), n + 1
            if not whole and (i == 0 or limits[tp] == ONE_BATCH):
                whole, n = [self.sizes(n)], n + 1
            upto = min(self.end, n * self.records)
            size = sum(whole) if upto >= self.end or not whole else max(limits[tp], sum(whole))
            answer = _answer(position, max(0, upto - position), self.end) if whole else _answer(position, 0, self.end)
            self.sent += size if whole else 0
            per_offset = sum(whole) / (len(whole) * self.records) if whole else 0.0
            largest = max(whole, default=0)
            size = size if whole else 0
            out[tp] = replace(answer, size=size, bytes_per_offset=per_offset, largest_batch_bytes=largest)
        return out


def test_point_reads_over_small_batches_read_one_batch_not_16_kb() -> None:
    """lz4 batches of 6 KB: once an answer showed them, a point read asks ``ONE_BATCH`` (the batch
    holding the position, whole, nothing after it), not 16 KB that Apache Kafka fills to its last byte;
    a run of one batch too, a run of three asks three batches' bytes; a whole read (1 MiB) is not
    fitted."""
    fetch = Batched(100, lambda n: 6_000)
    rounds = FetchRounds(fetch)
    for position in (0, 2_000, 4_000, 6_000):
        assert isinstance(rounds.round({A: position, B: position})[A], Served)
    assert [limits[A] for limits in fetch.limits] == [POINT_READ_BYTES] + [ONE_BATCH] * 3
    assert fetch.sent == 2 * (POINT_READ_BYTES + 3 * 6_000)
    rounds.round({A: 8_000}, reach={A: 8_001})  # a run of one offset is a point read
    rounds.round({A: 8_000}, reach={A: 8_250})  # three batches: three batches' bytes
    assert [limits[A] for limits in fetch.limits[-2:]] == [ONE_BATCH, 18_000]
    whole = FetchRounds(Batched(100, lambda n: 6_000), partition_bytes=1 << 20)
    whole.round({A: 0})
    whole.round({A: 2_000})
    assert whole.fetch.limits[-1] == {A: 1 << 20}  # type: ignore[attr-defined]


def test_a_batch_larger_than_any_seen_comes_whole_and_batches_near_16_kb_are_read_shared() -> None:
    """Read a batch at a time, a batch larger than any seen before still comes whole (no limit to cut
    it) and nothing grows; once a partition showed a batch of ``SMALL_BATCH`` or more its point reads
    are shared 16 KB reads again (one batch and a little: not worth a request of its own)."""
    fetch = Batched(100, lambda n: 12_500 if n == 40 else 6_000)
    rounds = FetchRounds(fetch)
    rounds.round({A: 0, B: 0})
    outcome = rounds.round({A: 0, B: 4_000})[B]
    assert isinstance(outcome, Served) and outcome.answer.records[0].offset == 4_000
    assert [limits[B] for limits in fetch.limits] == [POINT_READ_BYTES, ONE_BATCH]
    assert B not in rounds.limits and rounds.largest_batch[B] == 12_500
    rounds.round({A: 0, B: 6_000})
    assert fetch.limits[-1] == {A: ONE_BATCH, B: POINT_READ_BYTES}


class Uncut(Priced):
    """``Priced``, its answers marked as a broker that ignores per-partition limits sends them
    (``PartitionFetch.uncut``: whole batches up to the limit) where ``uncut``."""

    def __init__(self, per_offset: float, uncut: bool) -> None:
        super().__init__(per_offset)
        self.uncut = uncut

    def answers(
        self, positions: Mapping[TP, int], limits: Mapping[TP, int], wait_ms: int | None
    ) -> Mapping[TP, PartitionFetch]:
        return {tp: replace(a, uncut=self.uncut) for tp, a in super().answers(positions, limits, wait_ms).items()}


@pytest.mark.parametrize("uncut", [True, False])
def test_a_read_stops_short_of_records_held_only_where_the_broker_sends_batches_uncut(uncut: bool) -> None:
    """``stops`` (a whole read whose tail the sample holds): over uncut answers the limit is the bytes
    the offsets before the stop took, less the margin, so the answer ends before it; over a broker that
    cuts the batch a limit ends in (Apache Kafka) the limit is left as it was; a partition not measured
    yet is asked as before; a stop at or behind the position changes nothing."""
    fetch = Uncut(100.0, uncut)
    rounds = FetchRounds(fetch, partition_bytes=1024 * 1024)
    rounds.round({A: 0, B: 0}, stops={A: 5_000})  # not measured yet: asked its limit
    assert fetch.limits[-1] == {A: 1024 * 1024, B: 1024 * 1024}
    served = rounds.round({A: 0, B: 0}, stops={A: 5_000, B: 0})
    if uncut:
        assert fetch.limits[-1] == {A: int(5_000 * 100 * (1 - STOP_MARGIN)), B: 1024 * 1024}
        answer = served[A]
        assert isinstance(answer, Served) and answer.answer.read_to <= 5_000
    else:
        assert fetch.limits[-1] == {A: 1024 * 1024, B: 1024 * 1024}


class WholeBatches(Script):
    """The local broker (Tansu): batches ``bounds`` (their first offsets, ascending, the last the log
    end) of ``sizes[n]`` bytes; an answer is the batch holding the position and whole batches after
    it until the limit is reached, none cut (``uncut``); ``ONE_BATCH`` brings the one batch."""

    def __init__(self, bounds: list[int], sizes: list[int]) -> None:
        super().__init__({}, per_round=0)
        self.bounds, self.sizes = bounds, sizes
        self.sent = 0

    def answers(
        self, positions: Mapping[TP, int], limits: Mapping[TP, int], wait_ms: int | None
    ) -> Mapping[TP, PartitionFetch]:
        out, end = {}, self.bounds[-1]
        for tp, position in positions.items():
            n = max(i for i, first in enumerate(self.bounds[:-1]) if first <= position)
            first, spent, taken = n, 0, list[int]()
            while n < len(self.sizes) and (not taken or spent < max(1, limits[tp])):
                taken.append(self.sizes[n])
                spent, n = spent + self.sizes[n], n + 1
            upto = self.bounds[n]
            self.sent += spent
            out[tp] = PartitionFetch(
                position,
                records=_records(position, upto - position),
                high_watermark=end,
                next_offset=upto,
                size=spent,
                first_batch_bytes=taken[0],
                bytes_per_offset=spent / (upto - self.bounds[first]),
                largest_batch_bytes=max(taken),
                uncut=True,
            )
        return out


def test_over_batches_sent_uncut_a_point_read_asks_one_batch_not_two() -> None:
    """Batches of 14 KB from a broker that adds whole batches until a limit is reached: a point read
    of 16 KB brings two (28 KB for one wanted, every search window of a transactional restore read
    twice over on the local broker); once an answer showed it, each point read asks ``ONE_BATCH``.
    Batches of 16 KB or more are left at 16 KB (one batch either way)."""
    fetch = WholeBatches(list(range(0, 10_001, 100)), [14_000] * 100)
    rounds = FetchRounds(fetch)
    rounds.round({A: 0})
    for position in (2_000, 4_000, 6_000):
        assert isinstance(rounds.round({A: position})[A], Served)
    assert [limits[A] for limits in fetch.limits] == [POINT_READ_BYTES] + [ONE_BATCH] * 3
    assert fetch.sent == 2 * 14_000 + 3 * 14_000
    large = WholeBatches(list(range(0, 10_001, 100)), [20_000] * 100)
    rounds = FetchRounds(large)
    rounds.round({A: 0})
    rounds.round({A: 2_000})
    assert [limits[A] for limits in large.limits] == [POINT_READ_BYTES, POINT_READ_BYTES]


def test_a_read_up_to_held_records_is_priced_by_full_batches_and_ends_before_them() -> None:
    """A transaction ends with one record flushed alone: a batch of 201 bytes for one offset (its
    61-byte header on one record). Read alone, it does not price the partition (priced by it, the
    read after asked 1.4x the bytes before the stop and brought held batches again); a read a batch
    short of its stop asks ``ONE_BATCH`` (a margin of 3% is less than a small batch's header), and
    no answer runs past the stop."""
    bounds = [*range(0, 10_001, 100), 10_001, *range(10_101, 20_002, 100)]
    fetch = WholeBatches(bounds, [14_000] * 100 + [201] + [14_000] * 100)
    rounds = FetchRounds(fetch, partition_bytes=1024 * 1024)

    def read(position: int, stop: int) -> tuple[int, int]:
        """The limit asked and where the answer ended."""
        outcome = rounds.round({A: position}, stops={A: stop})[A]
        assert isinstance(outcome, Served), outcome
        return fetch.limits[-1][A], outcome.answer.read_to

    assert read(0, 10_000) == (1024 * 1024, 7_500)  # not measured yet: its limit (75 batches)
    assert rounds.offset_bytes[A] == 140.0
    assert read(7_500, 10_000)[1] == 10_000
    assert read(10_000, 10_001) == (ONE_BATCH, 10_001)  # the lone batch, a batch short of the stop
    assert rounds.offset_bytes[A] == 140.0, rounds.offset_bytes
    assert read(10_001, 14_001) == (int(140.0 * 4_000 * (1 - STOP_MARGIN)), 13_901)  # the margin: a batch short
    assert read(13_901, 14_001) == (ONE_BATCH, 14_001)
    assert fetch.sent == 14_000 * 140 + 201


@pytest.mark.parametrize("broker", ["apache", "uncut", "unlimited"])
@pytest.mark.parametrize("record_bytes", [200, 100], ids=["20 KB batches", "10 KB batches"])
def test_every_record_is_read_once_whatever_the_broker_does_with_limits(broker: Broker, record_bytes: int) -> None:
    """Two partitions of 10 batches over the shared fake log's brokers. Apache Kafka sends a batch larger than
    the limit (20 KB over a 16 KB point read) only to a request's first partition: the other is asked again
    first, and the two take turns, a round each batch. Batches under ``SMALL_BATCH`` are read one at a time
    (``ONE_BATCH``) once an answer showed them. The local broker sends whole batches up to the limit; one that
    ignores limits sends the rest at once. Every record is read, in order, and no byte twice."""
    records = {tp: [FetchedRecord(o, 0, None, b"v", ()) for o in range(1_000)] for tp in (A, B)}
    log = FakeLog(records, batch=100, record_bytes=record_bytes, broker=broker)
    rounds = FetchRounds(log)
    seen: dict[TP, list[int]] = {A: [], B: []}

    def take(tp: TP, outcome: Served | AtEnd) -> int | None:
        if isinstance(outcome, AtEnd):
            return None
        seen[tp] += [r.offset for r in outcome.answer.records]
        return outcome.answer.read_to

    assert read_forward(rounds, {A: 0, B: 0}, take) == {}
    assert seen == {A: list(range(1_000)), B: list(range(1_000))}
    assert log.sent_bytes == 2 * 1_000 * record_bytes
    asked = {limit for limits in log.limits_seen for limit in limits.values()}
    if broker == "unlimited":
        assert rounds.rounds == 1
    elif broker == "apache" and record_bytes == 200:
        assert rounds.rounds == 20 and asked == {POINT_READ_BYTES}
    elif record_bytes == 100:
        assert ONE_BATCH in asked
