"""Translate snapshot positions to target offsets (docs/design.md §1, §2.2).

The rule: a group committed at ``c`` on the source must resume at the first restored record whose
source offset is ``>= c``. Every distinct (topic, partition, c) of the snapshot is translated once,
then copied to every group at that position. Strategies are tried in the order asked for; each
decides the positions it can and leaves the others, with its reason, to the next. What no strategy
decides is ``unmapped`` with every reason.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from typing import Literal

from offset_restore.formats.plan import PlanEntry, new_entry_fields
from offset_restore.heap import collections_paused
from offset_restore.kafka.model import SHARE_GROUP, TP, PartitionFetch, Record, topic_ids
from offset_restore.reading.held import HeldAnswers
from offset_restore.snapshot.model import GroupSnapshot, PartitionSnapshot, default_cluster_name
from offset_restore.translate.applications import hold_application
from offset_restore.translate.checkpoints import CheckpointReader, CollectedCheckpoints
from offset_restore.translate.context import Context, TargetCluster
from offset_restore.translate.mm2 import MirrorCheckpoints
from offset_restore.translate.options import PlanOptions, Strategy
from offset_restore.translate.positions import (
    Decision,
    Position,
    PositionKey,
    TranslateStats,
    evidence_of,
    last_mark,
    pack_evidence,
)
from offset_restore.translate.proof import Seen, prove
from offset_restore.translate.read_headers import ReadHeaders
from offset_restore.translate.reshaped import (
    Reshaped,
    Shapes,
    held_entries,
    map_group,
    read_index,
    sample_reads,
)
from offset_restore.translate.strategies.checkpoint import by_checkpoint
from offset_restore.translate.strategies.fingerprint import by_fingerprint
from offset_restore.translate.strategies.header import by_header
from offset_restore.translate.strategies.mm2 import by_mm2
from offset_restore.translate.strategies.origin import by_origin
from offset_restore.translate.strategies.outcomes import with_unrestored_tail
from offset_restore.translate.strategies.timestamp import by_timestamp
from offset_restore.translate.strategies.whole_read import (
    WHOLE_READ_BYTES,
    distinct_offsets,
    probe_starts,
)

__all__ = ["collect_positions", "decide_positions", "plan_entries"]

_tuple = tuple.__new__


@collections_paused()
def decide_positions(
    positions: dict[PositionKey, Position],
    target: TargetCluster,
    options: PlanOptions,
    *,
    checkpoints: CheckpointReader | None = None,
    mm2: MirrorCheckpoints | str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    source_partitions: Mapping[str, int] | None = None,
    source_recreated: Mapping[str, str] | None = None,
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
    checkpoints = None if checkpoints is None else CollectedCheckpoints(checkpoints)  # DynamoDB: collected as read
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
    stats.target_topic_ids = topic_ids(target.partition_identities(context.bounds))
    stats.target_ends = {tp: log.end for tp, log in context.bounds.items()}
    if checkpoints is not None:
        context.recorded_complete = _recorded_complete(checkpoints, context.cluster_name, positions.values())
    stats.reshaped = _reshaped_topics(positions, topic_counts, source_partitions or {}, context)
    decisions = _missing_on_target(positions, topic_counts)
    decisions.update(_of_an_old_incarnation(positions, source_recreated or {}))
    declined: dict[PositionKey, list[str]] = defaultdict(list)
    answered_by: dict[PositionKey, str] = {}
    ended = context.recorded_complete
    declared = _per_partition(positions.values(), lambda pos: options.completes(pos.source) or pos.target in ended)
    restored = {key: pos for key, pos in positions.items() if declared[pos.source]}
    every = dict(positions)  # the strategies take what they decide out of ``positions``
    undecided = positions
    strategies: dict[Strategy, Callable[[dict[PositionKey, Position], Context], dict[PositionKey, Decision | str]]]
    strategies = {
        "header": by_header,
        "origin": by_origin,
        "fingerprint": by_fingerprint,
        "checkpoint": by_checkpoint,
        "mm2": by_mm2,
        "timestamp": by_timestamp,
    }
    for number, name in enumerate(options.strategies, start=1):
        if not undecided:
            break
        report(f"strategy {name}", number - 1, len(options.strategies))
        for key, outcome in strategies[name](undecided, context).items():
            if isinstance(outcome, Decision):
                decisions[key] = outcome
                answered_by[key] = name
                del undecided[key]
            else:
                declined[key].append(f"{name}: {outcome}")
    for key in undecided:
        decisions[key] = Decision("unmapped", reason="; ".join(declined.get(key, ())) or "no strategy was asked for")
    _rerouted_while_reading(decisions, stats, topic_counts, context)
    complete = _per_partition(every.values(), partial(_declared_complete, context))
    seen = Seen(
        context.tail,
        context.read_headers or ReadHeaders(options.offset_header),
        lambda wanted: context.records_at(wanted, "proof")[0],
        _last_pairs(checkpoints, context.cluster_name),
    )
    prove(
        decisions, every, context.bounds, seen, header=options.offset_header, complete=complete, answered_by=answered_by
    )
    _count_unrestored_tails(restored, decisions, context)
    report("strategies", len(options.strategies), len(options.strategies))
    return decisions, stats


def _per_partition(positions: Iterable[Position], answer: Callable[[Position], bool]) -> dict[TP, bool]:
    """``answer`` for each source partition, asked of its first position: what it answers depends on the
    partition alone (a source partition has one target partition), and a dense plan has hundreds of
    positions a partition."""
    answers: dict[TP, bool] = {}
    for pos in positions:
        if pos.source not in answers:
            answers[pos.source] = answer(pos)
    return answers


def _declared_complete(ctx: Context, pos: Position) -> bool:
    """Whether the restore of ``pos``'s partition was declared finished (by the operator, or by the
    restore tool: at the last source offset the target's end carries, where its records carry one)."""
    top = ctx.tail_tops.get(pos.target)
    if top is None:
        return ctx.options.completes(pos.source) or pos.target in ctx.recorded_complete
    return ctx.completes(pos, top)


