"""The chain of answers a whole read takes instead of reading them again (reading/held.py)."""

from __future__ import annotations

from collections.abc import Mapping

from offset_restore.kafka.model import TP, AbortedBatch, FetchedRecord, PartitionFetch
from offset_restore.reading.held import HeldAnswers, HeldChain, after, replaying


def _answer(start: int, end: int, *, skip: set[int] | frozenset[int] = frozenset(), size: int = 100) -> PartitionFetch:
    """Records ``start..end-1`` but those in ``skip`` (aborted or markers), covering to ``end``."""
    records = [FetchedRecord(o, o, b"k", b"v", ()) for o in range(start, end) if o not in skip]
    return PartitionFetch(start, records, next_offset=end, size=size, high_watermark=1_000)


def _offsets(answers: list[PartitionFetch]) -> list[int]:
    return [r.offset for a in answers for r in a.records]


def test_after_takes_an_answer_from_where_asked_and_replays_it_free() -> None:
    answer = PartitionFetch(
        10,
        [FetchedRecord(o, o, b"k", b"v", ()) for o in (10, 11, 14, 15)],
        next_offset=16,
        size=500,
        aborted=(AbortedBatch(12, 14, 7, 0, 0, 12),),
        markers=(12,),
    )
    tail = after(answer, 13)
    assert [r.offset for r in tail.records] == [14, 15] and tail.fetch_offset == 13 and tail.read_to == 16
    assert tail.size == 0 and tail.aborted == answer.aborted and tail.markers == ()
    assert after(answer, 5).records == answer.records and after(answer, 5).size == 0


def test_after_keeps_what_lies_at_the_offset_it_starts_from() -> None:
    """Each boundary of the slice, at the offset itself: the record there, the marker there, an aborted batch
    ending just past it; and nothing of what ends before it."""
    answer = PartitionFetch(
        10,
        [FetchedRecord(o, o, b"k", b"v", ()) for o in (10, 13, 14)],
        next_offset=15,
        size=500,
        aborted=(AbortedBatch(11, 12, 7, 0, 0, 11),),
        markers=(12,),
    )
    assert [r.offset for r in after(answer, 13).records] == [13, 14]
    assert after(answer, 12).markers == (12,) and after(answer, 13).markers == ()
    assert after(answer, 11).aborted == answer.aborted and after(answer, 12).aborted == ()
    assert after(answer, 15).records == [] and after(answer, 15).read_to == 15


def test_a_chain_carries_the_log_on_without_a_gap_or_a_record_twice() -> None:
    """Overlapping windows (a search reads near what it read), one inside another, one before the
    start, a failed one: taken in offset order, each from where the one before ended; a gap stops the
    take and names where the next held answer begins."""
    held = [
        _answer(500, 600),  # the sample's tail
        _answer(100, 130),
        _answer(120, 160, skip={150}),  # overlaps the one before; 150 an aborted record
        _answer(125, 140),  # inside those
        _answer(0, 40),  # before the start: nothing of it is taken
        PartitionFetch(300, error="NotLeaderOrFollowerError"),
    ]
    chain = HeldChain(60, held)
    assert chain.stop == 100
    assert chain.take(90) == ([], 90)  # nothing held begins at or before 90
    taken, position = chain.take(100)
    assert _offsets(taken) == [o for o in range(100, 160) if o != 150] and position == 160
    assert all(a.size == 0 for a in taken) and chain.stop == 500
    taken, position = chain.take(510)  # a read that overshot the stop: the rest of the tail, from there
    assert _offsets(taken) == list(range(510, 600)) and position == 600 and chain.stop is None
    assert chain.take(600) == ([], 600)


def test_an_answer_that_starts_before_the_chain_and_ends_inside_it_is_taken_from_the_start() -> None:
    chain = HeldChain(50, [_answer(40, 70), _answer(70, 80)])
    assert chain.stop == 50
    taken, position = chain.take(50)
    assert _offsets(taken) == list(range(50, 80)) and position == 80 and chain.stop is None


