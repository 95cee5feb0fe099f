"""Every offset header the plan's reads met on the target, whatever strategy read it: the proof asks of it
whether a record the plan saw lies before a group's resume point and carries a source offset at or past
the group's position (translate/proof.py). Kept as two arrays a partition (16 bytes a record read), indexed
once for the proof: sorted by offset, with the running maximum of the source offsets."""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable

from offset_restore.kafka.model import TP, FetchedRecord
from offset_restore.snapshot.headers import parse_offset_header

__all__ = ["ReadHeaders"]


class _Partition:
    def __init__(self) -> None:
        self.offsets: array[int] = array("q")
        self.values: array[int] = array("q")
        self.highest: array[int] = array("q")
        """The running maximum of ``values`` once indexed (empty before)."""

    def index(self) -> None:
        if len(self.highest) == len(self.offsets):
            return
        ordered = all(a < b for a, b in zip(self.offsets, self.offsets[1:], strict=False))
        if not ordered:  # answers overlapped or came out of order: sort, one record an offset
            pairs = dict(zip(self.offsets, self.values, strict=True))
            self.offsets = array("q", sorted(pairs))
            self.values = array("q", (pairs[o] for o in self.offsets))
        top = -1
        self.highest = array("q", [top := max(top, v) for v in self.values])


class ReadHeaders:
    """The offset header of every record read, per target partition."""

    def __init__(self, header: str) -> None:
        self.header = header
        self._parts: dict[TP, _Partition] = {}

    def add(self, tp: TP, records: Iterable[FetchedRecord]) -> None:
        part = self._parts.get(tp)
        if part is None:
            part = self._parts[tp] = _Partition()
        name = self.header
        for record in records:
            for header, value in record.headers:
                if header == name:
                    number = _number(value)
                    if number is not None:
                        part.offsets.append(record.offset)
                        part.values.append(number)
                    break

    def past(self, tp: TP, c: int, before: int, limit: int) -> list[tuple[int, int]]:
        """Up to ``limit`` records read before offset ``before`` whose header is ``c`` or more, lowest
        offsets first, as (offset, source offset)."""
        part = self._parts.get(tp)
        if part is None:
            return []
        part.index()
        first = bisect.bisect_left(part.highest, c)  # the running maximum only grows
        found: list[tuple[int, int]] = []
        for i in range(first, len(part.offsets)):
            if part.offsets[i] >= before or len(found) >= limit:
                break
            if part.values[i] >= c:
                found.append((part.offsets[i], part.values[i]))
        return found


def _number(value: bytes | None) -> int | None:
    try:
        return parse_offset_header(value)
    except ValueError:
        return None
