"""Translate snapshot positions to target offsets (DESIGN §1, §2.2).

The rule: a group committed at ``c`` on the source must resume at the first restored record whose
source offset is ``>= c``. Every distinct (topic, partition, c) of the snapshot is translated once,
then copied to every group at that position. Strategies are tried in the order asked for; each
decides the positions it can and leaves the others, with its reason, to the next. What no strategy
decides is ``unmapped`` with every reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from offset_restore.checkpoints import CheckpointReader
from offset_restore.cluster_types import TP, FetchedRecord, LogBounds, PartitionFetch
from offset_restore.errors import BadInputError
from offset_restore.fingerprint import DEFAULT_OFFSET_HEADER, fingerprint
from offset_restore.plan_model import Method, PlanEntry
from offset_restore.search import KeyedRecord, PartitionIndex, SearchResult, search_first_at_least
from offset_restore.snapshot_model import GroupSnapshot, PartitionSnapshot, RecordEvidence

__all__ = [
    "STRATEGIES",
    "Decision",
    "MalformedHeaderError",
    "PlanOptions",
    "Position",
    "TargetCluster",
    "TranslateStats",
    "parse_offset_header",
    "translate",
]

Strategy = Literal["header", "fingerprint", "checkpoint", "timestamp"]
STRATEGIES: tuple[Strategy, ...] = ("header", "fingerprint", "checkpoint", "timestamp")
FINGERPRINT_SCAN_LIMIT = 5_000


class TargetCluster(Protocol):
    @property
    def cluster_id(self) -> str: ...
    def topic_partitions(self) -> dict[str, int]: ...
    def log_bounds(self, partitions: Iterable[TP]) -> dict[TP, LogBounds]: ...
    def fetch(self, positions: Mapping[TP, int], *, partition_max_bytes: int = ...) -> dict[TP, PartitionFetch]: ...


class MalformedHeaderError(BadInputError):
    """A restored record carries the offset header with a value that is not an offset."""


def parse_offset_header(value: bytes | None) -> int | None:
    """An offset header as decimal ASCII or an 8-byte big-endian integer; None for an absent value."""
    if value is None:
        return None
    if 0 < len(value) <= 19 and value.isdigit():
        return int(value)
    if len(value) == 8:
        number = int.from_bytes(value, "big", signed=True)
        if number >= 0:
            return number
    raise ValueError(value)


@dataclass(frozen=True)
class PlanOptions:
    strategies: tuple[Strategy, ...] = STRATEGIES
    offset_header: str = DEFAULT_OFFSET_HEADER
    topic_map: Mapping[str, str] = field(default_factory=dict)
    target_cluster: str | None = None
    """The target's name in checkpoint keys (default: the cluster id the brokers report)."""


@dataclass(frozen=True)
class Position:
    """One distinct source position and what the snapshot knows of it."""

    source: TP
    target: TP
    committed: int
    log_start: int | None
    log_end: int | None
    next: RecordEvidence | None
    before: tuple[RecordEvidence, ...]

    @property
    def last_source_record(self) -> int | None:
        """The offset of the source's last data record at snapshot time, if known."""
        if self.next is None and self.before:
            return self.before[-1].offset  # read by the snapshot itself: no transaction marker
        return self.log_end - 1 if self.log_end is not None else None


@dataclass(frozen=True)
class Decision:
    status: Literal["mapped", "pending", "unmapped"]
    target_offset: int | None = None
    method: Method | None = None
    exact: bool = False
    max_duplicates: int | None = None
    reason: str | None = None
    same_record: bool = False
    """The target record is the copy of the snapshot's next record: apply can verify its fingerprint."""


@dataclass
class TranslateStats:
    positions: int = 0
    fetch_rounds: dict[str, int] = field(default_factory=dict)
    fetches: dict[str, int] = field(default_factory=dict)
    records_read: dict[str, int] = field(default_factory=dict)
    rounds_per_partition: dict[str, dict[TP, int]] = field(default_factory=dict)


PositionKey = tuple[str, int, int]  # source topic, partition, committed offset


