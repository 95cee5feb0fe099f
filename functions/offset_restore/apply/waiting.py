"""Waiting until the groups to write have no members on the target (docs/design.md §6): a group with
live consumers is never written — their next commit would overwrite ours, or they would read from where
they were. Shared by apply and rollback."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from offset_restore.apply.model import ApplyOptions, ApplyReport, ApplyTarget, Progress
from offset_restore.errors import ClusterError, ClusterUnreachableError, OffsetRestoreError
from offset_restore.kafka.model import GroupInfo

__all__ = [
    "Polling",
    "WaitTimeoutError",
    "Waited",
    "active_groups",
    "first_groups",
    "members_text",
    "poll_until",
    "poll_until_empty",
    "releasing_static_members",
    "remove_static_members",
    "skip_active",
    "static_hint",
    "still_active",
    "wait_for_empty",
    "wait_until_empty",
    "who",
]

T = TypeVar("T")


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
    describe: Callable[[Sequence[str]], dict[str, GroupInfo]] = target.describe_groups
    if options.remove_static_members and not options.dry_run:
        describe = releasing_static_members(target, report)
    waited = poll_until_empty(
        groups,
        describe,
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


STATIC_REASON = "offset-restore --remove-static-members"
"""What the broker is told (LeaveGroup v5+) and logs about why the members left."""


REFUSED = " (refused: "
"""How a removal the broker refused is recorded after its ``group: group.instance.id``."""


def remove_static_members(target: ApplyTarget, active: Mapping[str, GroupInfo], done: Sequence[str]) -> list[str]:
    """Remove the static members of the ``active`` groups not in ``done`` (the removals recorded so far, as
    this returns them), each once: one whose consumer still runs joins again and is then waited for as any
    member. Returns the new removals, ``group: group.instance.id``, each with the broker's error if it refused."""
    seen = {line.split(REFUSED)[0] for line in done}
    new: list[str] = []
    for group, info in sorted(active.items()):
        fresh = [i for i in info.static_members if f"{group}: {i}" not in seen]
        if fresh:
            answers = _removal(target, group, fresh)
            new += [f"{group}: {i}" + (f"{REFUSED}{answers[i]})" if answers.get(i) else "") for i in fresh]
    return new


def _removal(target: ApplyTarget, group: str, instance_ids: list[str]) -> dict[str, str | None]:
    """The broker's answer per member; a refusal of the whole request (a group kind that takes no LeaveGroup)
    is each member's, said and waited out, not the end of the run. An unreachable broker still ends it."""
    try:
        return target.remove_static_members(group, instance_ids, STATIC_REASON)
    except ClusterUnreachableError:
        raise
    except ClusterError as error:
        return dict.fromkeys(instance_ids, str(error))


def releasing_static_members(
    target: ApplyTarget, report: ApplyReport
) -> Callable[[Sequence[str]], dict[str, GroupInfo]]:
    """``describe_groups`` that also removes the static members of each active group it sees (each once),
    recording each removal in the report: the operator asked for it, and the report says it was done."""

    def describe(groups: Sequence[str]) -> dict[str, GroupInfo]:
        infos = target.describe_groups(groups)
        report.static_removed += remove_static_members(target, active_groups(groups, infos), report.static_removed)
        return infos

    return describe


def members_text(info: GroupInfo) -> str:
    """A group's state and its members' client ids and hosts: what tells an operator which consumer to stop.
    Static members are named with what keeps them: a stopped consumer's static member stays in the group
    until its session timeout ends, which is the wait an operator otherwise cannot explain."""
    shown = ", ".join(info.clients[:WHO_LIMIT])
    if len(info.clients) > WHO_LIMIT:
        shown += f" and {len(info.clients) - WHO_LIMIT:,} more"
    if info.members < 0:  # listed, not described (``protocol.listed_groups``)
        return (
            f"{info.state}, a {info.protocol_type}-protocol group whose members cannot be described: it is written "
            "only once the brokers list it Empty (stop the application)"
        )
    text = f"{info.state}, {info.members} members" + (f": {shown}" if shown else "")
    if info.static_members:
        named = ", ".join(info.static_members[:WHO_LIMIT])
        more = f" and {len(info.static_members) - WHO_LIMIT:,} more" if len(info.static_members) > WHO_LIMIT else ""
        text += (
            f"; static, group.instance.id {named}{more}: kept after their consumers stop until the session "
            "timeout they joined with ends (45 s by default)"
        )
    return text


def static_hint(active: Mapping[str, GroupInfo], option: str = "--remove-static-members") -> str:
    """The way to end a wait on static members sooner (the CLI's option, or the workflow's input), when an
    active group has any."""
    return f"; {option} removes static members" if any(i.static_members for i in active.values()) else ""


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
    return {g: info for g in groups if (info := infos.get(g)) is not None and info.occupied}


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
            f"nothing was written (stop their consumers, or use --on-wait-timeout commit_empty{static_hint(active)})"
        )
    return skip_active(groups, active, report)
