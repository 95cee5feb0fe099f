"""Translate snapshot positions to target offsets (docs/design.md §1, §2.2).

The rule: a group committed at ``c`` on the source must resume at the first restored record whose
source offset is ``>= c``. Every distinct (topic, partition, c) of the snapshot is translated once,
then copied to every group at that position. Strategies are tried in the order asked for; each
decides the positions it can and leaves the others, with its reason, to the next. What no strategy
decides is ``unmapped`` with every reason.
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import cast

from offset_restore.errors import BadInputError
from offset_restore.kafka.mirror_checkpoints import read_checkpoints
from offset_restore.kafka.model import TP, FetchedRecord, LogBounds, PartitionFetch
from offset_restore.kafka.rounds import (
    POINT_READ_BYTES,
    AtEnd,
    Failed,
    Served,
    fetch_from,
    read_forward,
)
from offset_restore.packing import packed
from offset_restore.snapshot.fingerprint import fingerprint
from offset_restore.snapshot.headers import parse_offset_header
from offset_restore.snapshot.model import GroupSnapshot, PartitionSnapshot, default_cluster_name
from offset_restore.translate.checkpoints import CheckpointReader
from offset_restore.translate.context import Context, TargetCluster
from offset_restore.translate.evidence_placement import Placement, place_by_evidence
from offset_restore.translate.fingerprint_counts import Found, doubts
from offset_restore.translate.header_reads import MAX_HELD_RECORDS, HeaderReads, evidence_prints
from offset_restore.translate.mm2 import Floor, MirrorCheckpoints, choose_topic, within_log
from offset_restore.translate.model import Method, PlanEntry
from offset_restore.translate.options import PlanOptions, Strategy
from offset_restore.translate.positions import (
    Decision,
    Position,
    PositionKey,
    TranslateStats,
    evidence_of,
    pack_evidence,
)
from offset_restore.translate.reshaped import (
    Reshaped,
    Shapes,
    held_entries,
    map_group,
    read_index,
    sample_reads,
)
from offset_restore.translate.restore_order import disorder_in
from offset_restore.translate.resume_points import NO_KEY, PartitionLog, Resume, resume_points
from offset_restore.translate.search import KeyedRecord, KeyOf, PartitionIndex, SearchResult, search_first_at_least

__all__ = ["MalformedHeaderError", "collect_positions", "decide_positions", "plan_entries", "translate"]

FINGERPRINT_SCAN_LIMIT = 5_000
FINGERPRINT_FOLLOW_RECORDS = 100
"""Records read past the first one newer than a position's evidence: a region copied twice close
after the match (a replication task restarted) shows there (docs/translation.md)."""
WHOLE_READ_BYTES = 1024 * 1024
"""Bytes per partition per fetch when a partition is read whole."""


class MalformedHeaderError(BadInputError):
    """A restored record carries the offset header with a value that is not an offset."""


def translate(
    groups: Sequence[GroupSnapshot],
    target: TargetCluster,
    options: PlanOptions,
    *,
    checkpoints: CheckpointReader | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    source_partitions: Mapping[str, int] | None = None,
) -> tuple[list[PlanEntry], TranslateStats]:
    """Plan entries for every group-partition of ``groups``; reads the target, writes nothing.
    ``source_partitions``: each topic's partition count on the source (the snapshot's)."""
    positions = collect_positions(groups, options)
    decisions, stats = decide_positions(
        positions, target, options, checkpoints=checkpoints, progress=progress, source_partitions=source_partitions
    )
    return list(plan_entries(groups, decisions, options, reshaped=stats.reshaped)), stats


def decide_positions(
    positions: dict[PositionKey, Position],
    target: TargetCluster,
    options: PlanOptions,
    *,
    checkpoints: CheckpointReader | None = None,
    mm2: MirrorCheckpoints | str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    source_partitions: Mapping[str, int] | None = None,
) -> tuple[dict[PositionKey, Decision], TranslateStats]:
    """A decision for every position (``collect_positions``; the dict is consumed); reads the target.

    Apart from ``plan_entries`` so that a plan of hundreds of thousands of group-partitions can read
    its snapshot from the store once for its positions (before any Kafka request) and once for its
    entries, written as they are made: memory then holds one compact ``Position`` and one
    ``Decision`` per distinct position, not every group's document.
    """
    stats = TranslateStats()
    report = progress or (lambda phase, done, total: None)
    stats.positions = len(positions)
    topic_counts = target.topic_partitions()
    context = Context(
        target=target,
        options=options,
        cluster_name=options.target_cluster or default_cluster_name(target.cluster_id),
        bounds=target.log_bounds(_every_partition(positions, topic_counts)),
        checkpoints=checkpoints,
        stats=stats,
        mm2=mm2,
    )
    stats.reshaped = _reshaped_topics(positions, topic_counts, source_partitions or {}, context)
    decisions = _missing_on_target(positions, topic_counts)
    declined: dict[PositionKey, list[str]] = defaultdict(list)
    undecided = positions
    strategies: dict[Strategy, Callable[[dict[PositionKey, Position], Context], dict[PositionKey, Decision | str]]]
    strategies = {
        "header": _by_header,
        "fingerprint": _by_fingerprint,
        "checkpoint": _by_checkpoint,
        "mm2": _by_mm2,
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
        decisions[key] = Decision("unmapped", reason="; ".join(declined.get(key, ())) or "no strategy was asked for")
    report("strategies", len(options.strategies), len(options.strategies))
    return decisions, stats


def collect_positions(groups: Iterable[GroupSnapshot], options: PlanOptions) -> dict[PositionKey, Position]:
    """The distinct positions of ``groups`` (iterated once), without a Kafka request. One ``TP`` pair
    per partition, whose topic string every key shares: at 240,000 distinct positions the copies
    each group document brings would cost tens of MB."""
    positions: dict[PositionKey, Position] = {}
    pairs: dict[tuple[str, int], tuple[TP, TP]] = {}
    for group in groups:
        for p in group.partitions:
            pair = pairs.get((p.topic, p.partition))
            if pair is None:
                source, name = TP(p.topic, p.partition), options.topic_map.get(p.topic, p.topic)
                pair = pairs[(p.topic, p.partition)] = (source, source if name == p.topic else TP(name, p.partition))
            key = (pair[0].topic, pair[0].partition, p.committed_offset)
            if key not in positions:
                positions[key] = _position(p, *pair)
    return positions


def _every_partition(positions: Mapping[PositionKey, Position], topics: Mapping[str, int]) -> set[TP]:
    """Every partition of the target topics the positions map onto: a changed topic is read whole."""
    names = {pos.target.topic for pos in positions.values()}
    return {TP(name, p) for name in names if name in topics for p in range(topics[name])}


def _reshaped_topics(
    positions: dict[PositionKey, Position],
    topics: Mapping[str, int],
    source_partitions: Mapping[str, int],
    ctx: Context,
) -> dict[str, Reshaped]:
    """The source topics whose shape changed in the restore (their positions taken out of
    ``positions``), each with its whole index when its records carry the source partition."""
    options = ctx.options
    shapes = Shapes(options.offset_header, options.partition_header)
    onto = {pos.source.topic: pos.target.topic for pos in positions.values() if pos.target.topic in topics}
    widest: dict[str, int] = {}
    for pos in positions.values():
        widest[pos.source.topic] = max(widest.get(pos.source.topic, 0), pos.source.partition + 1)
    shapes.compare_counts(onto, source_partitions, topics, widest)
    for pos in positions.values():
        for evidence in (pos.next, *pos.before[-1:]):
            if evidence is not None:
                shapes.add_evidence(pos.source.topic, pos.source.partition, evidence.offset, evidence.fingerprint)
    rounds = ctx.rounds()
    back = {name: topic for topic, name in onto.items()}
    for tp, records in sample_reads(rounds, ctx.bounds).items():
        if tp.topic in back:
            shapes.check_sample(back[tp.topic], tp, records)
    ctx.record("shape (samples)", rounds.rounds, rounds.fetches, rounds.records, {})
    ctx.stats.bytes_read["shape (samples)"] = rounds.bytes
    found = {topic: Reshaped(topic, onto[topic], why) for topic, why in shapes.changed.items()}
    for reshaped in found.values():
        _index_or_why(reshaped, shapes, topics, ctx)
    for key in [key for key, pos in positions.items() if pos.source.topic in found]:
        del positions[key]
    return found


def _index_or_why(reshaped: Reshaped, shapes: Shapes, topics: Mapping[str, int], ctx: Context) -> None:
    """Read a changed topic whole when its records carry the source partition; else say why not."""
    options, name = ctx.options, reshaped.target_topic
    if "header" not in options.strategies:
        reshaped.unmappable = "mapping it needs the restore's headers, and --strategies leaves out header"
        return
    if name not in shapes.carries_partition:
        reshaped.unmappable = f"no record of {name} read carries header {options.partition_header}"
        return
    bounds = {p: ctx.bounds[TP(name, p)] for p in range(topics[name])}
    rounds = ctx.rounds(WHOLE_READ_BYTES)
    index = read_index(rounds, name, bounds, options.offset_header, options.partition_header)
    ctx.record("shape (whole topic)", rounds.rounds, rounds.fetches, rounds.records, {})
    ctx.stats.bytes_read["shape (whole topic)"] = ctx.stats.bytes_read.get("shape (whole topic)", 0) + rounds.bytes
    if isinstance(index, str):
        reshaped.unmappable = index
    else:
        reshaped.index = index


def _missing_on_target(
    positions: dict[PositionKey, Position], topics: Mapping[str, int]
) -> dict[PositionKey, Decision]:
    """Unmapped decisions for the positions whose target topic or partition does not exist (taken out
    of ``positions``)."""
    decisions: dict[PositionKey, Decision] = {}
    for key, pos in positions.items():
        count = topics.get(pos.target.topic)
        if count is None:
            decisions[key] = Decision("unmapped", reason=f"topic {pos.target.topic} does not exist on the target")
        elif pos.target.partition >= count:
            decisions[key] = Decision(
                "unmapped",
                reason=f"partition {pos.target.partition} does not exist on target topic {pos.target.topic} "
                f"(it has {count} partitions)",
            )
    for key in decisions:
        del positions[key]
    return decisions


def plan_entries(
    groups: Iterable[GroupSnapshot],
    decisions: Mapping[PositionKey, Decision],
    options: PlanOptions,
    settle: Callable[[PlanEntry], PlanEntry] | None = None,
    reshaped: Mapping[str, Reshaped] | None = None,
) -> Iterator[PlanEntry]:
    """Each group-partition's entry, group by group, in the snapshot's order; ``settle`` may change an
    entry (a newer MM2 checkpoint, translate/mm2.py) before the collision guard sees the group. A
    topic whose shape changed (``reshaped``) gets one entry per target partition, or holds the group."""
    changed = reshaped or {}
    for group in groups:
        entries = [_entry(group.group, p, decisions, options) for p in group.partitions if p.topic not in changed]
        entries = [settle(e) for e in entries] if settle else entries
        for topic in sorted({p.topic for p in group.partitions if p.topic in changed}):
            entries.extend(_reshaped_entries(group, changed[topic], options))
        yield from _without_collisions(entries)


def _reshaped_entries(group: GroupSnapshot, reshaped: Reshaped, options: PlanOptions) -> list[PlanEntry]:
    partitions = [p for p in group.partitions if p.topic == reshaped.topic]
    if reshaped.index is None:
        why = (
            f"{reshaped.why}; not mapped: {reshaped.unmappable}. The group is held: none of its partitions is "
            f"written (on any, it would read {reshaped.target_topic} from its reset policy). A restore whose records "
            f"carry the source partition in header {options.partition_header} and the source offset in "
            f"{options.offset_header} is mapped: plan again then (or restore into a topic of the source's shape)"
        )
        return held_entries(group.group, partitions, reshaped.target_topic, why)
    uncommitted = [u.partition for u in group.uncommitted_partitions if u.topic == reshaped.topic]
    return map_group(group.group, partitions, reshaped.target_topic, reshaped.index, uncommitted)


def _entry(
    group: str, p: PartitionSnapshot, decisions: Mapping[PositionKey, Decision], options: PlanOptions
) -> PlanEntry:
    decision = decisions[(p.topic, p.partition, p.committed_offset)]
    return PlanEntry(
        group=group,
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
        expected_fingerprint=decision.expected_fingerprint,
        anchor_offset=decision.anchor[0] if decision.anchor else None,
        anchor_source_offset=decision.anchor[1] if decision.anchor else None,
        anchor_timestamp=decision.anchor[2] if decision.anchor else None,
    )


def _without_collisions(entries: list[PlanEntry]) -> list[PlanEntry]:
    """A topic map onto a topic a group also reads as itself (``zz-orders-old -> orders``) would give
    the group two offsets for one target partition: the renamed entry is left unmapped, with why,
    and the group's own entry stands (writing the renamed one would move the group on ``orders``).
    A collision is within one group, so the entries of one group at a time suffice."""
    own = {(e.group, e.target): e.topic for e in entries if e.topic == e.target_topic}
    for e in entries:
        holder = own.get((e.group, e.target))
        if holder is not None and e.topic != e.target_topic:
            e.status, e.target_offset, e.method, e.exact, e.max_duplicates = "unmapped", None, None, False, None
            e.anchor_offset = e.anchor_source_offset = e.anchor_timestamp = e.expected_fingerprint = None
            e.reason = (
                f"the topic map sends {e.topic} onto {e.target_topic}, which group {e.group} also reads as itself: "
                f"{e.target_topic}/{e.partition} cannot hold both offsets; not written (map {e.topic} elsewhere)"
            )
    return entries


def _position(p: PartitionSnapshot, source: TP, target: TP) -> Position:
    return Position(
        source=source,
        target=target,
        committed=p.committed_offset,
        log_start=p.log_start,
        log_end=p.log_end,
        next=evidence_of(p.next) if p.next else None,
        packed_before=pack_evidence(p.before),
    )


# -- header -----------------------------------------------------------------------------------------


def _guess(pos: Position, bounds: LogBounds) -> int | None:
    """Where the record would be if the restore kept the source's density of records."""
    if pos.log_start is None or pos.log_end is None or pos.log_end <= pos.log_start:
        return None
    density = (bounds.end - bounds.start) / (pos.log_end - pos.log_start)
    return bounds.start + int((pos.committed - pos.log_start) * min(1.0, density))


