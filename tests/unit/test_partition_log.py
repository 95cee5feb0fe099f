"""A partition's log as a whole read builds it (``translate/resume_points.py``): answers appended as columns,
records read twice kept once; and the running maximum the resume points and the proof's reads bisect."""

from __future__ import annotations

import itertools
import random
from array import array

from offset_restore.translate.resume_points import NO_KEY, PartitionLog, resume_points, running_max


def test_an_answer_that_overlaps_the_log_adds_only_the_records_past_its_end() -> None:
    log = PartitionLog()
    log.extend([0, 1, 2], [10, None, 12], [100, 101, 102])
    log.extend([1, 2, 3, 4], [None, 12, 13, 14], [101, 102, 103, 104])  # an answer read from offset 1 again
    log.extend([2], [12], [102])  # nothing new
    assert list(log.offsets) == [0, 1, 2, 3, 4]
    assert list(log.keys) == [10, NO_KEY, 12, 13, 14]
    assert list(log.timestamps) == [100, 101, 102, 103, 104]
    answer = resume_points(log, {13})[13]  # record 1, without the header inside the restore, may carry 13
    assert (answer.offset, answer.pulled_back) == (1, True)


def test_the_running_maximum_is_that_of_accumulate_whether_values_grow_or_fall() -> None:
    rng = random.Random(7)
    shapes = [
        list(range(50)),
        [NO_KEY, NO_KEY, 3, 3, 4],
        [5, 4, 6, NO_KEY, 7],
        [rng.randrange(-2, 30) for _ in range(200)],
        [],
    ]
    for values in shapes:
        assert list(running_max(array("q", values))) == list(itertools.accumulate(values, max))
