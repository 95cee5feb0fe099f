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
import sys
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from offset_restore.kafka.model import RECORD_OFFSET, TP, PartitionFetch, Record
from offset_restore.snapshot.fingerprint import record_fingerprint
from offset_restore.snapshot.headers import parse_offset_header
from offset_restore.translate.resume_points import running_max

__all__ = ["Ends", "Fall", "Met", "ReadHeaders", "ReadPartition", "Twice", "skipped_offsets"]

_NO_HEADER = -1
"""A record read that carries no offset header (or one that is no number)."""
_SKIPPED = -2
"""An offset that holds no record a consumer reads: a transaction marker, or an aborted record."""
BELOW = 16
"""Records below a position read after a resume point that ``Twice`` names, for the proof to compare."""
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


@dataclass(frozen=True, slots=True)
class Fall:
    """The first record read whose offset header is not above every header read before it (a restore
    not written in order there): its offset, its header, and the highest header before it."""

    offset: int
    source: int
    above: int


@dataclass(frozen=True, slots=True)
class Twice:
    """What the plan read at or after a resume point of records the group processed: ``seen`` records carry
    a header below its position (the first of them ``first``, as (offset, header)); ``possible`` adds the
    records there that may be such copies too: those without the header in a partition whose records carry
    it, and a lone record whose header is at or past the position between two below it (a header that lies
    on the copy of a processed record, as a stray's would: it is not proven unprocessed)."""

    seen: int
    possible: int
    first: tuple[int, int]
    below: tuple[tuple[int, int], ...] = ()
    """The first few of the ``seen`` records, as (offset, header): the proof compares their content with the
    snapshot's evidence (a header may lie the other way too)."""
    lone: tuple[tuple[int, int], ...] = ()
    """The first few of the lone records ``possible`` counts, as (offset, header), for the same comparison."""


