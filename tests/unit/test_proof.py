"""The proof every answer passes (translate/proof.py), on answers no strategy checked: an answer at the
target's end is held unless the target's last records are proven processed, and unless the source's
records the group had not processed are accounted for."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from offset_restore.kafka.model import TP, FetchedRecord, LogBounds
from offset_restore.snapshot.fingerprint import fingerprint
from offset_restore.translate.positions import Decision, Evidence, Position, pack_evidence
from offset_restore.translate.proof import Seen, TargetTail, prove
from offset_restore.translate.read_headers import Ends, Met, ReadHeaders

HEADER = "x-source-offset"
SRC, TGT = TP("orders", 0), TP("orders", 0)


def record(
    offset: int, *, source: int | None = None, timestamp: int = 1_000, value: bytes | None = None
) -> FetchedRecord:
    headers = () if source is None else ((HEADER, source.to_bytes(8, "big")),)
    return FetchedRecord(offset, timestamp, b"k", value or f"v{offset}".encode(), headers)


def evidence(offset: int, value: bytes, timestamp: int) -> Evidence:
    return Evidence(offset, timestamp, fingerprint(b"k", value, (), exclude_header=HEADER))


def position(
    committed: int,
    *,
    log_end: int,
    before: tuple[Evidence, ...] = (),
    next_record: Evidence | None = None,
    last_origin: int | None = None,
) -> Position:
    return Position(
        source=SRC,
        target=TGT,
        committed=committed,
        log_start=0,
        log_end=log_end,
        next=next_record,
        packed_before=pack_evidence(before),
        last_origin=last_origin,
    )


def held(
    pos: Position,
    answer: int,
    tail_records: list[FetchedRecord] | None,
    bounds: LogBounds,
    *,
    complete: bool = False,
    pair: tuple[int, int] | None = None,
) -> Decision:
    """What the proof makes of a strategy's answer ``answer`` (exact, 0 duplicates: the strongest claim)."""
    tail = TargetTail()
    if tail_records is not None:
        tail.add(TGT, tail_records, HEADER)
    decisions = {("orders", 0, pos.committed): Decision("mapped", answer, "timestamp", True, 0, "no record as recent")}
    seen = Seen(tail, ReadHeaders(HEADER), lambda wanted: {}, lambda tp: pair)
    prove(decisions, {("orders", 0, pos.committed): pos}, {TGT: bounds}, seen, header=HEADER, complete={SRC: complete})
    return decisions[("orders", 0, pos.committed)]


def test_an_end_found_by_nothing_is_held_and_says_why() -> None:
    """The timestamp strategy's "no record as recent": the target's last record has no header and is no
    copy of a record the group processed, so nothing proves the group read it."""
    pos = position(100, log_end=100, before=(evidence(99, b"other", 5_000),))
    decision = held(pos, 40, [record(38), record(39)], LogBounds(0, 40))
    assert decision.status == "pending" and decision.target_offset is None
    assert "nothing proves the group processed the target's last record (offset 39)" in (decision.reason or "")
    assert "a strategy answered 40 (timestamp: no record as recent)" in (decision.reason or "")


def test_an_end_after_records_whose_headers_are_below_the_position_stands() -> None:
    pos = position(100, log_end=100)
    decision = held(pos, 40, [record(38, source=98), record(39, source=99)], LogBounds(0, 40))
    assert (decision.status, decision.target_offset, decision.exact) == ("mapped", 40, True)


def test_a_header_at_or_past_the_position_among_the_last_records_holds_the_end() -> None:
    """Out of order at the end: the last record carries 97, but one before it carries 100 (not processed)."""
    pos = position(100, log_end=101, next_record=evidence(100, b"v100", 1_000))
    decision = held(pos, 40, [record(38, source=100), record(39, source=97)], LogBounds(0, 40))
    assert decision.status == "pending"
    assert "carries x-source-offset = 100, at or after the group's position 100" in (decision.reason or "")


