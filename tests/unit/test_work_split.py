"""How Prepare splits a restore's groups into work items: whole groups, bounded, by their topics."""

from __future__ import annotations

import random
from collections.abc import Iterator

from offset_restore.snapshot.model import GroupSnapshot, PartitionSnapshot
from offset_restore.translate.work_items import split_work, topics_of


def _group(name: str, topics: dict[str, int]) -> GroupSnapshot:
    return GroupSnapshot(
        group=name,
        state="Empty",
        partitions=[
            PartitionSnapshot(topic=t, partition=p, committed_offset=0) for t, n in topics.items() for p in range(n)
        ],
    )


def _names(batches: list[list[GroupSnapshot]]) -> list[list[str]]:
    return [[g.group for g in batch] for batch in batches]


def test_groups_listed_by_name_are_batched_by_the_topics_they_read() -> None:
    """Names order groups across topics (g0 on t0, g1 on t1, ...): a batch of names would read every
    topic's partitions; gathered by topic, a batch reads one topic's."""
    groups = [_group(f"g{i}", {f"t{i % 3}": 2}) for i in range(9)]
    batches = list(split_work(groups, 6))
    assert _names(batches) == [["g0", "g3", "g6"], ["g1", "g4", "g7"], ["g2", "g5", "g8"]]
    assert all(len({topics_of(g) for g in batch}) == 1 for batch in batches)


def test_what_is_held_is_bounded_and_leaves_packed_in_topic_order() -> None:
    """No topic fills a batch (a few groups each on many topics): once more than ``held_items``
    batches' worth is held, everything held leaves, neighbours by topic packed together."""
    read: list[str] = []

    def stream() -> Iterator[GroupSnapshot]:
        for i in range(12):
            read.append(f"g{i}")
            yield _group(f"g{i}", {f"t{i % 6:02d}": 2})

    batches = split_work(stream(), 6, held_items=1)
    first = next(batches)
    assert len(read) == 4 and sum(len(g.partitions) for g in first) <= 6  # 8 held > 6: all four leave
    assert _names([first, *batches]) == [
        ["g0", "g1", "g2"],
        ["g3"],
        ["g6", "g7", "g4"],  # held: g4 (t04), g5 (t05), g6 (t00), g7 (t01), in topic order
        ["g5"],
        ["g8", "g9", "g10"],
        ["g11"],
    ]


def test_every_group_lands_once_whole_and_within_the_bound() -> None:
    rng = random.Random(7)
    groups = [
        _group(f"g{i:03d}", {f"t{rng.randrange(9)}": rng.randint(1, 12) for _ in range(rng.randint(1, 3))})
        for i in range(300)
    ]
    batches = list(split_work(groups, 40, held_items=2))
    assert sorted(g.group for batch in batches for g in batch) == [g.group for g in groups]
    assert all(sum(len(g.partitions) for g in batch) <= 40 or len(batch) == 1 for batch in batches)
    assert [len(list(split_work([_group("big", {"t": 50})], 40)))] == [1]  # a larger group: a batch of its own