@dataclass
class _Context:
    target: TargetCluster
    options: PlanOptions
    cluster_name: str
    bounds: dict[TP, LogBounds]
    checkpoints: CheckpointReader | None
    stats: TranslateStats
    fetch_bytes: int = 64 * 1024
    timestamp_indexes: dict[TP, PartitionIndex] = field(default_factory=dict)

    def fetch(self, positions: Mapping[TP, int]) -> Mapping[TP, PartitionFetch]:
        return self.target.fetch(positions, partition_max_bytes=self.fetch_bytes)

    def record(self, strategy: str, rounds: int, fetches: int, records: int, per_partition: Mapping[TP, int]) -> None:
        s = self.stats
        s.fetch_rounds[strategy] = s.fetch_rounds.get(strategy, 0) + rounds
        s.fetches[strategy] = s.fetches.get(strategy, 0) + fetches
        s.records_read[strategy] = s.records_read.get(strategy, 0) + records
        merged = s.rounds_per_partition.setdefault(strategy, {})
        for tp, n in per_partition.items():
            merged[tp] = merged.get(tp, 0) + n


def translate(
    groups: Sequence[GroupSnapshot],
    target: TargetCluster,
    options: PlanOptions,
    *,
    checkpoints: CheckpointReader | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> tuple[list[PlanEntry], TranslateStats]:
    """Plan entries for every group-partition of ``groups``; reads the target, writes nothing."""
    stats = TranslateStats()
    report = progress or (lambda phase, done, total: None)
    topics = target.topic_partitions()
    positions: dict[PositionKey, Position] = {}
    decisions: dict[PositionKey, Decision] = {}
    for group in groups:
        for p in group.partitions:
            key = (p.topic, p.partition, p.committed_offset)
            if key in positions or key in decisions:
                continue
            target_topic = options.topic_map.get(p.topic, p.topic)
            count = topics.get(target_topic)
            if count is None:
                decisions[key] = Decision("unmapped", reason=f"topic {target_topic} does not exist on the target")
            elif p.partition >= count:
                decisions[key] = Decision(
                    "unmapped",
                    reason=f"partition {p.partition} does not exist on target topic {target_topic} "
                    f"(it has {count} partitions)",
                )
            else:
                positions[key] = _position(p, TP(target_topic, p.partition))
    stats.positions = len(positions) + len(decisions)
    context = _Context(
        target=target,
        options=options,
        cluster_name=options.target_cluster or target.cluster_id,
        bounds=target.log_bounds({pos.target for pos in positions.values()}),
        checkpoints=checkpoints,
        stats=stats,
    )
    declined: dict[PositionKey, list[str]] = {key: [] for key in positions}
    undecided = dict(positions)
    strategies: dict[Strategy, Callable[[dict[PositionKey, Position], _Context], dict[PositionKey, Decision | str]]]
    strategies = {
        "header": _by_header,
        "fingerprint": _by_fingerprint,
        "checkpoint": _by_checkpoint,
        "timestamp": _by_timestamp,
    }
    for number, name in enumerate(options.strategies, start=1):
        if not undecided:
            break
        report(f"strategy {name}", number - 1, len(options.strategies))
        for key, outcome in strategies[name](undecided, context).items():
            if isinstance(outcome, Decision):
                decisions[key] = outcome
                del undecided[key]
            else:
                declined[key].append(f"{name}: {outcome}")
    for key in undecided:
        decisions[key] = Decision("unmapped", reason="; ".join(declined[key]) or "no strategy was asked for")
    report("strategies", len(options.strategies), len(options.strategies))

    entries = []
    for group in groups:
        for p in group.partitions:
            decision = decisions[(p.topic, p.partition, p.committed_offset)]
            entries.append(
                PlanEntry(
                    group=group.group,
                    topic=p.topic,
                    partition=p.partition,
                    target_topic=options.topic_map.get(p.topic, p.topic),
                    source_offset=p.committed_offset,
                    target_offset=decision.target_offset,
                    method=decision.method,
                    exact=decision.exact,
                    max_duplicates=decision.max_duplicates,
                    status=decision.status,
                    reason=decision.reason,
                    metadata=p.metadata,
                    expected_fingerprint=p.next.fingerprint
                    if decision.same_record and p.next is not None and p.next.offset == p.committed_offset
                    else None,
                )
            )
    return entries, stats


def _position(p: PartitionSnapshot, target: TP) -> Position:
    return Position(
        source=TP(p.topic, p.partition),
        target=target,
        committed=p.committed_offset,
        log_start=p.log_start,
        log_end=p.log_end,
        next=p.next,
        before=tuple(p.before),
    )


# -- header -----------------------------------------------------------------------------------------


def _guess(pos: Position, bounds: LogBounds) -> int | None:
    """Where the record would be if the restore kept the source's density of records."""
    if pos.log_start is None or pos.log_end is None or pos.log_end <= pos.log_start:
        return None
    density = (bounds.end - bounds.start) / (pos.log_end - pos.log_start)
    return bounds.start + int((pos.committed - pos.log_start) * min(1.0, density))


def _by_header(undecided: dict[PositionKey, Position], ctx: _Context) -> dict[PositionKey, Decision | str]:
    name = ctx.options.offset_header

    def key_of(tp: TP, record: FetchedRecord) -> int | None:
        for header, value in record.headers:
            if header == name:
                try:
                    return parse_offset_header(value)
                except ValueError:
                    shown = (value or b"")[:24].hex()
                    raise MalformedHeaderError(
                        f"record {record.offset} of {tp} has header {name} = 0x{shown}, which is neither "
                        "an 8-byte big-endian offset nor a decimal number; fix the restore or choose "
                        "--strategies without header"
                    ) from None
        return None

    wanted = {key: (pos.target, pos.committed, _guess(pos, ctx.bounds[pos.target])) for key, pos in undecided.items()}
    results, stats = search_first_at_least(wanted, ctx.bounds, key_of, ctx.fetch)
    ctx.record("header", stats.rounds, stats.fetches, stats.records_read, stats.rounds_per_partition)
    return {key: _header_decision(undecided[key], results[key], name) for key in undecided}


def _header_decision(pos: Position, result: SearchResult, header: str) -> Decision | str:
    c = pos.committed
    if not result.complete:
        return result.reason or "search did not finish"
    if result.found is None and result.below is None:
        return f"no record of {pos.target} carries header {header}"
    if result.found is not None:
        if result.below is None and result.found.key > c:
            return Decision(
                "mapped",
                result.found.offset,
                "earliest",
                True,
                0,
                f"committed offset {c} is before the restored range (first restored source offset "
                f"{result.found.key}): resume at the earliest restored record",
            )
        gap = f"source records {c}..{result.found.key - 1} are not in the restore" if result.found.key > c else None
        return Decision("mapped", result.found.offset, "header", True, 0, gap, same_record=result.found.key == c)
    last = result.below
    assert last is not None
    last_source = pos.last_source_record
    if last_source is not None and last.key < last_source:
        return Decision(
            "pending",
            reason=f"the restore has reached source offset {last.key}; the source had records up to "
            f"{last_source} and the group resumes at {c}",
        )
    what = "caught up" if pos.log_end is not None and c == pos.log_end else "beyond the restored data"
    return Decision(
        "mapped",
        last.offset + 1,
        "end",
        True,
        0,
        f"group is {what}: resume after the last restored record (source offset {last.key})",
    )


# -- checkpoint -------------------------------------------------------------------------------------


def _by_checkpoint(undecided: dict[PositionKey, Position], ctx: _Context) -> dict[PositionKey, Decision | str]:
    reader = ctx.checkpoints
    if reader is None:
        return dict.fromkeys(undecided, "no checkpoint table configured")
    outcome: dict[PositionKey, Decision | str] = {}
    for key, pos in undecided.items():
        where = (ctx.cluster_name, pos.target.topic, pos.target.partition)
        c = pos.committed
        floor = reader.floor(*where, c)
        if floor is not None and floor.source_offset == c:
            outcome[key] = Decision("mapped", floor.target_offset, "checkpoint", True, 0, same_record=True)
            continue
        last = reader.last(*where)
        if last is None:
            outcome[key] = f"no checkpoints for {pos.target} of cluster {ctx.cluster_name}"
            continue
        last_source = pos.last_source_record
        if last.source_offset < c and last_source is not None and last.source_offset < last_source:
            outcome[key] = Decision(
                "pending",
                reason=f"restore checkpoints reach source offset {last.source_offset}; the group resumes at {c}",
            )
            continue
        if floor is None:
            outcome[key] = f"the first checkpoint of {pos.target} is past {c}"
            continue
        ceiling = reader.ceiling(*where, c)
        bound = c - floor.source_offset
        if ceiling is not None:
            bound = min(bound, ceiling.target_offset - floor.target_offset)
        outcome[key] = Decision(
            "mapped",
            floor.target_offset,
            "checkpoint",
            False,
            bound,
            f"nearest checkpoint below: source {floor.source_offset} -> target {floor.target_offset}",
        )
    return outcome


# -- timestamp ------------------------------------------------------------------------------------


def _wanted_timestamp(pos: Position) -> int | None:
    if pos.next is not None:
        return pos.next.timestamp
    return pos.before[-1].timestamp if pos.before else None


def _timestamp_key(tp: TP, record: FetchedRecord) -> int:
    return record.timestamp


def _by_timestamp(undecided: dict[PositionKey, Position], ctx: _Context) -> dict[PositionKey, Decision | str]:
    outcome: dict[PositionKey, Decision | str] = {}
    wanted = {}
    for key, pos in undecided.items():
        stamp = _wanted_timestamp(pos)
        if stamp is None:
            outcome[key] = "the snapshot has no timestamp for this position (no evidence)"
        else:
            wanted[key] = (pos.target, stamp, None)
    results, stats = search_first_at_least(wanted, ctx.bounds, _timestamp_key, ctx.fetch, indexes=ctx.timestamp_indexes)
    ctx.record("timestamp", stats.rounds, stats.fetches, stats.records_read, stats.rounds_per_partition)
    found = {key: r for key, r in results.items() if r.complete and r.found is not None}
    equal = _count_equal_forward(
        {key: (wanted[key][0], r.found.offset, wanted[key][1]) for key, r in found.items() if r.found}, ctx
    )
    for key, result in results.items():
        pos = undecided[key]
        stamp = wanted[key][1]
        if not result.complete:
            outcome[key] = result.reason or "timestamp search did not finish"
        elif result.found is None:
            end = ctx.timestamp_indexes[pos.target].bounds.end
            outcome[key] = Decision(
                "mapped",
                end,
                "end",
                False,
                0,
                f"no target record is as recent as the snapshot's ({stamp} ms): resume at the end; records "
                "a restore still writes would be skipped",
            )
        else:
            count = equal[key]
            duplicates = count if pos.next is None else max(0, count - 1)
            outcome[key] = Decision(
                "mapped",
                result.found.offset,
                "timestamp",
                False,
                duplicates,
                f"first record with timestamp >= {stamp} ms; {count} target records share that timestamp",
            )
    return outcome


def _count_equal_forward(starts: dict[PositionKey, tuple[TP, int, int]], ctx: _Context) -> dict[PositionKey, int]:
    """How many records from each start offset on carry exactly the wanted timestamp: from what the
    search read, reading on only where a run of equal timestamps reaches past it."""
    counts: dict[PositionKey, int] = {}
    rounds = 0
    open_keys = dict(starts)
    while open_keys:
        positions: dict[TP, int] = {}
        for key, (tp, offset, stamp) in list(open_keys.items()):
            count, unread = ctx.timestamp_indexes[tp].run_of(offset, stamp)
            counts[key] = count
            if unread is None or rounds >= 50:
                del open_keys[key]
            else:
                positions.setdefault(tp, unread)
        if not positions:
            break
        rounds += 1
        answers = ctx.fetch(positions)
        for tp, position in positions.items():
            answer = answers.get(tp)
            if answer is None or answer.error or not answer.records:
                for key in [k for k, v in open_keys.items() if v[0] == tp]:
                    del open_keys[key]
                continue
            keyed = [KeyedRecord(r.offset, r.timestamp) for r in answer.records]
            ctx.timestamp_indexes[tp].add_window(position, answer.records[-1].offset + 1, keyed)
    ctx.record("timestamp", rounds, rounds, 0, {})
    return counts


# -- fingerprint ----------------------------------------------------------------------------------


def _by_fingerprint(undecided: dict[PositionKey, Position], ctx: _Context) -> dict[PositionKey, Decision | str]:
    """Find the evidence sequence (records before, then the next one) among target records of the
    same time, read from the first record as old as the oldest piece of evidence."""
    outcome: dict[PositionKey, Decision | str] = {}
    wanted = {}
    for key, pos in undecided.items():
        evidence = [*pos.before, *([pos.next] if pos.next else [])]
        if not evidence:
            outcome[key] = "the snapshot has no evidence for this position"
        else:
            wanted[key] = (pos.target, min(e.timestamp for e in evidence), None)
    results, stats = search_first_at_least(wanted, ctx.bounds, _timestamp_key, ctx.fetch, indexes=ctx.timestamp_indexes)
    ctx.record("fingerprint", stats.rounds, stats.fetches, stats.records_read, stats.rounds_per_partition)
    scans = {}
    for key, result in results.items():
        if not result.complete:
            outcome[key] = result.reason or "search did not finish"
        elif result.found is None:
            outcome[key] = "no target record is as recent as the evidence"
        else:
            scans[key] = result.found.offset
    windows = _scan_windows(scans, undecided, ctx)
    for key, window in windows.items():
        outcome[key] = _match(undecided[key], window, ctx.options.offset_header)
    return outcome


def _scan_windows(
    starts: dict[PositionKey, int], positions: dict[PositionKey, Position], ctx: _Context
) -> dict[PositionKey, list[FetchedRecord] | str]:
    """Records from each start until past the newest evidence timestamp (bounded)."""
    windows: dict[PositionKey, list[FetchedRecord] | str] = {}
    collected: dict[PositionKey, list[FetchedRecord]] = {key: [] for key in starts}
    cursor = dict(starts)
    open_keys = set(starts)
    rounds = records_read = 0
    while open_keys:
        rounds += 1
        positions_now: dict[TP, int] = {}
        for key in sorted(open_keys):
            positions_now.setdefault(positions[key].target, cursor[key])
        answers = ctx.fetch(positions_now)
        for key in list(open_keys):
            pos = positions[key]
            if positions_now[pos.target] != cursor[key]:
                continue
            answer = answers.get(pos.target)
            newest = max(e.timestamp for e in [*pos.before, *([pos.next] if pos.next else [])])
            if answer is None or answer.error:
                windows[key] = f"fetch of {pos.target} failed"
                open_keys.discard(key)
                continue
            records_read += len(answer.records)
            done = not answer.records
            for record in answer.records:
                collected[key].append(record)
                if record.timestamp > newest and pos.next is not None:
                    done = True
                    break
            if len(collected[key]) > FINGERPRINT_SCAN_LIMIT:
                windows[key] = f"more than {FINGERPRINT_SCAN_LIMIT} target records share the evidence's time range"
                open_keys.discard(key)
                continue
            if answer.records:
                cursor[key] = answer.records[-1].offset + 1
            if done or cursor[key] >= max(answer.high_watermark, 0):
                windows[key] = collected[key]
                open_keys.discard(key)
    ctx.record("fingerprint", rounds, rounds, records_read, {})
    return windows


def _match(pos: Position, window: list[FetchedRecord] | str, header: str) -> Decision | str:
    if isinstance(window, str):
        return window
    prints = [fingerprint(r.key, r.value, r.headers, exclude_header=header) for r in window]
    sequence = [e.fingerprint for e in pos.before] + ([pos.next.fingerprint] if pos.next else [])
    n = len(sequence)
    matches = [i for i in range(len(prints) - n + 1) if prints[i : i + n] == sequence]
    if not matches:
        return "the evidence records were not found on the target"
    if len(matches) > 1:
        return f"the evidence matches {len(matches)} places on the target (identical records): ambiguous"
    last = matches[0] + n - 1
    if pos.next is not None:
        return Decision("mapped", window[last].offset, "fingerprint", True, 0, same_record=True)
    following = window[last + 1].offset if last + 1 < len(window) else window[last].offset + 1
    return Decision("mapped", following, "fingerprint", True, 0, "group was caught up: resume after its last record")
