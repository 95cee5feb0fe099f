"""A migration's looks at the source (``"mode": "migrate"``): whether the groups stopped there — the state
machine waits and asks again, as it does on the target — and, right before the commit, which of them run
again there or moved since the final snapshot (the final snapshot itself is ``migration/final.py``)."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass

from offset_restore.apply.commit_index import read_groups, write_held_on_source
from offset_restore.formats.plan import PlanEntry
from offset_restore.migration.source import (
    SourceGroups,
    SourceOffsets,
    active_on,
    moved_since_snapshot,
    selected_groups,
    still_active_error,
)
from offset_restore.snapshot.filters import NameFilter
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import BlobStore

__all__ = ["SourceCheck", "check_source", "recheck_source"]


@dataclass(frozen=True)
class SourceCheck:
    groups: int
    still_active: list[str]
    started_at: float
    timed_out: bool

    @property
    def all_empty(self) -> bool:
        return not self.still_active

    def output(self, limit: int = 20) -> dict[str, object]:
        """At most ``limit`` names (the state stays small); the final snapshot looks again itself."""
        return {
            "groups": self.groups,
            "still_active": self.still_active[:limit],
            "still_active_count": len(self.still_active),
            "all_empty": self.all_empty,
            "started_at": self.started_at,
            "timed_out": self.timed_out,
        }


def check_source(
    source: SourceGroups,
    selected: NameFilter,
    *,
    started_at: float | None,
    timeout_s: float,
    fail_on_timeout: bool,
    now: float | None = None,
) -> SourceCheck:
    """Which selected groups still have members on the source; past the timeout either raise
    ``WaitTimeoutError`` naming them (nothing was written) or say the wait is over."""
    now = time.time() if now is None else now
    started_at = now if started_at is None else started_at
    groups = selected_groups(source, selected)
    active = active_on(source, groups)
    timed_out = bool(active) and now - started_at >= timeout_s
    if timed_out and fail_on_timeout:
        raise still_active_error(active, timeout_s)
    return SourceCheck(len(groups), sorted(active), started_at, timed_out)


def recheck_source(source: SourceOffsets, mappings: MappingStore, restore_id: str, index: BlobStore) -> dict[str, str]:
    """A migration's last look at the source, right before the workflow's commit: the groups the commit
    would write (the commit index's) that run again there or whose committed offsets moved since the final
    snapshot (``moved_since_snapshot``), with why; written beside the index, where the commit steps read
    them and leave them unwritten."""
    writable = set(read_groups(index).writable)
    entries: dict[str, list[PlanEntry]] = defaultdict(list)
    for entry in mappings.iter_entries(restore_id):  # page by page; only the writable groups' entries kept
        if entry.group in writable and entry.status == "mapped":
            entries[entry.group].append(entry)
    held = moved_since_snapshot(source, entries)
    write_held_on_source(index, held)
    return held
