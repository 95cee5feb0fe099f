"""Waiting until the groups to write have no members on the target (docs/design.md §6): a group with
live consumers is never written — their next commit would overwrite ours, or they would read from where
they were. Shared by apply and rollback."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from offset_restore.apply.model import ApplyOptions, ApplyReport, ApplyTarget, Progress
from offset_restore.errors import OffsetRestoreError
from offset_restore.kafka.model import GroupInfo

__all__ = [
    "WRITABLE_STATES",
    "Polling",
    "WaitTimeoutError",
    "Waited",
    "active_groups",
    "first_groups",
    "members_text",
    "poll_until",
    "poll_until_empty",
    "skip_active",
    "still_active",
    "wait_for_empty",
    "wait_until_empty",
    "who",
]

T = TypeVar("T")

WRITABLE_STATES = {"Empty", "Dead", "Unknown", ""}


class WaitTimeoutError(OffsetRestoreError):
    """Groups stayed active past the wait timeout (and the input said to fail); nothing was written."""


def wait_for_empty(
    groups: Sequence[str],
    target: ApplyTarget,
    options: ApplyOptions,
    report: ApplyReport,
    progress: Progress,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> dict[str, GroupInfo]:
    """Poll until every group is writable or the timeout passes; returns the last descriptions."""
    waited = poll_until_empty(
        groups,
        target.describe_groups,
        Polling(options.wait_timeout_s, options.poll_interval_s, "waiting for groups to be empty"),
        progress,
        sleep,
        clock,
    )
    report.polls += waited.polls
    report.waited_s = waited.waited_s
    report.waited_for = [who(info) for _, info in sorted(waited.active_seen.items())]
    return waited.infos


@dataclass(frozen=True)
class Polling:
    """How long to wait, how often to look, and what the progress line says."""

    timeout_s: float
    interval_s: float
    what: str


@dataclass(frozen=True)
class Waited:
    infos: dict[str, GroupInfo]
    """The groups' last descriptions."""
    polls: int
    waited_s: float
    active_seen: dict[str, GroupInfo] = field(default_factory=dict)
    """Each group that had members at some look, as last seen with them: who was waited for."""


WHO_LIMIT = 3
"""Members named per group (then "and N more"): enough to find the pods, short enough for one line."""


def members_text(info: GroupInfo) -> str:
    """A group's state and its members' client ids and hosts: what tells an operator which consumer to stop."""
    shown = ", ".join(info.clients[:WHO_LIMIT])
    if len(info.clients) > WHO_LIMIT:
        shown += f" and {len(info.clients) - WHO_LIMIT:,} more"
    return f"{info.state}, {info.members} members" + (f": {shown}" if shown else "")


def who(info: GroupInfo) -> str:
    return f"{info.group_id} ({members_text(info)})"


def still_active(active: Mapping[str, GroupInfo], limit: int = 5) -> str:
    """The active groups named, the first ``limit`` with their members."""
    return first_groups([who(info) for _, info in sorted(active.items())], limit)


def first_groups(named: Sequence[str], limit: int = 5) -> str:
    """The first ``limit`` of groups already described, then how many more: a line stays readable."""
    more = f"; and {len(named) - limit:,} more groups" if len(named) > limit else ""
    return "; ".join(named[:limit]) + more


def poll_until_empty(
    groups: Sequence[str],
    describe: Callable[[Sequence[str]], dict[str, GroupInfo]],
    polling: Polling,
    progress: Progress,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> Waited:
    """The wait for groups to lose their members, on the target (apply, rollback) or on the source (a
    migration waits for the consumers it moves to stop): describe until none is active or the timeout
    passes."""

    seen: dict[str, GroupInfo] = {}

    def look() -> dict[str, GroupInfo]:
        infos = describe(groups) if groups else {}
        active = active_groups(groups, infos)
        seen.update(active)
        phase = f"{polling.what}; still active: {still_active(active)}" if active else polling.what
        progress(phase, len(groups) - len(active), len(groups))
        return infos

    infos, polls, waited_s = poll_until(look, lambda infos: not active_groups(groups, infos), polling, sleep, clock)
    return Waited(infos, polls, waited_s, seen)


def poll_until(
    look: Callable[[], T],
    done: Callable[[T], bool],
    polling: Polling,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> tuple[T, int, float]:
    """The one polling loop: ``look`` until ``done`` says so or ``polling.timeout_s`` passes (0: look
    once), sleeping ``polling.interval_s`` between looks and never past the timeout. Returns the last
    look, how many there were, and the seconds waited."""
    started, looks = clock(), 0
    while True:
        looks += 1
        seen = look()
        elapsed = clock() - started
        if done(seen) or elapsed >= polling.timeout_s:
            return seen, looks, round(elapsed, 3)
        sleep(min(polling.interval_s, max(0.0, polling.timeout_s - elapsed)))


def active_groups(groups: Sequence[str], infos: Mapping[str, GroupInfo]) -> dict[str, GroupInfo]:
    """The groups that have members on the target (absent, empty and dead groups may be written)."""
    return {g: infos[g] for g in groups if infos.get(g) and infos[g].state not in WRITABLE_STATES}


def skip_active(groups: Sequence[str], active: Mapping[str, GroupInfo], report: ApplyReport) -> list[str]:
    """Record each active group as skipped, with its state; returns the others."""
    for group, info in active.items():
        report.skip(group, "active", f"still active on the target ({members_text(info)})")
    return [g for g in groups if g not in active]


def wait_until_empty(
    groups: list[str],
    target: ApplyTarget,
    options: ApplyOptions,
    report: ApplyReport,
    show: Progress,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> list[str]:
    """The groups to write once the wait is over: without members. With ``on_wait_timeout`` fail,
    groups still active refuse the whole apply before anything is written."""
    infos = wait_for_empty(groups, target, options, report, show, sleep, clock)
    active = active_groups(groups, infos)
    if active and options.on_wait_timeout == "fail" and not options.dry_run:
        names = still_active(active, limit=10)
        raise WaitTimeoutError(
            f"{len(active)} groups still have members after {options.wait_timeout_s:g} s: {names}; "
            "nothing was written (stop their consumers, or use --on-wait-timeout commit_empty)"
        )
    return skip_active(groups, active, report)
