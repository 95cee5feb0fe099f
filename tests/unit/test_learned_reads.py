"""What one plan's reads learned of each partition (reading/learned.py): kept at its largest, handed to every
later read, and the one answer to what a point read costs."""

from __future__ import annotations

from offset_restore.kafka.model import ONE_BATCH, TP, PartitionFetch
from offset_restore.reading.learned import Learned
from offset_restore.reading.rounds import ALONE_FROM, POINT_READ_BYTES

A, B, C = TP("t", 0), TP("t", 1), TP("t", 2)
MAX_GROWN = 4 << 20
"""A limit grown for batches of megabytes (4x at a time)."""


def _no_fetch(*_: object) -> dict[TP, PartitionFetch]:
    raise AssertionError("nothing is fetched")


def test_a_limit_is_kept_at_the_one_it_grew_to_last_and_at_least_one_batch_alone() -> None:
    learned = Learned()
    learned.learn({A: ALONE_FROM, B: MAX_GROWN}, {})
    assert learned.limits == {A: ONE_BATCH, B: MAX_GROWN}  # a limit that grew: a batch at a time, or more
    learned.learn({A: 4 * ALONE_FROM, B: POINT_READ_BYTES}, {A: 300_000}, {C: 5_000}, uncut=[C])
    assert learned.limits == {A: 4 * ALONE_FROM, B: MAX_GROWN}  # 256 KB comes after ONE_BATCH
    assert (learned.batch_bytes, learned.largest_batch, learned.uncut) == ({A: 300_000}, {C: 5_000}, {C})


def test_later_rounds_start_from_what_was_learned_never_below_their_own_first_limit() -> None:
    learned = Learned(limits={A: ONE_BATCH, B: 2 * POINT_READ_BYTES}, largest_batch={C: 5_000}, uncut={C})
    rounds = learned.rounds(_no_fetch, {A: 10}, partition_max_bytes=1 << 20)
    assert rounds.limits == {A: 1 << 20, B: 1 << 20} and rounds.partition_bytes == 1 << 20  # a run beats a batch alone
    assert learned.rounds(_no_fetch, {}).limits == {A: ONE_BATCH, B: 2 * POINT_READ_BYTES}
    assert rounds.largest_batch == {C: 5_000} and rounds.uncut == {C} and rounds.batch_bytes == {}
    rounds.largest_batch[A] = 1  # the rounds' own copies: what they measure is learned only when handed back
    assert A not in learned.largest_batch


def test_a_point_read_costs_a_batch_as_far_as_measured() -> None:
    learned = Learned(limits={A: ONE_BATCH, B: 4 * POINT_READ_BYTES}, batch_bytes={}, largest_batch={C: 5_000})
    assert learned.point_bytes(A) == 4 * ALONE_FROM  # read alone for its size, no batch measured yet
    learned.learn({}, {A: 1 << 20})
    assert learned.point_bytes(A) == 1 << 20
    assert learned.point_bytes(B) == 4 * POINT_READ_BYTES
    assert learned.point_bytes(C) == 5_000  # small batches: read one at a time
    assert learned.point_bytes(TP("t", 9)) == POINT_READ_BYTES


def test_the_plan_and_the_rounds_price_a_point_read_alike() -> None:
    """One price (``rounds.point_cost``): what the plan's choice between a search and a whole read expects a
    point read to bring is what the rounds reading it would, partition by partition, over every kind of
    batch (small, near 16 KB from a broker that sends them uncut, over 64 KB read alone, grown past that)."""
    D, E = TP("t", 3), TP("t", 4)
    learned = Learned(
        limits={A: ONE_BATCH, B: 4 * ALONE_FROM},
        batch_bytes={A: 900_000},
        largest_batch={A: 900_000, C: 5_000, D: 15_000, E: 15_000},
        uncut={D},
    )
    rounds = learned.rounds(_no_fetch, {})
    for tp in (A, B, C, D, E, TP("t", 9)):
        assert learned.point_bytes(tp) == rounds.point_bytes(tp), tp
    assert [learned.point_bytes(tp) for tp in (C, D, E)] == [5_000, 15_000, POINT_READ_BYTES]