def _last_pairs(checkpoints: CheckpointReader | None, cluster: str) -> Callable[[TP], tuple[int, int] | None]:
    """The restore's last progress pair of a target partition (source offset, target offset), each read once."""
    known: dict[TP, tuple[int, int] | None] = {}

    def last(tp: TP) -> tuple[int, int] | None:
        if checkpoints is None:
            return None
        if tp not in known:
            pair = checkpoints.last(cluster, tp.topic, tp.partition)
            known[tp] = None if pair is None else (pair.source_offset, pair.target_offset)
        return known[tp]

    return last


def _recorded_complete(checkpoints: CheckpointReader, cluster: str, positions: Iterable[Position]) -> dict[TP, int]:
    """The target partitions whose restore tool recorded its end (``COMPLETE``), with its last source offset."""
    finished = checkpoints.completed(cluster, {(p.target.topic, p.target.partition) for p in positions})
    return {TP(t, p): last for (t, p), last in finished.items()}


def _count_unrestored_tails(
    finished: Mapping[PositionKey, Position], decisions: dict[PositionKey, Decision], ctx: Context
) -> None:
    """On partitions whose restore is finished, what the groups mapped inside it had not processed after
    its end: never restored, counted (the end is the highest source offset the partition's last records
    carry, as the shape check read them)."""
    for key, pos in finished.items():
        top = ctx.tail_tops.get(pos.target)
        decision = decisions.get(key)
        if decision is not None and top is not None and ctx.completes(pos, top):
            decisions[key] = with_unrestored_tail(decision, pos, top)


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


def _every_partition(positions: Mapping[PositionKey, Position], topics: Mapping[str, int]) -> list[TP]:
    """Every partition of the target topics the positions map onto: a changed topic is read whole. In
    order: the reads follow it (and which answers the plan's budget holds), so a plan of the same target
    reads the same bytes however the process hashes names."""
    names = {pos.target.topic for pos in positions.values()}
    return [TP(name, p) for name in sorted(names) if name in topics for p in range(topics[name])]


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
    onto: dict[str, str] = {}
    widest: dict[str, int] = {}
    for pos in positions.values():  # one pass: a dense plan has tens of thousands
        source, name = pos.source, pos.target.topic
        if name in topics:
            onto[source.topic] = name
        if source.partition >= widest.get(source.topic, 0):
            widest[source.topic] = source.partition + 1
        shapes.add_records(source.topic, source.partition, _marks(pos))
    shapes.compare_counts(onto, source_partitions, topics, widest)
    back = {name: topic for topic, name in onto.items()}
    ctx.read_headers = ReadHeaders(options.offset_header)  # from the samples on, every read is kept
    for tp, (answers, records) in _samples(positions, ctx).items():
        if tp.topic in back:
            shapes.check_sample(back[tp.topic], tp, records)
        ctx.tail_sampled.add(tp)
        ctx.tail.add(tp, records, options.offset_header)
        top = ctx.tail.highest.get(tp)  # the highest source offset the sample's records carry
        if top is not None:
            ctx.tail_tops[tp] = top
        else:  # a replica without the header: the fingerprint scan of a caught-up group reads it
            ctx.keep_unkeyed(tp, answers)
    found = {topic: Reshaped(topic, onto[topic], why) for topic, why in shapes.changed.items()}
    for reshaped in found.values():
        _index_or_why(reshaped, shapes, topics, ctx)
    for key in [key for key, pos in positions.items() if pos.source.topic in found]:
        del positions[key]
    ctx.shapes, ctx.watched = shapes, {name: topic for name, topic in back.items() if topic not in found}
    return found


