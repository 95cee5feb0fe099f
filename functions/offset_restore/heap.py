"""Python's garbage collector while a phase runs: full collections rare for the whole phase, and none at all
while it reads the cluster.

A snapshot, a plan or an apply holds hundreds of thousands of small objects at once: the input's models,
the records of the answers in hand (three objects each: the record, its list of headers, a header), the
evidence, the entries. Reference counting frees them: they hold no reference cycles. But CPython's
generational collector walks every object that outlives a young collection again, once in the young
generation, once in the middle one, and at every full collection all of them.

- A whole phase (``full_collections_rare``: ``apply_plan``, the CLI's commands and the workflow's steps,
  their reads and writes of S3 and files included) runs a full collection only after a hundred times as
  many middle ones as CPython's default. The young collections still run: the cycles AWS clients make (a
  client, a response and the body it read: a stored snapshot's pieces, tens of MB at 120,000
  group-partitions, read as the plan goes) are freed as the phase goes on.
- What reads the cluster and makes no AWS request (``collections_paused``: ``take_snapshot`` and
  ``translate``, which work in memory, and inside the phases ``stream_snapshot``'s reads,
  ``decide_positions``, apply's check of the target and its verification) runs with the collector off:
  the records of a round live through many young collections, and a dense plan (a million records)
  spent a sixteenth of its time in young and middle collections that freed nothing. Raising the
  thresholds does not help: each collection then walks more live records. What such a step leaves in
  cycles (a Kafka client's closed connections) waits for the first collection after it:
  ``tests/integration/test_heap_cycles.py`` holds a snapshot, a dense plan and an apply against real
  brokers to a few hundred such objects. An AWS request made inside such a step (the plan's reads of a
  restore tool's checkpoints in DynamoDB) runs with it on again (``collections_resumed``).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["FULL_COLLECTION_AFTER", "collections_paused", "collections_resumed", "full_collections_rare"]

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


class _Pauses:
    """Every thread's paused and resumed blocks: there is one collector a process, and phases run side by side
    in threads (the workflow's Map iterations in ``devtools/local_aws.py``). It is off while any paused block
    runs, but on while a resumed one runs inside them; once the last paused block ends, as it was before the
    first began, in whatever order the threads' blocks ended."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.paused = 0
        self.resumed = 0
        self.was_on = True

    def change(self, paused: int, resumed: int) -> None:
        with self.lock:
            if paused > 0 and not self.paused:
                self.was_on = gc.isenabled()
            ending = paused < 0 and self.paused == 1
            self.paused += paused
            self.resumed += resumed
            if ending:
                (gc.enable if self.was_on else gc.disable)()
            elif self.paused:
                (gc.enable if self.resumed and self.was_on else gc.disable)()


_PAUSES = _Pauses()


@contextmanager
def collections_paused() -> Iterator[None]:
    """For the block (also a decorator), no garbage collection; the collector as it was before once the last
    paused block of any thread ends, however it ends."""
    _PAUSES.change(1, 0)
    try:
        yield
    finally:
        _PAUSES.change(-1, 0)


@contextmanager
def collections_resumed() -> Iterator[None]:
    """Inside a paused step, the collector on for the block (an AWS request, whose client leaves cycles that
    hold what it read), unless it was off before the step; outside one, nothing changes."""
    _PAUSES.change(0, 1)
    try:
        yield
    finally:
        _PAUSES.change(0, -1)