def _header_key(name: str) -> KeyOf:
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

    return key_of


def _by_header(undecided: dict[PositionKey, Position], ctx: Context) -> dict[PositionKey, Decision | str]:
    """The header search, checked: a partition whose windows contradict a restore in order, or whose
    answer the snapshot's evidence contradicts, is read whole and answered order-independently."""
    name = ctx.options.offset_header
    key_of = _header_key(name)
    prints: dict[TP, set[int]] = defaultdict(set)
    for pos in undecided.values():
        prints[pos.target].add(pos.committed)
        if pos.next is not None:
            prints[pos.target].add(pos.next.offset)
    reads = HeaderReads(key_of, name, prints, undecided.values())
    outcome: dict[PositionKey, Decision | str] = {}
    suspect: dict[TP, str] = {}
    begun: dict[TP, _Begun] = {}
    if ctx.options.order_check == "full":
        suspect = dict.fromkeys((pos.target for pos in undecided.values()), "a full read was asked for")
    else:
        if ctx.options.whole_when_cheaper:
            suspect, begun = _cheaper_whole(undecided, ctx, reads)
        wanted = {
            k: (pos.target, pos.committed, _guess(pos, ctx.bounds[pos.target]))
            for k, pos in undecided.items()
            if pos.target not in suspect
        }
        results, stats = search_first_at_least(
            wanted, ctx.bounds, key_of, fetch_from(ctx.target), observe=reads.observe
        )
        ctx.record("header", stats.rounds, stats.fetches, stats.records_read, stats.rounds_per_partition)
        logs: dict[TP, PartitionLog] = {}
        for tp, observed in reads.observed.items():
            log, ranges = observed.merged()
            logs[tp] = log
            problem = disorder_in(log, ranges)
            if problem:
                suspect[tp] = problem
        for key, pos in undecided.items():
            if pos.target in suspect or key not in results:
                continue
            decision = _header_decision(pos, results[key], name)
            problem = _contradiction(pos, results[key], reads, ctx.bounds[pos.target])
            if problem:
                suspect[pos.target] = problem
            else:
                outcome[key] = _with_anchor(decision, logs.get(pos.target), results[key])
    if suspect:
        outcome.update(_read_whole_and_decide(undecided, suspect, reads, ctx, begun))
    ctx.stats.bytes_read["header"] = ctx.stats.bytes_read.get("header", 0) + reads.bytes
    return outcome


