"""What two batch headers of an aborted transaction prove (``translate/aborted_spans.py``): pure logic,
on the headers a broker's answers would carry."""

from __future__ import annotations

from offset_restore.kafka.model import AbortedBatch
from offset_restore.translate.aborted_spans import outside, proven_spans, unread_starts


def batch(
    base: int, count: int, sequence: int, *, producer: int = 7, epoch: int = 0, start: int = 1_000
) -> AbortedBatch:
    return AbortedBatch(base, base + count, producer, epoch, sequence, start)


def test_the_first_and_a_later_batch_whose_sequences_count_every_offset_prove_the_span_between() -> None:
    first, later = batch(1_000, 100, 5_000), batch(1_400, 100, 5_400)
    assert proven_spans([later, first]) == [(1_000, 1_500)]
    assert unread_starts([later, first]) == []


def test_without_the_first_batch_nothing_is_proven_and_its_offset_is_the_next_read() -> None:
    later = batch(1_400, 100, 5_400)
    assert proven_spans([later]) == []
    assert unread_starts([later]) == [1_000]


def test_offsets_outnumbering_the_sequences_between_prove_only_the_first_batch() -> None:
    """A marker or another producer's records between the two: 401 offsets, 400 sequences."""
    first, later = batch(1_000, 100, 5_000), batch(1_401, 100, 5_400)
    assert proven_spans([first, later]) == [(1_000, 1_100)]


def test_another_producer_epoch_or_a_sequence_that_went_back_proves_nothing_past_the_first_batch() -> None:
    first = batch(1_000, 100, 5_000)
    others = [
        batch(1_400, 100, 5_400, producer=8),  # another producer, with sequences that happen to fit
        batch(1_400, 100, 5_400, epoch=1),  # the producer fenced and restarted: its numbering begins again
        batch(1_400, 100, 4_600),  # a sequence below the first's (wrapped, or reset)
    ]
    for other in others:
        assert proven_spans([first, other]) == [(1_000, 1_100)], other


def test_a_producer_without_sequences_proves_nothing() -> None:
    first, later = batch(1_000, 100, -1), batch(1_100, 100, 99)
    assert proven_spans([first, later]) == []


def test_two_aborted_transactions_of_one_producer_are_proven_apart() -> None:
    one = [batch(1_000, 100, 5_000), batch(1_200, 100, 5_200)]
    two = [batch(3_000, 100, 6_900, start=3_000), batch(3_300, 50, 7_200, start=3_000)]
    assert proven_spans(one + two) == [(1_000, 1_300), (3_000, 3_350)]


def test_outside_leaves_what_was_read_around_the_aborted_spans() -> None:
    ranges = [(0, 100), (200, 1_000), (1_500, 1_600)]
    spans = [(50, 60), (150, 250), (300, 1_200)]
    assert outside(ranges, spans) == [(0, 50), (60, 100), (250, 300), (1_500, 1_600)]
    assert outside(ranges, []) == ranges
