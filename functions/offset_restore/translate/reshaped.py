"""Topics whose shape changed in the restore: told apart, then mapped group by group when the records
say how (docs/translation.md, "A topic whose shape changed").

A restore that writes into a target topic of another partition count, or re-routes keys, spreads each
source partition's records over several target partitions. Mapping source partition ``p`` onto target
partition ``p`` then resumes the group on records of other source partitions and never on the
partitions that received the rest: records lost. So a changed topic is first *detected* (``Shapes``):
the partition counts differ (the snapshot records the source's), or a target record carries the
source-partition header of another partition, or holds a source record another partition had.

Where every restored record carries its source partition and offset, the topic is *mapped*
(``TopicIndex``, ``map_group``): a group resumes on each target partition at the first record it has
not processed (a record of source partition ``q`` with source offset at or past the group's committed
offset on ``q``), so no record any of its source positions needs is skipped; the processed records
after that point are counted as duplicates. Otherwise the group is held whole: an entry that says why
and what would end it, and apply writes none of its partitions.

Pure but for ``sample_reads`` and ``read_index``, which read through the fetch rounds they are given.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from offset_restore.formats.plan import PlanEntry
from offset_restore.kafka.model import RECORD_HEADERS, TP, LogBounds, PartitionFetch, Record
from offset_restore.reading.rounds import AtEnd, FetchRounds, Served, read_forward
from offset_restore.snapshot.fingerprint import DEFAULT_PARTITION_HEADER, record_fingerprint
from offset_restore.snapshot.headers import int_header
from offset_restore.snapshot.model import PartitionSnapshot
from offset_restore.translate.never_restored import never_restored

__all__ = [
    "DEFAULT_PARTITION_HEADER",
    "MAX_INDEX_RECORDS",
    "SAMPLE_TAIL_RECORDS",
    "Reshaped",
    "Shapes",
    "TopicIndex",
    "held_entries",
    "map_group",
    "read_index",
    "sample_reads",
]

_NAME = operator.itemgetter(0)
"""A header's name, for ``map`` over a whole answer's headers at C speed."""

SAMPLE_TAIL_RECORDS = 64
"""The sample of a target partition: the batch holding its last records (most groups are caught up:
their evidence is the source's last records)."""
MAX_INDEX_RECORDS = 5_000_000
"""A changed topic is read whole, 40 bytes of memory a record (240 MB at most, in a translate function
of 1,769 MB); past this many records its groups are held, with why."""


@dataclass
class Reshaped:
    """A source topic whose shape changed, why, and (when its records carry both headers) its index."""

    topic: str
    target_topic: str
    why: str
    index: TopicIndex | None = None
    unmappable: str | None = None
    """Why the topic cannot be mapped (no source-partition header, a read that failed, too large)."""


@dataclass
class Shapes:
    """What tells a changed topic: partition counts, then a sample of each target partition's records."""

    offset_header: str
    partition_header: str
    changed: dict[str, str] = field(default_factory=dict)
    """Source topic -> why its shape changed."""
    carries_partition: set[str] = field(default_factory=set)
    """Target topics on which a sampled record carries the source-partition header."""
    _prints: dict[str, dict[str, tuple[int, int] | None]] = field(default_factory=dict)

    def compare_counts(
        self, topics: Mapping[str, str], source: Mapping[str, int], target: Mapping[str, int], widest: Mapping[str, int]
    ) -> None:
        """``topics``: source topic -> target topic; ``widest``: one past the highest source partition a
        group commits on (what an older snapshot, which did not record the count, still tells)."""
        for topic, onto in topics.items():
            had, has = source.get(topic), target.get(onto)
            if has is None:
                continue
            if had is not None and had != has:
                self.changed[topic] = (
                    f"topic {topic} had {had} partitions on the source and {onto} has {has} on the target"
                )
            elif widest.get(topic, 0) > has:
                self.changed[topic] = (
                    f"source partition {widest[topic] - 1} of {topic} does not exist on the target ({onto} has {has} "
                    "partitions)"
                )

    def add_records(self, topic: str, partition: int, records: Iterable[tuple[int, str]]) -> None:
        """Source records of one partition the snapshot read, as (offset, fingerprint); one that two partitions
        both hold tells nothing."""
        prints = self._prints.setdefault(topic, {})
        for offset, print_ in records:
            at = (partition, offset)
            prints[print_] = at if prints.get(print_, at) == at else None

    def check_sample(self, topic: str, tp: TP, records: Iterable[Record]) -> None:
        """Records of target partition ``tp`` (of source topic ``topic``): one that says it came from
        another source partition (its header, or a keyed record whose content and source offset are
        another partition's record in the snapshot) changes the topic's shape."""
        prints = self._prints.get(topic, {})
        for record in records:
            why = self._foreign(tp, record, prints)
            if why and topic not in self.changed:
                self.changed[topic] = why

    def check_headers(self, topic: str, tp: TP, records: Iterable[Record]) -> None:
        """Any records read of target partition ``tp`` (of source topic ``topic``), not only the sample: one
        whose source-partition header names another partition changes the topic's shape. The header alone
        is compared (a look-up per record), so every read of the plan can afford it."""
        name = self.partition_header
        records = records if isinstance(records, list) else list(records)
        every = itertools.chain.from_iterable(map(RECORD_HEADERS, records))
        if name not in map(_NAME, every):  # the common case, at C speed: no record says where it came from
            return
        for record in records:
            if topic in self.changed:
                return
            for header, _ in record.headers:
                if header == name:
                    self.carries_partition.add(tp.topic)
                    why = self._elsewhere(tp, record, int_header(record, name))
                    if why:
                        self.changed[topic] = why
                    break

    def check_contents(self, topic: str, tp: TP, records: Iterable[Record], prints: Mapping[int, str]) -> None:
        """Records read of target partition ``tp`` without the offset header, by content: a keyed one that is
        the copy of another source partition's record the snapshot read changes the topic's shape.
        ``prints``: the fingerprints of those records by offset, computed once (``ReadHeaders``)."""
        known = self._prints.get(topic)
        if not known or not prints or topic in self.changed:
            return  # no record read without the offset header (a restore that wrote it on every one)
        for record in records:
            printed = prints.get(record.offset) if record.key is not None else None
            seen = known.get(printed) if printed is not None else None
            if seen is not None and seen[0] != tp.partition:
                self.changed[topic] = (
                    f"record {record.offset} of {tp} is the source's record {seen[1]} of partition {seen[0]} "
                    "(same key and content): the restore moved records between partitions"
                )
                return

    def _elsewhere(self, tp: TP, record: Record, source_partition: int | None) -> str | None:
        """Why ``record`` of ``tp`` came from another source partition, by its header (None: it did not say so)."""
        if source_partition is None or source_partition == tp.partition:
            return None
        return (
            f"record {record.offset} of {tp} carries {self.partition_header} = {source_partition}: the restore "
            "moved records between partitions"
        )

    def _foreign(self, tp: TP, record: Record, prints: Mapping[str, tuple[int, int] | None]) -> str | None:
        source_partition = int_header(record, self.partition_header)
        if source_partition is not None:
            self.carries_partition.add(tp.topic)
            return self._elsewhere(tp, record, source_partition)
        if record.key is None or not prints:
            return None  # unkeyed records may repeat across partitions: their content proves nothing
        printed = record_fingerprint(record, self.offset_header)
        seen = prints.get(printed)
        claimed = int_header(record, self.offset_header)
        if seen is None or seen[0] == tp.partition or (claimed is not None and claimed != seen[1]):
            return None
        return (
            f"record {record.offset} of {tp} is the source's record {seen[1]} of partition {seen[0]} "
            "(same key and content): the restore moved records between partitions"
        )


def sample_reads(rounds: FetchRounds, bounds: Mapping[TP, LogBounds]) -> dict[TP, list[PartitionFetch]]:
    """The batches holding each partition's last ``SAMPLE_TAIL_RECORDS`` records, up to its end when
    the plan began (in shared rounds, usually one answer each): where a re-partitioning restore's
    records of every source partition meet, and where the caught-up groups' evidence lies. Read on
    where an answer stopped short of the end: a batch holding the sample's first offset may begin far
    before it, and a limit then ends before the last records (whose header says where a restore
    declared complete stopped). A partition that fails to answer is left out."""
    sampled: dict[TP, list[PartitionFetch]] = {}

    def take(tp: TP, outcome: Served | AtEnd) -> int | None:
        if not isinstance(outcome, Served):
            return None
        sampled.setdefault(tp, []).append(outcome.answer)
        return outcome.answer.read_to if outcome.answer.read_to < bounds[tp].end else None

    failed = read_forward(
        rounds, {tp: max(b.start, b.end - SAMPLE_TAIL_RECORDS) for tp, b in bounds.items() if b.end > b.start}, take
    )
    for tp in failed:
        sampled.pop(tp, None)
    return sampled


def _longs() -> array[int]:
    return array("q")


@dataclass
class _Source:
    """The records of one source partition on one target partition, in target order."""

    targets: array[int] = field(default_factory=_longs)
    offsets: array[int] = field(default_factory=_longs)
    """Their source offsets."""
    ascending: bool = True
    """Whether the source offsets ascend in target order (a restore that kept each partition's order):
    then both arrays are searched by bisection, else scanned."""


@dataclass
class _Part:
    """One target partition of a changed topic, read whole: each record's offset, source offset (-1:
    the record lacks the header) and timestamp, and its records per source partition."""

    offsets: array[int] = field(default_factory=_longs)
    source_offsets: array[int] = field(default_factory=_longs)
    timestamps: array[int] = field(default_factory=_longs)
    by_source: dict[int, _Source] = field(default_factory=dict)
    unknown: array[int] = field(default_factory=_longs)
    """The target offsets of the records whose source is not known (a header missing)."""
    repeated: array[int] = field(default_factory=_longs)
    """The target offsets of the records whose source record the topic holds more than once (``mark_repeats``)."""

    def add(self, record: Record, partition_header: str, offset_header: str) -> None:
        source, source_offset = int_header(record, partition_header), int_header(record, offset_header)
        self.offsets.append(record.offset)
        self.source_offsets.append(-1 if source_offset is None else source_offset)
        self.timestamps.append(record.timestamp)
        if source is None or source_offset is None:
            self.unknown.append(record.offset)
            return
        found = self.by_source.get(source)
        if found is None:
            found = self.by_source[source] = _Source()
        found.ascending = found.ascending and (not found.offsets or found.offsets[-1] < source_offset)
        found.targets.append(record.offset)
        found.offsets.append(source_offset)

    @property
    def first_unknown(self) -> int | None:
        return self.unknown[0] if self.unknown else None

    def top(self, q: int) -> int | None:
        found = self.by_source.get(q)
        if found is None:
            return None
        return found.offsets[-1] if found.ascending else max(found.offsets)

    def first_from(self, q: int, committed: int) -> int | None:
        """The lowest source offset of source partition ``q`` at or past ``committed`` on this partition."""
        found = self.by_source.get(q)
        if found is None:
            return None
        if found.ascending:
            at = bisect.bisect_left(found.offsets, committed)
            return found.offsets[at] if at < len(found.offsets) else None
        return min((s for s in found.offsets if s >= committed), default=None)

    def first_needed(self, q: int, committed: int | None) -> int | None:
        """The first record of source partition ``q`` the group has not processed (all of them when it
        has no commit there)."""
        found = self.by_source.get(q)
        if found is None:
            return None
        if committed is None:
            return found.targets[0]
        if found.ascending:
            at = bisect.bisect_left(found.offsets, committed)
            return found.targets[at] if at < len(found.targets) else None
        pairs = zip(found.targets, found.offsets, strict=True)
        return min((t for t, s in pairs if s >= committed), default=None)

    def processed_after(self, q: int, committed: int, resume: int) -> int:
        """Records of ``q`` the group processed (source offset below ``committed``) at or after ``resume``."""
        found = self.by_source.get(q)
        if found is None:
            return 0
        if found.ascending:
            return max(0, bisect.bisect_left(found.offsets, committed) - bisect.bisect_left(found.targets, resume))
        return sum(1 for t, s in zip(found.targets, found.offsets, strict=True) if t >= resume and s < committed)

    def unknown_after(self, resume: int) -> int:
        return len(self.unknown) - bisect.bisect_left(self.unknown, resume)

    def repeated_after(self, resume: int) -> int:
        return len(self.repeated) - bisect.bisect_left(self.repeated, resume)

    def record_at(self, offset: int) -> tuple[int, int | None, int] | None:
        """(offset, source offset, timestamp) of the record at ``offset``, for the plan's anchor."""
        at = bisect.bisect_left(self.offsets, offset)
        if at < len(self.offsets) and self.offsets[at] == offset:
            source = self.source_offsets[at]
            return offset, source if source >= 0 else None, self.timestamps[at]
        return None


@dataclass
class TopicIndex:
    """Every record of every partition of a changed target topic, as far as its headers say."""

    bounds: dict[int, LogBounds]
    parts: dict[int, _Part]

    def top(self, q: int) -> int | None:
        """The highest source offset of source partition ``q`` restored anywhere in the topic."""
        highest = [top for part in self.parts.values() if (top := part.top(q)) is not None]
        return max(highest, default=None)

    def first_from(self, q: int, committed: int) -> int | None:
        """The lowest source offset of source partition ``q`` at or past ``committed`` restored anywhere in
        the topic (None: the restore holds none)."""
        found = [first for part in self.parts.values() if (first := part.first_from(q, committed)) is not None]
        return min(found, default=None)


def read_index(
    rounds: FetchRounds, topic: str, bounds: Mapping[int, LogBounds], offset_header: str, partition_header: str
) -> TopicIndex | str:
    """Read every partition of ``topic`` whole (shared rounds), or say why it could not be."""
    total = sum(b.end - b.start for b in bounds.values())
    if total > MAX_INDEX_RECORDS:
        return f"its {total:,} records are more than the {MAX_INDEX_RECORDS:,} a plan reads of a changed topic"
    parts = {p: _Part() for p in bounds}

    def take(tp: TP, outcome: Served | AtEnd) -> int | None:
        if isinstance(outcome, AtEnd):
            return None
        for record in outcome.answer.records:
            if record.offset < bounds[tp.partition].end:
                parts[tp.partition].add(record, partition_header, offset_header)
        read_to = outcome.answer.read_to
        return read_to if read_to < bounds[tp.partition].end else None

    starts = {TP(topic, p): b.start for p, b in bounds.items() if b.end > b.start}
    failed = read_forward(rounds, starts, take)
    if failed:
        tp, failure = next(iter(failed.items()))
        return f"reading {tp} whole failed: {failure.reason}"
    _mark_repeats(parts)
    return TopicIndex(dict(bounds), parts)


def _mark_repeats(parts: Mapping[int, _Part]) -> None:
    """Records whose source record the topic holds twice or more (a region restored again, on one
    partition or on two): a group reads each copy, so each counts as a possible duplicate."""
    for q in sorted({q for part in parts.values() for q in part.by_source}):
        ordered = sorted(s for part in parts.values() if (found := part.by_source.get(q)) for s in found.offsets)
        twice = {a for a, b in itertools.pairwise(ordered) if a == b}
        if not twice:
            continue
        for part in parts.values():
            found = part.by_source.get(q)
            if found is not None:
                part.repeated.extend(t for t, s in zip(found.targets, found.offsets, strict=True) if s in twice)
    for part in parts.values():
        part.repeated = array("q", sorted(part.repeated))


# -- one group ----------------------------------------------------------------------------------------


def held_entries(group: str, partitions: Sequence[PartitionSnapshot], target_topic: str, why: str) -> list[PlanEntry]:
    """The group's entries of a changed topic it cannot be mapped on: unmapped, holding the group."""
    return [
        PlanEntry(
            group=group,
            topic=p.topic,
            partition=p.partition,
            target_topic=target_topic,
            source_offset=p.committed_offset,
            status="unmapped",
            reason=why,
            metadata=p.metadata,
            holds_group=True,
        )
        for p in partitions
    ]


@dataclass(frozen=True)
class _Need:
    """Where a group must resume on one target partition, and what it costs."""

    resume: int
    binding: int
    """The source partition whose record sits at the resume point (-1: a record of unknown source, or none)."""
    duplicates: int
    doubts: list[str]


def _need_on(part: _Part, bounds: LogBounds, committed: Mapping[int, int], sources: Iterable[int]) -> _Need:
    """The earliest record any of the group's source positions needs on this target partition."""
    candidates: list[tuple[int, int]] = []
    doubts: list[str] = []
    for q in sources:
        first = part.first_needed(q, committed.get(q))
        if first is not None:
            candidates.append((first, q))
            if q not in committed:
                doubts.append(f"the group had no commit on source partition {q}: all of its records are read")
    if part.first_unknown is not None:
        candidates.append((part.first_unknown, -1))
    resume, binding = min(candidates, default=(bounds.end, -1))
    duplicates = sum(part.processed_after(q, c, resume) for q, c in committed.items())
    unknown, repeated = part.unknown_after(resume), part.repeated_after(resume)
    if unknown:
        doubts.append(f"{unknown} records from {resume} on lack a source header: each may be processed twice")
    if repeated:
        doubts.append(f"{repeated} records from {resume} on are copies of a record the restore wrote more than once")
    return _Need(resume, binding, duplicates + unknown + repeated, doubts)


def _pending(
    committed: Mapping[int, int], partitions: Mapping[int, PartitionSnapshot], index: TopicIndex
) -> str | None:
    """A source partition whose records up to the group's position are not all restored yet, while
    the source had more: the group waits (as a pending entry does), lest its processed records arrive
    after it resumed at a partition's end."""
    for q, c in sorted(committed.items()):
        top = index.top(q)
        p = partitions[q]
        last = p.log_end - 1 if p.log_end is not None else None
        if (top is None or top < c) and last is not None and (top is None or top < last) and c > 0:
            reached = "no record" if top is None else f"source offset {top}"
            return (
                f"the restore has reached {reached} of source partition {q}; the group resumes at {c} there "
                f"and the source had records up to {last}. If the restore is finished, declare it complete "
                f'(plan --restore-complete {p.topic}/{q}, or "restore_complete" in the execution input): the '
                "group then resumes where its first unprocessed restored record lies"
            )
    return None


def map_group(
    group: str,
    partitions: Sequence[PartitionSnapshot],
    target_topic: str,
    index: TopicIndex,
    uncommitted: Iterable[int] = (),
    complete: Iterable[int] = (),
) -> list[PlanEntry]:
    """One entry per target partition of the changed topic: the group resumes where the first record
    it has not processed lies, on every target partition, so nothing any source position needs is
    skipped; exact when no record it processed follows and every record's source is known. ``complete``:
    source partitions whose restore was declared finished (``restore_complete``): not waited for."""
    committed = {p.partition: p.committed_offset for p in partitions}
    by_partition = {p.partition: p for p in partitions}
    known = {q for part in index.parts.values() for q in part.by_source}
    sources = sorted(known | set(committed) | set(uncommitted))
    waiting = _pending({q: c for q, c in committed.items() if q not in set(complete)}, by_partition, index)
    entries: list[PlanEntry] = []
    for t in sorted(index.parts):
        part, bounds = index.parts[t], index.bounds[t]
        need = _need_on(part, bounds, committed, sources)
        head = by_partition.get(need.binding) or partitions[0]
        entries.append(_entry(group, head, target_topic, t, committed, need, part, bounds, waiting))
    if entries and not waiting:
        _counted(
            entries[0], _lost_before(committed, index), _never_restored(committed, by_partition, index, set(complete))
        )
    return entries


def _counted(first: PlanEntry, lost: Mapping[int, int], unread: Mapping[int, int]) -> None:
    """The group's counts, said once, on its first entry (the entries are per target partition, and a
    record of one source partition may lie on any of them: no entry's anchor tells what one lacks)."""
    if lost:
        first.lost_before = sum(lost.values())
        said = ", ".join(f"source partition {q}: {n:,}" for q, n in sorted(lost.items()))
        first.reason = f"{first.reason}; records the group had not processed missing before the restored ones: {said}"
    if unread:
        first.never_restored = sum(unread.values())
        said = ", ".join(f"source partition {q}: at most {n:,} records" for q, n in sorted(unread.items()))
        first.reason = f"{first.reason}; the restore was declared complete: never restored, {said}"


def _lost_before(committed: Mapping[int, int], index: TopicIndex) -> dict[int, int]:
    """Per source partition, the records the group had not processed that the restore lacks before the first
    of them it holds (anywhere in the topic): retention or a gap of the backup took them."""
    lost: dict[int, int] = {}
    for q, c in committed.items():
        first = index.first_from(q, c)
        if first is not None and first > c:
            lost[q] = first - c
    return lost


def _never_restored(
    committed: Mapping[int, int], partitions: Mapping[int, PartitionSnapshot], index: TopicIndex, complete: set[int]
) -> dict[int, int]:
    """Per source partition declared complete, at most how many records the group had not processed the
    restore never brought (offsets from its position to the source's last at the snapshot)."""
    unread: dict[int, int] = {}
    for q in sorted(complete & set(committed)):
        top, p = index.top(q), partitions[q]
        last = p.log_end - 1 if p.log_end is not None else None
        if last is not None and (count := never_restored(committed[q], top, last)):
            unread[q] = count
    return unread


def _entry(
    group: str,
    head: PartitionSnapshot,
    target_topic: str,
    t: int,
    committed: Mapping[int, int],
    need: _Need,
    part: _Part,
    bounds: LogBounds,
    waiting: str | None,
) -> PlanEntry:
    held = PlanEntry(
        group=group,
        topic=head.topic,
        partition=head.partition,
        target_topic=target_topic,
        target_partition=t,
        source_offset=head.committed_offset,
        metadata=head.metadata,
        source_positions=dict(committed),
        status="pending",
        reason=waiting,
    )
    if waiting:
        return held
    at_end = need.resume >= bounds.end
    anchor = part.record_at(part.offsets[-1] if at_end and len(part.offsets) else need.resume)
    exact = need.duplicates == 0 and not need.doubts
    said = [
        f"re-partitioned topic: resume at the first record on {target_topic}/{t} the group has not processed"
        if not at_end
        else f"re-partitioned topic: every record on {target_topic}/{t} was processed by the group: resume at its end",
        f"{need.duplicates} records processed before follow it" if need.duplicates else "",
        *need.doubts,
    ]
    return PlanEntry.model_validate(
        held.model_dump()
        | {
            "target_offset": need.resume,
            "method": "end" if at_end else "header",
            "exact": exact,
            "max_duplicates": need.duplicates,
            "status": "mapped",
            "reason": "; ".join(s for s in said if s),
            "anchor_offset": anchor[0] if anchor else None,
            "anchor_source_offset": anchor[1] if anchor else None,
            "anchor_timestamp": anchor[2] if anchor else None,
        }
    )
