"""What the header strategy read of each partition, and the records of it to compare with the
snapshot's evidence (translate/strategies/header.py's ``by_header``; docs/translation.md).

A search and a whole read keep every window (for the order check) and the fingerprints of the
records that may have to be compared with the snapshot's evidence: the records carrying a committed
or next offset, the records without the header once the partition has shown one with it (the
restore's first batch may lack it), and in a whole read the records whose header breaks the order
with the recent records whose header they fall below (a wrong header) and, once any does, the record
each position resumes at. Where the evidence is seen on
a record whose header does not say so, it is a sighting (``translate/evidence_placement.py`` places
it). A restore in order fingerprints nothing more than its committed and next records.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import cast

from offset_restore.kafka.model import RECORD_OFFSET, RECORD_TIMESTAMP, TP, AbortedBatch, PartitionFetch, Record
from offset_restore.reading.held import HeldAnswers
from offset_restore.snapshot.fingerprint import record_fingerprint
from offset_restore.translate.positions import Position
from offset_restore.translate.restore_order import ObservedPartition
from offset_restore.translate.search import KeyOf

__all__ = [
    "MAX_HELD_RECORDS",
    "ORDER_LOOKBACK",
    "EvidencePrints",
    "HeaderReads",
    "evidence_prints",
]


class HeaderReads:
    """What the header strategy read of each partition: every window (for the order check), the
    fingerprints of the records that may have to be compared with the snapshot's evidence, and where
    the evidence was seen on records whose header does not say so (``sightings``)."""

    def __init__(
        self,
        key_of: KeyOf,
        header: str,
        fingerprint_keys: Mapping[TP, set[int]],
        positions: Iterable[Position],
        held: HeldAnswers,
        parsed: Parsed | None = None,
    ) -> None:
        self.key_of, self.header, self.fingerprint_keys = key_of, header, fingerprint_keys
        self.parsed = parsed
        """The offset headers the plan's reads parsed of the answer they just read (``ReadHeaders.sources``)."""
        self.positions: dict[TP, list[Position]] = defaultdict(list)
        for pos in positions:
            self.positions[pos.target].append(pos)
        self.evidence: dict[TP, EvidencePrints] = {}
        """Built for a partition only when one of its records needs it: a restore in order never does."""
        self.observed: dict[TP, ObservedPartition] = defaultdict(ObservedPartition)
        self.prints: dict[TP, dict[int, str]] = defaultdict(dict)
        self.sightings: dict[TP, dict[int, tuple[int, ...]]] = defaultdict(dict)
        self.disproven: dict[TP, set[int]] = defaultdict(set)
        """Offsets of sighted records whose header names a source record the evidence shows is another."""
        self.evidence_at: dict[TP, dict[int, str]] = {}
        self.order: dict[TP, _OrderState] = {}
        self.keyed: set[TP] = set()
        """Partitions a record with the header was read from: a partition without any (a replica) has
        its records without the header compared with nothing, which would cost a fingerprint each."""
        self.unchecked: set[TP] = set()
        """Partitions with records without the header read before any with it, not compared."""
        self.held: dict[TP, list[Record]] = {}
        """A whole read's records without the header before its first with it, until that one comes."""
        self.kept = held
        """Where the windows the search read are held for a whole read to take instead of reading them
        again (``kept_windows``), while the plan's budget lasts. Every window, not only those the broker
        sent uncut: the first windows of a plan come before its broker is known to send whole batches
        (the local broker is seen doing so at its first answer over a limit), and a whole read that
        begins where one of them does takes it, whatever the broker."""
        self.aborted: dict[TP, list[AbortedBatch]] = defaultdict(list)
        """The batches of aborted transactions every answer held (``translate/aborted_spans.py``)."""
        self.markers: dict[TP, set[int]] = defaultdict(set)
        """The offsets of the transaction markers every answer held."""
        self.ended: dict[TP, set[tuple[int, int]]] = defaultdict(set)
        """(first offset, abort marker) of the aborted transactions whose marker an answer held."""
        self.bytes = 0

    def keys(self, tp: TP, answer: PartitionFetch) -> list[int | None]:
        """The offset header of each record of ``answer``: as the plan's reads parsed it when it is the answer
        they just read, else parsed here (``key_of``: a header that holds no offset is refused by name)."""
        known = self.parsed(tp, answer) if self.parsed is not None else None
        return known if known is not None else [self.key_of(tp, record) for record in answer.records]

    def print_at(self, tp: TP, offset: int) -> str | None:
        """The fingerprint of the record read at ``offset`` of ``tp`` (None: not read, or not wanted)."""
        return self.prints[tp].get(offset) if tp in self.prints else None

    def forget(self, tps: Iterable[TP]) -> None:
        """Drop what was read of ``tps`` once their positions are decided."""
        for tp in tps:
            for held in (self.prints, self.observed, self.sightings, self.order, self.evidence, self.disproven):
                held.pop(tp, None)
            self.evidence_at.pop(tp, None)
            self.held.pop(tp, None)
            self.kept_windows(tp)
            self.aborted.pop(tp, None)
            self.markers.pop(tp, None)
            self.ended.pop(tp, None)
            self.keyed.discard(tp)
            self.unchecked.discard(tp)

    def window(self, tp: TP, answer: PartitionFetch, keys: list[int | None]) -> list[tuple[int, int | None, int]]:
        """Record one answer a search read (``keys``: its records' source offsets, parsed); returns its
        (offset, source offset, timestamp)s."""
        self._note(tp, answer, keys, whole=False)
        records = answer.records
        return list(zip(map(RECORD_OFFSET, records), keys, map(RECORD_TIMESTAMP, records), strict=True))

    def _note(self, tp: TP, answer: PartitionFetch, keys: list[int | None], *, whole: bool) -> None:
        """Record one answer: its bytes, markers and aborted batches, and the fingerprints the evidence
        asks for. A record without the header is compared with the snapshot's evidence once the partition
        has shown a record with it (the restore's first records may have been written without it); before
        that, a search notes it unchecked and a whole read holds it (``whole``)."""
        self.bytes += answer.size
        if answer.aborted:
            self.aborted[tp].extend(answer.aborted)
        if answer.markers:
            self.markers[tp].update(answer.markers)
        if answer.aborted_ends:
            self.ended[tp].update(answer.aborted_ends)
        wanted = self.fingerprint_keys.get(tp, set())
        if tp not in self.keyed and any(key is not None for key in keys):
            self.keyed.add(tp)
        records = answer.records
        if None not in keys:  # every record has the header (the common case): those the evidence names, at C speed
            for record in itertools.compress(records, map(wanted.__contains__, keys)):
                self.prints[tp][record.offset] = record_fingerprint(record, self.header)
            return
        for record, key in zip(records, keys, strict=True):
            if key is None:
                self._header_less(tp, record, whole)
            elif key in wanted:
                self.prints[tp][record.offset] = record_fingerprint(record, self.header)

    def _header_less(self, tp: TP, record: Record, whole: bool) -> None:
        if tp in self.keyed:
            self.look(tp, record)
        elif not whole:
            self.unchecked.add(tp)
        elif tp not in self.unchecked:
            held = self.held.setdefault(tp, [])
            held.append(record)
            if len(held) > MAX_HELD_RECORDS:  # a replica without headers, or a long foreign prefix
                del self.held[tp]
                self.unchecked.add(tp)

    def whole(self, tp: TP, answer: PartitionFetch) -> list[int | None]:
        """``window`` for the next answer of a partition read whole from its start, returning its records'
        source offsets (None: no header): also compares with the evidence every record whose header breaks
        the order (and the record whose header it falls below), where a wrong header would hide a record. A
        restore in order has none."""
        keys = self.keys(tp, answer)
        state = self.order.get(tp)
        if state is None:
            self.unchecked.discard(tp)  # a whole read starts over what a search left unchecked
            state = self.order[tp] = _OrderState(sorted({pos.committed for pos in self.positions.get(tp, ())}))
        look = partial(self.look, tp)
        if tp not in self.keyed and any(key is not None for key in keys):
            self.keyed.add(tp)  # the records held before the first header are compared now, in order
            for record in self.held.pop(tp, []):
                self.look(tp, record)
                if record.offset in self.sightings[tp]:
                    state.placed(record, self.sightings[tp][record.offset][-1], look)
        self._note(tp, answer, keys, whole=True)
        if keys and None not in keys and state.extends(answer.records, cast(list[int], keys), look):
            return keys  # headers that only grow: nothing to compare (the common case)
        sighted = self.sightings.get(tp, {})
        for record, key in zip(answer.records, keys, strict=True):
            if key is not None:
                state.next(record, key, look)
            elif record.offset in sighted:  # a record without the header the evidence placed
                state.placed(record, sighted[record.offset][-1], look)
        return keys

    def look(self, tp: TP, record: Record) -> None:
        """Fingerprint one record and note it when the snapshot's evidence has that fingerprint."""
        evidence = self.evidence.get(tp)
        if evidence is None:
            evidence = self.evidence[tp] = evidence_prints(self.positions.get(tp, ()))
        if not evidence:
            return
        printed = self.prints[tp].get(record.offset) or record_fingerprint(record, self.header)
        self.prints[tp][record.offset] = printed
        sources = evidence.get(printed)
        if sources is not None:
            self.sightings[tp][record.offset] = sources
            key = self.key_of(tp, record)
            if key is not None and key not in sources and self._print_of(tp, key) not in (None, printed):
                self.disproven[tp].add(record.offset)  # the snapshot's record ``key`` is another record

    def _print_of(self, tp: TP, source: int) -> str | None:
        """The snapshot's fingerprint of source record ``source`` of ``tp``, if its evidence has it."""
        by_source = self.evidence_at.get(tp)
        if by_source is None:
            by_source = self.evidence_at[tp] = {o: fp for fp, offsets in self.evidence[tp].items() for o in offsets}
        return by_source.get(source)

    def observe(self, tp: TP, position: int, answer: PartitionFetch, keys: list[int | None]) -> None:
        """A window the search read, kept for the order check, and held for a whole read of the partition
        unless it is a replay of a held sample (``replaying``: no bytes of its own), which stays held as
        that: held twice, its records would count twice against the one budget."""
        self.observed[tp].add(position, answer.read_to, self.window(tp, answer, keys))
        if answer.size or not answer.records:
            self.kept.keep("search", tp, [answer])

    def kept_windows(self, tp: TP) -> list[PartitionFetch]:
        """The windows held of ``tp`` (taken): a whole read's chain (``reading/held.py``)."""
        return self.kept.take("search", tp)

    def fallen(self, tp: TP) -> str | None:
        """Why the headers read of ``tp`` already fall back (None: they do not, so far)."""
        observed = self.observed.get(tp)
        return observed.fallen if observed is not None else None


