"""Waiting until the groups to write have no members on the target (docs/design.md §6): a group with
live consumers is never written — their next commit would overwrite ours, or they would read from where
they were. Shared by apply and rollback."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from offset_restore.apply.model import ApplyOptions, ApplyReport, ApplyTarget, Progress
from offset_restore.errors import OffsetRestoreError
from offset_restore.kafka.model import GroupInfo

__all__ = ["WRITABLE_STATES", "WaitTimeoutError", "active_groups", "skip_active", "wait_for_empty", "wait_until_empty"]

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
    started = clock()
    while True:
        report.polls += 1
        infos = target.describe_groups(groups) if groups else {}
        active = active_groups(groups, infos)
        progress("waiting for groups to be empty", len(groups) - len(active), len(groups))
        elapsed = clock() - started
        if not active or elapsed >= options.wait_timeout_s:
            report.waited_s = round(elapsed, 3)
            return infos
        sleep(min(options.poll_interval_s, max(0.0, options.wait_timeout_s - elapsed)))


def active_groups(groups: Sequence[str], infos: Mapping[str, GroupInfo]) -> dict[str, GroupInfo]:
    """The groups that have members on the target (absent, empty and dead groups may be written)."""
    return {g: infos[g] for g in groups if infos.get(g) and infos[g].state not in WRITABLE_STATES}


def skip_active(groups: Sequence[str], active: Mapping[str, GroupInfo], report: ApplyReport) -> list[str]:
    """Record each active group as skipped, with its state; returns the others."""
    for group, info in active.items():
        report.skip(group, "active", f"still active on the target ({info.state}, {info.members} members)")
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
        names = ", ".join(f"{g} ({i.state}, {i.members} members)" for g, i in sorted(active.items())[:10])
        raise WaitTimeoutError(
            f"{len(active)} groups still have members after {options.wait_timeout_s:g} s: {names}; "
            "nothing was written (stop their consumers, or use --on-wait-timeout commit_empty)"
        )
    return skip_active(groups, active, report)
