"""Roll an apply back, as carefully as it was applied (docs/design.md §2.6, §6).

Rollback works from the target's offsets as they are now, compared with what the plan recorded:
an entry whose partition holds the offset apply wrote gets its previous offset back (with the
target's own previous metadata), or loses the offset when apply created it; an entry whose
partition holds the previous offset needs nothing. So a rollback after an apply that crashed before
its final save, or a rollback run again after it was interrupted, still finds every write to undo.

It never rewinds progress made on the target: a group whose offsets moved past what apply wrote
(its consumers ran) is left alone unless ``allow_rewind``. It removes only what apply created: a
group is deleted only when every offset it holds is one apply created; otherwise those partitions'
offsets alone are deleted (Kafka's OffsetDelete). Only empty groups are touched. The plan records
that a rollback started before the first write (entries go back to ``mapped``), so an apply after an
interrupted rollback writes again what it undid.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from offset_restore.apply.commit import maybe_written
from offset_restore.apply.fit import check_same_topics
from offset_restore.apply.model import ApplyOptions, ApplyReport, ApplyTarget, OffsetChange, Progress, WriteCheck
from offset_restore.apply.waiting import active_groups, skip_active, wait_for_empty
from offset_restore.errors import BadInputError
from offset_restore.formats.plan import Plan, PlanEntry, share_groups
from offset_restore.kafka.model import TP, CommittedOffset

__all__ = ["RollbackTarget", "rollback_plan"]


class RollbackTarget(ApplyTarget, Protocol):
    def delete_offsets(self, group_id: str, partitions: Sequence[TP]) -> dict[TP, str | None]: ...


@dataclass
class _Undo:
    """What rolling one group back takes."""

    restore: dict[TP, CommittedOffset] = field(default_factory=dict)
    remove: list[TP] = field(default_factory=list)
    entries: list[PlanEntry] = field(default_factory=list)
    delete_group: bool = False
    in_place: int = 0
    """Partitions already at their previous offset (never written, or put back before)."""
    left_alone: list[str] = field(default_factory=list)
    """Partitions whose offset apply never wrote, with what is there (``maybe_written``)."""


def rollback_plan(
    plan: Plan,
    target: RollbackTarget,
    save: Callable[[Plan], None],
    *,
    wait: ApplyOptions | None = None,
    before_write: WriteCheck = lambda: None,
    progress: Progress | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> ApplyReport:
    """Put back what an apply replaced; updates ``plan`` in place and saves it before the first write
    and at the end. ``before_write`` (the lock's check) raises when this run may no longer write."""
    options = wait or ApplyOptions(wait_timeout_s=0, on_wait_timeout="commit_empty")
    target.treat_as_share_groups(share_groups(plan.entries))
    report = ApplyReport()
    report.groups_not_chosen = options.not_chosen(e.group for e in plan.entries)
    by_group: dict[str, list[PlanEntry]] = defaultdict(list)
    for entry in plan.entries:
        if entry.previous_recorded and entry.target_offset is not None and options.chosen(entry.group):
            by_group[entry.group].append(entry)  # apply may have written it
    groups = sorted(by_group)
    report.groups_planned = len(groups)
    infos = wait_for_empty(groups, target, options, report, progress or (lambda *_: None), sleep, clock)
    ready = skip_active(groups, active_groups(groups, infos), report)
    current = target.committed_offsets(ready) if ready else {}
    undo: dict[str, _Undo] = {}
    for group in ready:
        decided = _undo_of(by_group[group], current.get(group, {}), options.rewinds(group))
        if isinstance(decided, str):
            report.groups_skipped[group] = decided
            continue
        report.in_place += decided.in_place
        report.left_alone += [f"{group} {line}" for line in decided.left_alone]
        if decided.entries:
            undo[group] = decided
        else:
            report.groups_unchanged.append(group)
    _check_previous_fit(undo, target)
    check_same_topics(  # removing an offset apply created (and still there) writes no position
        [entry for work in undo.values() for entry in work.entries if entry.target in work.restore],
        target,
        "a previous offset is a position in the old topic's log, and a rollback writes none into the new one; "
        "nothing was written",
    )
    if options.dry_run:
        _describe(undo, current, report)
        return report
    for work in undo.values():  # on record before the first write: an interrupted rollback shows
        for entry in work.entries:
            entry.record_outcome(
                "rollback_started", f"rollback started {datetime.now(UTC).isoformat()}", status="mapped"
            )
    before_write()
    save(plan)
    _execute(undo, target, report, before_write)
    for group in report.groups_committed:
        report.changes += _changes(group, undo[group], current.get(group, {}))
    _verify(undo, target, report)
    plan.notes.append(f"rolled back {datetime.now(UTC).isoformat()}: {len(report.groups_committed)} groups")
    save(plan)
    return report


def _check_previous_fit(undo: Mapping[str, _Undo], target: RollbackTarget) -> None:
    """A previous offset past the end of the target's log is not one the group ever held there (an
    edited plan, or bit rot): the rollback is refused, with the entry named, before anything is
    written. (Below the log's start is a real position: records deleted since.)"""
    wanted = {tp for work in undo.values() for tp in work.restore}
    if not wanted:
        return
    bounds = target.log_bounds(wanted)
    for group, work in sorted(undo.items()):
        for tp, previous in sorted(work.restore.items()):
            if previous.offset > bounds[tp].end or previous.offset < 0:
                raise BadInputError(
                    f"the plan records previous offset {previous.offset:,} for {group} {tp}, past the end of the "
                    f"target's log ({bounds[tp].end:,}): not an offset the group held there (the plan was edited, or "
                    "damaged); nothing was rolled back"
                )


def _undo_of(entries: list[PlanEntry], now: Mapping[TP, CommittedOffset], allow_rewind: bool) -> _Undo | str:
    """What to undo in one group, or why it is left alone."""
    work = _Undo()
    for entry in entries:
        tp = entry.target
        actual = now.get(tp)
        previous = entry.previous_target_offset
        if (actual.offset if actual else None) == previous:
            work.in_place += 1
            continue  # never written, or already put back
        if not maybe_written(entry, actual):
            work.left_alone.append(
                f"{tp}: apply never wrote {entry.target_offset} there; it holds {_shown(actual)} (its consumers' "
                f"commit), left as it is (before this restore it held {_shown_offset(previous)})"
            )
            continue
        if actual is not None and actual.offset != entry.target_offset and not allow_rewind:
            wrote = "apply wrote" if entry.status == "committed" else "apply's commit, unanswered, may have written"
            return (
                f"moved past what apply wrote ({tp} is at {actual.offset}, {wrote} {entry.target_offset}): its "
                "consumers ran on the target; not rolled back (--allow-rewind to put the previous offsets back anyway)"
            )
        work.entries.append(entry)
        if previous is None:
            work.remove.append(tp)
        else:
            work.restore[tp] = CommittedOffset(previous, entry.previous_metadata)
    # Delete the group only when apply created every offset it holds; otherwise remove only those.
    work.delete_group = bool(work.remove) and not work.restore and set(now) <= set(work.remove)
    return work


def _shown(offset: CommittedOffset | None) -> str:
    return _shown_offset(offset.offset if offset is not None else None)


def _shown_offset(offset: int | None) -> str:
    return "no offset" if offset is None else f"{offset:,}"


def _describe(
    undo: Mapping[str, _Undo], current: Mapping[str, Mapping[TP, CommittedOffset]], report: ApplyReport
) -> None:
    """A preview: a line per offset the rollback would put back or remove, and the groups it would delete."""
    for group, work in sorted(undo.items()):
        now = current.get(group, {})

        def was(tp: TP, now: Mapping[TP, CommittedOffset] = now) -> str:
            return str(now[tp].offset) if tp in now else "none"

        lines = [
            f"{group} {tp.topic}/{tp.partition}: {was(tp)} -> {c.offset} (put back)" for tp, c in work.restore.items()
        ]
        lines += [f"{group} {tp.topic}/{tp.partition}: {was(tp)} -> none (apply created it)" for tp in work.remove]
        if work.delete_group:
            lines.append(f"{group}: the whole group would be deleted (apply created every offset it holds)")
            report.groups_to_delete.append(group)
        report.dry_run_lines += lines
        report.changes += _changes(group, work, now)
        report.would_write += len(work.restore) + len(work.remove)
        report.would_write_groups += 1


def _changes(group: str, work: _Undo, now: Mapping[TP, CommittedOffset]) -> list[OffsetChange]:
    """A group's rollback as rows of the printed table: what it holds now, and what it gets back."""

    def change(tp: TP, new: int | None, method: str) -> OffsetChange:
        return OffsetChange(group, tp.topic, tp.partition, now[tp].offset if tp in now else None, new, method, "-")

    rows = [change(tp, c.offset, "put back") for tp, c in work.restore.items()]
    return rows + [change(tp, None, "removed (apply created it)") for tp in work.remove]


def _execute(
    undo: Mapping[str, _Undo],
    target: RollbackTarget,
    report: ApplyReport,
    before_write: WriteCheck = lambda: None,
) -> None:
    """The previous offsets put back, each attempt fenced by the lock (and bounded by its lease's deadline)."""
    restores = {g: w.restore for g, w in undo.items() if w.restore}
    answers = target.alter_offsets_many(restores, before_attempt=before_write) if restores else {}
    refused: dict[str, str] = {}
    for group in restores:
        named = sorted({e for e in answers.get(group, {}).values() if e})
        if named:
            refused[group] = f"the broker refused the rollback ({', '.join(named)})"
    whole = {g: w.remove for g, w in undo.items() if w.delete_group}  # every offset it holds, apply's
    for group, error in target.delete_groups(whole).items():
        if error:
            refused[group] = f"could not delete the group the apply created ({error})"
    for group, work in undo.items():
        if work.remove and not work.delete_group and group not in refused:
            errors = {tp: e for tp, e in target.delete_offsets(group, work.remove).items() if e}
            if errors:
                refused[group] = "could not remove the offsets the apply created ({}): {}".format(
                    ", ".join(f"{tp}: {e}" for tp, e in sorted(errors.items())),
                    "remove them with kafka-consumer-groups --delete-offsets, or run rollback again",
                )
    for group, work in undo.items():
        if group in refused:
            report.groups_failed[group] = refused[group]
        else:
            report.groups_committed.append(group)
            report.offsets_committed += len(work.restore) + len(work.remove)


def _verify(undo: Mapping[str, _Undo], target: RollbackTarget, report: ApplyReport) -> None:
    """Read the groups back: each partition at its previous offset, or without one."""
    done = [g for g in report.groups_committed if g in undo]
    back = target.committed_offsets(done) if done else {}
    for group in done:
        now, work = back.get(group, {}), undo[group]
        wrong = [f"{tp} at {now[tp].offset}" for tp in work.remove if tp in now]
        wrong += [
            f"{tp} at {now[tp].offset if tp in now else 'none'}, not {c.offset}"
            for tp, c in work.restore.items()
            if tp not in now or now[tp].offset != c.offset
        ]
        if wrong:
            report.verify_failed.append(f"{group}: {', '.join(wrong)} after the rollback")
            continue
        report.verified += len(work.entries)
        _mark_rolled_back(work.entries)


def _mark_rolled_back(entries: Iterable[PlanEntry]) -> None:
    for entry in entries:
        entry.record_outcome("rolled_back", "rolled back: the previous target offset was put back", status="mapped")
        entry.verified = None
        entry.previous_recorded = False
