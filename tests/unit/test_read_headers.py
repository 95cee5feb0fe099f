"""Each record's offset header parsed once, by the watcher every read passes through, and given to the strategy
that reads the same answer next (translate/read_headers.py's ``sources``)."""

from __future__ import annotations

import random
from array import array
from collections.abc import Sequence
from dataclasses import replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from offset_restore.kafka.model import TP, FetchedRecord, PartitionFetch
from offset_restore.snapshot.headers import parse_offset_header
from offset_restore.translate.read_headers import ReadHeaders, ReadPartition, _in_order

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
    assert _part(reads).past(0, 100, 10) == [(10, 7)]  # the proof still has the record it could read


def test_the_next_round_lets_the_answers_of_the_last_go() -> None:
    reads = ReadHeaders(HEADER)
    first, second = _answer([(HEADER, b"7")]), _answer([(HEADER, b"9")])
    _watched(reads, first)
    reads.latest({TP("orders", 1): (second, reads.add(TP("orders", 1), second.records))})
    assert reads.sources(TOPIC, first) is None


# What the proof asks of the records read (translate/proof.py's order and read-twice rules).

NONE, MARKER = -1, -2
"""A record without the header, and an offset that holds no record (a transaction marker), in the lists below."""


def _part(reads: ReadHeaders) -> ReadPartition:
    """What ``reads`` read of ``TOPIC``, indexed, as the proof asks it."""
    part = reads.partition(TOPIC)
    assert part is not None
    return part


def _read(values: list[int], start: int = 0, spans: list[tuple[int, int]] | None = None) -> ReadHeaders:
    """Headers read at offsets ``start``, ``start + 1``, ...: a number, ``NONE`` or ``MARKER``."""
    reads = ReadHeaders(HEADER)
    records = [
        FetchedRecord(start + i, 0, b"k", b"v%d" % i, () if v == NONE else ((HEADER, b"%d" % v),))
        for i, v in enumerate(values)
        if v != MARKER
    ]
    markers = [start + i for i, v in enumerate(values) if v == MARKER]
    for span in spans or [(start, start + len(values))]:
        reads.add(
            TOPIC,
            [r for r in records if span[0] <= r.offset < span[1]],
            [m for m in markers if span[0] <= m < span[1]],
            span,
        )
    return reads


def _truth(values: list[int], at: int, c: int, keyed: bool) -> tuple[int, int] | None:
    """``twice``'s (seen, possible), record by record, as the rule is worded: below c after ``at``; and those,
    the records without the header before the last with one, and each lone record at or past c between two
    below it (the one before may lie before ``at``; none before counts as below)."""
    after = values[at:]
    below = [i for i, v in enumerate(after) if 0 <= v < c]
    if not below:
        return None
    last_keyed = max(i for i, v in enumerate(after) if v >= 0)
    unkeyed = sum(1 for v in after[: last_keyed + 1] if v == NONE) if keyed else 0
    lone = 0
    for i, v in enumerate(after):
        earlier = [u for u in values[: at + i] if u >= 0]
        later = [u for u in after[i + 1 :] if u >= 0]
        if v >= c and (not earlier or earlier[-1] < c) and later and later[0] < c:
            lone += 1
    return len(below), len(below) + unkeyed + lone


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(st.integers(0, 40), st.just(NONE), st.just(MARKER)), min_size=1, max_size=30),
    st.integers(0, 31),
    st.integers(0, 41),
    st.booleans(),
)
def test_what_was_read_twice_is_counted_alike_in_order_or_not(
    values: list[int], at: int, c: int, ordered: bool
) -> None:
    """The fast count of a partition whose headers only grow (at C speed) and the record-by-record count agree
    with the rule; a partition whose headers fall back is counted record by record."""
    if ordered:
        grown = [v + i for i, v in enumerate(sorted(v for v in values if v >= 0))]  # strictly growing
        values = [grown.pop(0) if v >= 0 else v for v in values]
    reads = _read(values)
    twice = _part(reads).twice(at, c)
    truth = _truth(values, at, c, keyed=any(v >= 0 for v in values))
    assert (None if twice is None else (twice.seen, twice.possible)) == truth
    if twice is not None:
        assert 0 <= twice.first[1] < c and twice.first[0] >= at
        assert twice.below[0] == twice.first and len(twice.below) == min(twice.seen, 16)
        assert all(0 <= v < c for _, v in twice.below) and all(v >= c for _, v in twice.lone)