MIN_RECORD_BYTES = 16
"""No record takes fewer bytes on the wire (its length, attributes, deltas and empty key and value):
a partition whose every record at this size outweighs a window per position is not worth probing."""
MAX_WHOLE_READ_BYTES = 256 * 1024 * 1024
"""The largest partition read whole to save searches: the probe measures one batch, and a log whose
older records are larger than that batch would cost more than estimated."""


_Begun = tuple[PartitionLog, int]
"""A partition's whole read already begun: its first records, and the offset to read on from."""


def _cheaper_whole(
    undecided: Mapping[PositionKey, Position], ctx: Context, reads: HeaderReads
) -> tuple[dict[TP, str], dict[TP, _Begun]]:
    """Partitions where reading every record once costs fewer bytes than a window per position: the
    dense ones (hundreds of groups on a partition), with the whole read begun. One point read from
    the log start per candidate measures its bytes per offset and is the whole read's first window;
    the whole read then also answers order-independently (``_read_whole_and_decide``)."""
    distinct: dict[TP, set[int]] = defaultdict(set)
    for pos in undecided.values():
        distinct[pos.target].add(pos.committed)
    probes: dict[TP, int] = {}
    for tp, offsets in distinct.items():
        b = ctx.bounds[tp]
        if b.end > b.start and len(offsets) * POINT_READ_BYTES >= (b.end - b.start) * MIN_RECORD_BYTES:
            probes[tp] = b.start  # a batch boundary: the answer's bytes are those of the offsets it covers
    rounds = ctx.rounds()
    cheaper: dict[TP, str] = {}
    begun: dict[TP, _Begun] = {}
    for tp, outcome in rounds.round(probes).items():
        if not isinstance(outcome, Served):
            continue  # the search will meet the same answer and say so
        b, answer = ctx.bounds[tp], outcome.answer
        whole = (b.end - b.start) * answer.size / (answer.read_to - probes[tp])
        searched = len(distinct[tp]) * POINT_READ_BYTES
        if whole <= min(searched, MAX_WHOLE_READ_BYTES):
            cheaper[tp] = (
                f"read whole: about {whole / 1e6:,.1f} MB, less than a window for each of its "
                f"{len(distinct[tp]):,} positions ({searched / 1e6:,.1f} MB)"
            )
            begun[tp] = (PartitionLog(), answer.read_to)
            begun[tp][0].extend(reads.whole(tp, answer))
    ctx.record("header (probes)", rounds.rounds, rounds.fetches, rounds.records, {})
    return cheaper, begun


def _contradiction(pos: Position, result: SearchResult, reads: HeaderReads, bounds: LogBounds) -> str | None:
    """Why the snapshot's evidence contradicts the search's answer (None: it does not, or cannot).

    The record found must be the snapshot's next record when it carries that record's source offset;
    a gap inside the restored range is believed only when the source itself had no record there; and
    records without the header before the first restored one (which the search read) are part of the
    restore when the snapshot's evidence is among them.
    """
    found, c = result.found, pos.committed
    if not result.complete or found is None:
        return None
    if result.below is None and found.offset > bounds.start and pos.next is not None and pos.next.offset < found.key:
        sighted = sorted(o for o in reads.sightings.get(pos.target, {}) if o < found.offset)
        if sighted:
            return (
                f"target offsets {sighted[0]}..{sighted[-1]} carry no offset header but hold records of the snapshot's "
                f"evidence, before the first restored record found (target offset {found.offset})"
            )
        if pos.target in reads.unchecked:
            return (
                f"records without the offset header lie before the first restored record found (target offset "
                f"{found.offset}), and the snapshot's record {pos.next.offset} may be among them"
            )
    if pos.next is None:
        if found.key > c and result.below is not None and pos.log_end is not None and c < pos.log_end:
            return (
                f"the restore has no record for source offsets {c}..{found.key - 1}, and without the "
                "snapshot's evidence that gap cannot be checked"
            )
        return None
    if found.key == pos.next.offset:
        seen = reads.print_at(pos.target, found.offset)
        if seen is not None and seen != pos.next.fingerprint:
            return (
                f"target offset {found.offset} carries source offset {found.key}, but its content differs "
                f"from the snapshot's record {found.key}"
            )
    elif found.key > pos.next.offset and result.below is not None:
        return (
            f"the source had record {pos.next.offset} when the snapshot was taken, but the first record "
            f"carrying a source offset >= {c} found by the search carries {found.key}"
        )
    return None


def _header_decision(pos: Position, result: SearchResult, header: str) -> Decision | str:
    c = pos.committed
    if not result.complete:
        return result.reason or "search did not finish"
    if result.found is None and result.below is None:
        return f"no record of {pos.target} carries header {header}"
    if result.found is not None:
        expected = _expected_print(pos, result.found.key)
        if result.below is None and result.found.key > c:
            return Decision(
                "mapped",
                result.found.offset,
                "earliest",
                True,
                0,
                f"committed offset {c} is before the restored range (first restored source offset "
                f"{result.found.key}): resume at the earliest restored record",
                expected_fingerprint=expected,
            )
        gap = f"source records {c}..{result.found.key - 1} are not in the restore" if result.found.key > c else None
        return Decision("mapped", result.found.offset, "header", True, 0, gap, expected_fingerprint=expected)
    last = result.below
    assert last is not None
    return _beyond(pos, last.key, last.offset + 1, 0, "")