MAX_HELD_RECORDS = 10_000
"""Records without the header a whole read holds until its first record with the header: past that,
the records before it are not compared with the evidence, and a group whose next record is not in
the restore resumes at the log's start (translate/strategies/whole_read.py, ``_from_the_start``)."""

Parsed = Callable[[TP, PartitionFetch], list[int | None] | None]
"""``ReadHeaders.sources``: an answer's offset headers, if the reads parsed them already."""

EvidencePrints = dict[str, tuple[int, ...]]
"""A partition's evidence: fingerprint -> the source offsets of the snapshot's records with it."""


ORDER_LOOKBACK = 16
"""Records with the header a whole read keeps (references, not copies) to compare with the evidence
when a later header falls below theirs: the most recent ones that raised the highest header."""


class _OrderState:
    """Where a whole read stands in a partition's headers: the recent records that raised the
    highest header seen. A header that falls below one of them means one of the two lies (or a
    region was written twice): both are compared with the snapshot's evidence.

    It also holds the record each position resumes at by the headers (the first to raise the highest
    header to or past it). Once the headers fall back anywhere, each is compared with the evidence too:
    a wrong header there (a processed record's copy saying a later source offset) would hide a record
    read twice, and the recent records above may have moved it out of reach."""

    def __init__(self, positions: list[int]) -> None:
        self.peak_key = -1
        self.run: deque[list] = deque(maxlen=ORDER_LOOKBACK)  # [record, key, looked]
        self.positions = positions
        """The positions of the partition, ascending."""
        self.resumes: list[Record] | None = []
        """The records positions resume at, until the headers fall back (None after: each is looked at)."""

    def extends(self, records: Sequence[Record], keys: Sequence[int], look: Callable[[Record], None]) -> bool:
        """Take a whole answer at once when its headers only grow past the highest so far."""
        if keys[0] <= self.peak_key or not all(map(operator.lt, keys, keys[1:])):  # at C speed
            return False
        low = bisect.bisect_right(self.positions, self.peak_key)
        for c in self.positions[low : bisect.bisect_right(self.positions, keys[-1])]:
            at = bisect.bisect_left(keys, c)
            if keys[at] > c:  # no header names c: the record before may be c under a header that lies
                self._before_gap(records[at - 1] if at else None, look)
            self._resumes_at(records[at], look)
        self.peak_key = keys[-1]
        held = min(len(keys), ORDER_LOOKBACK)
        self.run.extend([r, k, False] for r, k in zip(records[-held:], keys[-held:], strict=True))
        return True

    def placed(self, record: Record, source: int, look: Callable[[Record], None]) -> None:
        """A record without the header that the evidence says is (at most) ``source``, looked at."""
        if source > self.peak_key:
            self._raised(record, source, look)
            self.run.append([record, source, True])
        else:
            self._below(source, look)

    def next(self, record: Record, key: int, look: Callable[[Record], None]) -> None:
        if key > self.peak_key:
            self._raised(record, key, look)
            self.run.append([record, key, False])
            return
        look(record)
        self._below(key, look)

    def _raised(self, record: Record, key: int, look: Callable[[Record], None]) -> None:
        """``record`` raises the highest header to ``key``: where a position lies between, it resumes there."""
        at = bisect.bisect_right(self.positions, self.peak_key)
        if at < len(self.positions) and self.positions[at] <= key:
            if self.positions[at] < key:
                self._before_gap(None, look)
            self._resumes_at(record, look)
        self.peak_key = key

    def _before_gap(self, record: Record | None, look: Callable[[Record], None]) -> None:
        """Look at the record before a resume point whose header jumps past a position (``record``; None:
        the last that raised the highest header). A record lost in the restore leaves such a gap, and so
        does the next record numbered as the lost one: its content, the group's next record, tells."""
        if record is None and self.run:
            record = self.run[-1][0]
        if record is not None:
            look(record)

    def _resumes_at(self, record: Record, look: Callable[[Record], None]) -> None:
        if self.resumes is None:
            look(record)
        elif not self.resumes or self.resumes[-1] is not record:
            self.resumes.append(record)

    def _below(self, key: int, look: Callable[[Record], None]) -> None:
        """Look at the records held whose header ``key`` falls below (or meets), and from now on at every
        record a position resumes at."""
        for held in self.run:
            if held[1] >= key and not held[2]:
                look(held[0])
                held[2] = True
        for record in self.resumes or ():
            look(record)
        self.resumes = None


def evidence_prints(positions: Iterable[Position]) -> EvidencePrints:
    """One partition's evidence by fingerprint (the records before each position, and its next one)."""
    found: dict[str, set[int]] = defaultdict(set)
    for pos in positions:
        for e in [*pos.before, *([pos.next] if pos.next else [])]:
            found[e.fingerprint].add(e.offset)
    return {fp: tuple(sorted(offsets)) for fp, offsets in found.items()}
