"""Consecutive shares of a sequence whose sizes add up to at most a budget: fetch requests packed by
their partitions' byte limits, work items packed by their groups' partitions."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

__all__ = ["packed"]

T = TypeVar("T")


def packed(items: Iterable[T], size: Callable[[T], int], budget: int) -> Iterator[list[T]]:
    """Items in order, in shares of at most ``budget`` by ``size`` (an item larger than the budget
    gets a share of its own); each share is given as soon as it is full, so ``items`` may stream."""
    share: list[T] = []
    used = 0
    for item in items:
        n = size(item)
        if share and used + n > budget:
            yield share
            share, used = [], 0
        share.append(item)
        used += n
    if share:
        yield share