def test_a_search_asking_inside_a_held_answer_is_answered_from_it_and_the_rest_from_the_broker() -> None:
    """``replaying``: a position inside the sample (its last records) comes from it, nothing counted,
    the records before the position there as the batch it falls in would bring them (``earlier``);
    one outside it, or of another partition, is asked of the broker, with the round's other
    arguments; a round wholly inside is not sent at all."""
    a, b = TP("t", 0), TP("t", 1)
    asked: list[tuple[dict[TP, int], object, object, object]] = []

    def fetch(
        positions: Mapping[TP, int], until: Mapping[TP, int] | None, limits: Mapping[TP, int], wait_ms: int | None
    ) -> dict[TP, PartitionFetch]:
        asked.append((dict(positions), until, dict(limits), wait_ms))
        return {tp: _answer(at, at + 10) for tp, at in positions.items()}

    replaying_fetch = replaying(fetch, {a: [_answer(900, 950), _answer(950, 1_000, skip={960})]})
    answers = replaying_fetch({a: 955, b: 955}, {a: 956}, {a: 16_384, b: 16_384}, 500)
    assert asked == [({b: 955}, {a: 956}, {a: 16_384, b: 16_384}, 500)]
    held = answers[a]
    assert held.size == 0 and held.fetch_offset == 955
    assert _offsets([held]) == [o for o in range(955, 1_000) if o != 960]
    assert held.earlier is not None and held.earlier_from == 950
    assert [r.offset for r in held.earlier(952)] == [952, 953, 954]
    assert answers[b].size == 100 and answers[b].fetch_offset == 955
    assert replaying_fetch({a: 900}, None, {a: 1}, None)[a].records == _answer(900, 950).records
    assert len(asked) == 1  # answered from what is held: nothing sent
    replaying_fetch({a: 1_000}, None, {a: 1}, None)  # the first offset past what is held: asked
    assert asked[-1][0] == {a: 1_000}


def test_one_budget_holds_every_kind_of_answer_and_a_partition_whole_or_not_at_all() -> None:
    """The sample, the search's windows and a scan's share one budget: what one holds the others cannot;
    a partition's answers are held all together or refused together; what is taken is freed."""
    a, b = TP("t", 0), TP("t", 1)
    held = HeldAnswers(budget=100)
    assert held.keep("sample", a, [_answer(0, 30), _answer(30, 60)]) and held.records == 60
    assert not held.keep("search", b, [_answer(0, 30), _answer(30, 50)])  # 110 > 100: neither kept
    assert held.records == 60 and held.of("search") == {}
    assert held.keep("scan", b, [_answer(0, 40)]) and held.records == 100
    assert not held.keep("search", a, [_answer(60, 61)])  # one record past the budget
    assert _offsets(held.take("sample", a)) == list(range(60)) and held.records == 40
    assert held.take("sample", a) == [] and held.records == 40  # taken once
    assert held.keep("search", a, [_answer(60, 120)]) and held.records == 100


def test_holding_answers_from_the_offset_asked_up_to_the_last_it_covers_in_the_order_of_purposes() -> None:
    """A scan's start inside a held window: from that offset on (the record at it first), up to where the
    window stopped; the window's last covered offset still answers, the one after it does not; the first
    purpose named answers first."""
    a = TP("t", 0)
    held = HeldAnswers()
    held.keep("scan", a, [_answer(100, 150, skip={149})])  # 149 aborted: covered, no record
    held.keep("unkeyed", a, [_answer(120, 130, size=7)])
    first = held.holding(("unkeyed", "scan"), a, 125)
    assert first is not None and _offsets([first]) == list(range(125, 130)) and first.read_to == 130
    assert first.size == 0 and first.fetch_offset == 125
    at = held.holding(("scan",), a, 100)
    assert at is not None and _offsets([at]) == list(range(100, 149)) and at.read_to == 150
    end = held.holding(("scan",), a, 149)
    assert end is not None and end.records == [] and end.read_to == 150
    assert held.holding(("scan",), a, 150) is None and held.holding(("scan",), a, 99) is None
    assert held.holding(("scan",), TP("t", 1), 120) is None


def test_a_search_window_replayed_from_a_held_sample_is_held_once() -> None:
    """The header search keeps every window it read for a whole read of the partition; a window answered
    from the held sample (``replaying``: no bytes of its own) stays held as the sample, not twice, so the
    budget counts its records once. A window the broker sent is kept."""
    from offset_restore.translate.header_reads import HeaderReads

    tp = TP("t", 0)
    held = HeldAnswers()
    sample = _answer(900, 1_000, size=5_000)
    assert held.keep("sample", tp, [sample])
    reads = HeaderReads(lambda _tp, _record: None, "x-source-offset", {}, [], held)
    fetch = replaying(lambda *_: {}, held.of("sample"))
    replayed = fetch({tp: 950}, None, {tp: 16_384}, None)[tp]
    reads.observe(tp, 950, replayed, [None] * len(replayed.records))
    assert held.records == 100 and held.of("search") == {}
    window = _answer(100, 130, size=3_000)
    reads.observe(tp, 100, window, [None] * 30)
    assert held.records == 130 and reads.kept_windows(tp) == [window]
