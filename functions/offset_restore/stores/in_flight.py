"""AWS requests a few at once: a step that writes 40 objects or 240 batches of items waits for a few
round trips, not for each one after the other (DynamoDB and S3 answer in milliseconds; what a step
then spends is the client's CPU, not the wait).

botocore's clients are thread-safe and pool 10 connections each, so ``IN_FLIGHT`` requests of one
client never queue for a connection."""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any, TypeVar

__all__ = ["IN_FLIGHT", "InFlight", "concurrently"]

IN_FLIGHT = 8
"""Requests of one step in flight at once (below botocore's 10 pooled connections)."""

_Chunk = TypeVar("_Chunk")
_Answer = TypeVar("_Answer")


class InFlight:
    """Run calls on a few threads, at most ``IN_FLIGHT`` at once: ``submit`` waits for the oldest call
    when that many are running, so a producer that builds documents as it goes holds only those in
    flight. Leaving the block waits for every call, and raises the first error after all ended: a
    step never returns (or fails) with writes still under way."""

    def __init__(self, width: int = IN_FLIGHT) -> None:
        self.width = width
        self.pool = ThreadPoolExecutor(max_workers=width)
        self.running: deque[Future[Any]] = deque()
        self.done: list[Future[Any]] = []

    def submit(self, call: Callable[..., _Answer], *args: Any) -> Future[_Answer]:
        while len(self.running) >= self.width:
            self.running[0].exception()  # waits; the error, if any, is raised on leaving
            self.done.append(self.running.popleft())
        # In the caller's context: what it set there (its logging keys, a test's or a benchmark's
        # account of the step's requests) holds for the requests it sends on the workers too.
        future = self.pool.submit(contextvars.copy_context().run, call, *args)
        self.running.append(future)
        return future

    def __enter__(self) -> InFlight:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.pool.shutdown(wait=True)
        if error is None:
            for future in [*self.done, *self.running]:
                future.result()


def concurrently(send: Callable[[_Chunk], _Answer], chunks: Sequence[_Chunk]) -> list[_Answer]:
    """``send`` each chunk, a few at once; the answers in the chunks' order, every chunk ended before
    this returns or raises."""
    if len(chunks) <= 1:
        return [send(chunk) for chunk in chunks]
    with InFlight(min(IN_FLIGHT, len(chunks))) as flight:
        futures = [flight.submit(send, chunk) for chunk in chunks]
    return [future.result() for future in futures]
