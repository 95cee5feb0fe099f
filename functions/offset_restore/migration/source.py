"""The source side of a migration: which groups move, and the wait until their consumers stopped there.

A group whose consumers still run on the source keeps committing: a snapshot of it is out of date the
moment it is taken, so a migration moves only groups that are empty on the source (issue 35). One that
never stops is waited for, then named: the migration fails with nothing written, or (``commit_empty``)
moves the others and leaves it where it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from offset_restore.apply.model import Progress
from offset_restore.apply.waiting import Polling, WaitTimeoutError, active_groups, poll_until_empty, still_active
from offset_restore.kafka.model import GroupInfo
from offset_restore.snapshot.filters import NameFilter, pattern_for

__all__ = [
    "SourceGroups",
    "StoppedOnSource",
    "active_on",
    "active_phrase",
    "leave_out",
    "selected_groups",
    "still_active_error",
    "stopped_on_source",
]


class SourceGroups(Protocol):
    def list_group_ids(self) -> list[str]: ...
    def describe_groups(self, group_ids: Sequence[str]) -> dict[str, GroupInfo]: ...


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
    """The groups on the source a migration moves, in name order."""
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
