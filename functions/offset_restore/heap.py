"""The cyclic garbage collector held off while a phase reads.

A snapshot, a plan or an apply holds hundreds of thousands of small objects at once: the input's models
(each pydantic model carries a set of its fields), the records of the answers in hand, the evidence. None
of them forms a reference cycle, so reference counting frees every one of them; but CPython's
generational collector walks all of them again at every full collection, and it starts one each time the
objects that outlived two collections grow by a quarter. A phase that reads a million records met twenty
such walks of over a million objects each, and the walks took about as long as the reading (the dense
shape of ``bench/user_shapes.py``: its snapshot took twice as long with them). The phase runs with the
collector off; what little cyclic garbage it leaves (a few hundred objects) is found at the next
collection once it is back on.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Turn the cyclic collector off for the block (also a decorator), and back on after it if it was on."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
