"""Each record's offset header parsed once, by the watcher every read passes through, and given to the strategy
that reads the same answer next (translate/read_headers.py's ``sources``)."""

from __future__ import annotations

from dataclasses import replace

from offset_restore.kafka.model import TP, FetchedRecord, PartitionFetch
from offset_restore.translate.read_headers import ReadHeaders

TOPIC = TP("orders", 0)
HEADER = "x-source-offset"


def _answer(*headers: list[tuple[str, bytes | None]]) -> PartitionFetch:
    records = [FetchedRecord(10 + i, 0, b"k", b"v", tuple(h)) for i, h in enumerate(headers)]
    return PartitionFetch(10, records, next_offset=10 + len(records))


def _watched(reads: ReadHeaders, answer: PartitionFetch) -> None:
    reads.latest({TOPIC: (answer, reads.add(TOPIC, answer.records))})


def test_the_answer_just_read_is_given_its_parsed_headers() -> None:
    reads = ReadHeaders(HEADER)
    answer = _answer([(HEADER, b"7")], [], [("other", b"1"), (HEADER, (8).to_bytes(8, "big"))], [(HEADER, None)])
    _watched(reads, answer)
    assert reads.sources(TOPIC, answer) == [7, None, 8, None]


def test_another_answer_is_not_given_them_even_with_the_same_records() -> None:
    """An answer made from the one read (a search widening it with the batch before) holds other records; one
    read again holds the same records but is not the answer they were parsed from."""
    reads = ReadHeaders(HEADER)
    answer = _answer([(HEADER, b"7")], [(HEADER, b"8")])
    _watched(reads, answer)
    assert reads.sources(TOPIC, replace(answer, records=answer.records[1:])) is None
    assert reads.sources(TOPIC, replace(answer)) is None
    assert reads.sources(TP("orders", 1), answer) is None


def test_a_header_that_holds_no_offset_gives_nothing_so_the_strategy_refuses_it_by_name() -> None:
    reads = ReadHeaders(HEADER)
    answer = _answer([(HEADER, b"7")], [(HEADER, b"      12")])
    _watched(reads, answer)
    assert reads.sources(TOPIC, answer) is None
    assert reads.past(TOPIC, 0, 100, 10) == [(10, 7)]  # the proof still has the record it could read


def test_the_next_round_lets_the_answers_of_the_last_go() -> None:
    reads = ReadHeaders(HEADER)
    first, second = _answer([(HEADER, b"7")]), _answer([(HEADER, b"9")])
    _watched(reads, first)
    reads.latest({TP("orders", 1): (second, reads.add(TP("orders", 1), second.records))})
    assert reads.sources(TOPIC, first) is None
