"""The commit index of a restore, written to S3 by the summarize step: which groups are writable,
which wait for pending entries, and per commit batch its groups and the keys of their mappings.

The check-empty polls and each commit batch read it instead of querying every mapping of the
restore from DynamoDB each time (at 120,000 group-partitions that query is tens of MB per call);
a commit batch then reads only its own mappings, by key.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from pydantic import BaseModel

from offset_restore.apply.model import RewindScope, rewind_filter
from offset_restore.errors import BadInputError
from offset_restore.formats.plan import PlanEntry, written_by_apply
from offset_restore.stores.in_flight import InFlight
from offset_restore.stores.storage import BlobStore

__all__ = [
    "COMMIT_BATCH_GROUPS",
    "CommitBatch",
    "CommitGroups",
    "IndexBuilder",
    "commit_candidates",
    "read_batch",
    "read_groups",
    "read_held_on_source",
    "writable_and_waiting",
    "write_held_on_source",
]

COMMIT_BATCH_GROUPS = 250
"""Groups per commit batch: 120,000 group-partitions (10,000 groups) make 40 batches, one round of the
Commit Map (40 wide, the most an inline Map runs at once); each batch commits, saves and verifies
about 3,000 mappings, a few seconds of one Lambda."""
_GROUPS = "commit/groups.json"
_HELD_ON_SOURCE = "commit/held-on-source.json"
_HELD = "held"
"""Beside a group's statuses: an entry holds it (pending, or a topic whose shape changed unmapped)."""


class CommitGroups(BaseModel):
    writable: list[str]
    """Groups with a mapped entry and none that holds them, in name order."""
    waiting: list[str]
    """Groups an entry holds (pending, or a topic whose shape changed): written nowhere."""
    batches: int


class CommitBatch(BaseModel):
    groups: list[str]
    keys: list[str]
    """The sort keys of every mapping of these groups."""


def _batch_key(number: int) -> str:
    return f"commit/batch-{number:05d}.json"


class IndexBuilder:
    """Per group only what the index needs (its statuses and its mappings' keys), entry by entry: the
    summarize step streams 240,000 mappings through it instead of holding them."""

    def __init__(self, allow_rewind: RewindScope = False, exact_only: bool = False) -> None:
        self.statuses: dict[str, set[str]] = {}
        self.keys: dict[str, list[str]] = {}
        self.topics: dict[str, set[str]] = {}
        """The target topics of each group's entries: groups of the same topics share a batch."""
        self.rewinds = rewind_filter(allow_rewind)
        self.exact_only = exact_only
        """A migration's: a group with a mapped entry not exact is held (``ApplyOptions.exact_only``)."""

    def _writes(self, group: str, statuses: set[str]) -> bool:
        return any(written_by_apply(status, self.rewinds(group)) for status in statuses)

    def add(self, entry: PlanEntry, key: str | None = None) -> None:
        statuses = self.statuses.setdefault(entry.group, set())
        statuses.add(entry.status)
        self.topics.setdefault(entry.group, set()).add(entry.target_topic)
        if entry.holds or (self.exact_only and entry.status == "mapped" and not entry.exact):
            statuses.add(_HELD)
        if key is not None:
            self.keys.setdefault(entry.group, []).append(key)

    def candidates(self) -> list[str]:
        """Groups a commit batch may write, in a stable order (committed ones stay in the list, so batch
        numbers keep their meaning while batches commit): by the topics they read, then by name. A batch
        reads the records around each of its offsets before and after the commit, once per partition;
        250 groups taken by name read 1,000 partitions at 120,000 group-partitions, by topic a few dozen."""
        return sorted(
            (g for g, s in self.statuses.items() if _HELD not in s and ("committed" in s or self._writes(g, s))),
            key=lambda g: (sorted(self.topics.get(g, ())), g),
        )

    def writable_and_waiting(self) -> tuple[list[str], list[str]]:
        """Groups with a mapped entry and none pending, and groups with a pending entry, in name order."""
        waiting = {g for g, s in self.statuses.items() if _HELD in s}
        writable = {g for g, s in self.statuses.items() if g not in waiting and self._writes(g, s)}
        return sorted(writable), sorted(waiting)

    def write(self, store: BlobStore) -> int:
        """Write the index (the keys given to ``add``); returns the number of commit batches."""
        candidates = self.candidates()
        batches = [candidates[i : i + COMMIT_BATCH_GROUPS] for i in range(0, len(candidates), COMMIT_BATCH_GROUPS)]
        with InFlight() as puts:  # 40 batches at 120,000 group-partitions: a few round trips, not 40
            for number, groups in enumerate(batches):
                batch = CommitBatch(groups=groups, keys=[k for g in groups for k in self.keys.get(g, [])])
                puts.submit(store.put, _batch_key(number), batch.model_dump_json().encode(), "application/json")
        # The groups last, once every batch is in: a reader that finds them finds the batches they count.
        writable, waiting = self.writable_and_waiting()
        index = CommitGroups(writable=writable, waiting=waiting, batches=len(batches))
        store.put(_GROUPS, index.model_dump_json().encode(), "application/json")
        return len(batches)


def _built(entries: Iterable[PlanEntry], allow_rewind: RewindScope = False) -> IndexBuilder:
    builder = IndexBuilder(allow_rewind)
    for entry in entries:
        builder.add(entry)
    return builder


def commit_candidates(entries: Iterable[PlanEntry], allow_rewind: RewindScope = False) -> list[str]:
    return _built(entries, allow_rewind).candidates()


def writable_and_waiting(
    entries: Iterable[PlanEntry], allow_rewind: RewindScope = False
) -> tuple[list[str], list[str]]:
    return _built(entries, allow_rewind).writable_and_waiting()


def read_groups(store: BlobStore) -> CommitGroups:
    if not store.exists(_GROUPS):
        raise BadInputError(f"no commit index at {store.description}/{_GROUPS}: the summarize step has not run")
    return CommitGroups.model_validate_json(store.get(_GROUPS))


def read_batch(store: BlobStore, number: int) -> CommitBatch:
    key = _batch_key(number)
    if not store.exists(key):
        raise BadInputError(f"no commit batch {number} at {store.description}/{key}: summarize the restore again")
    return CommitBatch.model_validate_json(store.get(key))


def write_held_on_source(store: BlobStore, held: Mapping[str, str]) -> None:
    """A migration's last look at the source before its commit: the groups it found running again or
    moved since the final snapshot, with why. The commit steps leave them unwritten."""
    store.put(_HELD_ON_SOURCE, json.dumps(dict(sorted(held.items()))).encode(), "application/json")


def read_held_on_source(store: BlobStore) -> dict[str, str]:
    """``write_held_on_source``'s groups; none when no look was taken (a run that is not a migration)."""
    if not store.exists(_HELD_ON_SOURCE):
        return {}
    held = json.loads(store.get(_HELD_ON_SOURCE))
    if not isinstance(held, dict) or not all(isinstance(v, str) for v in held.values()):
        raise BadInputError(f"{store.description}/{_HELD_ON_SOURCE} is not a JSON object of group -> reason")
    return held
