"""Fetch rounds and their rules, written once for every reader of records.

Every stage reads records the same way: many partitions at a time, one fetch round after another,
each partition from its own position. What a round's answer for one partition means is decided here
and nowhere else, because each copy of these rules that once lived in a reader got one of them wrong:

- **served**: the answer covered something (it read past its fetch position), records or not (a
  transaction marker takes an offset);
- **at the end**: nothing was returned and the position is at or past the log end (the broker's
  high watermark, or the end the caller already knew, whichever is later);
- **unserved**: nothing was returned *below* the log end. This is not the end: a broker fills its
  response up to a size limit and leaves later partitions empty, one that reads partitions one by
  one stops where its wait ran out (the local broker, Tansu, when it is busy), and a batch larger
  than a partition's limit comes back cut short (unreadable; Apache Kafka sends nothing of it) unless
  its partition is the first in the request. Such a partition is asked again, first in the next
  round, the broker given ``PATIENT_WAIT_MS``; its byte limit grows only when that round too leaves
  it unserved (a busy broker's empty answer says nothing of the batch's size, and a limit grown to
  ``ONE_BATCH`` costs a request of its own for every later read). Only a partition that stays
  unserved ``max_unserved`` rounds in a row fails;
- **failed**: an error answer or no answer. When the position fell below the log start (retention
  or DeleteRecords moved it while we read), the failure says where the log starts now.

``FetchRounds.round`` classifies one round; ``read_forward`` reads partitions forward with it until
each reader is satisfied or its partition ends. Both are pure: the fetch is injected (the cluster's
``KafkaCluster.fetch`` in production, scripted answers in the unit tests).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from offset_restore.kafka.model import ONE_BATCH, POINT_READ_BYTES, TP, PartitionFetch

__all__ = [
    "ALONE_FROM",
    "MAX_PARTITION_BYTES",
    "MAX_UNSERVED_ROUNDS",
    "ONE_BATCH",
    "PATIENT_WAIT_MS",
    "POINT_READ_BYTES",
    "RUN_BYTES",
    "RUN_ROUND_BYTES",
    "SMALL_BATCH",
    "STOP_MARGIN",
    "AtEnd",
    "Failed",
    "Fetch",
    "FetchRounds",
    "Outcome",
    "Served",
    "Source",
    "Unserved",
    "fetch_from",
    "fitted_limit",
    "grown",
    "point_cost",
    "rank",
    "read_forward",
]

Fetch = Callable[[Mapping[TP, int], Mapping[TP, int] | None, Mapping[TP, int], int | None], Mapping[TP, PartitionFetch]]
"""(position, ``until`` or None, byte limit; each per partition; the broker's wait in ms or None for the
cluster's) -> one round's answer per partition. ``until`` lets the decoder stop after the first record
at or past that offset."""

MAX_PARTITION_BYTES = 8 * 1024 * 1024
"""The most a partition's limit grows to (4x for each patient round that left it unserved: its batches
are larger than the limit, and only the first partition of a request gets an oversized batch whole)."""
PATIENT_WAIT_MS = 100
"""The broker's wait in a round that asks again for partitions left unserved. A broker that reads
partitions one by one until its wait is over (the local one, Tansu) leaves the later ones empty when
it is busy: at the cluster's 10 ms, 13 readers at once saw up to 185 of 204 partitions unserved a
round, none at 100 ms (at 500 ms, the Java consumer's default, 64 readers of 1,000 partitions each
queued at it past the request timeout). Apache Kafka answers as soon as it has a byte to send
(``min_bytes`` 1), and a partition left unserved has records to send, so the wait costs it nothing."""
ALONE_FROM = 64 * 1024
"""A point read left unserved at this limit (batches larger than 64 KB: large compressed batches) is
asked next for ``ONE_BATCH``: the request it costs is nothing beside such a batch."""
RUN_BYTES = 1024 * 1024
"""The most one read of a run of wanted offsets asks of a partition (``FetchRounds.round``'s
``reach``): where 400 groups sit on 5,000 records, point reads of 16 KB cover the partition back to
back, a request each (9,000 for the dense shape's apply, each answer's framing counted too); read as
runs, a few requests a partition bring the same batches."""
RUN_ROUND_BYTES = 64 * 1024 * 1024
"""The most a round's runs ask in all, shared among the partitions read as runs (each still at least a
point read): memory holds a round's answers, decoded, and a snapshot or apply may read thousands of
partitions at once (the whole read's shares hold 64 partitions of 1 MiB for the same reason)."""

STOP_MARGIN = 0.03
"""How far short of the bytes it measured a read cut before records the reader holds asks: an answer's
bytes per offset is an average, and a limit past the first of those records brings its batch again."""

SMALL_BATCH = 12 * 1024
"""A partition whose batches are all smaller than this is read a batch at a time once an answer showed
them (``ONE_BATCH``, ``FetchRounds._fitted``): alone in its request, the broker sends the batch holding
the position whole and nothing after it. Apache Kafka fills a limit to its last byte, cutting the
batch it ends in: a shared point read of 16 KB over lz4 batches of 5 KB brought three batches for the
one wanted, and a limit of 1.25x the largest batch still a quarter of the next, thrown away (15% of a
header-less replica's plan). The request each read then costs goes out with the round's others
(``calls.pipelined``), about 100 bytes of framing each way; over batches near 16 KB a shared point
read brings one batch and little more, and the request is not worth it."""


def fitted_limit(limit: int, largest_batch: int, uncut: bool) -> int:
    """A point read's ``limit`` fitted to its partition's batches (``largest_batch`` bytes the largest seen,
    0: none yet): ``ONE_BATCH`` where all it showed were smaller than ``SMALL_BATCH``, or smaller than
    the limit from a broker that sends them ``uncut`` (it adds whole batches until the limit is reached:
    two of 14 KB for 16 KB). A limit other than a point read's (a whole read's, one grown) stays."""
    if limit != POINT_READ_BYTES:
        return limit
    return ONE_BATCH if 0 < largest_batch < (POINT_READ_BYTES if uncut else SMALL_BATCH) else limit


def point_cost(limit: int, fitted: int, largest_batch: int, batch_bytes: int) -> int:
    """The one answer to "what does a read of this partition bring": asked at ``limit``, sent as
    ``fitted`` (``fitted_limit``, or the limit itself where the reader does not fit it). A partition read
    ``ONE_BATCH`` for its size brings a batch as large as measured (``batch_bytes``; 256 KB until one was
    read: 1 MB batches cost 1 MB each); one fitted to its small batches, its largest; any other its limit.
    The plan's choice between a search and a whole read asks it, and so does a run's reach."""
    if limit == ONE_BATCH:
        return max(POINT_READ_BYTES, batch_bytes or 4 * ALONE_FROM)
    if fitted == ONE_BATCH:
        return largest_batch
    return limit


def rank(limit: int) -> int:
    """A limit's place in the order limits grow in (``ONE_BATCH`` after ``ALONE_FROM``): the larger
    of two limits a partition learned is the one it grew to last."""
    return ALONE_FROM + 1 if limit == ONE_BATCH else limit


def grown(limit: int) -> int:
    """The next limit for a partition left unserved at ``limit``: 4x, through ``ONE_BATCH`` once for
    batches over ``ALONE_FROM``, and 4x on from 256 KB if even that was left unserved (a broker
    that does not send an oversized first batch whole)."""
    if limit == ALONE_FROM:
        return ONE_BATCH
    if limit == ONE_BATCH:
        return 4 * ALONE_FROM
    return min(MAX_PARTITION_BYTES, 4 * limit)


class Source(Protocol):
    """What reads records: ``KafkaCluster`` (and the protocols of each stage that name its fetch)."""

    def fetch(
        self,
        positions: Mapping[TP, int],
        *,
        partition_max_bytes: int | Mapping[TP, int] = ...,
        until: Mapping[TP, int] | None = None,
        max_wait_ms: int | None = None,
    ) -> Mapping[TP, PartitionFetch]: ...


def fetch_from(source: Source) -> Fetch:
    """The ``Fetch`` of a cluster."""
    return lambda positions, until, limits, wait_ms: source.fetch(
        positions, until=until, partition_max_bytes=limits, max_wait_ms=wait_ms
    )


MAX_UNSERVED_ROUNDS = 10
"""Rounds in a row a partition may come back empty below its end before its read fails."""


@dataclass(frozen=True, slots=True)
class Served:
    """The answer read past its position: ``answer.read_to`` is where the next read starts."""

    answer: PartitionFetch

    @property
    def end(self) -> int:
        """The log end the broker reported with this answer."""
        return self.answer.high_watermark


@dataclass(frozen=True, slots=True)
class AtEnd:
    """Nothing there: the position is at or past the log end."""

    end: int


@dataclass(frozen=True, slots=True)
class Unserved:
    """Empty below the log end: asked again next round (the first of the round)."""

    end: int


@dataclass(frozen=True, slots=True)
class Failed:
    """The partition cannot be read on. ``log_start`` is set when the position is below the log start
    now (records deleted while reading): a reader that may skip deleted records starts there."""

    reason: str
    log_start: int | None = None


Outcome = Served | AtEnd | Unserved | Failed


@dataclass
class FetchRounds:
    """Rounds of one reader: what each answer means, which partitions go first, what it all cost.

    ``ends`` are log ends the caller already knows (an answer's high watermark may only raise them).
    ``partition_bytes`` is each partition's first byte limit (``POINT_READ_BYTES`` for point reads, a
    larger one for reads of whole ranges).
    """

    fetch: Fetch
    ends: Mapping[TP, int] = field(default_factory=dict)
    partition_bytes: int = POINT_READ_BYTES
    max_unserved: int = MAX_UNSERVED_ROUNDS
    limits: dict[TP, int] = field(default_factory=dict)
    rounds: int = 0
    fetches: int = 0
    records: int = 0
    bytes: int = 0
    unserved: Counter[TP] = field(default_factory=Counter)
    batch_bytes: dict[TP, int] = field(default_factory=dict)
    """The largest answer of each partition read ``ONE_BATCH``: its batches' size, measured."""
    offset_bytes: dict[TP, float] = field(default_factory=dict)
    """What an offset of each partition took in its last answer holding a whole batch
    (``PartitionFetch.bytes_per_offset``): what a read of a run of offsets asks for."""
    largest_batch: dict[TP, int] = field(default_factory=dict)
    """The largest whole batch each partition's answers held: a run asks whole multiples of it, and a
    point read is fitted to it (``_fitted``)."""
    fit: bool = True
    """Whether point reads are fitted to small batches; off for a reader that sets its partitions'
    limits itself (the gap reads, growing a window that held only holes)."""
    uncut: set[TP] = field(default_factory=set)
    """The partitions whose answers came whole batch by batch up to the limit (``PartitionFetch.uncut``):
    a read before records the reader holds can be cut short of them (``round``'s ``stops``)."""

    def round(
        self,
        positions: Mapping[TP, int],
        until: Mapping[TP, int] | None = None,
        reach: Mapping[TP, int] | None = None,
        stops: Mapping[TP, int] | None = None,
    ) -> dict[TP, Outcome]:
        """Fetch every position once, the partitions left unserved before first (and the broker given
        ``PATIENT_WAIT_MS`` for them); one outcome each. ``reach``: where a reader wants every record
        from the position up to (``run_end``), so a partition is asked for that many bytes at once.
        ``stops``: where a reader holds the records from on (``_stopped``)."""
        if not positions:
            return {}
        ordered = dict(sorted(positions.items(), key=lambda item: -self.unserved[item[0]]))
        self.rounds += 1
        self.fetches += len(ordered)
        most = max(POINT_READ_BYTES, min(RUN_BYTES, RUN_ROUND_BYTES // max(1, len(reach or ()))))
        limits = {tp: self._limit(tp, position, reach, most) for tp, position in ordered.items()}
        for tp, stop in (stops or {}).items():
            if tp in limits:
                limits[tp] = self._stopped(tp, ordered[tp], stop, limits[tp])
        patient = self.unserved[next(iter(ordered))] > 0
        answers = self.fetch(ordered, until, limits, PATIENT_WAIT_MS if patient else None)
        return {tp: self._outcome(tp, position, answers.get(tp), limits[tp]) for tp, position in ordered.items()}

    def _limit(self, tp: TP, position: int, reach: Mapping[TP, int] | None, most: int) -> int:
        """The limit the partition learned, or more where the reader wants a run up to ``reach[tp]``:
        the bytes that many offsets took in its last answer, in whole multiples of its largest batch
        seen, at most ``most`` (``RUN_BYTES``, less when many partitions share ``RUN_ROUND_BYTES``).
        Not over batches of more than ``ALONE_FROM``: a run saves requests, nothing beside such a
        batch, and a broker that rounds a limit up to whole batches (the local one) sends one more
        (1 MB gzip batches on it: 72.1 -> 75.4 MB for the snapshot); nor over those read
        ``ONE_BATCH`` for their size: a larger limit than the batch in a shared request comes back cut
        short. A run of one small batch is read as one (``_fitted``)."""
        learned = self.limits.get(tp, self.partition_bytes)
        per_offset, batch = self.offset_bytes.get(tp, 0.0), self.largest_batch.get(tp, 0)
        fitted = self._fitted(tp, learned)
        if reach is None or tp not in reach or not per_offset or learned == ONE_BATCH or batch > ALONE_FROM:
            return fitted
        wanted = per_offset * (reach[tp] - position)
        if batch:  # Apache Kafka cuts a batch at the limit, and those bytes are thrown away
            if fitted == ONE_BATCH and wanted <= batch:
                return ONE_BATCH
            wanted, most = math.ceil(wanted / batch) * batch, max(batch, most // batch * batch)
        return max(min(most, math.ceil(wanted)), fitted)

    def measured(self, tp: TP, answer: PartitionFetch) -> None:
        """Learn what an answer tells of its partition's batches: its bytes per offset and largest batch,
        and whether the broker sent it uncut. Also for an answer other rounds read (a whole read
        starting from the tail sample's measure). An answer smaller than a full batch of the partition
        (``POINT_READ_BYTES`` at most) does not price it: a batch of the one record a transaction ended
        with is 201 bytes for one offset, and a read priced by it asked 1.4x the bytes it meant to (past
        records the reader held, on a transactional restore)."""
        if answer.uncut:
            self.uncut.add(tp)
        if not answer.bytes_per_offset:
            return
        batch = self.largest_batch.get(tp, 0)
        if tp not in self.offset_bytes or answer.size >= min(batch, POINT_READ_BYTES):
            self.offset_bytes[tp] = answer.bytes_per_offset
        self.largest_batch[tp] = max(batch, answer.largest_batch_bytes)

    def _stopped(self, tp: TP, position: int, stop: int, limit: int) -> int:
        """The limit cut short of ``stop``, where the reader holds the records from on (a partition read
        whole after its tail was sampled): the bytes the offsets before it took in the last answer, less
        ``STOP_MARGIN``. Only over answers that came uncut (``uncut``): such a broker adds whole batches
        until the limit is reached, so the read ends before ``stop`` or one batch short of it (the next
        round, one batch, reaches it). Apache Kafka cuts the batch a limit ends in, and the cut bytes
        are thrown away: its reads go on to the limit."""
        per_offset = self.offset_bytes.get(tp, 0.0)
        if tp not in self.uncut or not per_offset or limit == ONE_BATCH or stop <= position:
            return limit
        wanted = per_offset * (stop - position)
        if wanted <= self.largest_batch.get(tp, 0):
            return ONE_BATCH  # a batch or two short: a margin of a few percent is less than a batch header
        return max(1, min(limit, int(wanted * (1 - STOP_MARGIN))))

    def _fitted(self, tp: TP, learned: int) -> int:
        """A point read's limit fitted to the partition's batches (``fitted_limit``). Not for a partition
        left unserved last round (asked at its learned limit again, which grows as before if need be),
        nor by a reader that sets its partitions' limits itself (``fit``). Over lz4 batches of 5 KB a
        shared 16 KB read brought three batches for the one wanted; the local broker's searches of a
        transactional restore read every window twice over at 16 KB (two batches of 14 KB)."""
        if not self.fit or self.unserved[tp]:
            return learned
        return fitted_limit(learned, self.largest_batch.get(tp, 0), tp in self.uncut)

    def point_bytes(self, tp: TP) -> int:
        """What a point read of ``tp`` brings in these rounds (``point_cost``)."""
        learned = self.limits.get(tp, self.partition_bytes)
        fitted = self._fitted(tp, learned)
        return point_cost(learned, fitted, self.largest_batch.get(tp, 0), self.batch_bytes.get(tp, 0))

    def run_end(self, tp: TP, spans: Iterable[tuple[int, int]]) -> int | None:
        """Where a run of the offsets a reader wants ends: ``spans`` are ranges (first, end), ascending
        from the position, and each next one that begins within a point read's offsets of the end
        before it (as the partition's last answer measured them, ``point_bytes``) joins the run, for
        point reads would cover them back to back. None before an answer measured the partition."""
        per_offset = self.offset_bytes.get(tp, 0.0)
        if not per_offset:
            return None
        window = self.point_bytes(tp) / per_offset
        end: int | None = None
        for first, last in spans:
            if end is not None and first - end > window:
                break
            end = last if end is None else max(end, last)
        return end

    def _outcome(self, tp: TP, position: int, answer: PartitionFetch | None, limit: int) -> Outcome:
        if answer is None:
            return Failed(f"fetch of {tp} at {position} got no answer")
        if answer.error and answer.retriable:
            return self._unserved(tp, position, max(self.ends.get(tp, -1), answer.high_watermark), answer.error)
        if answer.error:
            moved = answer.error == "OffsetOutOfRangeError" and answer.log_start_offset > position
            return Failed(
                f"fetch of {tp} at {position} failed ({answer.error})", answer.log_start_offset if moved else None
            )
        self.bytes += answer.size
        self.records += len(answer.records)
        end = max(self.ends.get(tp, -1), answer.high_watermark)
        if answer.read_to > position:
            self.unserved.pop(tp, None)
            if limit == ONE_BATCH:
                self.batch_bytes[tp] = max(answer.size, self.batch_bytes.get(tp, 0))
            self.measured(tp, answer)
            return Served(answer)
        if position >= end >= 0:
            self.unserved.pop(tp, None)
            return AtEnd(end)
        if self.unserved[tp]:  # left unserved though the broker was given its time: the batch is too large
            self.limits[tp] = grown(self.limits.get(tp, self.partition_bytes))
        return self._unserved(tp, position, end, None)

    def _unserved(self, tp: TP, position: int, end: int, error: str | None) -> Unserved | Failed:
        """Asked again next round, first; failed after ``max_unserved`` rounds in a row."""
        self.unserved[tp] += 1
        if self.unserved[tp] >= self.max_unserved:
            why = f"the last answer: {error}" if error else f"below its end {end}"
            return Failed(f"no records returned at {tp} offset {position}, {why}, {self.max_unserved} rounds")
        return Unserved(end)


Take = Callable[[TP, Served | AtEnd], int | None]
"""A reader's step: given what a round brought for a partition, the position to read next, or None
when the reader needs nothing more from it. At the end, the reader is told so and the partition
closes whatever it returns."""


def read_forward(
    rounds: FetchRounds,
    start: Mapping[TP, int],
    take: Take,
    *,
    until: Mapping[TP, int] | None = None,
    after_round: Callable[[], None] | None = None,
    reach: Callable[[TP], int | None] | None = None,
    stops: Mapping[TP, int] | None = None,
) -> dict[TP, Failed]:
    """Read each partition forward from ``start`` until ``take`` has enough or the partition ends,
    all partitions in shared rounds. Returns the partitions that failed, with why (their reader got
    what was read before the failure, and nothing after). ``reach``: where the reader wants every
    record up to from a partition's next position (``FetchRounds.run_end``), None where it does not
    know. ``stops``: where the reader holds the records from on (``FetchRounds.round``)."""
    cursors = dict(start)
    failed: dict[TP, Failed] = {}
    while cursors:
        reaches = None if reach is None else {tp: end for tp in cursors if (end := reach(tp)) is not None}
        for tp, outcome in rounds.round(cursors, until, reaches, stops).items():
            if isinstance(outcome, Failed):
                failed[tp] = outcome
                del cursors[tp]
            elif isinstance(outcome, AtEnd):
                take(tp, outcome)
                del cursors[tp]
            elif isinstance(outcome, Served):
                following = take(tp, outcome)
                end = max(rounds.ends.get(tp, -1), outcome.answer.high_watermark)
                if following is not None and following >= end >= 0:
                    take(tp, AtEnd(end))  # known without asking again: saves each partition a round
                    following = None
                if following is None:
                    del cursors[tp]
                else:
                    cursors[tp] = following
        if after_round is not None:
            after_round()
    return failed