def _beyond(pos: Position, top: int, offset: int, duplicates: int, note: str) -> Decision:
    """No restored record carries a source offset >= c: pending while the restore has not reached
    the source's end, otherwise resume after the last restored record."""
    c = pos.committed
    last_source = pos.last_source_record
    if last_source is not None and top < last_source:
        return Decision(
            "pending",
            reason=f"the restore has reached source offset {top}; the source had records up to "
            f"{last_source} and the group resumes at {c}{note}",
        )
    what = "caught up" if pos.log_end is not None and c == pos.log_end else "beyond the restored data"
    return Decision(
        "mapped",
        offset,
        "end",
        duplicates == 0,
        duplicates,
        f"group is {what}: resume after the last restored record (source offset {top}){note}",
    )


def _expected_print(pos: Position, key: int) -> str | None:
    """The snapshot's fingerprint of the record that carries source offset ``key``, if it has one."""
    return pos.next.fingerprint if pos.next is not None and pos.next.offset == key else None


def _with_anchor(decision: Decision | str, log: PartitionLog | None, result: SearchResult) -> Decision | str:
    """The decision with the record next to its resume point that apply checks is still there."""
    if isinstance(decision, str) or decision.status != "mapped" or log is None:
        return decision
    record = result.found or result.below
    if record is None:
        return decision
    at = bisect.bisect_left(log.offsets, record.offset)
    stamp = log.timestamps[at] if at < len(log) and log.offsets[at] == record.offset else None
    return replace(decision, anchor=(record.offset, record.key, stamp))


WHOLE_READ_SHARE_RECORDS = 4_000_000
WHOLE_READ_SHARE_PARTITIONS = 64
"""Partitions read whole are read and decided in shares of at most 64 partitions and about 4 million
records: memory holds one share's logs (24 bytes a record) and one round's answers (1 MiB a
partition), where a round over every dense partition could bring a whole topic at once."""


def _read_whole_and_decide(
    undecided: dict[PositionKey, Position],
    suspect: dict[TP, str],
    reads: HeaderReads,
    ctx: Context,
    begun: dict[TP, _Begun],
) -> dict[PositionKey, Decision | str]:
    """Read every suspect partition once, in shared fetch rounds, and answer its positions from the
    running maximum of the headers (``resume_points``); a share of partitions at a time."""
    outcome: dict[PositionKey, Decision | str] = {}
    by_tp: dict[TP, list[PositionKey]] = defaultdict(list)
    for key, pos in undecided.items():
        if pos.target in suspect:
            by_tp[pos.target].append(key)
    least = WHOLE_READ_SHARE_RECORDS // WHOLE_READ_SHARE_PARTITIONS
    weight = {tp: max(least, ctx.bounds[tp].end - ctx.bounds[tp].start) for tp in suspect}
    for share in packed(sorted(suspect), weight.__getitem__, WHOLE_READ_SHARE_RECORDS):
        for tp, log in _read_partitions(share, ctx, reads, begun).items():
            keys = by_tp.get(tp, [])
            if isinstance(log, str):
                outcome.update(dict.fromkeys(keys, log))
            else:
                outcome.update(_decide_read_whole(tp, log, keys, undecided, suspect[tp], reads, ctx))
        reads.forget(share)
    return outcome


def _decide_read_whole(
    tp: TP,
    log: PartitionLog,
    keys: list[PositionKey],
    undecided: dict[PositionKey, Position],
    why: str,
    reads: HeaderReads,
    ctx: Context,
) -> dict[PositionKey, Decision | str]:
    bounds = ctx.bounds[tp]
    disorder = disorder_in(log, [(bounds.start, bounds.end)])
    if disorder:
        ctx.stats.out_of_order[tp] = disorder
        note = f" [{tp} is out of order: {disorder}; answered from all {len(log):,} of its records]"
    else:
        note = f" [checked by reading all {len(log):,} records of {tp}, which are in order: {why}]"
    placement = place_by_evidence(
        log,
        reads.sightings.get(tp, {}),
        assume_order=ctx.options.order_check == "windows",
        disproven=reads.disproven.get(tp, set()),
    )
    answers = resume_points(log, {undecided[k].committed for k in keys})
    restored, header = log.restored_range(), ctx.options.offset_header
    decisions = {
        key: _ordered_decision(
            undecided[key], answers, log, restored, note, reads, header, placement, in_order=not disorder
        )
        for key in keys
    }
    if tp in reads.unchecked and restored is not None:
        decisions.update(_from_the_start(log, restored[2], {k: undecided[k] for k in keys}, note))
    return decisions


def _from_the_start(
    log: PartitionLog, lowest: int, positions: Mapping[PositionKey, Position], note: str
) -> dict[PositionKey, Decision | str]:
    """More records without the header before the first restored one than a whole read holds to
    compare with the evidence: a group whose next record the restore does not carry may have it
    among them, and resumes at the log's start (nothing skipped, duplicates not bounded)."""
    out: dict[PositionKey, Decision | str] = {}
    for key, pos in positions.items():
        if pos.next is not None and pos.next.offset < lowest and len(log):
            out[key] = Decision(
                "mapped",
                log.offsets[0],
                "earliest",
                False,
                None,
                f"more than {MAX_HELD_RECORDS:,} records without the offset header lie before the first restored one "
                f"and were not compared with the snapshot's evidence; its record {pos.next.offset} may be among them: "
                f"resume at the log's start, duplicates not bounded{note}",
                anchor=(log.offsets[0], None if log.keys[0] == NO_KEY else log.keys[0], log.timestamps[0]),
            )
    return out


def _read_partitions(
    tps: Sequence[TP], ctx: Context, reads: HeaderReads, begun: dict[TP, _Begun]
) -> dict[TP, PartitionLog | str]:
    """Every record of each partition from its log start to its end when the plan began (on from
    where ``begun`` left off, taking it)."""
    first = {tp: begun.pop(tp, (PartitionLog(), ctx.bounds[tp].start)) for tp in tps}
    logs: dict[TP, PartitionLog | str] = {tp: log for tp, (log, _) in first.items()}
    starts = {tp: start for tp, (_, start) in first.items() if start < ctx.bounds[tp].end}

    def take(tp: TP, outcome: Served | AtEnd) -> int | None:
        if isinstance(outcome, AtEnd):
            return None
        log = logs[tp]
        assert isinstance(log, PartitionLog)
        log.extend(reads.whole(tp, outcome.answer))
        return outcome.answer.read_to if outcome.answer.read_to < ctx.bounds[tp].end else None

    rounds = ctx.rounds(WHOLE_READ_BYTES)
    for tp, failure in read_forward(rounds, starts, take).items():
        logs[tp] = f"reading {tp} whole failed: {failure.reason}"
    ctx.record("header (whole partitions)", rounds.rounds, rounds.fetches, rounds.records, {})
    return logs


