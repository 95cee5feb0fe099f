"""The source side of a migration: which groups move, and the wait until their consumers stopped there.

A group whose consumers still run on the source keeps committing: a snapshot of it is out of date the
moment it is taken, so a migration moves only groups that are empty on the source. One that
never stops is waited for, then named: the migration fails with nothing written, or (``commit_empty``)
moves the others and leaves it where it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from offset_restore.apply.model import Progress
from offset_restore.apply.waiting import Polling, WaitTimeoutError, active_groups, poll_until_empty, still_active
from offset_restore.formats.plan import PlanEntry, share_groups
from offset_restore.kafka.model import TP, CommittedOffset, GroupInfo
from offset_restore.snapshot.filters import NameFilter, pattern_for

__all__ = [
    "SourceGroups",
    "SourceOffsets",
    "StoppedOnSource",
    "active_on",
    "active_phrase",
    "leave_out",
    "moved_since_snapshot",
    "selected_groups",
    "still_active_error",
    "stopped_on_source",
]


class SourceGroups(Protocol):
    def list_group_ids(self) -> list[str]: ...
    def describe_groups(self, group_ids: Sequence[str]) -> dict[str, GroupInfo]: ...


class SourceOffsets(SourceGroups, Protocol):
    def committed_offsets(self, group_ids: Sequence[str]) -> dict[str, dict[TP, CommittedOffset]]: ...
    def treat_as_share_groups(self, group_ids: Iterable[str]) -> None: ...


@dataclass(frozen=True)
class StoppedOnSource:
    groups: list[str]
    """The selected groups on the source, in name order."""
    still_active: dict[str, GroupInfo]
    """Those that still had members when the wait ended."""
    polls: int
    waited_s: float

    @property
    def stopped(self) -> list[str]:
        return [g for g in self.groups if g not in self.still_active]

    def active_phrase(self) -> str:
        return active_phrase(self.still_active)


def active_phrase(active: Mapping[str, GroupInfo]) -> str:
    """The groups with their state and their members' client ids and hosts, the first ten of them."""
    return still_active(active, limit=10)


def selected_groups(source: SourceGroups, selected: NameFilter) -> list[str]:
    """The groups on the source a migration moves, in name order: every kind, share groups too (waited for
    until listed empty, as the others are until they have no members)."""
    return sorted(g for g in source.list_group_ids() if selected(g))


def active_on(source: SourceGroups, groups: Sequence[str]) -> dict[str, GroupInfo]:
    """Those of ``groups`` with members on the source now (one look)."""
    return active_groups(groups, source.describe_groups(groups) if groups else {})


def stopped_on_source(
    source: SourceGroups,
    selected: NameFilter,
    polling: Polling,
    progress: Progress,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> StoppedOnSource:
    """Wait until every selected group on the source is empty, or the timeout passes (0: look once)."""
    groups = selected_groups(source, selected)
    waited = poll_until_empty(groups, source.describe_groups, polling, progress, sleep, clock)
    return StoppedOnSource(groups, active_groups(groups, waited.infos), waited.polls, waited.waited_s)


def still_active_error(active: Mapping[str, GroupInfo], timeout_s: float) -> WaitTimeoutError:
    """The refusal of a migration whose groups did not all stop on the source (nothing was written)."""
    return WaitTimeoutError(
        f"{len(active):,} groups still have members on the source after {timeout_s:g} s: {active_phrase(active)}; "
        "nothing was written (stop their consumers, or migrate the others with on_wait_timeout commit_empty)"
    )


def leave_out(exclude: str | None, groups: Sequence[str]) -> str | None:
    """The snapshot's ``exclude_groups`` with ``groups`` added, each by its exact name."""
    if not groups:
        return exclude
    return "|".join([*([f"(?:{exclude})"] if exclude else []), pattern_for(sorted(groups))])


STARTED_AGAIN = "started again on the source after the final snapshot"
"""How a group the last-moment look holds is named (``moved_since_snapshot``): the migrate summary counts
these, so that it never calls such a group stopped."""


def moved_since_snapshot(source: SourceOffsets, entries: Mapping[str, Sequence[PlanEntry]]) -> dict[str, str]:
    """The groups of ``entries`` that must not be moved now, with why: right before their write, one more
    look at the source finds members there (a consumer started again after the final snapshot), or a
    committed offset other than the one the plan moves (a consumer committed without joining, or ran and
    stopped again). Their offsets on the target would be older than what they processed since."""
    groups = sorted(entries)
    source.treat_as_share_groups(share_groups(e for group in entries.values() for e in group))
    held = {g: f"{STARTED_AGAIN}: {still_active({g: i})}" for g, i in active_on(source, groups).items()}
    rest = [g for g in groups if g not in held]
    now = source.committed_offsets(rest) if rest else {}
    for group in rest:
        changed = _changed(entries[group], now.get(group, {}))
        if changed:
            held[group] = f"{STARTED_AGAIN}: its committed offsets there moved ({changed})"
    return held


def _changed(entries: Sequence[PlanEntry], now: Mapping[TP, CommittedOffset]) -> str | None:
    """The first partition whose committed offset on the source is not the plan's, as ``topic-p: a -> b``."""
    for entry in entries:
        positions = entry.source_positions or {entry.partition: entry.source_offset}
        for partition, planned in sorted(positions.items()):
            found = now.get(TP(entry.topic, partition))
            if found is None or found.offset != planned:
                return f"{entry.topic}-{partition}: {planned} -> {found.offset if found else 'none'}"
    return None
