"""The checkpoint strategy: the restore's own progress pairs (source offset -> target offset), read
from the checkpoint table (translate/checkpoints.py)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from offset_restore.translate.checkpoints import Checkpoint, CheckpointReader
from offset_restore.translate.context import Context
from offset_restore.translate.never_restored import never_restored
from offset_restore.translate.positions import Decision, Position, PositionKey
from offset_restore.translate.strategies.outcomes import expected_print, unread_phrase

__all__ = ["by_checkpoint"]


def by_checkpoint(undecided: dict[PositionKey, Position], ctx: Context) -> dict[PositionKey, Decision | str]:
    reader = ctx.checkpoints
    if reader is None:
        return dict.fromkeys(undecided, "no checkpoint table configured")
    return {
        key: _checkpoint_decision(pos, reader, ctx.cluster_name, _Finished.of(pos, ctx))
        for key, pos in undecided.items()
    }


@dataclass(frozen=True)
class _Finished:
    """What the checkpoint strategy knows of the end of a partition's restore."""

    declared: bool
    """The operator declared the restore complete there (``restore_complete``)."""
    recorded: int | None
    """The last source offset the restore tool recorded restoring (its ``COMPLETE`` item)."""
    end: int
    """The target partition's end as the plan read it."""

    @classmethod
    def of(cls, pos: Position, ctx: Context) -> _Finished:
        return cls(ctx.options.completes(pos.source), ctx.recorded_complete.get(pos.target), ctx.bounds[pos.target].end)


def _checkpoint_decision(pos: Position, reader: CheckpointReader, cluster: str, finished: _Finished) -> Decision | str:
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
        if finished.declared or finished.recorded == last.source_offset:
            return _after_the_last_pair(pos, last, finished)
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


def _after_the_last_pair(pos: Position, last: Checkpoint, finished: _Finished) -> Decision:
    """The restore is finished before the group's position: resume after the last pair's record. Exact
    when the restore tool recorded that pair's source offset as its last; declared by the operator only,
    records after it on the target may be restored ones the group processed (read twice, counted)."""
    c, last_source = pos.committed, pos.last_source_record
    assert last_source is not None
    unread = never_restored(c, last.source_offset, last_source)
    resume = last.target_offset + 1
    exact = finished.recorded == last.source_offset
    twice = 0 if exact else max(0, finished.end - resume)
    return Decision(
        "mapped",
        resume,
        "checkpoint",
        exact,
        twice,
        f"the restore was declared complete; its checkpoints end at source offset {last.source_offset} "
        f"(the source had records up to {last_source}): resume after that record"
        + ("" if exact else f", reading at most {twice:,} records after it again (restored ones the group processed)")
        + f"; {unread_phrase(c, last_source, unread)}",
        never_read=unread,
    )
