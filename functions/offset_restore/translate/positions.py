"""What every strategy reads and answers: one distinct source position with the snapshot's evidence
around it (``Position``), the answer for it (``Decision``), and what the strategies read to answer
(``TranslateStats``). A position is translated once, then copied to every group at it."""

from __future__ import annotations

import functools
import re
import struct
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol

from offset_restore.formats.plan import Method
from offset_restore.kafka.model import TP
from offset_restore.translate.reshaped import Reshaped

__all__ = [
    "Decision",
    "Evidence",
    "EvidenceRecord",
    "Position",
    "PositionKey",
    "TranslateStats",
    "evidence_of",
    "last_evidence",
    "last_mark",
    "pack_evidence",
    "unpack_evidence",
]


@dataclass(frozen=True, slots=True)
class Evidence:
    """A source record the snapshot read (``RecordEvidence``'s fields), held compactly."""

    offset: int
    timestamp: int
    fingerprint: str


_PRINT_BYTES = 16
"""A standard fingerprint's 128 bits; with its offset and timestamp, one evidence record packs in 32 bytes."""
_HEX = re.compile("[0-9a-f]*")


class EvidenceRecord(Protocol):
    """``Evidence`` or the snapshot's ``RecordEvidence``."""

    @property
    def offset(self) -> int: ...
    @property
    def timestamp(self) -> int: ...
    @property
    def fingerprint(self) -> str: ...


def pack_evidence(records: Sequence[EvidenceRecord]) -> bytes | tuple[Evidence, ...]:
    """Evidence records as 32 bytes each when every fingerprint is the standard 32 lower-case hex digits
    (``snapshot/fingerprint.py``), else as they are. A plan holds the records before every distinct
    position: at 240,000 positions, objects cost about 500 bytes a position more than packed bytes.
    Packed as every offset and timestamp (native 64-bit integers), then every fingerprint's bytes: one
    conversion each, not one a record (a dense plan packs a quarter of a million)."""
    prints = [e.fingerprint for e in records]
    joined = "".join(prints)
    if set(map(len, prints)) <= {2 * _PRINT_BYTES} and _HEX.fullmatch(joined):
        try:
            numbers = _pairs(len(records)).pack(*[n for e in records for n in (e.offset, e.timestamp)])
        except struct.error:  # an offset or timestamp beyond 64 bits
            pass
        else:
            return numbers + bytes.fromhex(joined)
    return tuple(map(evidence_of, records))  # given back as they were


@functools.cache
def _pairs(count: int) -> struct.Struct:
    """``count`` records' offsets and timestamps, packed as ``array("q")`` holds them (faster than an array
    built from a list, for the few records a position has)."""
    return struct.Struct(f"={2 * count}q")


def unpack_evidence(packed: bytes | tuple[Evidence, ...]) -> tuple[Evidence, ...]:
    if isinstance(packed, tuple):
        return packed
    count = len(packed) // (2 * _PRINT_BYTES)
    numbers = array("q")
    numbers.frombytes(packed[: count * _PRINT_BYTES])
    hexed = packed[count * _PRINT_BYTES :].hex()
    width = 2 * _PRINT_BYTES
    return tuple(Evidence(numbers[2 * i], numbers[2 * i + 1], hexed[i * width : (i + 1) * width]) for i in range(count))


def last_evidence(packed: bytes | tuple[Evidence, ...]) -> Evidence | None:
    """``unpack_evidence(packed)[-1]`` (None: empty), without unpacking the others."""
    if isinstance(packed, tuple):
        return packed[-1] if packed else None
    count = len(packed) // (2 * _PRINT_BYTES)
    if not count:
        return None
    offset, timestamp = _pairs(1).unpack_from(packed, (count - 1) * _PRINT_BYTES)
    return Evidence(offset, timestamp, packed[len(packed) - _PRINT_BYTES :].hex())


def last_mark(packed: bytes | tuple[Evidence, ...]) -> tuple[int, str] | None:
    """The offset and fingerprint of ``last_evidence(packed)`` (None: empty), without building it."""
    if isinstance(packed, tuple):
        return (packed[-1].offset, packed[-1].fingerprint) if packed else None
    count = len(packed) // (2 * _PRINT_BYTES)
    if not count:
        return None
    return _pairs(1).unpack_from(packed, (count - 1) * _PRINT_BYTES)[0], packed[-_PRINT_BYTES:].hex()