class ReadPartition:
    """What the plan read of one target partition: each offset's header, and what the proof asks of them."""

    def __init__(self) -> None:
        self.offsets: array[int] = array("q")
        self.values: array[int] = array("q")
        self.highest: array[int] = array("q")
        """The running maximum of ``values`` once indexed (empty before)."""
        self.keyed = False
        """Whether any record read carries the offset header."""
        self.prints: dict[int, str] = {}
        """The fingerprint of each record read without the header, by offset."""
        self.gap_prints: dict[int, str] = {}
        """The fingerprint of each record read whose next record's header skips source offsets, by offset: the
        record before a resume point in a gap, whose header alone would be believed (``Met.printed``)."""
        self.spans: list[tuple[int, int]] = []
        """The offset ranges the reads covered whole (records, markers, aborted and compacted-away offsets)."""
        self._fall: tuple[int, Fall | None] | None = None
        """The first fall and the entry count it was found at (recomputed after more reads)."""
        self._merged: tuple[int, list[tuple[int, int]]] | None = None
        """``spans`` merged into runs, and the span count they were merged at."""

    def index(self) -> None:
        if len(self.highest) == len(self.offsets):
            return
        ordered = all(map(operator.lt, self.offsets, itertools.islice(self.offsets, 1, None)))  # at C speed
        if not ordered:  # answers overlapped or came out of order (a sample of the end, then the start on)
            self.offsets, self.values = _in_order(self.offsets, self.values)
        self.highest = running_max(self.values)

    def fall(self) -> Fall | None:
        """The first entry whose header is not above the running maximum before it; at C speed (a dense
        plan's proof asks it of every partition it read)."""
        self.index()
        if self._fall is not None and self._fall[0] == len(self.offsets):
            return self._fall[1]
        later = itertools.islice(self.values, 1, None)
        falls = list(map(operator.le, later, self.highest))  # header <= the highest before it (or none)
        found: Fall | None = None
        at = -1
        while found is None:
            try:
                at = falls.index(True, at + 1)
            except ValueError:
                break
            if self.values[at + 1] >= 0:  # a record without the header, or a marker, is no fall
                found = Fall(self.offsets[at + 1], self.values[at + 1], self.highest[at])
        self._fall = (len(self.offsets), found)
        return found

    def past(self, c: int, before: int, limit: int) -> list[tuple[int, int]]:
        """Up to ``limit`` records read before offset ``before`` whose header is ``c`` or more, lowest
        offsets first, as (offset, source offset); indexed first (``ReadHeaders.partition``)."""
        first = bisect.bisect_left(self.highest, c)  # the running maximum only grows
        offsets, values = self.offsets, self.values
        if first == len(offsets) or offsets[first] >= before:
            return []  # the common case: the record there carries c or more (it raised the maximum)
        found: list[tuple[int, int]] = []
        for i in range(first, len(offsets)):
            if offsets[i] >= before or len(found) >= limit:
                break
            if values[i] >= c:
                found.append((offsets[i], values[i]))
        return found

    def headers_around(self, resume: int) -> tuple[int, int] | None:
        """The offset headers of the records at ``resume`` and at ``resume - 1`` when the plan read both and
        both carry one (None otherwise: ``ReadHeaders.ends`` walks): the common case of ``ends``, without its
        objects; indexed first."""
        offsets = self.offsets
        at = bisect.bisect_left(offsets, resume)
        if not 0 < at < len(offsets) or offsets[at] != resume or offsets[at - 1] != resume - 1:
            return None
        after, before = self.values[at], self.values[at - 1]
        return (after, before) if after >= 0 and before >= 0 else None

    def printed_near(self, resume: int) -> bool:
        """Whether the plan kept the content of the record at ``resume`` or just before it (a header gap there)."""
        return resume - 1 in self.gap_prints or resume in self.gap_prints

    def covered(self, start: int, end: int) -> bool:
        """Whether the reads covered every offset of ``[start, end)``."""
        if self._merged is None or self._merged[0] != len(self.spans):
            merged: list[tuple[int, int]] = []
            for first, past in sorted(self.spans):
                if merged and first <= merged[-1][1]:
                    merged[-1] = (merged[-1][0], max(merged[-1][1], past))
                else:
                    merged.append((first, past))
            self._merged = (len(self.spans), merged)
        runs = self._merged[1]
        at = bisect.bisect_right(runs, (start, float("inf"))) - 1
        return end <= start or (at >= 0 and runs[at][0] <= start and runs[at][1] >= end)

    def twice(self, resume: int, c: int) -> Twice | None:
        """``Twice`` of the entries at or after offset ``resume`` (None: none read carries a header below
        ``c``)."""
        fall = self.fall()  # indexed
        at = bisect.bisect_left(self.offsets, resume)
        if fall is None:  # headers only grow: those below c come first, at C speed
            below = self.values[at : bisect.bisect_left(self.highest, c, lo=at)]
            seen = len(below) - below.count(_NO_HEADER) - below.count(_SKIPPED)
            if not seen:
                return None
            last = self.values.index(self.highest[-1])  # the last record with the header
            unkeyed = self.values[at : last + 1].count(_NO_HEADER) if self.keyed else 0
            found = tuple(
                itertools.islice(
                    ((o, v) for o, v in zip(self.offsets[at : at + len(below)], below, strict=True) if v >= 0), BELOW
                )
            )
            return Twice(seen, seen + unkeyed, found[0], found)
        return self._counted(at, c)

    def _counted(self, at: int, c: int) -> Twice | None:
        """``twice`` record by record, for a partition whose headers fall back somewhere."""
        seen, possible, unkeyed = 0, 0, 0
        found: list[tuple[int, int]] = []
        lonely: list[tuple[int, int]] = []
        before = next((v for v in reversed(self.values[:at]) if v >= 0), -1)
        below, lone = before < c, None  # the last header was below c (or none); the last record, if lone
        for offset, value in zip(self.offsets[at:], self.values[at:], strict=True):
            if 0 <= value < c:
                seen, possible, unkeyed = seen + 1, possible + 1 + unkeyed + (lone is not None), 0
                if lone is not None and len(lonely) < BELOW:
                    lonely.append(lone)
                below, lone = True, None
                if len(found) < BELOW:
                    found.append((offset, value))
            elif value >= c:
                possible, unkeyed = possible + unkeyed, 0
                below, lone = False, (offset, value) if below else None
            elif value == _NO_HEADER and self.keyed:
                unkeyed += 1  # inside the restore when a record with the header follows
        return Twice(seen, possible, found[0], tuple(found), tuple(lonely)) if found else None


