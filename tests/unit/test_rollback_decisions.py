"""What rollback decides for one group, from the plan and the target's offsets now (pure logic)."""

from __future__ import annotations

from offset_restore.apply.commit import NO_ANSWER
from offset_restore.apply.rollback import _undo_of
from offset_restore.formats.plan import PlanEntry
from offset_restore.kafka.model import TP, CommittedOffset


def entry(partition: int, planned: int, previous: int | None, metadata: str | None = None) -> PlanEntry:
    return PlanEntry(
        group="g",
        topic="orders",
        partition=partition,
        target_topic="orders",
        source_offset=planned,
        target_offset=planned,
        method="header",
        status="committed",
        previous_target_offset=previous,
        previous_metadata=metadata,
        previous_recorded=True,
    )


def test_a_group_apply_created_is_deleted_whole() -> None:
    work = _undo_of([entry(0, 40, None)], {TP("orders", 0): CommittedOffset(40, None)}, allow_rewind=False)
    assert not isinstance(work, str) and work.delete_group and work.remove == [TP("orders", 0)]


def test_a_group_with_offsets_elsewhere_loses_only_what_apply_created() -> None:
    now = {TP("orders", 0): CommittedOffset(40, None), TP("payments", 0): CommittedOffset(42, None)}
    work = _undo_of([entry(0, 40, None)], now, allow_rewind=False)
    assert not isinstance(work, str) and not work.delete_group and work.remove == [TP("orders", 0)]


def test_previous_offsets_come_back_with_the_targets_metadata() -> None:
    now = {TP("orders", 0): CommittedOffset(40, "source-meta"), TP("orders", 1): CommittedOffset(50, None)}
    work = _undo_of([entry(0, 40, 3, "target-meta"), entry(1, 50, None)], now, allow_rewind=False)
    assert not isinstance(work, str)
    assert work.restore == {TP("orders", 0): CommittedOffset(3, "target-meta")}
    assert work.remove == [TP("orders", 1)] and not work.delete_group


def test_consumers_that_ran_are_not_rewound_unless_allowed() -> None:
    now = {TP("orders", 0): CommittedOffset(85, None)}
    assert "moved past what apply wrote (orders/0 is at 85, apply wrote 40)" in str(
        _undo_of([entry(0, 40, 3)], now, False)
    )
    work = _undo_of([entry(0, 40, 3)], now, allow_rewind=True)
    assert not isinstance(work, str) and work.restore == {TP("orders", 0): CommittedOffset(3, None)}


def test_nothing_to_do_where_the_previous_offset_is_already_there() -> None:
    work = _undo_of([entry(0, 40, 3), entry(1, 50, None)], {TP("orders", 0): CommittedOffset(3, None)}, False)
    assert not isinstance(work, str) and not work.entries


def test_what_apply_never_wrote_is_left_alone_and_the_rest_of_the_group_undone() -> None:
    """Partition 1 was recorded by a run that never wrote it (status mapped, no unanswered commit) and
    its consumers moved it to 90: not apply's to undo, with or without a rewind; partition 0, committed,
    comes back. An unanswered commit, or the mapped offset itself on the target, may be apply's."""
    never = entry(1, 50, 9).model_copy(update={"status": "mapped"})
    now = {TP("orders", 0): CommittedOffset(40, None), TP("orders", 1): CommittedOffset(90, None)}
    for rewind in (False, True):
        work = _undo_of([entry(0, 40, 3), never], now, allow_rewind=rewind)
        assert not isinstance(work, str)
        assert work.restore == {TP("orders", 0): CommittedOffset(3, None)}
        assert work.left_alone == ["orders/1: apply never wrote 50 there; it holds 90 (its consumers' commit), left "
                                   "as it is (before this restore it held 9)"]  # fmt: skip
    unanswered = never.model_copy(update={"reason": NO_ANSWER, "outcome": "unanswered"})
    assert "apply's commit, unanswered, may have written 50" in str(_undo_of([unanswered], now, allow_rewind=False))
    landed = never.model_copy(update={"status": "mapped"})
    work = _undo_of([landed], {TP("orders", 1): CommittedOffset(50, None)}, allow_rewind=False)
    assert not isinstance(work, str) and work.restore == {TP("orders", 1): CommittedOffset(9, None)}