def _ordered_decision(
    pos: Position,
    answers: Mapping[int, Resume],
    log: PartitionLog,
    restored: tuple[int, int, int, int] | None,
    note: str,
    reads: HeaderReads,
    header: str,
    placement: Placement,
    *,
    in_order: bool,
) -> Decision | str:
    """A decision from the resume point of a partition read whole (docs/translation.md);
    ``restored``: the log's ``restored_range()``; ``placement``: what the snapshot's evidence placed
    where the headers did not (``evidence_placement``); ``in_order``: its headers only grow."""
    c = pos.committed
    answer = answers.get(c)
    if answer is None or restored is None:
        return f"no record of {pos.target} carries header {header}"
    _, last, lowest, highest = restored
    if answer.beyond and not answer.pulled_back:
        decision = _beyond(pos, highest, answer.offset, answer.duplicates, note)
        return replace(decision, anchor=(log.offsets[last], log.keys[last], log.timestamps[last]))
    header_key = log.keys[answer.index]
    # The anchor names the source offset the record carries only where that says what is missing before
    # it: the report counts the records between as lost before the backup. Not for a header the content
    # contradicts, nor past the committed offset in a partition out of order (those records may lie
    # after the resume point).
    doubtful = answer.index in placement.contradicted or (not in_order and header_key > pos.committed)
    named = None if header_key == NO_KEY or doubtful else header_key
    anchor = (answer.offset, named, log.timestamps[answer.index])
    if answer.pulled_back:
        return Decision(
            "mapped",
            answer.offset,
            "header",
            False,
            answer.duplicates,
            f"target offset {answer.offset} has no offset header inside the restored range and may carry "
            f"any source offset: resume there, {answer.duplicates} records may be read twice{note}",
            anchor=anchor,
        )
    key = answer.carried if answer.carried is not None else header_key
    parts = [placement.notes[answer.index]] if answer.index in placement.notes else []
    if key > c and answer.index not in log.spans:
        parts.append(f"source records {c}..{key - 1} are not in the restore before target offset {answer.offset}")
    if answer.duplicates:
        parts.append(f"{answer.duplicates} records at or after it carry an earlier source offset (read twice)")
    expected, differs = _content_check(pos, key, reads.print_at(pos.target, answer.offset))
    if differs:
        parts.append(f"its content differs from the snapshot's record {key}")
    exact = answer.exact and not differs and answer.index not in placement.contradicted
    if answer.index in placement.contradicted:
        parts.append("its header and its content disagree: not exact")
    method: Method = "fingerprint" if header_key == NO_KEY else "earliest" if lowest > c else "header"
    reason = "; ".join(parts) + note
    return Decision("mapped", answer.offset, method, exact, answer.duplicates, reason, expected, anchor)


def _content_check(pos: Position, key: int, seen: str | None) -> tuple[str | None, bool]:
    """The fingerprint apply must find at the resume point, and whether the record read there
    contradicts the snapshot's (it carries the next record's source offset, not its content). A
    record whose content is the snapshot's next record is that record, whatever its header says."""
    expected = _expected_print(pos, key)
    if pos.next is not None and seen == pos.next.fingerprint:
        return seen, False
    if expected is not None and seen is not None and seen != expected:
        return None, True
    return expected, False


# -- checkpoint -------------------------------------------------------------------------------------


def _by_checkpoint(undecided: dict[PositionKey, Position], ctx: Context) -> dict[PositionKey, Decision | str]:
    reader = ctx.checkpoints
    if reader is None:
        return dict.fromkeys(undecided, "no checkpoint table configured")
    return {key: _checkpoint_decision(pos, reader, ctx.cluster_name) for key, pos in undecided.items()}


def _checkpoint_decision(pos: Position, reader: CheckpointReader, cluster: str) -> Decision | str:
    """From the restore's own progress pairs; pairs whose target offsets do not grow with their source
    offsets (a restore that wrote out of order) are not trusted."""
    where = (cluster, pos.target.topic, pos.target.partition)
    c = pos.committed
    last = reader.last(*where)
    if last is None:
        return f"no checkpoints for {pos.target} of cluster {cluster}"
    floor = reader.floor(*where, c)
    before = reader.floor(*where, c - 1) if floor is not None and floor.source_offset == c and c > 0 else None
    ceiling = reader.ceiling(*where, c + 1)
    pairs = sorted(
        {p.source_offset: p for p in (before, floor, ceiling, last) if p}.values(), key=lambda p: p.source_offset
    )
    for a, b in itertools.pairwise(pairs):
        if b.target_offset <= a.target_offset:
            return (
                f"checkpoints of {pos.target} are out of order (source {a.source_offset} -> target "
                f"{a.target_offset}, source {b.source_offset} -> target {b.target_offset}): not trusted"
            )
    if floor is not None and floor.source_offset == c:
        return Decision("mapped", floor.target_offset, "checkpoint", True, 0, None, _expected_print(pos, c))
    last_source = pos.last_source_record
    if last.source_offset < c and last_source is not None and last.source_offset < last_source:
        return Decision(
            "pending", reason=f"restore checkpoints reach source offset {last.source_offset}; the group resumes at {c}"
        )
    if floor is None:
        return f"the first checkpoint of {pos.target} is past {c}"
    bound = c - floor.source_offset
    if ceiling is not None:
        bound = min(bound, ceiling.target_offset - floor.target_offset)
    return Decision(
        "mapped",
        floor.target_offset,
        "checkpoint",
        False,
        bound,
        f"nearest checkpoint below: source {floor.source_offset} -> target {floor.target_offset}",
    )


# -- mm2 -------------------------------------------------------------------------------------------


def load_mirror_checkpoints(target: TargetCluster, options: PlanOptions) -> MirrorCheckpoints | str:
    """MirrorMaker 2's checkpoints on the target, or why there are none to use."""
    topics = target.topic_partitions()
    try:
        topic = choose_topic(topics, options.mm2_checkpoints_topic)
    except ValueError as error:
        return f"{error} with --mm2-checkpoints-topic"
    if topic is None:
        return "no MirrorMaker 2 checkpoint topic (*.checkpoints.internal) on the target"
    if topic not in topics:
        return f"the MirrorMaker 2 checkpoint topic {topic} does not exist on the target"
    try:
        return MirrorCheckpoints(topic, read_checkpoints(target, topic))
    except ValueError as error:
        raise BadInputError(str(error)) from None


def _by_mm2(undecided: dict[PositionKey, Position], ctx: Context) -> dict[PositionKey, Decision | str]:
    """MM2's translation as a lower bound (translate/mm2.py), made exact by the fingerprint strategy's
    search for the snapshot's evidence (from the evidence's time, so copies of it anywhere near are
    seen); where the evidence is not found exactly once, the earlier of MM2's bound and what the
    search found stands, not exact."""
    if ctx.mm2 is None:
        ctx.mm2 = load_mirror_checkpoints(ctx.target, ctx.options)
    table = ctx.mm2
    if isinstance(table, str):
        return dict.fromkeys(undecided, table)
    outcome: dict[PositionKey, Decision | str] = {}
    floors: dict[PositionKey, Floor] = {}
    for key, pos in undecided.items():
        floor, bounds = table.floor(pos.target, pos.committed), ctx.bounds.get(pos.target)
        if floor is None or bounds is None:
            outcome[key] = f"no checkpoint of {pos.target} in {table.topic} at or below source offset {pos.committed}"
        elif table.beyond(pos.target, bounds.end):
            outcome[key] = (
                f"a checkpoint of {pos.target} in {table.topic} translates past the target's log end {bounds.end}: "
                "MM2's checkpoints do not describe this log (a recreated topic?); not trusted"
            )
        else:
            floors[key] = floor
    searched = _searched_by_time({key: undecided[key] for key in floors}, ctx)
    for key, floor in floors.items():
        pos = undecided[key]
        outcome[key] = _mm2_decision(pos, floor, ctx.bounds[pos.target], searched.get(key))
    return outcome


