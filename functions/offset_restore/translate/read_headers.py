"""What the plan's reads met on the target, whatever strategy read it, for the proof (translate/proof.py):
every record's offset header (or that it carries none), and the offsets that hold no record a consumer
reads (transaction markers, aborted transactions). The proof asks of it whether a record the plan saw lies
before a group's resume point and carries a source offset at or past the group's position, and what the
records at either side of a resume point are. Kept as two arrays a partition (16 bytes an offset read),
indexed once for the proof: sorted by offset, with the running maximum of the source offsets."""

from __future__ import annotations

import bisect
import itertools
import operator
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from offset_restore.kafka.model import TP, FetchedRecord, PartitionFetch
from offset_restore.snapshot.fingerprint import fingerprint
from offset_restore.snapshot.headers import parse_offset_header

__all__ = ["Ends", "Met", "ReadHeaders", "skipped_offsets"]

_NO_HEADER = -1
"""A record read that carries no offset header (or one that is no number)."""
_SKIPPED = -2
"""An offset that holds no record a consumer reads: a transaction marker, or an aborted record."""
WALK = 1024
"""Offsets walked from a resume point to the record on either side before that record is called not read."""


@dataclass(frozen=True, slots=True)
class Met:
    """A record the plan read, as the proof identifies it: its offset header (None: none), and without one
    its fingerprint (``snapshot/fingerprint.py``)."""

    offset: int
    source: int | None
    printed: str | None = None


@dataclass(frozen=True, slots=True)
class Ends:
    """The records at either side of a resume point T as the plan read them: ``at`` the first one a consumer
    reads from T and ``before`` the last one before T (None: not read, or ``nothing_before``). In a
    partition whose records carry the header, records without it are passed over: they are no source
    record's copy (written to the target by something else)."""

    at: Met | None
    before: Met | None
    nothing_before: bool = False


class _Partition:
    def __init__(self) -> None:
        self.offsets: array[int] = array("q")
        self.values: array[int] = array("q")
        self.highest: array[int] = array("q")
        """The running maximum of ``values`` once indexed (empty before)."""
        self.keyed = False
        """Whether any record read carries the offset header."""
        self.prints: dict[int, str] = {}
        """The fingerprint of each record read without the header, by offset."""

    def index(self) -> None:
        if len(self.highest) == len(self.offsets):
            return
        ordered = all(map(operator.lt, self.offsets, itertools.islice(self.offsets, 1, None)))  # at C speed
        if not ordered:  # answers overlapped or came out of order: sort, one entry an offset
            pairs = dict(zip(self.offsets, self.values, strict=True))
            self.offsets = array("q", sorted(pairs))
            self.values = array("q", map(pairs.__getitem__, self.offsets))
        self.highest = array("q", itertools.accumulate(self.values, max))


class ReadHeaders:
    """The offset header of every record read, per target partition; and the headers of the answers of the
    latest round, parsed, for the strategy that reads them next (``sources``): each header is parsed once."""

    def __init__(self, header: str) -> None:
        self.header = header
        self._parts: dict[TP, _Partition] = {}
        self._latest: dict[TP, tuple[PartitionFetch, list[int | None] | None]] = {}
        """The answers of the latest round and their records' offset headers. The answer itself is held, so
        ``sources`` tells it by identity: no other answer can take its place while it is held."""

    def add(self, tp: TP, records: Iterable[FetchedRecord], skipped: Iterable[int] = ()) -> list[int | None] | None:
        """Keep what one answer read of ``tp``: its records, and ``skipped``, the offsets it held that
        carry no record a consumer reads (``skipped_offsets``). Returns each record's offset header (None:
        none); None when one holds no offset (the strategy that reads it words the refusal)."""
        part = self._parts.get(tp)
        if part is None:
            part = self._parts[tp] = _Partition()
        name = self.header
        for offset in skipped:
            part.offsets.append(offset)
            part.values.append(_SKIPPED)
        sources: list[int | None] = []
        malformed = False
        for record in records:
            number = _NO_HEADER
            for header, value in record.headers:
                if header == name:
                    number = _number(value)
                    malformed = malformed or (number == _NO_HEADER and value is not None)
                    break
            part.offsets.append(record.offset)
            part.values.append(number)
            if number == _NO_HEADER:
                sources.append(None)
                part.prints[record.offset] = fingerprint(record.key, record.value, record.headers, exclude_header=name)
            else:
                sources.append(number)
                part.keyed = True
        return None if malformed else sources

    def latest(self, answers: Mapping[TP, tuple[PartitionFetch, list[int | None] | None]]) -> None:
        """The answers of a round, each with what ``add`` returned for it (the answers of the round before
        are let go)."""
        self._latest = dict(answers)

    def sources(self, tp: TP, answer: PartitionFetch) -> list[int | None] | None:
        """The offset headers of ``answer``'s records when it is an answer of the latest round (None: it is
        not, or one of its headers holds no offset)."""
        held = self._latest.get(tp)
        return held[1] if held is not None and held[0] is answer else None

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

    def prints(self, tp: TP) -> Mapping[int, str]:
        """The fingerprints of the records read of ``tp`` without the offset header, by offset."""
        part = self._parts.get(tp)
        return part.prints if part is not None else {}

    def keyed(self, tp: TP) -> bool:
        """Whether any record the plan read of ``tp`` carries the offset header."""
        part = self._parts.get(tp)
        return part is not None and part.keyed

    def ends(self, tp: TP, resume: int, log_start: int) -> Ends:
        """What the plan read at either side of ``resume`` (``Ends``), walking over offsets read that hold no
        record a consumer reads; unknown where an offset on the way was not read."""
        part = self._parts.get(tp)
        if part is None:
            return Ends(None, None)
        part.index()
        at = bisect.bisect_left(part.offsets, resume)
        after, before = _walk(part, at, resume, 1, log_start), _walk(part, at - 1, resume - 1, -1, log_start)
        return Ends(_met(after), _met(before), before is False)


def _walk(part: _Partition, index: int, offset: int, step: int, log_start: int) -> Met | bool | None:
    """The first record a consumer reads from ``offset`` on in direction ``step``, entry ``index`` on
    (False: none down to the log's start; None: an offset on the way was not read, or the walk ran out)."""
    passed = (_SKIPPED, _NO_HEADER) if part.keyed else (_SKIPPED,)
    for _ in range(WALK):
        if offset < log_start:
            return False
        if not 0 <= index < len(part.offsets) or part.offsets[index] != offset:
            return None
        value = part.values[index]
        if value not in passed:
            return Met(offset, None, part.prints.get(offset)) if value == _NO_HEADER else Met(offset, value)
        index, offset = index + step, offset + step
    return None


def _met(found: Met | bool | None) -> Met | None:
    return found if isinstance(found, Met) else None


def skipped_offsets(answer: PartitionFetch) -> list[int]:
    """The offsets of ``answer`` at or after its fetch offset that hold no record a consumer reads."""
    skipped = [m for m in answer.markers if m >= answer.fetch_offset]
    for batch in answer.aborted:
        skipped.extend(range(max(batch.base_offset, answer.fetch_offset), batch.next_offset))
    return skipped


def _number(value: bytes | None) -> int:
    try:
        number = parse_offset_header(value)
    except ValueError:
        return _NO_HEADER
    return _NO_HEADER if number is None else number
