"""The mm2 strategy: MirrorMaker 2's checkpoints on the target as lower bounds (translate/mm2.py),
made exact by the fingerprint strategy's search for the snapshot's evidence."""

from __future__ import annotations

from offset_restore.errors import BadInputError
from offset_restore.kafka.model import LogBounds
from offset_restore.reading.whole import read_checkpoints
from offset_restore.translate.context import Context, TargetCluster
from offset_restore.translate.mm2 import Floor, MirrorCheckpoints, choose_topic, within_log
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.positions import Decision, Position, PositionKey
from offset_restore.translate.strategies.fingerprint import by_fingerprint

__all__ = ["by_mm2", "load_mirror_checkpoints"]


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


def by_mm2(undecided: dict[PositionKey, Position], ctx: Context) -> dict[PositionKey, Decision | str]:
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
    found = by_fingerprint(with_evidence, ctx) if with_evidence else {}
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
        return found._replace(method="mm2", reason=f"{found.reason}; {refined}" if found.reason else refined)
    if offset >= within_log(floor.downstream, bounds):
        return _mm2_bound(pos, floor, bounds, found.reason or "the evidence is not exact there")
    why = (
        "is past the snapshot's evidence"
        if found.exact
        else f"is past where the evidence search resumes ({found.reason})"
    )
    return found._replace(
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
