"""The commit index of a restore, written to S3 by the summarize step: which groups are writable,
which wait for pending entries, and per commit batch its groups and the keys of their mappings.

The check-empty polls and each commit batch read it instead of querying every mapping of the
restore from DynamoDB each time (at 120,000 group-partitions that query is tens of MB per call);
a commit batch then reads only its own mappings, by key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel

from offset_restore.errors import BadInputError
from offset_restore.plan_model import PlanEntry
from offset_restore.storage import BlobStore

__all__ = [
    "COMMIT_BATCH_GROUPS",
    "CommitBatch",
    "CommitGroups",
    "commit_candidates",
    "read_batch",
    "read_groups",
    "writable_and_waiting",
    "write_index",
]

COMMIT_BATCH_GROUPS = 500
_GROUPS = "commit/groups.json"


class CommitGroups(BaseModel):
    writable: list[str]
    """Groups with a mapped entry and none pending, in name order."""
    waiting: list[str]
    """Groups with a pending entry: they wait whole until the restore reaches them."""
    batches: int


class CommitBatch(BaseModel):
    groups: list[str]
    keys: list[str]
    """The sort keys of every mapping of these groups."""


def _batch_key(number: int) -> str:
    return f"commit/batch-{number:05d}.json"


def _by_group(entries: Sequence[PlanEntry]) -> dict[str, list[PlanEntry]]:
    groups: dict[str, list[PlanEntry]] = {}
    for entry in entries:
        groups.setdefault(entry.group, []).append(entry)
    return groups


def commit_candidates(entries: Sequence[PlanEntry]) -> list[str]:
    """Groups a commit batch may write, in a stable order (committed ones stay in the list, so batch
    numbers keep their meaning while batches commit)."""
    return sorted(
        group
        for group, es in _by_group(entries).items()
        if not any(e.status == "pending" for e in es) and any(e.status in ("mapped", "committed") for e in es)
    )


def writable_and_waiting(entries: Sequence[PlanEntry]) -> tuple[list[str], list[str]]:
    """Groups with a mapped entry and none pending, and groups with a pending entry, in name order."""
    by_group = _by_group(entries)
    waiting = {g for g, es in by_group.items() if any(e.status == "pending" for e in es)}
    writable = {g for g, es in by_group.items() if g not in waiting and any(e.status == "mapped" for e in es)}
    return sorted(writable), sorted(waiting)


def write_index(store: BlobStore, entries: Sequence[PlanEntry], sort_key: Callable[[PlanEntry], str]) -> int:
    """Write the index for ``entries`` (``sort_key(entry)`` gives a mapping's key); returns the
    number of commit batches."""
    by_group = _by_group(entries)
    candidates = commit_candidates(entries)
    batches = [candidates[i : i + COMMIT_BATCH_GROUPS] for i in range(0, len(candidates), COMMIT_BATCH_GROUPS)]
    for number, groups in enumerate(batches):
        keys = [sort_key(e) for g in groups for e in by_group[g]]
        batch = CommitBatch(groups=groups, keys=keys)
        store.put(_batch_key(number), batch.model_dump_json().encode(), "application/json")
    writable, waiting = writable_and_waiting(entries)
    index = CommitGroups(writable=writable, waiting=waiting, batches=len(batches))
    store.put(_GROUPS, index.model_dump_json().encode(), "application/json")
    return len(batches)


def read_groups(store: BlobStore) -> CommitGroups:
    if not store.exists(_GROUPS):
        raise BadInputError(f"no commit index at {store.description}/{_GROUPS}: the summarize step has not run")
    return CommitGroups.model_validate_json(store.get(_GROUPS))


def read_batch(store: BlobStore, number: int) -> CommitBatch:
    key = _batch_key(number)
    if not store.exists(key):
        raise BadInputError(f"no commit batch {number} at {store.description}/{key}: summarize the restore again")
    return CommitBatch.model_validate_json(store.get(key))