def _searched_by_time(positions: dict[PositionKey, Position], ctx: Context) -> dict[PositionKey, Decision | str]:
    """The fingerprint strategy's search for the positions with evidence, unless that strategy
    already ran before this one and could not place them."""
    order = ctx.options.strategies
    if "fingerprint" in order and order.index("fingerprint") < order.index("mm2"):
        return dict.fromkeys(positions, "the fingerprint strategy, before this one, could not place it")
    with_evidence = {key: pos for key, pos in positions.items() if pos.next is not None or pos.packed_before}
    found = _by_fingerprint(with_evidence, ctx) if with_evidence else {}
    return {key: found.get(key, "the snapshot has no evidence to make it exact") for key in positions}


def _mm2_decision(pos: Position, floor: Floor, bounds: LogBounds, found: Decision | str | None) -> Decision:
    """Exact when the evidence was found exactly once at or after MM2's translation; otherwise the
    earlier of the two (MM2 wrong, or the evidence repeated), claiming nothing."""
    if not isinstance(found, Decision) or found.target_offset is None:
        return _mm2_bound(pos, floor, bounds, found if isinstance(found, str) else "the evidence was not placed")
    offset = found.target_offset
    translated = f"MirrorMaker 2's translation {floor.downstream} (of source offset {floor.upstream})"
    if found.exact and offset >= floor.downstream:
        refined = f"{translated} made exact by the snapshot's evidence, found at {offset}"
        return replace(found, method="mm2", reason=f"{found.reason}; {refined}" if found.reason else refined)
    if offset >= within_log(floor.downstream, bounds):
        return _mm2_bound(pos, floor, bounds, found.reason or "the evidence is not exact there")
    why = (
        "is past the snapshot's evidence"
        if found.exact
        else f"is past where the evidence search resumes ({found.reason})"
    )
    return replace(
        found,
        method="mm2",
        exact=False,
        max_duplicates=None,
        reason=f"{translated} {why}, found at {offset}: resumes there, not exact",
    )


def _mm2_bound(pos: Position, floor: Floor, bounds: LogBounds, why: str) -> Decision:
    """MM2's translation as it is: at or before the record, by how much not provable."""
    return Decision(
        "mapped",
        within_log(floor.downstream, bounds),
        "mm2",
        False,
        None,
        f"MirrorMaker 2's translation of source offset {floor.upstream} (a lower bound: MM2 resumes up to about "
        f"offset.lag.max records early, more for groups far behind) for {pos.committed}; {why}",
    )


# -- timestamp ------------------------------------------------------------------------------------

MAX_TIMESTAMP_PASSES = 3
MAX_COUNT_ROUNDS = 50


def _wanted_timestamp(pos: Position) -> int | None:
    if pos.next is not None:
        return pos.next.timestamp
    return pos.before[-1].timestamp if pos.before else None


def _timestamp_key(tp: TP, record: FetchedRecord) -> int:
    return record.timestamp


def _skew(index: PartitionIndex) -> int:
    """How far the timestamps read fall below the newest one before them (0: never backwards)."""
    worst = 0
    newest = index.keys[0] if index.keys else 0
    for stamp in index.keys:
        if stamp < newest:
            worst = max(worst, newest - stamp)
        else:
            newest = stamp
    return worst


def _search_time(
    stamps: Mapping[PositionKey, tuple[TP, int]], ctx: Context, strategy: str, margin: int
) -> tuple[dict[PositionKey, SearchResult], dict[TP, int]]:
    """The first record with a timestamp >= each stamp less the skew seen on its partition and
    ``margin``. Timestamps are not in order when producer clocks differ: each pass may read windows
    that show more skew, and then searches again (the windows read are kept)."""
    skews: dict[TP, int] = {}
    results: dict[PositionKey, SearchResult] = {}
    for _ in range(MAX_TIMESTAMP_PASSES):
        wanted = {key: (tp, stamp - skews.get(tp, 0) - margin, None) for key, (tp, stamp) in stamps.items()}
        results, stats = search_first_at_least(
            wanted, ctx.bounds, _timestamp_key, fetch_from(ctx.target), indexes=ctx.timestamp_indexes
        )
        ctx.record(strategy, stats.rounds, stats.fetches, stats.records_read, stats.rounds_per_partition)
        seen = {tp: _skew(ctx.timestamp_indexes[tp]) for tp in {tp for tp, _ in stamps.values()}}
        if all(seen[tp] <= skews.get(tp, 0) for tp in seen):
            break
        skews = seen
    return results, skews


def _by_timestamp(undecided: dict[PositionKey, Position], ctx: Context) -> dict[PositionKey, Decision | str]:
    """The first record at or after the committed record's time, less the clock skew seen on the
    target and a margin: never exact, and the bound on duplicates holds while no producer's clock was
    further off than that."""
    outcome: dict[PositionKey, Decision | str] = {}
    stamps: dict[PositionKey, tuple[TP, int]] = {}
    for key, pos in undecided.items():
        stamp = _wanted_timestamp(pos)
        if stamp is None:
            outcome[key] = "the snapshot has no timestamp for this position (no evidence)"
        else:
            stamps[key] = (pos.target, stamp)
    margin = ctx.options.timestamp_margin_ms
    results, skews = _search_time(stamps, ctx, "timestamp", margin)
    found = {key: r.found.offset for key, r in results.items() if r.complete and r.found is not None}
    limits = {
        key: (stamps[key][0], offset, stamps[key][1] + skews.get(stamps[key][0], 0) + margin)
        for key, offset in found.items()
    }
    counts = _count_until(limits, ctx)
    for key, result in results.items():
        outcome[key] = _timestamp_decision(
            undecided[key], result, stamps[key][1], skews.get(stamps[key][0], 0), margin, counts.get(key), ctx
        )
    return outcome


def _timestamp_decision(
    pos: Position, result: SearchResult, stamp: int, skew: int, margin: int, count: int | None, ctx: Context
) -> Decision | str:
    allowance = skew + margin
    if not result.complete:
        return result.reason or "timestamp search did not finish"
    if result.found is None:
        end = ctx.timestamp_indexes[pos.target].bounds.end
        return Decision(
            "mapped",
            end,
            "end",
            False,
            0,
            f"no target record is as recent as the snapshot's ({stamp} ms, less {allowance} ms): resume at the "
            "end; records a restore still writes would be skipped",
        )
    duplicates = None if count is None else max(0, count - (1 if pos.next is not None else 0))
    seen = f"the skew seen on the target ({skew} ms) and " if skew else ""
    return Decision(
        "mapped",
        result.found.offset,
        "timestamp",
        False,
        duplicates,
        f"first record with timestamp >= {stamp - allowance} ms: the committed record's time {stamp} ms less "
        f"{seen}a margin of {margin} ms; "
        + (f"at most {duplicates} records read twice" if duplicates is not None else "duplicates not counted")
        + f" if no producer's clock was more than {allowance} ms off (more could skip records)",
        anchor=(result.found.offset, None, result.found.key),
    )


