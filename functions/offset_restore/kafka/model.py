"""Plain value types that the Kafka adapter returns, so no other module sees kafka-python's types."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, runtime_checkable

__all__ = [
    "NO_TIMESTAMP",
    "ONE_BATCH",
    "POINT_READ_BYTES",
    "RECORD_HEADERS",
    "RECORD_OFFSET",
    "RECORD_TIMESTAMP",
    "SHARE_GROUP",
    "TP",
    "AbortedBatch",
    "CommittedOffset",
    "FetchedRecord",
    "GroupInfo",
    "LogBounds",
    "PartitionFetch",
    "Record",
]


class TP(NamedTuple):
    """A topic partition."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}/{self.partition}"


@runtime_checkable
class Record(Protocol):
    """One record read, as every reader of records sees it. A fetch's records are the compiled reader's own
    objects (``kafka/batch_records.py``), handed on as it yields them: a dense plan reads a million, and
    building a record of our own from each took half the decoding time. ``FetchedRecord`` is one built in
    Python. Compared by identity (records read twice are two records): compare what they hold."""

    @property
    def offset(self) -> int: ...
    @property
    def timestamp(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def headers(self) -> Sequence[tuple[str, bytes | None]]: ...


class FetchedRecord(NamedTuple):
    """A ``Record`` built in Python (a test's records, a fake log's), compared by what it holds."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


NO_TIMESTAMP = -1
"""A record's timestamp when it has none (message format 0), as Kafka's Java client gives it."""

RECORD_OFFSET = operator.attrgetter("offset")
RECORD_TIMESTAMP = operator.attrgetter("timestamp")
RECORD_HEADERS = operator.attrgetter("headers")
"""A ``Record``'s offset, timestamp and headers, for ``map`` over a whole answer at C speed."""


class AbortedBatch(NamedTuple):
    """A batch of an aborted transaction an answer held and a read_committed read skipped: what its
    header says, for ``translate/aborted_spans.py`` to prove a range of offsets holds only that
    transaction without reading every batch of it. ``transaction_start`` is the first offset of the
    aborted transaction, as the broker's answer listed it."""

    base_offset: int
    next_offset: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    transaction_start: int


@dataclass(frozen=True, slots=True)
class PartitionFetch:
    """One partition's part of a fetch response: data records (control records left out) at or
    after the fetch offset, and the partition's bounds as the broker reported them."""

    fetch_offset: int
    records: Sequence[Record] = field(default_factory=list)
    high_watermark: int = -1
    log_start_offset: int = -1
    error: str | None = None
    next_offset: int = -1
    """Where the next fetch should start: past the last record or control batch read (-1: unknown)."""
    size: int = 0
    """Bytes of record batches the broker sent for this partition (what the read cost on the wire)."""
    retriable: bool = False
    """The error may pass (a leader moving, a replica not ready): the partition is asked again."""
    earlier_from: int = -1
    """Where the answer's first batch starts when that is before the fetch offset (-1: it is not)."""
    first_batch_bytes: int = 0
    """Bytes of the answer's first batch, whole (0: none): an answer over its limit may be that one
    batch (KIP-74) and nothing more, else the broker ignored the limit (``protocol.over_limit``)."""
    bytes_per_offset: float = 0.0
    """What an offset takes in this answer's whole batches (``protocol.batch_costs``; 0.0: none
    whole): how many bytes a read of a run of offsets asks for (``FetchRounds.round``'s ``reach``)."""
    largest_batch_bytes: int = 0
    """The largest whole batch of this answer (0: none): a run asks whole multiples of it, for a limit
    that ends inside a batch brings its first bytes, cut short and thrown away."""
    aborted: tuple[AbortedBatch, ...] = ()
    """The batches of aborted transactions the answer held, skipped (their offsets are covered, no
    record of theirs is returned)."""
    markers: tuple[int, ...] = ()
    """The offsets of the transaction markers (control batches) the answer held, skipped."""
    aborted_ends: tuple[tuple[int, int], ...] = ()
    """(first offset, marker offset) of each aborted transaction whose abort marker the answer held: the
    broker lists the first offset of every aborted transaction an answer's range overlaps, so a read of
    the marker alone tells where the transaction began and ended."""
    uncut: bool = False
    """The leader is one seen sending whole batches past a limit (``protocol.whole_past_limit``: it adds
    batches until the limit is reached and never cuts one, as the local broker does): a reader may then
    ask a limit that ends before records it already holds (``FetchRounds.round``'s ``stops``)."""
    earlier: Callable[[int], list[Record]] | None = field(default=None, repr=False, compare=False)
    """That batch's data records from an offset up to the fetch offset, decoded only when asked: the
    broker sends a batch whole, so a reader that will want them (the search) need not ask again."""

    @property
    def read_to(self) -> int:
        """The first offset this answer did not cover: past its last record or control batch (-1 when
        it covered nothing: an empty answer below the log's end is a partition the round left unserved)."""
        return max(self.next_offset, self.records[-1].offset + 1 if self.records else -1)


ONE_BATCH = 0
"""The limit that asks for the batch holding the position, whole, and nothing after it: the partition
goes alone in its request with a limit of one byte, and a broker sends the first batch of a request's
first partition whole however large it is (KIP-74). A larger byte limit costs what it asks: a limit
of 256 KB over 175 KB zstd batches brought each batch and 81 KB of the next, cut short and thrown
away (1.25x the partition for 50 point reads in it)."""

POINT_READ_BYTES = 16 * 1024
"""A partition's first byte limit when a read wants positions, not ranges: the producers' default
batch size. The broker sends the batch holding the position whole when it fits, and stops at the
limit: about one batch on the wire, the floor for reading one record."""


@dataclass(frozen=True, slots=True)
class LogBounds:
    """First offset still in the log, and the offset the next produced record will get."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class PartitionIdentity:
    """Which log a partition is: its topic's id (new when the topic is deleted and created again) and
    its leader's epoch (new at every leader change, the only time a log is truncated). While both are
    the same, a record read at an offset below the log end is still the record there — unless it was
    deleted from the log's start — so a check may reuse it instead of reading it again."""

    topic_id: str
    leader_epoch: int


def topic_ids(identities: Mapping[TP, PartitionIdentity]) -> dict[str, str]:
    """Each topic's id, from its partitions' identities."""
    return {tp.topic: identity.topic_id for tp, identity in identities.items()}


SHARE_GROUP = "share"
"""The kind of a share group (KIP-932, a queue): its position is a start offset per share-partition, not a
committed offset; OffsetFetch and OffsetCommit know nothing of it (``share_groups.py`` reads and writes it)."""


WRITABLE_STATES = frozenset({"Empty", "Dead", "Unknown", ""})
"""A described group's states that say no member holds it: empty, absent (Dead), or a state the broker did not
give for a group it counted no member of."""


@dataclass(frozen=True, slots=True)
class GroupInfo:
    group_id: str
    state: str
    protocol_type: str
    members: int
    error: str | None = None
    clients: tuple[str, ...] = ()
    """Each member as ``client-id from host`` (as the broker reports them): what tells an operator in
    an incident which consumer, on which machine or pod, still holds the group."""
    static_members: tuple[str, ...] = ()
    """The ``group.instance.id`` of each static member: one the broker keeps in the group after its
    consumer stops, until the session timeout it joined with ends (an explicit removal ends it sooner)."""

    @property
    def occupied(self) -> bool:
        """Whether the group may have members, so that nothing may be written into it: the one rule of the
        wait, of apply's check before each write and of the fence's check inside the write's transaction.
        Members counted; or a state other than the writable ones (a rebalance whose members left is not
        over); or, where members are not counted (``members`` -1: a group only listed,
        ``protocol.listed_groups``), any state but Empty or Dead, an unknown one included."""
        if self.members > 0:
            return True
        if self.members < 0:
            return self.state not in ("Empty", "Dead")
        return self.state not in WRITABLE_STATES


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    metadata: str | None
