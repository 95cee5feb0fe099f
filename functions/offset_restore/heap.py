"""Python's full garbage collections made rare while a phase reads.

A snapshot, a plan or an apply holds hundreds of thousands of small objects at once: the input's models
(each pydantic model carries a set of its fields), the records of the answers in hand, the evidence. They
hold no reference cycles, so reference counting frees them; but CPython's generational collector walks all
of them again at every full collection, and with its default thresholds it runs one each time ten young
collections have passed and the objects that outlived them grew by a quarter. On the dense shape of
``bench/user_shapes.py`` (a million records) a plan met about ten such walks of over a million objects,
and they took as long as the reading. During a phase a full collection waits for a hundred times as many
young collections; the young collections still run, so the short-lived cycles a client's requests make
(futures and their callbacks, exceptions and their frames) are freed as before.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["FULL_COLLECTION_AFTER", "full_collections_rare"]

FULL_COLLECTION_AFTER = 1000
"""Collections of the middle generation between two full ones while a phase runs (CPython's default: 10)."""


@contextmanager
def full_collections_rare() -> Iterator[None]:
    """For the block (also a decorator), a full collection only after ``FULL_COLLECTION_AFTER`` collections of
    the middle generation; the thresholds as they were after it, however it ends."""
    young, middle, full = gc.get_threshold()
    gc.set_threshold(young, middle, max(full, FULL_COLLECTION_AFTER))
    try:
        yield
    finally:
        gc.set_threshold(young, middle, full)