def _marks(pos: Position) -> list[tuple[int, str]]:
    """The (offset, fingerprint) of the position's next record and of the last one before it, as the
    snapshot read them: what the shape check knows of its source partition's records."""
    nxt, last = pos.next, last_mark(pos.packed_before)
    marks = [] if nxt is None else [(nxt.offset, nxt.fingerprint)]
    if last is not None:
        marks.append(last)
    return marks


def _rerouted_while_reading(
    decisions: dict[PositionKey, Decision], stats: TranslateStats, topics: Mapping[str, int], ctx: Context
) -> None:
    """The topics the strategies' own reads found re-routed (a record whose source-partition header names
    another partition, anywhere they read, not only in the sample): their answers are dropped, and the
    topic is mapped by its index or its groups held, as a topic the shape check caught is."""
    shapes = ctx.shapes
    if shapes is None:
        return
    late = {topic: why for topic, why in shapes.changed.items() if topic not in stats.reshaped}
    onto = {topic: name for name, topic in ctx.watched.items()}
    for topic, why in late.items():
        reshaped = Reshaped(topic, onto[topic], why)
        _index_or_why(reshaped, shapes, topics, ctx)
        stats.reshaped[topic] = reshaped
    for key in [key for key in decisions if key[0] in late]:
        del decisions[key]


def _samples(
    positions: Mapping[PositionKey, Position], ctx: Context
) -> dict[TP, tuple[list[PartitionFetch], list[Record]]]:
    """Each target partition's sample (``sample_reads``): the answers read, and their records; held for a
    whole read, those the header strategy will probe first before the others (``_hold_samples``)."""
    rounds = ctx.rounds()
    read = sample_reads(rounds, ctx.bounds)
    ctx.learned.learn(rounds.limits, rounds.batch_bytes, rounds.largest_batch, rounds.uncut)
    ctx.record("shape (samples)", rounds.rounds, rounds.fetches, rounds.records, {})
    ctx.stats.bytes_read["shape (samples)"] = rounds.bytes
    _hold_samples(read, _probed_later(positions, ctx), ctx.held)
    return {tp: (answers, [r for answer in answers for r in answer.records]) for tp, answers in read.items()}


def _hold_samples(read: Mapping[TP, list[PartitionFetch]], first: set[TP], held: HeldAnswers) -> None:
    """Hold the samples a whole read may take its last records from, a partition's whole or not at all:
    those of ``first`` (the partitions most likely read whole), then the others, while the budget lasts."""
    for tp in sorted(read, key=lambda tp: tp not in first):
        if not held.keep("sample", tp, read[tp]):
            break


def _probed_later(positions: Mapping[PositionKey, Position], ctx: Context) -> set[TP]:
    """The partitions the header strategy will probe (``probe_starts``) where it comes first: a whole
    read of one takes its last records from the sample, not reading them again (the local broker's
    dense plan read 1.02 times one pass, the samples' 3.2 MB)."""
    options = ctx.options
    if options.strategies[0] != "header" or not options.whole_when_cheaper or options.order_check != "windows":
        return set()
    return set(probe_starts(distinct_offsets(positions.values()), ctx))


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