def test_the_copy_of_a_processed_record_proves_the_end_but_not_the_copy_of_the_next_one() -> None:
    processed = evidence(99, b"v39", 1_000)
    pos = position(100, log_end=100, before=(processed,))
    assert held(pos, 40, [record(39)], LogBounds(0, 40)).status == "mapped"
    # Same content, another timestamp (a copy given a new time): not proven the same record.
    assert held(pos, 40, [record(39, timestamp=2_000)], LogBounds(0, 40)).status == "pending"
    # The record the group reads next has the same content and time: it cannot be told apart.
    twin = position(99, log_end=101, before=(processed,), next_record=evidence(100, b"v39", 1_000))
    assert held(twin, 40, [record(39)], LogBounds(0, 40), complete=True).status == "pending"


def test_a_restore_checkpoint_at_the_last_record_proves_it() -> None:
    pos = position(100, log_end=100)
    assert held(pos, 40, [record(39)], LogBounds(0, 40), pair=(99, 39)).status == "mapped"
    assert held(pos, 40, [record(39)], LogBounds(0, 40), pair=(100, 39)).status == "pending"
    assert held(pos, 40, [record(39)], LogBounds(0, 40), pair=(98, 38)).status == "pending"


def test_the_restores_progress_pair_is_asked_only_of_a_last_record_without_the_header() -> None:
    """Each ask is a DynamoDB Query (ten milliseconds deployed): a plan of a thousand partitions whose ends
    carry the header asked it of every one, and needed none."""
    asked: list[TP] = []

    def ask(ends: list[FetchedRecord]) -> str:
        tail = TargetTail()
        tail.add(TGT, ends, HEADER)
        decisions = {("orders", 0, 100): Decision("mapped", 40, "header", True, 0, "at the end")}
        def pair(tp: TP) -> tuple[int, int]:
            asked.append(tp)
            return (99, 39)

        seen = Seen(tail, ReadHeaders(HEADER), lambda wanted: {}, pair)
        positions = {("orders", 0, 100): position(100, log_end=100)}
        prove(decisions, positions, {TGT: LogBounds(0, 40)}, seen, header=HEADER, complete={SRC: False})
        return decisions[("orders", 0, 100)].status

    assert ask([record(38, source=98), record(39, source=99)]) == "mapped" and not asked
    assert ask([record(38, source=98), record(39)]) == "mapped" and asked == [TGT]  # proven by the pair alone


@pytest.mark.parametrize("complete", [False, True])
def test_an_end_that_leaves_source_records_waits_until_the_restore_is_declared_complete(complete: bool) -> None:
    """The source had 80..99 after the group's position; the target's records are all below 80."""
    pos = position(80, log_end=100, next_record=evidence(80, b"v80", 1_000))
    decision = held(pos, 40, [record(39, source=79)], LogBounds(0, 40), complete=complete)
    if complete:
        assert decision.status == "mapped"
    else:
        assert decision.status == "pending"
        assert "the source had records 80..99 the group had not processed" in (decision.reason or "")
        assert "--restore-complete orders/0" in (decision.reason or "")


def test_an_empty_target_skips_nothing_present_but_waits_for_what_the_source_had() -> None:
    caught_up = position(50, log_end=50, before=(evidence(49, b"x", 1),))
    assert held(caught_up, 0, None, LogBounds(0, 0)).status == "mapped"
    behind = position(23, log_end=46, next_record=evidence(23, b"x", 1))
    assert held(behind, 0, None, LogBounds(0, 0)).status == "pending"
    assert held(behind, 0, None, LogBounds(0, 0), complete=True).status == "mapped"


def test_records_born_on_a_failbacks_source_are_not_waited_for() -> None:
    """A DR whose group processed restored records (origin offsets) and whose next record was produced on
    the DR: the primary never had it, so the end leaves nothing behind."""
    processed = evidence(279, b"v299", 1_000)
    pos = position(280, log_end=310, before=(processed,), next_record=evidence(280, b"born", 9_000), last_origin=299)
    assert held(pos, 300, [record(299)], LogBounds(0, 300)).status == "mapped"


def test_answers_before_the_end_and_unread_tails() -> None:
    pos = position(100, log_end=100)
    # Not an end: the proof of the end does not apply (the exact answer's ends, which this target cannot
    # show, hold it instead).
    inside_log = held(pos, 39, [record(39)], LogBounds(0, 40))
    assert "neither end of the answer is identified" in (inside_log.reason or "")
    assert "the target's last record" not in (inside_log.reason or "")
    # Past the last record, before markers: an end all the same.
    assert held(pos, 39, [record(38)], LogBounds(0, 40)).status == "pending"
    # The tail could not be read: nothing proves it.
    decision = held(pos, 40, None, LogBounds(0, 40))
    assert decision.status == "pending" and "could not be read" in (decision.reason or "")


