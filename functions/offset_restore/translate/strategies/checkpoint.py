"""The checkpoint strategy: the restore's own progress pairs (source offset -> target offset), read
from the checkpoint table (translate/checkpoints.py)."""

from __future__ import annotations

import itertools

from offset_restore.translate.checkpoints import CheckpointReader
from offset_restore.translate.context import Context
from offset_restore.translate.positions import Decision, Position, PositionKey
from offset_restore.translate.strategies.outcomes import expected_print

__all__ = ["by_checkpoint"]


def by_checkpoint(undecided: dict[PositionKey, Position], ctx: Context) -> dict[PositionKey, Decision | str]:
    reader = ctx.checkpoints
    if reader is None:
        return dict.fromkeys(undecided, "no checkpoint table configured")
    return {
        key: _checkpoint_decision(pos, reader, ctx.cluster_name, complete=ctx.completes(pos))
        for key, pos in undecided.items()
    }


def _checkpoint_decision(pos: Position, reader: CheckpointReader, cluster: str, *, complete: bool) -> Decision | str:
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
        return Decision("mapped", floor.target_offset, "checkpoint", True, 0, None, expected_print(pos, c))
    last_source = pos.last_source_record
    if last.source_offset < c and last_source is not None and last.source_offset < last_source:
        if complete:  # where the restored log ends is the target's to say: the header strategy reads it
            return (
                f"restore checkpoints end at source offset {last.source_offset}, before the group's {c}, "
                "and the restore is complete"
            )
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