def _in_order(offsets: array[int], values: array[int]) -> tuple[array[int], array[int]]:
    """The entries sorted by offset, one an offset: the last one added where reads overlapped (as a dict keeps
    them). Each answer adds its entries in order, so they form runs, and a partition read whole has one run
    holding nearly all of them; that one is kept as it is (sliced, at C speed), and only the others' entries
    (the sample of the end, the search's windows) are placed among its entries one by one."""
    ends = [i + 1 for i in itertools.compress(itertools.count(), map(operator.ge, offsets, offsets[1:]))]
    start, end = max(zip([0, *ends], [*ends, len(offsets)], strict=True), key=lambda run: run[1] - run[0])
    if 2 * (end - start) < len(offsets):  # no run holds most: sort every entry
        pairs = dict(zip(offsets, values, strict=True))
        ordered = array("q", sorted(pairs))
        return ordered, array("q", map(pairs.__getitem__, ordered))
    run, others = offsets[start:end], {}
    for i in itertools.chain(range(start), range(end, len(offsets))):  # in the order added: the last one stays
        offset = offsets[i]
        if i < start:  # added before the run: kept only where the run has no entry of that offset
            at = bisect.bisect_left(run, offset)
            if at < len(run) and run[at] == offset:
                continue
        others[offset] = values[i]
    merged, numbers, taken = array("q"), array("q"), 0
    for offset in sorted(others):
        at = bisect.bisect_left(run, offset, taken)
        merged.extend(run[taken:at])
        numbers.extend(values[start + taken : start + at])
        taken = at + (at < len(run) and run[at] == offset)  # the run's own entry of that offset is replaced
        merged.append(offset)
        numbers.append(others[offset])
    merged.extend(run[taken:])
    numbers.extend(values[start + taken : end])
    return merged, numbers


class ReadHeaders:
    """The offset header of every record read, per target partition; and the headers of the answers of the
    latest round, parsed, for the strategy that reads them next (``sources``): each header is parsed once."""

    def __init__(self, header: str) -> None:
        self.header = header
        self._parts: dict[TP, ReadPartition] = {}
        self._latest: dict[TP, tuple[PartitionFetch, list[int | None] | None]] = {}
        """The answers of the latest round and their records' offset headers. The answer itself is held, so
        ``sources`` tells it by identity: no other answer can take its place while it is held."""

    def add(
        self, tp: TP, records: Iterable[Record], skipped: Iterable[int] = (), span: tuple[int, int] | None = None
    ) -> list[int | None] | None:
        """Keep what one answer read of ``tp``: its records, ``skipped``, the offsets it held that carry no
        record a consumer reads (``skipped_offsets``), and ``span``, the offsets it covered whole (None: only
        its records' own). Returns each record's offset header (None: none); None when one holds no offset
        (the strategy that reads it words the refusal)."""
        part = self._parts.get(tp)
        if part is None:
            part = self._parts[tp] = ReadPartition()
        if span is not None and span[1] > span[0]:
            part.spans.append(span)
        name = self.header
        for offset in skipped:
            part.offsets.append(offset)
            part.values.append(_SKIPPED)
        records = records if isinstance(records, list) else list(records)
        numbers = _answer_headers(records, name)
        if numbers is not None:  # the common case, at C speed: every record has the header, in one encoding
            part.offsets.fromlist(list(map(RECORD_OFFSET, records)))
            part.values.fromlist(numbers)
            if span is None:
                part.spans.extend((record.offset, record.offset + 1) for record in records)
            part.keyed = part.keyed or bool(numbers)
            _print_gaps(part, records, numbers, name)
            return cast(list[int | None], numbers)  # its own list: nothing else holds it
        sources: list[int | None] = []
        malformed = False
        for record in records:
            number = _NO_HEADER
            for header, value in record.headers:
                if header == name:
                    if value is not None and len(value) < 19 and value.isdigit():
                        number = int(value)  # decimal text, as ``parse_offset_header`` reads it, without two calls
                    else:
                        number = _number(value)
                        malformed = malformed or (number == _NO_HEADER and value is not None)
                    break
            part.offsets.append(record.offset)
            part.values.append(number)
            if span is None:
                part.spans.append((record.offset, record.offset + 1))
            if number == _NO_HEADER:
                sources.append(None)
                part.prints[record.offset] = record_fingerprint(record, name)
            else:
                sources.append(number)
                part.keyed = True
        _print_gaps(part, records, sources, name)
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

    def partition(self, tp: TP) -> ReadPartition | None:
        """What the plan read of ``tp``, indexed (None: nothing): a reader asking of every position of a partition
        in turn takes it once."""
        part = self._parts.get(tp)
        if part is not None:
            part.index()
        return part

    def fall(self, tp: TP) -> Fall | None:
        """The first record read of ``tp`` whose header falls back (None: the headers read only grow)."""
        part = self._parts.get(tp)
        return part.fall() if part is not None else None

    def covered(self, tp: TP, start: int, end: int) -> bool:
        """Whether the plan's reads of ``tp`` covered every offset of ``[start, end)``."""
        part = self._parts.get(tp)
        return end <= start or (part is not None and part.covered(start, end))

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