def inside(
    pos: Position, answer: int, read: list[FetchedRecord], *, exact: bool = True
) -> tuple[Decision, dict[TP, set[int]]]:
    """What the proof makes of an answer inside the partition, given the records the plan read there;
    the offsets it read again besides."""
    headers = ReadHeaders(HEADER)
    headers.add(TGT, read)
    asked: dict[TP, set[int]] = {}

    def records_at(wanted: Mapping[TP, set[int]]) -> dict[tuple[TP, int], FetchedRecord]:
        asked.update(wanted)
        return {(TGT, r.offset): r for r in read if r.offset in wanted.get(TGT, set())}

    tail = TargetTail()
    tail.add(TGT, read[-1:], HEADER)
    seen = Seen(tail, headers, records_at)
    key = ("orders", 0, pos.committed)
    decisions = {key: Decision("mapped", answer, "header", exact, 0 if exact else None, None)}
    prove(decisions, {key: pos}, {TGT: LogBounds(0, 100)}, seen, header=HEADER, complete={SRC: True})
    return decisions[key], asked


def test_an_answer_past_a_record_read_that_the_group_has_not_processed_is_held() -> None:
    """Records 0..59 in order but for record 20, which carries 45: a strategy answers 30 for a group at 30.
    The proof saw record 20 (45 >= 30) before the answer, reads it again, finds no evidence that it is a
    record the group processed: the answer would skip it, and nothing proves an earlier point, so it waits."""
    read = [record(o, source=45 if o == 20 else o) for o in range(60)]
    decision, asked = inside(position(30, log_end=60), 30, read)
    assert (decision.status, decision.target_offset) == ("pending", None)
    assert "target record 20, read by the plan, carries x-source-offset = 45" in (decision.reason or "")
    assert asked == {TGT: {20}}


def test_a_lying_header_on_the_copy_of_a_processed_record_is_passed_over() -> None:
    """The same record 20, whose content the snapshot read as source record 20: its header lies, the group
    processed it, and the answer stands."""
    read = [record(o, source=45 if o == 20 else o) for o in range(60)]
    pos = position(30, log_end=60, before=(evidence(20, b"v20", 1_000), evidence(29, b"v29", 1_000)))
    decision, _ = inside(pos, 30, read)
    assert (decision.target_offset, decision.exact) == (30, True)


def test_a_tidy_restore_reads_nothing_again() -> None:
    read = [record(o, source=o) for o in range(60)]
    for c in (0, 1, 30, 59):
        decision, asked = inside(position(c, log_end=60), c, read)
        assert (decision.target_offset, decision.exact) == (c, True) and asked == {}


def test_a_region_whose_every_header_lies_is_not_believed_past_the_records_checked() -> None:
    """Twenty records before the answer all carry 90 and all are copies of processed records by content:
    past the records the proof reads again, the next one moves the answer."""
    read = [record(o, source=90 if 5 <= o < 25 else o) for o in range(60)]
    pos = position(50, log_end=60, before=tuple(evidence(o, f"v{o}".encode(), 1_000) for o in range(5, 25)))
    decision, asked = inside(pos, 50, read)
    assert decision.status == "pending" and "target record 21, read by the plan" in (decision.reason or "")
    assert asked == {TGT: set(range(5, 21))}


def read_and_kept(layout: list[FetchedRecord], read: range) -> tuple[ReadHeaders, Seen, dict[TP, set[int]]]:
    """The plan read offsets ``read`` of a target holding ``layout``; the proof may read the rest."""
    headers = ReadHeaders(HEADER)
    headers.add(TGT, [r for r in layout if r.offset in read])
    asked: dict[TP, set[int]] = {}

    def records_at(wanted: Mapping[TP, set[int]]) -> dict[tuple[TP, int], FetchedRecord]:
        asked.setdefault(TGT, set()).update(wanted.get(TGT, set()))
        return {(TGT, r.offset): r for r in layout if r.offset in wanted.get(TGT, set())}

    tail = TargetTail()
    tail.add(TGT, layout[-1:], HEADER)
    return headers, Seen(tail, headers, records_at), asked