class Position(NamedTuple):
    """One distinct source position and what the snapshot knows of it. Immutable (one is shared by every
    group at it); a tuple, for a plan builds one for each distinct position it reads (tens of thousands
    in a dense plan), at a third of a frozen dataclass's cost."""

    source: TP
    target: TP
    committed: int
    log_start: int | None
    log_end: int | None
    next: Evidence | None
    packed_before: bytes | tuple[Evidence, ...]
    """The records before the position, oldest first (``pack_evidence``): read through ``before``.
    Only the fingerprint and timestamp strategies and caught-up groups need them."""
    last_origin: int | None = None
    """The origin offset (the restore's offset header, ``RecordEvidence.origin_offset``) of the last
    record before the position the snapshot read: where a failback's group has processed to on the
    cluster the restore came from (the origin strategy). None: no such record, or it carries none."""
    next_origin: int | None = None
    """The origin offset of the snapshot's next record (None: no next record, or it carries none)."""
    top: Evidence | None = None
    """The source's last restored record below the position, when the group processed records produced on
    the source after the restore (``PartitionSnapshot.origin_top``; a migration's snapshot finds it)."""
    top_origin: int | None = None
    """``top``'s origin offset."""
    own_since: int | None = None
    """The timestamp of the source's first own record after ``top`` (None: not seen)."""
    origin_floor: int | None = None
    """The first origin record the group may not have processed, from the source read whole
    (``PartitionSnapshot.origin_floor``; None: not read)."""
    origin_twice: int = 0
    """With ``origin_floor``: records the group processed that it reads again from there."""

    @property
    def before(self) -> tuple[Evidence, ...]:
        return unpack_evidence(self.packed_before)

    @property
    def last_before(self) -> Evidence | None:
        """The last record before the position (None: none), unpacked alone: the shape check and the
        proof ask it of every position."""
        return last_evidence(self.packed_before)

    @property
    def last_source_record(self) -> int | None:
        """The offset of the source's last data record at snapshot time, if known."""
        if self.next is None and self.packed_before:
            return self.before[-1].offset  # read by the snapshot itself: no transaction marker
        return self.log_end - 1 if self.log_end is not None else None


class Decision(NamedTuple):
    """The answer for one distinct position (a tuple: a dense plan makes one a position, tens of thousands, at
    a third of a frozen dataclass's cost); ``_replace`` gives one with fields changed."""

    status: Literal["mapped", "pending", "unmapped"]
    target_offset: int | None = None
    method: Method | None = None
    exact: bool = False
    max_duplicates: int | None = None
    reason: str | None = None
    expected_fingerprint: str | None = None
    """The target record is the copy of the snapshot's next record, with this fingerprint: apply
    verifies it."""
    anchor: tuple[int, int | None, int | None] | None = None
    """(offset, source offset, timestamp) of the target record at the resume point (or the last one
    before it when resuming at the end), as the plan read it: apply refuses a target that changed."""
    never_read: int | None = None
    """With the restore declared complete: at most this many source records the group had not processed
    are not on the target and never will be (offsets counted; the source's records there were not read)."""
    unprovable: bool = False
    """Not exact for what the target already holds (records moved before the position, copied twice, or
    identical ones): records the target gains later change nothing, so no later plan proves it."""


@dataclass
class TranslateStats:
    positions: int = 0
    reshaped: dict[str, Reshaped] = field(default_factory=dict)
    """Source topics whose shape changed in the restore (``translate/reshaped.py``), their positions
    taken out of the strategies: ``plan_entries`` maps or holds their groups whole."""
    fetch_rounds: dict[str, int] = field(default_factory=dict)
    fetches: dict[str, int] = field(default_factory=dict)
    records_read: dict[str, int] = field(default_factory=dict)
    rounds_per_partition: dict[str, dict[TP, int]] = field(default_factory=dict)
    bytes_read: dict[str, int] = field(default_factory=dict)
    target_topic_ids: dict[str, str] = field(default_factory=dict)
    """Each target topic's id as the plan read it (``PlanEntry.target_topic_id``)."""
    target_ends: dict[TP, int] = field(default_factory=dict)
    """Each target partition's log end as the plan read it: what an entry's group can read again at most."""
    out_of_order: dict[TP, str] = field(default_factory=dict)
    """Partitions the header strategy found out of order (and read whole), with why."""


PositionKey = tuple[str, int, int]  # source topic, partition, committed offset


def evidence_of(record: EvidenceRecord) -> Evidence:
    """A snapshot's ``RecordEvidence`` as the compact ``Evidence`` a plan holds."""
    return Evidence(record.offset, record.timestamp, record.fingerprint)
