"""What the strategies read the target through: the cluster (``TargetCluster``), and one plan's
``Context`` — its options, the log bounds it began with, the checkpoints and the indexes the
strategies share, and the counts of what each read (``TranslateStats``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from offset_restore.kafka.model import TP, LogBounds, PartitionFetch, PartitionIdentity, Record
from offset_restore.reading.held import HeldAnswers
from offset_restore.reading.learned import Learned
from offset_restore.reading.rounds import (
    AtEnd,
    Fetch,
    FetchRounds,
    Served,
    Source,
    fetch_from,
    read_forward,
)
from offset_restore.translate.checkpoints import CheckpointReader
from offset_restore.translate.mm2 import MirrorCheckpoints
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.positions import Position, TranslateStats
from offset_restore.translate.proof import TargetTail
from offset_restore.translate.read_headers import ReadHeaders, skipped_offsets
from offset_restore.translate.reshaped import Shapes
from offset_restore.translate.search import KeyedRecord, PartitionIndex, widened

__all__ = ["Context", "TargetCluster"]


class TargetCluster(Source, Protocol):
    @property
    def cluster_id(self) -> str: ...
    def topic_partitions(self) -> dict[str, int]: ...
    def log_bounds(self, partitions: Iterable[TP]) -> dict[TP, LogBounds]: ...
    def offsets_at_times(self, times: Mapping[TP, int]) -> dict[TP, int | None]: ...

    def records_at_times(self, times: Mapping[TP, int]) -> dict[TP, tuple[int, int] | None]: ...

    def partition_identities(self, partitions: Iterable[TP]) -> dict[TP, PartitionIdentity]: ...


@dataclass
class Context:
    target: TargetCluster
    options: PlanOptions
    cluster_name: str
    bounds: dict[TP, LogBounds]
    checkpoints: CheckpointReader | None
    stats: TranslateStats
    mm2: MirrorCheckpoints | str | None = None
    """MirrorMaker 2's checkpoints (read when the mm2 strategy first needs them), or why there are none."""
    timestamp_indexes: dict[TP, PartitionIndex] = field(default_factory=dict)
    tail_tops: dict[TP, int] = field(default_factory=dict)
    """The highest source offset the offset header names among each target partition's last records
    (the shape check's sample): where a restore declared complete stopped."""
    tail: TargetTail = field(default_factory=TargetTail)
    """What the shape check's sample read at each target partition's end, for the proof (translate/proof.py)."""
    tail_sampled: set[TP] = field(default_factory=set)
    """The target partitions the shape check's sample read (``tail_tops`` names those with the header)."""
    learned: Learned = field(default_factory=Learned)
    """What this plan's reads learned of each partition's batches and limits (``reading/learned.py``)."""
    held: HeldAnswers = field(default_factory=HeldAnswers)
    """Every answer the plan holds for a later read (``reading/held.py``): the shape check's samples, the
    header search's windows, a header-less partition's windows (the header search's were 1 MB of a
    header-less replica's 7.7), the time search's."""
    shapes: Shapes | None = None
    """What tells a changed topic (``translate/reshaped.py``), once the shape check ran: every later read of
    a ``watched`` topic is compared with it (the records' source-partition header)."""
    read_headers: ReadHeaders | None = None
    """The offset header of every record read from the shape check on (``translate/read_headers.py``)."""
    watched: dict[str, str] = field(default_factory=dict)
    """Target topic -> the source topic mapped onto it, for the topics whose shape the check found unchanged."""
    recorded_complete: dict[TP, int] = field(default_factory=dict)
    """Target partitions whose restore tool recorded that it finished, with its last source offset
    (the ``COMPLETE`` progress item, translate/checkpoints.py)."""

    def completes(self, pos: Position, top: int) -> bool:
        """Whether the restore of ``pos``'s partition is finished where it stopped, ``top`` being the last
        source offset it restored: the operator said so, or the restore tool recorded that very offset as
        its last (an item left by an earlier restore, or one still running past it, does not count)."""
        return self.options.completes(pos.source) or self.recorded_complete.get(pos.target) == top

    def fetch(self) -> Fetch:
        """The one fetch every read of the target goes through: what it reads is kept for the proof and
        compared with the shape check (``_watching``)."""
        return self._watching(fetch_from(self.target))

    def rounds(self, partition_max_bytes: int | None = None) -> FetchRounds:
        """Fetch rounds on the target, reading up to the log ends the plan began with, each partition at
        least at the limit it was learned to need."""
        return self.learned.rounds(self.fetch(), {tp: b.end for tp, b in self.bounds.items()}, partition_max_bytes)

    def records_at(
        self, wanted: Mapping[TP, set[int]], phase: str
    ) -> tuple[dict[tuple[TP, int], Record], dict[TP, str]]:
        """The target's record at each wanted offset (absent: none there), every partition from its lowest
        offset on to the next in shared fetch rounds, counted under ``phase``; and the partitions whose read
        failed, with why."""
        pending = {tp: sorted(offsets) for tp, offsets in wanted.items() if offsets}
        found: dict[tuple[TP, int], Record] = {}

        def take(tp: TP, outcome: Served | AtEnd) -> int | None:
            if isinstance(outcome, AtEnd):
                return None
            answer = outcome.answer
            for record in answer.records:
                if record.offset in wanted[tp]:
                    found[(tp, record.offset)] = record
            rest = pending[tp] = [offset for offset in pending[tp] if offset >= answer.read_to]
            return rest[0] if rest else None

        rounds = self.rounds()
        starts = {tp: offsets[0] for tp, offsets in pending.items()}
        failed = read_forward(rounds, starts, take, until={tp: offsets[-1] for tp, offsets in pending.items()})
        self.record(phase, rounds.rounds, rounds.fetches, rounds.records, {})
        self.stats.bytes_read[phase] = self.stats.bytes_read.get(phase, 0) + rounds.bytes
        return found, {tp: f"reading the target's records of {tp} failed: {f.reason}" for tp, f in failed.items()}

    def _watching(self, fetch: Fetch) -> Fetch:
        """``fetch``, every answer's offset headers kept for the proof (``read_headers``) and every answer of a
        watched topic compared with the shape check (``shapes``), from the shape check on."""
        shapes, watched, headers = self.shapes, self.watched, self.read_headers
        if headers is None:
            return fetch

        def watching(
            positions: Mapping[TP, int], until: Mapping[TP, int] | None, limits: Mapping[TP, int], wait: int | None
        ) -> Mapping[TP, PartitionFetch]:
            headers.latest({})  # the last round's answers let go before this round's arrive
            answers = dict(fetch(positions, until, limits, wait))
            parsed: dict[TP, tuple[PartitionFetch, list[int | None] | None]] = {}
            for tp, answer in answers.items():
                span = (answer.fetch_offset, answer.read_to)
                sources = headers.add(tp, answer.records, skipped_offsets(answer), span)
                source = watched.get(tp.topic) if shapes is not None else None
                if shapes is not None and source is not None and answer.records:
                    shapes.check_headers(source, tp, answer.records)
                    shapes.check_contents(source, tp, answer.records, headers.prints(tp))
                if answer.earlier is not None:
                    taken = _kept(tp, answer.earlier, headers, shapes, source)
                    if shapes is not None and source is not None and answer.earlier_from >= 0:
                        # from the log's start: a batch keeps records DeleteRecords moved the start past
                        taken = _checked_now(taken, max(answer.earlier_from, answer.log_start_offset))
                    answers[tp] = replace(answer, earlier=taken)
                parsed[tp] = (answers[tp], sources)
            headers.latest(parsed)
            return answers

        return watching

    def keep_unkeyed(self, tp: TP, windows: list[PartitionFetch]) -> None:
        """Hold a header-less partition's windows for the strategies after the header's, as far as the
        budget allows, and put their timestamps in the time search's index (all of them: the index holds
        three numbers a record)."""
        for window in windows:
            self.held.keep("unkeyed", tp, [self.index_times(tp, window)])

    def index_times(self, tp: TP, answer: PartitionFetch) -> PartitionFetch:
        """Put what an answer read in the time search's index of its partition (``timestamp_indexes``):
        a later time search, or the timestamp strategy's count, does not read it again. Returns the
        answer from where its first batch starts (``search.widened``): the sample, read from 64
        records before the end, brought their batch whole."""
        index = self.timestamp_indexes.setdefault(tp, PartitionIndex(self.bounds[tp]))
        answer = widened(answer, answer.fetch_offset, index)
        stamps = [KeyedRecord(r.offset, r.timestamp) for r in answer.records]
        index.add_window(answer.fetch_offset, answer.read_to, stamps)
        return answer

    def record(self, strategy: str, rounds: int, fetches: int, records: int, per_partition: Mapping[TP, int]) -> None:
        s = self.stats
        s.fetch_rounds[strategy] = s.fetch_rounds.get(strategy, 0) + rounds
        s.fetches[strategy] = s.fetches.get(strategy, 0) + fetches
        s.records_read[strategy] = s.records_read.get(strategy, 0) + records
        merged = s.rounds_per_partition.setdefault(strategy, {})
        for tp, n in per_partition.items():
            merged[tp] = merged.get(tp, 0) + n


def _checked_now(taken: Callable[[int], list[Record]], start: int) -> Callable[[int], list[Record]]:
    """The records of an answer's first batch before its fetch offset, taken (so checked) now, not when a
    reader asks for them: a record of another source partition the broker sent there is seen whatever the
    search reads next (a block re-routed just before a window went unseen when no reader took them)."""
    held = taken(start)

    def from_(first: int) -> list[Record]:
        return [record for record in held if record.offset >= first]

    return from_


def _kept(
    tp: TP,
    earlier: Callable[[int], list[Record]],
    headers: ReadHeaders,
    shapes: Shapes | None,
    source: str | None,
) -> Callable[[int], list[Record]]:
    """``earlier`` (the records of an answer's first batch before its fetch offset, decoded when a reader
    takes them), what it gives kept and checked as the answer's own records are."""

    def taking(start: int) -> list[Record]:
        records = earlier(start)
        headers.add(tp, records)
        if shapes is not None and source is not None and records:
            shapes.check_headers(source, tp, records)
            shapes.check_contents(source, tp, records, headers.prints(tp))
        return records

    return taking