def exact_at(pos: Position, answer: int, seen: Seen, end: int) -> Decision:
    key = ("orders", 0, pos.committed)
    decisions = {key: Decision("mapped", answer, "checkpoint", True, 0, None)}
    prove(decisions, {key: pos}, {TGT: LogBounds(0, end)}, seen, header=HEADER, complete={SRC: True})
    return decisions[key]


def test_an_exact_answer_one_record_late_is_held_by_the_record_before_it() -> None:
    """A strategy that read nothing answers 33 for a group at 30 on a tidy restore: the proof reads the
    records around 33, finds 32 carries source offset 32 (not processed), and holds the answer."""
    layout = [record(o, source=o) for o in range(60)]
    _, seen, asked = read_and_kept(layout, range(0))
    decision = exact_at(position(30, log_end=60), 33, seen, 60)
    assert decision.status == "pending"
    assert "the last record before the resume point is the copy of source record 32" in (decision.reason or "")
    assert 32 in asked[TGT] and 33 in asked[TGT]


def test_an_exact_answer_one_record_early_is_held_by_the_record_at_it() -> None:
    layout = [record(o, source=o) for o in range(60)]
    _, seen, _ = read_and_kept(layout, range(0))
    decision = exact_at(position(30, log_end=60), 29, seen, 60)
    assert decision.status == "pending"
    assert "the record at the resume point is the copy of source record 29" in (decision.reason or "")


def test_exact_ends_read_by_the_plan_are_not_read_again_and_markers_between_are_passed_over() -> None:
    """Records 0..29, a transaction marker at 30, records 31.. carrying 30..: the answer 31 for a group at 30
    is proven from what the plan read, across the marker, and nothing is read again."""
    layout = [record(o, source=o if o < 30 else o - 1) for o in range(60) if o != 30]
    headers = ReadHeaders(HEADER)
    headers.add(TGT, layout[20:40], skipped=[30])
    asked: dict[TP, set[int]] = {}
    tail = TargetTail()
    tail.add(TGT, layout[-1:], HEADER)
    seen = Seen(tail, headers, lambda wanted: asked.update(wanted) or {})
    decision = exact_at(position(30, log_end=59), 31, seen, 60)
    assert (decision.status, decision.target_offset, decision.exact) == ("mapped", 31, True)
    assert asked == {}


def test_exact_ends_without_headers_are_proven_by_content() -> None:
    """A replica without headers: the record at the answer is the snapshot's next record and the one before
    it a record the group processed (by content), so the answer stays exact; one record later, the record
    before it is the group's next one, and the answer is held."""
    layout = [record(o) for o in range(60)]
    before = tuple(evidence(o, f"v{o}".encode(), 1_000) for o in range(25, 30))
    pos = position(30, log_end=60, before=before, next_record=evidence(30, b"v30", 1_000))
    _, seen, _ = read_and_kept(layout, range(0))
    assert exact_at(pos, 30, seen, 60).exact
    late = exact_at(pos, 31, seen, 60)
    assert late.status == "pending" and "copy of source record 30" in (late.reason or "")


def test_an_exact_end_that_cannot_be_identified_leaves_the_answer_mapped_but_not_exact() -> None:
    """The record at the answer re-encoded (content the snapshot never read), the one before it the copy of
    a record the group processed: nothing contradicts the answer and one end bounds it, so it stays mapped
    without the claim, saying which end; with neither end identified, it is held."""
    layout = [record(o, value=f"re-encoded {o}".encode() if o >= 30 else None) for o in range(60)]
    pos = position(30, log_end=60, before=(evidence(29, b"v29", 1_000),), next_record=evidence(30, b"v30", 1_000))
    _, seen, _ = read_and_kept(layout, range(0))
    decision = exact_at(pos, 30, seen, 60)
    assert (decision.status, decision.target_offset, decision.exact, decision.max_duplicates) == (
        "mapped",
        30,
        False,
        None,
    )
    assert "not proven exact: the target record 30 at the resume point" in (decision.reason or "")
    held = exact_at(pos, 35, seen, 60)
    assert held.status == "pending" and "neither end of the answer is identified" in (held.reason or "")