def test_the_first_fall_is_a_header_not_above_every_one_before_it() -> None:
    assert _read([0, 1, NONE, MARKER, 2, 5]).fall(TOPIC) is None
    fall = _read([0, 1, NONE, 7, MARKER, 3, 2]).fall(TOPIC)
    assert fall is not None and (fall.offset, fall.source, fall.above) == (5, 3, 7)
    repeated = _read([4, 5, 5]).fall(TOPIC)
    assert repeated is not None and repeated.offset == 2


def test_covered_is_what_the_answers_spanned_not_only_their_records() -> None:
    """A compacted gap inside an answer's span was read (nothing there); a gap between answers was not."""
    reads = ReadHeaders(HEADER)
    reads.add(TOPIC, [FetchedRecord(0, 0, b"k", b"v", ((HEADER, b"0"),))], [], (0, 10))
    reads.add(TOPIC, [FetchedRecord(12, 0, b"k", b"v", ((HEADER, b"12"),))], [], (12, 20))
    assert reads.covered(TOPIC, 0, 10) and reads.covered(TOPIC, 3, 8) and reads.covered(TOPIC, 12, 20)
    assert not reads.covered(TOPIC, 0, 11) and not reads.covered(TOPIC, 9, 13)
    reads.add(TOPIC, [FetchedRecord(10, 0, b"k", b"v", ((HEADER, b"10"),)), FetchedRecord(11, 0, b"k", b"v", ())])
    assert reads.covered(TOPIC, 0, 20)
    assert not reads.covered(TP("orders", 1), 0, 1) and reads.covered(TP("orders", 1), 5, 5)


_DIGITS = st.text(alphabet="0123456789", min_size=0, max_size=21).map(str.encode)


@given(st.one_of(_DIGITS, st.binary(max_size=21), st.integers(0, 2**64 - 1).map(lambda n: n.to_bytes(8, "big"))))
@settings(max_examples=400, deadline=None)
def test_every_header_value_is_read_as_the_one_parser_reads_it(value: bytes) -> None:
    """The watcher reads decimal text itself (a million records a dense plan): it must agree with
    ``parse_offset_header`` on every value, and refuse what that refuses."""
    try:
        expected: int | None = parse_offset_header(value)
    except ValueError:
        expected = None
    got = ReadHeaders(HEADER).add(TOPIC, _answer([(HEADER, value)]).records)
    assert got == (None if expected is None else [expected])


_HEADER_LISTS = st.lists(
    st.lists(
        st.tuples(
            st.sampled_from([HEADER, "other"]),
            st.one_of(
                st.none(),
                _DIGITS,
                st.sampled_from([b"12", b"007", b"1" * 19, b"9" * 19, b" 3", b"+4", b"5_0", b"12345678"]),
                st.integers(0, 2**64 - 1).map(lambda n: n.to_bytes(8, "big")),
                st.integers(0, 2**20).map(lambda n: n.to_bytes(8, "big")),
            ),
        ),
        max_size=3,
    ),
    min_size=1,
    max_size=8,
)


_BINARY = st.one_of(
    st.integers(0, 2**64 - 1), st.integers(0, 2**20), st.sampled_from([2**56 - 1, 2**56, 0x3132333435363738])
).map(lambda n: n.to_bytes(8, "big"))
"""8 bytes, big-endian: offsets, values past the largest offset read so, and the digits "12345678" (text)."""


@given(_HEADER_LISTS, st.sampled_from(["mixed", "decimal", "binary"]), st.lists(_BINARY, min_size=8, max_size=8))
@example([[("other", b"1"), (HEADER, b"5")], [(HEADER, b"9"), (HEADER, b"4")]], "mixed", [b"\0" * 8] * 8)
@example([[(HEADER, b"5")], [("other", b"7")]], "mixed", [b"\0" * 8] * 8)
@example([[(HEADER, b"1" * 18)], [(HEADER, b"9" * 19)]], "mixed", [b"\0" * 8] * 8)
@settings(max_examples=600, deadline=None)
def test_an_answer_is_read_as_each_record_alone_would_be(
    headers: list[list[tuple[str, bytes | None]]], shape: str, binary: list[bytes]
) -> None:
    """The watcher reads a whole answer at once when every record carries the header first at one place, in
    one encoding (the common case, a million records a dense plan): what it gives and keeps equals the rule
    record by record, the first header of the name read by ``parse_offset_header``, and the answer refused if
    one holds no offset."""
    if shape != "mixed":  # the shapes the answer-at-once path takes: the header at one place in every record
        before = [("other", b"x")] * (len(headers[0]) > 1)
        values = binary if shape == "binary" else [b"%d" % (7 * i) for i in range(8)]
        headers = [[*before, (HEADER, values[i])] for i in range(len(headers))]
    expected: list[int | None] | None = []
    for record in headers:
        value = next((v for k, v in record if k == HEADER), None)
        try:
            number = parse_offset_header(value)
        except ValueError:
            expected = None
            break
        assert expected is not None
        expected.append(number)
    reads = ReadHeaders(HEADER)
    got = reads.add(TOPIC, _answer(*headers).records)
    assert got == expected
    numbered = [(10 + i, n) for i, n in enumerate(expected or []) if n is not None]
    if expected is not None:
        assert _part(reads).past(0, 100, 100) == numbered and reads.keyed(TOPIC) == bool(numbered)


