"""Where a failback's group may first not have processed an origin record, whatever order the restore
wrote (snapshot/origin_order.py), against the truth computed from the layout."""

from __future__ import annotations

import random

import pytest
from offset_restore.snapshot.origin_order import OriginFloor, OriginLog


def log_of(layout: list[int | None]) -> OriginLog:
    log = OriginLog()
    for offset, origin in enumerate(layout):
        if origin is not None:  # a record produced on the source itself carries none
            log.add(offset, origin)
    return log


def truth(layout: list[int | None], c: int) -> OriginFloor | None:
    processed = {o for o in layout[:c] if o is not None}
    if not processed:
        return None
    restored = {o for o in layout if o is not None}
    floor = min([x for x in restored if x not in processed] + [max(processed) + 1])
    return OriginFloor(floor, sum(1 for x in processed if x >= floor))


@pytest.mark.parametrize(
    ("layout", "c", "floor"),
    [
        ([*range(50), *range(60, 70), *range(50, 60), *range(70, 100)], 55, OriginFloor(50, 5)),
        ([*range(50), *range(60, 70), *range(50, 60), *range(70, 100)], 70, OriginFloor(70, 0)),
        ([*range(60), *range(40, 60), *range(60, 100)], 63, OriginFloor(60, 0)),  # the second copy is not news
        ([*range(10)], 10, OriginFloor(10, 0)),
        ([None, None, *range(5, 10), None], 3, OriginFloor(6, 0)),  # records of its own before the restore
        ([None, None, *range(5, 10)], 2, None),
    ],
)
def test_the_floor_of_each_layout(layout: list[int | None], c: int, floor: OriginFloor | None) -> None:
    assert log_of(layout).floor_at(c) == floor == truth(layout, c)


def test_random_layouts_against_the_truth() -> None:
    rng = random.Random(7)
    for _ in range(300):
        chunks = [list(range(s, s + 10)) for s in range(0, 100, 10)]
        rng.shuffle(chunks)
        layout: list[int | None] = [o for chunk in chunks for o in chunk]
        if rng.random() < 0.5:  # a chunk written twice
            again = rng.choice(chunks)
            at = rng.randrange(len(layout))
            layout[at:at] = again
        if rng.random() < 0.5:  # records produced on the source among them
            for _ in range(5):
                layout.insert(rng.randrange(len(layout)), None)
        log = log_of(layout)
        for c in range(len(layout) + 1):
            assert log.floor_at(c) == truth(layout, c), (layout, c)