def _walk(part: ReadPartition, index: int, offset: int, step: int, log_start: int) -> Met | bool | None:
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
            if value == _NO_HEADER:
                return Met(offset, None, part.prints.get(offset))
            return Met(offset, value, part.gap_prints.get(offset))
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


def _print_gaps(part: ReadPartition, records: list[Record], sources: Sequence[int | None], name: str) -> None:
    """Keep the fingerprint of each record whose next record's header is more than one above its own (a gap
    in the source offsets: records lost, or a header that lies about the record it is on). Found at C speed;
    a restore in order without losses has none."""
    missing = sources.count(None)
    if missing == len(sources):  # no header at all (a replica): no gap to tell
        return
    if missing:
        skips: Iterable[bool] = map(_skips, sources, itertools.islice(sources, 1, None))
    else:  # every record has the header: the comparison runs in C
        numbers = cast(Sequence[int], sources)
        skips = map(operator.lt, map(operator.add, numbers, itertools.repeat(1)), itertools.islice(numbers, 1, None))
    for i in itertools.compress(range(len(sources) - 1), skips):
        part.gap_prints[records[i].offset] = record_fingerprint(records[i], name)


def _skips(before: int | None, after: int | None) -> bool:
    return before is not None and after is not None and after > before + 1


def _answer_headers(records: list[Record], name: str) -> list[int] | None:
    """Each record's header ``name`` when every record carries it first at one place among its headers, all
    in one of ``parse_offset_header``'s encodings (read the same way); None otherwise, for the record-by-record
    path. Built from list and array operations run in C: a dense plan parses a million headers."""
    if not records:
        return []
    at = next((i for i, (key, _) in enumerate(records[0].headers) if key == name), None)
    if at is None:
        return None
    try:
        pairs = [record.headers[at] for record in records]
    except IndexError:
        return None
    keys = [key for key, _ in pairs]
    if keys.count(name) != len(keys):
        return None
    if at and any(key == name for record in records for key, _ in record.headers[:at]):
        return None  # a record with the header twice: the first is its value
    values = [value for _, value in pairs]
    return None if None in values else _numbers(cast(list[bytes], values))  # None: a header without a value


def _numbers(values: list[bytes]) -> list[int] | None:
    """``values`` read as ``parse_offset_header`` reads them, when all are decimal text of at most 18 digits,
    or all 8 bytes read big-endian to at most ``LARGEST_BINARY_OFFSET`` (None otherwise). Eight digits are
    never read as binary: a digit's byte first puts the number past that. Each value's bytes are looked at
    as few times as can be (a dense plan reads a million): lengths once, the first bytes as one slice."""
    if all(map(bytes.isdigit, values)) and max(map(len, values)) < 19:
        return list(map(int, values))
    joined = b"".join(values)
    if len(joined) != 8 * len(values) or max(map(len, values)) != 8 or joined[::8] != bytes(len(values)):
        return None  # not 8 bytes each, or a first byte not 0: 2**56 or more, or negative (read record by record)
    numbers = array("q")
    numbers.frombytes(joined)
    if sys.byteorder == "little":
        numbers.byteswap()
    return numbers.tolist()


def _number(value: bytes | None) -> int:
    try:
        number = parse_offset_header(value)
    except ValueError:
        return _NO_HEADER
    return _NO_HEADER if number is None else number
