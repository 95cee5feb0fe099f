"""The answers a plan holds of each partition for a later read to take instead of asking the broker
again (``HeldAnswers``: one cache, one record budget), and how a read takes them: as a chain a whole read
takes in place of reading them again (``HeldChain``; a read stops short of them where the broker sends
whole batches, ``PartitionFetch.uncut``; elsewhere a read that reaches one's start takes it), a fetch
that answers a search from them where it asks there (``replaying``), an answer from an offset on
(``after``). Pure: answers in, trimmed answers out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Literal

from offset_restore.kafka.model import TP, PartitionFetch, Record
from offset_restore.reading.rounds import Fetch

__all__ = ["HELD_RECORDS", "Held", "HeldAnswers", "HeldChain", "after", "replayed", "replaying"]

HELD_RECORDS = 300_000
"""Records a plan holds in all, whatever for (about 40 MB per 100,000 decoded records of the shapes
measured): past it an answer is not kept, and a later read asks the broker for it again."""

Held = Literal["sample", "search", "unkeyed", "scan"]
"""What an answer is held for, and who takes it:

- ``sample``: the shape check's sample of a partition's last records; a search asking there is answered
  from it, a whole read takes it as its last records;
- ``search``: every window the header search read, for a whole read of the partition;
- ``unkeyed``: the windows read of a partition none of whose records carried the offset header (a replica
  written without it), for the time search and the fingerprint scan;
- ``scan``: the time search's windows, for the fingerprint scans that start in them."""


class HeldAnswers:
    """The one cache of answers a plan holds, by what for and partition, under one budget of records
    (``HELD_RECORDS``): an answer past it is refused (first come, first kept), one taken frees its share."""

    def __init__(self, budget: int = HELD_RECORDS) -> None:
        self.budget = budget
        self.records = 0
        self._held: dict[Held, dict[TP, list[PartitionFetch]]] = {}

    def keep(self, purpose: Held, tp: TP, answers: Sequence[PartitionFetch]) -> bool:
        """Hold ``answers`` of ``tp`` all, or none when they do not fit in what is left of the budget."""
        size = sum(len(answer.records) for answer in answers)
        if self.records + size > self.budget:
            return False
        self._held.setdefault(purpose, {}).setdefault(tp, []).extend(answers)
        self.records += size
        return True

    def of(self, purpose: Held) -> Mapping[TP, Sequence[PartitionFetch]]:
        """The answers held for ``purpose``, by partition (left held)."""
        return self._held.get(purpose, {})

    def take(self, purpose: Held, tp: TP) -> list[PartitionFetch]:
        """The answers held of ``tp`` for ``purpose``, no longer held."""
        taken = self._held.get(purpose, {}).pop(tp, [])
        self.records -= sum(len(answer.records) for answer in taken)
        return taken

    def holding(self, purposes: Sequence[Held], tp: TP, offset: int) -> PartitionFetch | None:
        """The first answer held of ``tp`` (for ``purposes``, in their order) that covers ``offset``, from
        it on (``after``); None when none does."""
        for purpose in purposes:
            for answer in self.of(purpose).get(tp, ()):
                if answer.error is None and answer.fetch_offset <= offset < answer.read_to:
                    return after(answer, offset)
        return None


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


def replayed(answer: PartitionFetch, position: int) -> PartitionFetch:
    """``answer`` as the broker would send it for ``position`` inside it: the records from there on,
    those before in ``earlier`` (the batch holding a position comes whole), its bytes not counted."""
    if position <= answer.fetch_offset:
        return replace(answer, size=0)
    before = [r for r in answer.records if r.offset < position]

    def earlier(start: int) -> list[Record]:
        return [r for r in before if r.offset >= start]

    return replace(after(answer, position), earlier_from=answer.fetch_offset, earlier=earlier)


def replaying(fetch: Fetch, held: Mapping[TP, Sequence[PartitionFetch]]) -> Fetch:
    """``fetch``, but a position inside an answer ``held`` of its partition is answered from it
    (``replayed``), not asked of the broker: a search whose answer lies in the shape check's sample of
    the partition's last records read that batch again (14 KB a partition, on the local broker one
    pass and a batch for a restore read whole after its search)."""

    def fetched(
        positions: Mapping[TP, int], until: Mapping[TP, int] | None, limits: Mapping[TP, int], wait_ms: int | None
    ) -> Mapping[TP, PartitionFetch]:
        replays = {tp: r for tp, at in positions.items() if (r := _replay(held.get(tp, ()), at)) is not None}
        asked = {tp: at for tp, at in positions.items() if tp not in replays}
        return {**(fetch(asked, until, limits, wait_ms) if asked else {}), **replays}

    return fetched


def _replay(answers: Iterable[PartitionFetch], position: int) -> PartitionFetch | None:
    for answer in answers:
        if answer.error is None and answer.fetch_offset <= position < answer.read_to:
            return replayed(answer, position)
    return None