def test_read_headers_ends_walks_back_over_markers_and_stops_at_offsets_not_read() -> None:
    headers = ReadHeaders(HEADER)
    headers.add(TGT, [record(o, source=o) for o in (10, 11, 14)], skipped=[12, 13])
    gap = fingerprint(b"k", b"v11", (), exclude_header=HEADER)  # the record before a gap in the headers: kept
    assert headers.ends(TGT, 14, 0) == Ends(Met(14, 14), Met(11, 11, gap))
    assert headers.ends(TGT, 15, 0) == Ends(None, Met(14, 14))
    assert headers.ends(TGT, 10, 0) == Ends(Met(10, 10), None)  # 9 was not read
    assert headers.ends(TGT, 10, 10) == Ends(Met(10, 10), None, nothing_before=True)
    headers.add(TGT, [record(20)])  # no header where others carry one: passed over, no source record's copy
    assert headers.ends(TGT, 21, 0) == Ends(None, None)
    replica = TP("replica", 0)  # no record carries the header: each is identified by content
    headers.add(replica, [record(o) for o in range(5)])
    printed = fingerprint(b"k", b"v2", (), exclude_header=HEADER)
    assert headers.ends(replica, 3, 0) == Ends(Met(3, None, fingerprint(b"k", b"v3", ())), Met(2, None, printed))
    assert headers.ends(replica, 0, 0).nothing_before


@pytest.mark.parametrize("exact", [True, False], ids=["exact", "bounded"])
def test_the_record_before_a_header_gap_is_compared_and_a_lie_there_holds_the_answer(exact: bool) -> None:
    """Source record 19 lost in the restore and record 20 written with a header saying 19: the headers rise
    (18, 19, 21), and a strategy's answer 20 for the group at 20 agrees with them at both ends. The plan kept
    the content of the record before the gap: it is the group's next record, so the answer is held, whatever
    the answer claims. With the header telling the truth, the answer by the headers (19) stands."""
    values = {s: f"v{s}".encode() for s in range(40)}
    for lying in (True, False):
        slots = [*range(19), 20, *range(21, 40)]  # target offset -> source record; 19 lost
        layout = [record(o, source=19 if (lying and s == 20) else s, value=values[s]) for o, s in enumerate(slots)]
        _, seen, _ = read_and_kept(layout, range(len(layout)))
        pos = position(
            20,
            log_end=40,
            before=tuple(evidence(s, values[s], 1_000) for s in (17, 18, 19)),
            next_record=evidence(20, values[20], 1_000),
        )
        key = ("orders", 0, 20)
        answer = 20 if lying else 19  # by the headers: the first at or past 20
        decisions = {key: Decision("mapped", answer, "header", exact, 0 if exact else 3, None)}
        prove(decisions, {key: pos}, {TGT: LogBounds(0, len(layout))}, seen, header=HEADER, complete={SRC: True})
        decision = decisions[key]
        if lying:
            assert decision.status == "pending", decision
            assert "the last record before the resume point is the copy of source record 20" in (decision.reason or "")
            assert "though its offset header says 19" in (decision.reason or "")
        else:
            assert decision.status == "mapped" and decision.target_offset == 19, decision


def test_an_answer_one_rule_held_is_no_later_rules() -> None:
    """The rules read the answers still mapped, built once a partition and again where a rule wrote one: an
    answer the never-skip rule held (a record read before it carries the group's position) is not seen by the
    end rules after it, which would hold it again for another reason and count it twice."""
    pos = position(100, log_end=100)
    key = ("orders", 0, 100)
    decisions = {key: Decision("mapped", 40, "timestamp", True, 0, "no record as recent")}
    headers = ReadHeaders(HEADER)
    headers.add(TGT, [record(30, source=100)])
    tail = TargetTail()
    tail.add(TGT, [record(38), record(39)], HEADER)  # no header, no copy: the end rules would hold it too
    seen = Seen(tail, headers, lambda wanted: {})
    held_now = prove(decisions, {key: pos}, {TGT: LogBounds(0, 40)}, seen, header=HEADER, complete={SRC: False})
    reason = decisions[key].reason or ""
    assert (held_now, decisions[key].status) == (1, "pending")
    assert "target record 30, read by the plan, carries x-source-offset = 100" in reason and "lies before" in reason
    assert "nothing proves" not in reason
