"""The Summarize state: the run's mappings counted, and the commit index the Commit steps read written,
with the commit batches by the lane of the fence that writes them."""

from __future__ import annotations

from pydantic import BaseModel

from offset_restore.apply.commit_index import COMMIT_BATCH_GROUPS, IndexBuilder
from offset_restore.apply.model import RewindScope
from offset_restore.formats.plan import PlanSummary, SummaryTally
from offset_restore.kafka.fence import FENCE_LANES
from offset_restore.stores.mappings import MappingStore, entry_key
from offset_restore.stores.storage import BlobStore

__all__ = ["CommitLane", "Summary", "commit_lanes", "summarize"]


class CommitLane(BaseModel):
    lane: int
    batches: list[int]


def commit_lanes(batches: int) -> list[CommitLane]:
    """Batch ``b`` in lane ``b % FENCE_LANES``: one transactional id has one transaction open at a time,
    so no two steps of a run write under one lane."""
    lanes = min(batches, FENCE_LANES)
    return [CommitLane(lane=k, batches=list(range(k, batches, FENCE_LANES))) for k in range(lanes)]


class Summary(BaseModel):
    summary: PlanSummary
    pending: int
    """The entries the workflow waits for: pending ones, and in a migration every entry not exact."""
    commit_lanes: list[CommitLane]
    """The commit batches (``COMMIT_BATCH_GROUPS`` groups each, in name order) by the lane of the fence
    that writes them: the Commit Map runs one step per lane, at most ``FENCE_LANES`` at once."""
    retries_left: int
    """How many more times the workflow may wait for a running restore to reach pending entries."""


def summarize(
    restore_id: str,
    mappings: MappingStore,
    retries_left: int,
    index: BlobStore | None = None,
    allow_rewind: RewindScope = False,
    until_exact: bool = False,
) -> Summary:
    """Count the mappings; with ``index``, also write the commit index the apply steps read. One pass
    over the mappings, none of them held. ``until_exact`` (a migration): entries mapped without proof
    wait as pending ones do — the target has not yet brought the records at their positions."""
    tally, builder = SummaryTally(), IndexBuilder(allow_rewind, exact_only=until_exact)
    for entry in mappings.iter_entries(restore_id):
        tally.add(entry)
        builder.add(entry, entry_key(restore_id, entry)["sk"]["S"] if index is not None else None)
    summary = tally.result()
    if index is not None:
        batches = builder.write(index)
    else:
        batches = (len(builder.candidates()) + COMMIT_BATCH_GROUPS - 1) // COMMIT_BATCH_GROUPS
    waiting = summary.awaiting_catch_up if until_exact else summary.pending
    return Summary(
        summary=summary,
        pending=waiting,
        commit_lanes=commit_lanes(batches),
        retries_left=max(0, retries_left - (1 if waiting else 0)),
    )
