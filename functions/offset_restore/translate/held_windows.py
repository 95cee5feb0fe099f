"""The answers a plan already holds of a partition, as a chain a whole read takes in place of reading
them again (``strategies/whole_read.py``): the shape check's sample of its last records, and the
windows a search read where the broker sent them uncut (``PartitionFetch.uncut``). Pure: answers in,
trimmed answers out."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from offset_restore.kafka.model import PartitionFetch

__all__ = ["HeldChain", "after", "before"]


def before(answer: PartitionFetch, stop: int) -> PartitionFetch:
    """``answer`` without what it read at or after ``stop`` (its bytes still counted: they were sent)."""
    if answer.read_to <= stop:
        return answer
    return replace(
        answer,
        records=[r for r in answer.records if r.offset < stop],
        next_offset=stop,
        aborted=tuple(a for a in answer.aborted if a.base_offset < stop),
        markers=tuple(m for m in answer.markers if m < stop),
    )


def after(answer: PartitionFetch, start: int) -> PartitionFetch:
    """``answer`` from ``start`` on, as if fetched there (its bytes not counted again: a replay)."""
    if answer.fetch_offset >= start:
        return replace(answer, size=0)
    return replace(
        answer,
        fetch_offset=start,
        records=[r for r in answer.records if r.offset >= start],
        next_offset=max(answer.next_offset, start),
        aborted=tuple(a for a in answer.aborted if a.next_offset > start),
        markers=tuple(m for m in answer.markers if m >= start),
        size=0,
        earlier=None,
        earlier_from=-1,
    )


class HeldChain:
    """A partition's held answers from ``start`` on, in offset order, each covering ``[fetch_offset,
    read_to)`` (every committed record there; aborted batches and markers skipped, as any read skips
    them). ``stop``: where the next held answer begins (None: none left), where a read may stop."""

    def __init__(self, start: int, answers: Iterable[PartitionFetch]) -> None:
        usable = [a for a in answers if a.error is None and a.read_to > max(start, a.fetch_offset)]
        self._held = sorted(usable, key=lambda a: a.fetch_offset)
        self._start = start

    @property
    def stop(self) -> int | None:
        return max(self._start, self._held[0].fetch_offset) if self._held else None

    def _drop_covered(self, position: int) -> None:
        while self._held and self._held[0].read_to <= position:
            self._held.pop(0)

    def take(self, position: int) -> tuple[list[PartitionFetch], int]:
        """The held answers that carry the log on from ``position`` without a gap, trimmed to follow
        each other, and the offset after the last (``position`` itself when none begins there)."""
        taken: list[PartitionFetch] = []
        self._drop_covered(position)
        while self._held and self._held[0].fetch_offset <= position:
            segment = after(self._held.pop(0), position)
            taken.append(segment)
            position = segment.read_to
            self._drop_covered(position)
        self._start = position
        return taken, position
