"""Python's garbage collector paused while a phase reads.

A snapshot, a plan or an apply holds hundreds of thousands of small objects at once: the input's models,
the records of the answers in hand (three objects each: the record, its list of headers, a header), the
evidence. Reference counting frees them all: they hold no reference cycles. But CPython's generational
collector walks every object that outlives a young collection, once in the young generation and once in the
middle one, and the records of a round live through many young collections: with the default thresholds a
dense plan (a million records) spent a sixteenth of its time in about 5,000 young and 500 middle collections
that found nothing to free. Raising the thresholds does not help: each collection then walks more live
records. So a phase runs with the collector off, and it is put back as it was when the phase ends or fails.

What a phase does make in cycles (a client's closed connection and its futures, an exception kept with its
traceback) waits for the first collection after the phase: ``tests/integration/test_heap_cycles.py`` holds a
snapshot, a plan and an apply against real brokers to a few hundred such objects.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collections_paused"]


@contextmanager
def collections_paused() -> Iterator[None]:
    """For the block (also a decorator), no garbage collection; the collector on again after it, however it
    ends, when it was on before (a phase inside a phase leaves it off until the outer one ends)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