def _count_until(starts: dict[PositionKey, tuple[TP, int, int]], ctx: Context) -> dict[PositionKey, int | None]:
    """How many records from each start offset on come before the first with a timestamp past the
    limit: from what the searches read, reading on only where that is not enough. None: not counted
    (the partition stopped answering, or the run is longer than the rounds allowed)."""
    counts: dict[PositionKey, int | None] = {}
    open_keys = dict(starts)
    rounds = ctx.rounds()
    while open_keys:
        positions: dict[TP, int] = {}
        for key, (tp, offset, limit) in list(open_keys.items()):
            count, unread = ctx.timestamp_indexes[tp].count_at_most(offset, limit)
            counts[key] = count
            if unread is None:
                del open_keys[key]
            elif rounds.rounds >= MAX_COUNT_ROUNDS:
                counts[key] = None
                del open_keys[key]
            else:
                positions.setdefault(tp, unread)
        for tp, outcome in rounds.round(positions).items():
            if isinstance(outcome, Failed):
                for key in [k for k, v in open_keys.items() if v[0] == tp]:
                    counts[key] = None
                    del open_keys[key]
            elif isinstance(outcome, Served):
                answer = outcome.answer
                keyed = [KeyedRecord(r.offset, r.timestamp) for r in answer.records]
                ctx.timestamp_indexes[tp].add_window(positions[tp], answer.read_to, keyed)
            elif isinstance(outcome, AtEnd):
                ctx.timestamp_indexes[tp].add_window(positions[tp], positions[tp] + 1, [])
    ctx.record("timestamp", rounds.rounds, rounds.fetches, rounds.records, {})
    return counts


# -- fingerprint ----------------------------------------------------------------------------------


def _cut_by_log_start(
    sequence: list[str], prints: list[str], window: list[FetchedRecord], log_start: int, pos: Position
) -> list[str]:
    """The evidence the target can hold when its log begins inside it: the records before the
    committed one were lost before the copy (or deleted since), so the target's first records are the
    sequence's end, down to the next record itself. Empty when they are not."""
    if pos.next is None or not window or window[0].offset != log_start:
        return []
    for cut in range(1, len(sequence)):
        if prints[: len(sequence) - cut] == sequence[cut:]:
            return sequence[cut:]
    return []


def _by_fingerprint(undecided: dict[PositionKey, Position], ctx: Context) -> dict[PositionKey, Decision | str]:
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
    # Read from before the oldest evidence by the skew seen: copies of the evidence that a disordered
    # region put earlier are then in the window, and the match is not called exact.
    results, skews = _search_time({key: (tp, stamp) for key, (tp, stamp, _) in wanted.items()}, ctx, "fingerprint", 0)
    scans = {}
    for key, result in results.items():
        if not result.complete:
            outcome[key] = result.reason or "search did not finish"
        elif result.found is None:
            outcome[key] = "no target record is as recent as the evidence"
        else:
            scans[key] = result.found.offset
    windows = _scan_windows(scans, undecided, ctx)
    printed: dict[TP, dict[int, str]] = defaultdict(dict)  # windows of one partition overlap
    for key, window in windows.items():
        pos = undecided[key]
        if not isinstance(window, str):
            cache = printed[pos.target]
            for r in window:
                if r.offset not in cache:
                    cache[r.offset] = fingerprint(r.key, r.value, r.headers, exclude_header=ctx.options.offset_header)
        prints = window if isinstance(window, str) else [printed[pos.target][r.offset] for r in window]
        outcome[key] = _match(pos, window, prints, ctx.bounds[pos.target].start)
    moved = _doubted(outcome, undecided, printed)
    since = {key: (scans[key], wanted[key][1] - skews.get(wanted[key][0], 0)) for key in moved}
    return _read_back(outcome, moved, since, undecided, ctx)


def _doubted(
    outcome: dict[PositionKey, Decision | str],
    positions: Mapping[PositionKey, Position],
    printed: Mapping[TP, Mapping[int, str]],
) -> dict[PositionKey, tuple[int, str]]:
    """Mark what ``fingerprint_counts`` doubts, from every window of each partition together
    (``printed``: the fingerprint of every record read, by partition and offset), not exact; returns
    the positions it would resume earlier, with where (``_read_back`` decides)."""
    found: dict[TP, list[Found]] = defaultdict(list)
    for key, decision in outcome.items():
        pos = positions[key]
        if isinstance(decision, Decision) and decision.target_offset is not None:
            placed = pos.next is not None and decision.expected_fingerprint == pos.next.fingerprint
            source = pos.next.offset if pos.next is not None and placed else pos.committed
            found[pos.target].append(Found(key, pos.committed, source, decision.target_offset, placed, decision.exact))
    on: dict[TP, list[Position]] = defaultdict(list)
    for pos in positions.values():
        on[pos.target].append(pos)
    moved: dict[PositionKey, tuple[int, str]] = {}
    for tp, decided in found.items():
        evidence = evidence_prints(on[tp])
        records = [(evidence[p][0], evidence[p][-1], o) for o, p in printed.get(tp, {}).items() if p in evidence]
        may_skip, may_repeat = doubts(decided, records)
        for doubted, doubt in may_repeat.items():
            key = cast(PositionKey, doubted)
            repeated = outcome[key]
            assert isinstance(repeated, Decision)
            outcome[key] = _not_exact(repeated, doubt.why)
        for doubted, doubt in may_skip.items():
            key = cast(PositionKey, doubted)
            decision = outcome[key]
            assert isinstance(decision, Decision)
            offset = decision.target_offset
            if doubt.counted and doubt.offset is not None:
                moved[key] = (doubt.offset, doubt.why)  # decided by reading back
            elif doubt.offset is not None and offset is not None and doubt.offset < offset:
                outcome[key] = _resumed_at(decision, doubt.offset, doubt.why)
            else:
                outcome[key] = _not_exact(decision, doubt.why)
    return moved


def _not_exact(decision: Decision, why: str) -> Decision:
    """The decision where it is, claiming nothing: not exact, no bound."""
    return replace(decision, exact=False, max_duplicates=None, reason=why)


def _resumed_at(decision: Decision, offset: int, why: str) -> Decision:
    """The decision resuming earlier, at a record the plan did not place: not exact, no bound."""
    return replace(_not_exact(decision, why), target_offset=offset, expected_fingerprint=None, anchor=None)


FINGERPRINT_READ_BACK_LIMIT = 50_000
"""Records read back before a window whose counts show records moved there (per partition)."""


def _read_back(
    outcome: dict[PositionKey, Decision | str],
    doubted: Mapping[PositionKey, tuple[int, str]],
    since: Mapping[PositionKey, tuple[int, int]],
    positions: Mapping[PositionKey, Position],
    ctx: Context,
) -> dict[PositionKey, Decision | str]:
    """For the positions with more records before them than the source had (``doubted``: key -> the
    offset just after the last match before them, and why), read what their window did not — from there to
    where the window began (``since``: key -> (window start, the time it searched from)) — and
    resume at the first record as recent as the window's time: older ones are not records at or past
    the group's position (the assumption the window itself rests on). Nothing new enough there: the
    match stands, not exact. Past the read-back limit, the earlier offset stands."""
    moved = {key: low for key, (low, _) in doubted.items()}
    reasons = {key: why for key, (_, why) in doubted.items()}
    region: dict[TP, tuple[int, int]] = {}
    for key, low in moved.items():
        tp, start = positions[key].target, since[key][0]
        lo, hi = region.get(tp, (low, start))
        region[tp] = (min(lo, low), max(hi, start))
    stamps: dict[TP, list[tuple[int, int]]] = defaultdict(list)  # (offset, timestamp) read
    reached = {tp: lo for tp, (lo, _) in region.items()}
    rounds = ctx.rounds()

    def take(tp: TP, fetched: Served | AtEnd) -> int | None:
        if isinstance(fetched, AtEnd):
            reached[tp] = region[tp][1]
            return None
        stamps[tp].extend((r.offset, r.timestamp) for r in fetched.answer.records)
        reached[tp] = fetched.answer.read_to
        done = fetched.answer.read_to >= region[tp][1] or len(stamps[tp]) > FINGERPRINT_READ_BACK_LIMIT
        return None if done else fetched.answer.read_to

    failed = read_forward(rounds, {tp: lo for tp, (lo, hi) in region.items() if lo < hi}, take)
    ctx.record("fingerprint (read back)", rounds.rounds, rounds.fetches, rounds.records, {})
    for key, low in moved.items():
        tp, (start, stamp) = positions[key].target, since[key]
        decision = outcome[key]
        assert isinstance(decision, Decision) and decision.target_offset is not None
        covered = tp not in failed and reached.get(tp, low) >= start
        read = (o for o, t in stamps.get(tp, []) if low <= o < start and t >= stamp)
        first = next(read, None) if covered else low
        if first is not None and first < decision.target_offset:
            why = reasons[key] + (f": {first} is as recent as the evidence" if covered else " (not read back)")
            outcome[key] = _resumed_at(decision, first, why)
    return outcome