def _of_an_old_incarnation(
    positions: dict[PositionKey, Position], recreated: Mapping[str, str]
) -> dict[PositionKey, Decision]:
    """Unmapped decisions for the positions on source topics deleted and created again after the snapshot
    (taken out of ``positions``): positions in one topic's log are no evidence for another's."""
    stale = {key: Decision("unmapped", reason=recreated[pos.source.topic])
             for key, pos in positions.items() if pos.source.topic in recreated}  # fmt: skip
    for key in stale:
        del positions[key]
    return stale


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
    target_topic_ids: Mapping[str, str] | None = None,
) -> Iterator[PlanEntry]:
    """Each group-partition's entry, group by group, in the snapshot's order; ``settle`` may change an
    entry (a newer MM2 checkpoint, translate/mm2.py) before the collision guard sees the group. A
    topic whose shape changed (``reshaped``) gets one entry per target partition, or holds the group.
    ``target_topic_ids``: the target topics' ids the plan read, recorded on each entry, as is a share group's
    kind (its start offsets are translated as committed offsets are, and written as its own)."""
    changed, ids = reshaped or {}, target_topic_ids or {}
    for group in groups:
        kind: Literal["share"] | None = "share" if group.protocol_type == SHARE_GROUP else None
        entries = [
            _entry(group.group, p, decisions, options, ids, kind) for p in group.partitions if p.topic not in changed
        ]
        entries = [settle(e) for e in entries] if settle else entries
        for topic in sorted({p.topic for p in group.partitions if p.topic in changed}):
            for entry in _reshaped_entries(group, changed[topic], options):
                entry.target_topic_id, entry.group_kind = ids.get(entry.target_topic), kind
                entries.append(entry)
        yield from hold_application(group.group, _without_collisions(entries))


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
    finished = {p.partition for p in partitions if options.completes(TP(reshaped.topic, p.partition))}
    return map_group(group.group, partitions, reshaped.target_topic, reshaped.index, uncommitted, finished)


def _entry(
    group: str,
    p: PartitionSnapshot,
    decisions: Mapping[PositionKey, Decision],
    options: PlanOptions,
    topic_ids: Mapping[str, str],
    kind: Literal["share"] | None,
) -> PlanEntry:
    decision = decisions[(p.topic, p.partition, p.committed_offset)]
    target_topic = options.topic_map.get(p.topic, p.topic)
    fields = new_entry_fields()  # filled in place: a dense plan makes hundreds of thousands
    fields["group"], fields["topic"], fields["partition"] = group, p.topic, p.partition
    fields["target_topic"], fields["target_topic_id"] = target_topic, topic_ids.get(target_topic)
    fields["group_kind"] = kind
    fields["source_offset"], fields["target_offset"] = p.committed_offset, decision.target_offset
    fields["method"], fields["exact"] = decision.method, decision.exact
    fields["max_duplicates"] = decision.max_duplicates
    fields["status"], fields["reason"], fields["metadata"] = decision.status, decision.reason, p.metadata
    # outcome stays None: a new entry, nothing applied yet (none read from its reason, as an old file's is)
    fields["expected_fingerprint"], fields["never_restored"] = decision.expected_fingerprint, decision.never_read
    fields["unprovable"] = decision.unprovable and not decision.exact
    fields["redelivered"] = p.delivered_after_start
    if decision.anchor:
        fields["anchor_offset"], fields["anchor_source_offset"], fields["anchor_timestamp"] = decision.anchor
    return PlanEntry.made_of(fields)


def _without_collisions(entries: list[PlanEntry]) -> list[PlanEntry]:
    """A topic map onto a topic a group also reads as itself (``zz-orders-old -> orders``) would give
    the group two offsets for one target partition: the renamed entry is left unmapped, with why,
    and the group's own entry stands (writing the renamed one would move the group on ``orders``).
    A collision is within one group, so the entries of one group at a time suffice."""
    if all(e.topic == e.target_topic for e in entries):
        return entries  # nothing renamed: nothing collides
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
    """The position of ``p``, built as the tuple it is (``Position``'s fields in their order: a dense plan builds
    one per distinct position, and the keywords' Python-level ``__new__`` cost a third of it)."""
    nxt, before, top = p.next, p.before, p.origin_top
    return _tuple(
        Position,
        (
            source,
            target,
            p.committed_offset,
            p.log_start,
            p.log_end,
            None if nxt is None else evidence_of(nxt),
            pack_evidence(before),
            before[-1].origin_offset if before else None,
            None if nxt is None else nxt.origin_offset,
            None if top is None else evidence_of(top),
            None if top is None else top.origin_offset,
            p.own_since,
            p.origin_floor,
            p.origin_twice or 0,
        ),
    )
