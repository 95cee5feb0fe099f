"""Where the snapshot's evidence places records their headers do not (pure logic): the spans
``evidence_placement`` sets, and the resume points and duplicate counts they give."""

from __future__ import annotations

from offset_restore.translate.evidence_placement import place_by_evidence
from offset_restore.translate.resume_points import PartitionLog, resume_points


def log_of(keys: list[int | None]) -> PartitionLog:
    log = PartitionLog()
    for offset, key in enumerate(keys):
        log.append(offset, key, 1_000 + offset)
    return log


def test_records_without_the_header_before_the_first_are_placed_and_the_gaps_filled_in_order() -> None:
    # 0..5 without the header (the evidence names 0, 1 and 4), then 6.. with it.
    log = log_of([None] * 6 + list(range(6, 12)))
    placement = place_by_evidence(log, {0: (0,), 1: (1,), 4: (4,)}, assume_order=True)
    assert log.spans == {0: (0, 0), 1: (1, 1), 4: (4, 4), 2: (2, 3), 3: (2, 3), 5: (5, 5)}
    assert "no offset header" in placement.notes[4] and not placement.contradicted
    answers = resume_points(log, [1, 3, 4, 8])
    assert (answers[1].offset, answers[1].duplicates) == (1, 0)
    # A group at 3 resumes at the first record that may carry 3 (target 2); targets 2 and 3 may each
    # carry 2: two possible duplicates (one is), never a skip. A group at 4 resumes at its own record.
    assert (answers[3].offset, answers[3].duplicates, answers[3].exact) == (2, 2, False)
    assert (answers[4].offset, answers[4].duplicates, answers[4].exact) == (4, 0, True)
    assert (answers[8].offset, answers[8].duplicates, answers[8].exact) == (8, 0, True)


def test_without_the_order_assumed_the_unnamed_records_may_carry_anything() -> None:
    log = log_of([None] * 6 + list(range(6, 12)))
    place_by_evidence(log, {0: (0,), 1: (1,), 4: (4,)}, assume_order=False)
    assert set(log.spans) == {0, 1, 4}
    answers = resume_points(log, [1, 8])
    # Target 2 may carry any source offset: every group past it resumes no later than it.
    assert answers[8].pulled_back and answers[8].offset == 2
    assert answers[1].offset == 1 and answers[1].duplicates == 3  # 2, 3, 5: possible duplicates


def test_more_records_than_source_offsets_between_placed_ones_are_not_assumed_in_order() -> None:
    # 0..4 without the header, the evidence naming 0 and 2 at targets 0 and 3: two records between
    # source offsets 0 and 2, with room for one.
    log = log_of([None] * 5 + list(range(5, 10)))
    place_by_evidence(log, {0: (0,), 3: (2,)}, assume_order=True)
    assert set(log.spans) == {0, 3}


def test_a_fingerprint_the_evidence_has_for_two_records_places_the_record_as_either() -> None:
    # Source records 1 and 4 are identical: the record at target 1 may be either.
    log = log_of([None] * 3 + list(range(5, 10)))
    place_by_evidence(log, {0: (0,), 1: (1, 4)}, assume_order=False)
    assert log.spans[1] == (1, 4)
    answers = resume_points(log, [3])
    assert answers[3].offset == 1 and answers[3].duplicates >= 1  # it may be 1: read twice, never skipped


def test_a_header_the_content_contradicts_is_either_unless_the_snapshot_read_what_it_names() -> None:
    keys: list[int | None] = list(range(10))
    keys[4] = 8  # the record of source 4 carries header 8
    log = log_of(keys)
    placement = place_by_evidence(log, {4: (4,)}, assume_order=True)
    assert log.spans == {4: (4, 8)} and placement.contradicted == {4}
    answers = resume_points(log, [4, 6])
    assert answers[4].offset == 4
    assert answers[6].offset == 4 and answers[6].duplicates >= 1  # it may be 8: resume there
    wrong = log_of(keys)
    placement = place_by_evidence(wrong, {4: (4,)}, assume_order=True, disproven={4})
    assert wrong.spans == {4: (4, 4)} and "the header is wrong" in placement.notes[4]
    assert resume_points(wrong, [6])[6].offset == 6


def test_a_restore_in_order_is_left_as_it_is() -> None:
    log = log_of(list(range(10)))
    placement = place_by_evidence(log, {}, assume_order=True)
    assert not log.spans and not placement.notes
    assert log.carried() == (log.keys, log.keys)