def _scan_windows(
    starts: dict[PositionKey, int], positions: dict[PositionKey, Position], ctx: Context
) -> dict[PositionKey, list[FetchedRecord] | str]:
    """Records from each start until ``FINGERPRINT_FOLLOW_RECORDS`` past the first one newer than the
    evidence (bounded). Positions on one partition take turns: a round reads one window per
    partition."""
    windows: dict[PositionKey, list[FetchedRecord] | str] = {}
    collected: dict[PositionKey, list[FetchedRecord]] = {key: [] for key in starts}
    past: dict[PositionKey, int] = dict.fromkeys(starts, -1)
    cursor = dict(starts)
    rounds = ctx.rounds()
    while len(windows) < len(starts):
        asked: dict[TP, PositionKey] = {}
        for key in sorted(set(starts) - set(windows)):
            asked.setdefault(positions[key].target, key)
        outcomes = rounds.round({tp: cursor[key] for tp, key in asked.items()})
        for tp, key in asked.items():
            outcome = outcomes[tp]
            if isinstance(outcome, Failed):
                windows[key] = outcome.reason
            elif isinstance(outcome, AtEnd):
                windows[key] = collected[key]
            elif isinstance(outcome, Served):
                cursor[key], past[key] = _extend_window(collected[key], positions[key], outcome.answer, past[key])
                if len(collected[key]) > FINGERPRINT_SCAN_LIMIT + FINGERPRINT_FOLLOW_RECORDS:
                    windows[key] = f"more than {FINGERPRINT_SCAN_LIMIT} target records before the evidence's time"
                elif cursor[key] < 0 or cursor[key] >= max(outcome.end, 0):
                    windows[key] = collected[key]
    ctx.record("fingerprint", rounds.rounds, rounds.fetches, rounds.records, {})
    return windows


def _extend_window(window: list[FetchedRecord], pos: Position, answer: PartitionFetch, past: int) -> tuple[int, int]:
    """Add an answer's records to a scan window; where to read next (-1: done) and how many records
    were read since the first one newer than every piece of evidence (-1: none yet). The evidence's
    sequence cannot start after that record; the ``FINGERPRINT_FOLLOW_RECORDS`` after it are read
    too, for copies of the evidence or older records that a region copied twice puts there."""
    newest = max(e.timestamp for e in [*pos.before, *([pos.next] if pos.next else [])])
    for record in answer.records:
        window.append(record)
        if past >= 0:
            past += 1
        elif record.timestamp > newest and pos.next is not None:
            past = 0
        if past >= FINGERPRINT_FOLLOW_RECORDS:
            return -1, past
    return answer.read_to, past


def _match(pos: Position, window: list[FetchedRecord] | str, prints: list[str] | str, log_start: int) -> Decision | str:
    """The decision from one position's window (``prints``: its records' fingerprints)."""
    if isinstance(window, str):
        return window
    assert not isinstance(prints, str)
    sequence = [e.fingerprint for e in pos.before] + ([pos.next.fingerprint] if pos.next else [])
    matches = [i for i in range(len(prints) - len(sequence) + 1) if prints[i : i + len(sequence)] == sequence]
    if not matches:
        sequence = _cut_by_log_start(sequence, prints, window, log_start, pos)
        matches = [0] if sequence else []
    n = len(sequence)
    if not matches:
        return "the evidence records were not found on the target"
    if len(matches) > 1:
        return f"the evidence matches {len(matches)} places on the target (identical records): ambiguous"
    first, last = matches[0], matches[0] + n - 1
    following = window[last + 1].offset if last + 1 < len(window) else window[last].offset + 1
    evidence = [*pos.before, *([pos.next] if pos.next else [])]
    newest = max(e.timestamp for e in evidence)
    recent = pos.next.timestamp if pos.next is not None else newest + 1  # as recent as the next record
    newer = [r.offset for r in window[:first] if r.timestamp >= min(recent, newest + 1)]
    every = {e.fingerprint for e in evidence}  # with a sequence cut by the log start, its lost part too
    strays = [i for i, p in enumerate(prints) if p in every and not first <= i <= last]
    if strays:
        # A copy of an evidence record outside the match: the region is repeated or out of order, so
        # the records around the match cannot be placed. Resume at the earliest copy of the next
        # record (nothing at or after it is skipped) and claim no bound.
        nexts = [i for i in strays if pos.next is not None and prints[i] == pos.next.fingerprint]
        at = min([*nexts, last]) if pos.next is not None else None
        offset = window[at].offset if at is not None else following
        shown = ", ".join(str(window[i].offset) for i in strays[:5])
        return Decision(
            "mapped",
            min(offset, following, *newer[:1]),
            "fingerprint",
            False,
            None,
            f"copies of the evidence records also lie at target offsets {shown}: the region is repeated or "
            "out of order; resume at the earliest copy of the next record, duplicates not bounded",
            pos.next.fingerprint if at is not None and pos.next is not None and not newer else None,
        )
    if newer:
        # Records newer than the evidence before it: records past the position, moved earlier (the
        # window goes on past the first newer record, to see what follows the match).
        return Decision(
            "mapped",
            newer[0],
            "fingerprint",
            False,
            None,
            f"target offsets {', '.join(map(str, newer[:5]))} before the match hold records as recent as the "
            "snapshot's next record (records past the position, moved earlier?): resume at the first of them, "
            "duplicates not bounded",
        )
    oldest = min(e.timestamp for e in evidence[len(evidence) - n :])
    older = [r.offset for r in window[last + 1 :] if r.timestamp < oldest]
    if older:
        return Decision(
            "mapped",
            window[last].offset if pos.next is not None else following,
            "fingerprint",
            False,
            None,
            f"target offsets {', '.join(map(str, older[:5]))} after the match hold records older than the snapshot's "
            "evidence: a region copied twice or reordered may follow; resume at the match, duplicates not bounded",
            pos.next.fingerprint if pos.next is not None else None,
            (window[last].offset, None, window[last].timestamp),
        )
    if pos.next is not None:
        return Decision(
            "mapped",
            window[last].offset,
            "fingerprint",
            True,
            0,
            None,
            pos.next.fingerprint,
            (window[last].offset, None, window[last].timestamp),
        )
    anchor = (window[last].offset, None, window[last].timestamp)
    return Decision(
        "mapped", following, "fingerprint", True, 0, "group was caught up: resume after its last record", None, anchor
    )