@given(
    st.lists(st.one_of(st.integers(0, 40), st.just(NONE), st.just(MARKER)), min_size=1, max_size=30),
    st.integers(0, 31),
    st.lists(st.tuples(st.integers(0, 30), st.integers(1, 8)), max_size=3),
)
@settings(max_examples=300, deadline=None)
def test_the_headers_around_a_resume_point_are_the_ends_read_there(
    values: list[int], resume: int, cuts: list[tuple[int, int]]
) -> None:
    """The proof's quick look at both ends names what ``ends`` finds when both neighbours of the resume point
    were read and carry the header, and nothing otherwise (gaps where the reads did not reach)."""
    spans = [(0, len(values))]
    for first, length in cuts:  # read in pieces, some offsets not read
        spans = [(a, min(b, first)) for a, b in spans if a < first] + [(first + length, len(values))]
    reads = _read(values, spans=[s for s in spans if s[0] < s[1]] or [(0, 0)])
    around = _part(reads).headers_around(resume)
    ends = reads.ends(TOPIC, resume, 0)
    both = (
        ends.at is not None
        and ends.before is not None
        and (ends.at.offset, ends.before.offset) == (resume, resume - 1)
        and ends.at.source is not None
        and ends.before.source is not None
    )
    assert around == ((ends.at.source, ends.before.source) if both else None)  # type: ignore[union-attr]


@pytest.mark.parametrize("seed", range(60))
def test_entries_added_out_of_order_are_indexed_as_sorting_each_offset_once_would(seed: int) -> None:
    """Answers in any order (the end's sample, the search's windows, then a whole read over them), overlapping
    or not, an offset's value differing between reads: the index equals the plain sort, the last entry of an
    offset kept, whether one run holds most entries or none does."""
    rng = random.Random(seed)
    runs: list[Sequence[int]] = [range(s, s + rng.randrange(1, 40)) for s in (rng.randrange(300) for _ in range(6))]
    if seed % 3:  # a whole read among them, holding most entries (with a gap where records were compacted)
        gap = rng.randrange(300)
        runs.insert(rng.randrange(len(runs) + 1), [o for o in range(rng.randrange(5), 300) if not gap <= o < gap + 3])
    offsets, values = array("q"), array("q")
    for run in runs:
        offsets.extend(run)
        values.extend(rng.choice([o + 1000, o + 2000, -1, -2]) for o in run)
    assert _in_order(offsets, values) == _sorted_once(offsets, values)


@pytest.mark.parametrize("seed", range(30))
def test_runs_that_overlap_nowhere_or_touch_at_one_offset_are_indexed_as_sorting_would(seed: int) -> None:
    """A partition's answers in any order that share no offset (a sample of the end, then the start on; windows
    apart): in offset order. Two runs sharing just one offset, its value differing, keep the later one's."""
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, 299), rng.randrange(1, 8)))
    runs = [range(a, b) for a, b in zip([0, *cuts], [*cuts, 300], strict=True)]
    rng.shuffle(runs)
    if seed % 2:  # the highest run read last, then its last offset read again: two runs touch at one offset
        top = max(runs, key=lambda run: run[-1])
        runs.remove(top)
        runs += [top, range(top[-1], top[-1] + 1)]
    offsets, values = array("q"), array("q")
    for run in runs:
        offsets.extend(o for o in run if o % 7)  # gaps inside a run (compacted away) keep it in order
        values.extend(rng.choice([o + 1000, o + 2000, -1, -2]) for o in run if o % 7)
    assert _in_order(offsets, values) == _sorted_once(offsets, values)


def _sorted_once(offsets: array[int], values: array[int]) -> tuple[array[int], array[int]]:
    """The plain sort: each offset once, with the value added last for it."""
    pairs = dict(zip(offsets, values, strict=True))
    ordered = array("q", sorted(pairs))
    return ordered, array("q", map(pairs.__getitem__, ordered))
