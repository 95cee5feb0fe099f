"""The Summarize state: the run's mappings counted, and the commit index the Commit steps read written,
with the commit batches by the lane of the fence that writes them."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice

from pydantic import BaseModel

from offset_restore.apply.commit_index import COMMIT_BATCH_GROUPS, IndexBuilder
from offset_restore.apply.model import RewindScope
from offset_restore.errors import TranslationIncompleteError
from offset_restore.formats.plan import PlanSummary, SummaryTally
from offset_restore.kafka.fence import FENCE_LANES
from offset_restore.stores.in_flight import IN_FLIGHT, concurrently
from offset_restore.stores.mappings import MappingStore, entry_key
from offset_restore.stores.storage import BlobStore
from offset_restore.translate.work_items import GroupPartition, covered, selection

__all__ = ["CommitLane", "Selected", "Summary", "commit_lanes", "summarize"]

_NAMED = 10
"""Missing group-partitions a failure names (then how many more)."""


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


@dataclass(frozen=True)
class Selected:
    """The work items Prepare wrote (keys in ``store``): the group-partitions the run selected."""

    work_items: list[str]
    store: BlobStore

    def check(self, mapped: set[GroupPartition]) -> None:
        """Refuse a run whose Translate items did not all write their entries. On AWS a failed item fails
        the Map; an interpreter that lets it pass (moto's), or a Map given tolerated failures, would
        otherwise commit the rest and report a smaller run as whole. Each item is read again (a few at
        once, only its groups' names and partitions parsed) rather than trusting a count: an entry may
        account for partitions nobody selected."""
        selected, missing = 0, list[tuple[str, GroupPartition]]()
        for start in range(0, len(self.work_items), IN_FLIGHT):
            keys = self.work_items[start : start + IN_FLIGHT]
            for key, raw in zip(keys, concurrently(self.store.get, keys), strict=True):
                chosen = selection(raw)
                selected += len(chosen)
                missing.extend((key, gp) for gp in chosen if gp not in mapped)
        if not missing:
            return
        named = "; ".join(f"{g!r} {t}/{p} ({key})" for key, (g, t, p) in islice(missing, _NAMED))
        more = f"; and {len(missing) - _NAMED} more" if len(missing) > _NAMED else ""
        raise TranslationIncompleteError(
            f"{len(missing)} of {selected} group-partitions selected have no plan entry: a Translate work"
            f" item ended without writing them: {named}{more}. Nothing was committed; run the same restore"
            " id again to translate them"
        )


def summarize(
    restore_id: str,
    mappings: MappingStore,
    retries_left: int,
    index: BlobStore | None = None,
    allow_rewind: RewindScope = False,
    until_exact: bool = False,
    selected: Selected | None = None,
) -> Summary:
    """Count the mappings; with ``index``, also write the commit index the apply steps read. One pass
    over the mappings, none of them held. ``until_exact`` (a migration): entries mapped without proof
    wait as pending ones do — the target has not yet brought the records at their positions. With
    ``selected``, a run missing any group-partition Prepare selected fails here, before any commit."""
    tally, builder = SummaryTally(), IndexBuilder(allow_rewind, exact_only=until_exact)
    mapped: set[GroupPartition] = set()
    for entry in mappings.iter_entries(restore_id):
        tally.add(entry)
        builder.add(entry, entry_key(restore_id, entry)["sk"]["S"] if index is not None else None)
        if selected is not None:
            mapped.update(covered(entry))
    if selected is not None:
        selected.check(mapped)
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
