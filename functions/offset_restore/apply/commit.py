"""Apply a plan to the target cluster safely (docs/design.md §2.3-2.6, §6), and roll it back.

The order of work keeps every promise of §6:
1. choose the groups: only ``mapped`` entries are written; a group with a ``pending`` entry waits
   whole; entries already ``committed`` are left alone (applying twice changes nothing);
2. wait until every chosen group is empty (or absent) on the target, polling; on timeout fail, or
   with ``commit_empty`` go on with the empty ones and report the others;
3. read the target's current offsets and record them in the plan as ``previous_target_offset``
   and save the plan — before anything is written, so a crash can never lose them;
4. per group, re-check that it is still empty and commit all its partitions in one admin
   OffsetCommit (the broker rejects it whole if a member joined meanwhile); partitions where the
   group is already past the mapped offset (its consumers started on the target, e.g. with
   ``auto.offset.reset=latest``) are skipped — a decision for the operator, shown with the offsets
   the group would skip — unless ``allow_rewind`` names the group;
5. read the offsets back, and fetch the record at each new offset whose fingerprint is known.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, Protocol

from offset_restore.errors import BadInputError, CommitInterruptedError, OffsetRestoreError
from offset_restore.kafka.model import TP, CommittedOffset, FetchedRecord, GroupInfo, LogBounds
from offset_restore.kafka.rounds import FetchRounds, Served, Source, Unserved, fetch_from
from offset_restore.snapshot.filters import NameFilter, rewind_option
from offset_restore.snapshot.fingerprint import DEFAULT_OFFSET_HEADER, fingerprint
from offset_restore.snapshot.headers import parse_offset_header
from offset_restore.snapshot.model import default_cluster_name
from offset_restore.translate.model import Plan, PlanEntry, written_by_apply

__all__ = [
    "WAIT_TIMEOUT_S",
    "ApplyOptions",
    "ApplyReport",
    "ApplyTarget",
    "WaitTimeoutError",
    "active_groups",
    "apply_plan",
    "changed_since_plan",
    "check_entries_fit",
    "check_plan_fits",
    "records_at",
    "skip_active",
    "verify_groups",
    "wait_for_empty",
]

WRITABLE_STATES = {"Empty", "Dead", "Unknown", ""}
NO_ANSWER = "the commit got no answer (the cluster stopped answering): apply again"
BATCH = 500
PROGRESS_SAVE_S = 5.0
"""During the commits, the plan is saved after a batch at most this often (and always at the end)."""


class ApplyTarget(Source, Protocol):
    @property
    def cluster_id(self) -> str: ...
    def topic_partitions(self) -> dict[str, int]: ...
    def describe_groups(self, group_ids: Sequence[str]) -> dict[str, GroupInfo]: ...
    def committed_offsets(self, group_ids: Sequence[str]) -> dict[str, dict[TP, CommittedOffset]]: ...
    def alter_offsets_many(
        self, offsets_by_group: Mapping[str, Mapping[TP, CommittedOffset]]
    ) -> dict[str, dict[TP, str | None]]: ...
    def delete_groups(self, group_ids: Sequence[str]) -> dict[str, str | None]: ...
    def log_bounds(self, partitions: Iterable[TP]) -> dict[TP, LogBounds]: ...


class WaitTimeoutError(OffsetRestoreError):
    """Groups stayed active past the wait timeout (and the input said to fail); nothing was written."""


WAIT_TIMEOUT_S = 900
"""How long apply waits for active groups by default, the CLI and the workflow alike: long enough for
consumers to be stopped by hand in an incident, short enough that a forgotten one is named soon."""


@dataclass(frozen=True)
class ApplyOptions:
    wait_timeout_s: float = WAIT_TIMEOUT_S
    poll_interval_s: float = 5.0
    on_wait_timeout: Literal["fail", "commit_empty"] = "fail"
    allow_rewind: bool = False
    """Every group may be moved back (the workflow's ``allow_rewind``)."""
    rewind_groups: NameFilter | None = None
    """Only these may (``--allow-rewind GROUP_REGEX``): a decision the operator makes per group."""
    dry_run: bool = False

    def rewinds(self, group: str) -> bool:
        """Whether ``group`` may be moved back past where it is on the target."""
        return self.allow_rewind or (self.rewind_groups is not None and self.rewind_groups(group))

    def __post_init__(self) -> None:
        # A nan wait would poll without pause; an infinite one never ends. Refused from any caller.
        for name, value, low in (
            ("wait_timeout_s", self.wait_timeout_s, 0.0),
            ("poll_interval_s", self.poll_interval_s, 0.0),
        ):
            if not math.isfinite(value) or value < low:
                raise BadInputError(f"{name} must be a finite number of seconds >= {low:g}, not {value}")


@dataclass
class ApplyReport:
    groups_planned: int = 0
    groups_committed: list[str] = field(default_factory=list)
    groups_unchanged: list[str] = field(default_factory=list)
    groups_skipped: dict[str, str] = field(default_factory=dict)
    groups_failed: dict[str, str] = field(default_factory=dict)
    offsets_committed: int = 0
    rewinds_skipped: int = 0
    ahead: dict[str, int] = field(default_factory=dict)
    """Groups not rewound, with the offsets they skip on the target past the mapped position."""
    verified: int = 0
    verify_failed: list[str] = field(default_factory=list)
    dry_run_lines: list[str] = field(default_factory=list)
    """A preview's changes, one line each (``_describe``)."""
    would_write: int = 0
    would_write_groups: int = 0
    in_place: int = 0
    """In a preview: offsets already at their mapped value on the target."""
    left_alone: list[str] = field(default_factory=list)
    """Rollback: partitions whose offset apply never wrote, with what the target holds there instead
    (not apply's to undo, ``--allow-rewind`` or not)."""
    waited_s: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    polls: int = 0

    @property
    def done_in_part(self) -> bool:
        return bool(self.groups_skipped or self.rewinds_skipped)


Progress = Callable[[str, int, int], None]


def check_plan_fits(plan: Plan, target: ApplyTarget, target_name: str | None, *, mapped_must_fit: bool = True) -> None:
    """Refuse a plan made for another cluster, or (``mapped_must_fit``: before an apply) one the
    target no longer fits: a topic or partition gone, or a mapped offset outside the partition's log
    now (a broker that restarted empty, a restore run again, retention that deleted the records) —
    nothing is written then. A rollback only puts back previous offsets: it checks the cluster."""
    if plan.target.cluster_id is not None and plan.target.cluster_id != target.cluster_id:
        raise BadInputError(
            f"the plan was made against the brokers of cluster id {plan.target.cluster_id} (named "
            f"{plan.target.cluster}), but these brokers report cluster id {target.cluster_id}: another cluster, "
            "whatever its name; nothing was written"
        )
    # The plan names the target as the user did, or by the name its id makes (an id may start with
    # '_', which a name may not: ``default_cluster_name`` adds a prefix then).
    names = {target.cluster_id, default_cluster_name(target.cluster_id), *([target_name] if target_name else [])}
    if plan.target.cluster not in names:
        raise BadInputError(
            f"the plan is for target cluster {plan.target.cluster}, but these brokers are cluster "
            f"{target.cluster_id}; plan again against this cluster"
        )
    if mapped_must_fit:
        check_entries_fit([e for e in plan.entries if e.status == "mapped"], target)


def check_entries_fit(entries: Sequence[PlanEntry], target: ApplyTarget) -> None:
    """The fit check of ``check_plan_fits`` for some mapped entries (a workflow's commit batch)."""
    if not entries:
        return
    topics = target.topic_partitions()
    for entry in entries:
        if topics.get(entry.target_topic, 0) <= entry.target.partition:
            raise BadInputError(
                f"the plan maps {entry.group} to {entry.target}, which the target no "
                "longer has: the target changed since the plan was made (restarted empty?); plan again"
            )
    bounds = target.log_bounds({e.target for e in entries})
    outside = [
        e
        for e in entries
        if e.target_offset is not None and not bounds[e.target].start <= e.target_offset <= bounds[e.target].end
    ]
    if outside:
        e = outside[0]
        log = bounds[e.target]
        raise BadInputError(
            f"{len(outside)} mapped offsets lie outside the target's logs now, e.g. {e.group} "
            f"{e.target} is mapped to {e.target_offset} but the log holds {log.start}-{log.end}: "
            "the target changed since the plan was made (restarted empty, restored again, or records deleted); "
            "nothing was written; plan again"
        )


def _groups_to_write(plan: Plan, options: ApplyOptions) -> tuple[dict[str, list[PlanEntry]], dict[str, str]]:
    """Per group, the entries this run writes: ``mapped`` ones, and ``skipped`` (ahead) ones only when
    the operator rewinds that group — otherwise a re-run would wait for the ahead groups' live
    consumers and check offsets it will not write. A group with a pending entry waits whole."""
    by_group: dict[str, list[PlanEntry]] = defaultdict(list)
    for entry in plan.entries:
        by_group[entry.group].append(entry)
    writable: dict[str, list[PlanEntry]] = {}
    waiting: dict[str, str] = {}
    for group, entries in by_group.items():
        why = _held_why(entries)
        if why:
            waiting[group] = why
            continue
        mapped = [e for e in entries if written_by_apply(e.status, options.rewinds(group))]
        twice = _written_twice(mapped + [e for e in entries if e.status == "committed"])
        if twice:
            waiting[group] = twice
        elif mapped:
            writable[group] = mapped
    return writable, waiting


def _written_twice(entries: Sequence[PlanEntry]) -> str | None:
    """Two entries that would write one target partition: a restore id translated again after the
    topic's shape changed (the workflow keeps earlier entries under other keys). Neither is written."""
    seen: dict[TP, PlanEntry] = {}
    for e in entries:
        other = seen.setdefault(e.target, e)
        if other is not e:
            return (
                f"two entries write {e.target} (source partitions {other.partition} and {e.partition}): the topic's "
                "shape changed between translations of this restore; plan it again under a new restore id"
            )
    return None


def maybe_written(entry: PlanEntry, now: CommittedOffset | None) -> bool:
    """Whether an apply may have written ``entry``'s offset: it says so (committed, or a commit sent
    without an answer), or the target holds the very offset (a run that died after its commit and
    before its save). Otherwise whatever the target holds there is not this restore's doing."""
    at = now.offset if now is not None else None
    return entry.status == "committed" or entry.reason == NO_ANSWER or at == entry.target_offset


def _held_why(entries: Sequence[PlanEntry]) -> str | None:
    """Why a group is written nowhere: pending entries, or a topic whose shape changed (None: it is not held)."""
    pending = sum(e.status == "pending" for e in entries)
    reshaped = sorted({e.topic for e in entries if e.holds_group})
    parts = [f"{pending} partitions still pending (the restore has not reached them)"] if pending else []
    if reshaped:
        parts.append(f"topic {', '.join(reshaped)} changed shape in the restore and was not mapped (see its entries)")
    return "; ".join(parts) or None


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
        report.groups_skipped[group] = f"still active on the target ({info.state}, {info.members} members)"
    return [g for g in groups if g not in active]


def apply_plan(
    plan: Plan,
    target: ApplyTarget,
    options: ApplyOptions,
    save: Callable[[Plan], None],
    *,
    progress: Progress | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    before_commit: Callable[[Sequence[str]], None] | None = None,
) -> ApplyReport:
    """Write the plan's mapped offsets; updates ``plan`` in place and saves it at each safe point."""
    show = progress or (lambda phase, done, total: None)
    report = ApplyReport()
    writable, waiting = _groups_to_write(plan, options)
    _still_ahead([e for e in plan.entries if e.status == "skipped" and not options.rewinds(e.group)], target, report)
    revived = [e for entries in writable.values() for e in entries if e.status == "skipped"]
    if revived:  # ahead partitions the operator now rewinds: they must fit the log as the mapped ones did
        check_entries_fit(revived, target)
    report.groups_planned = len(writable) + len(waiting)
    report.groups_skipped.update(waiting)
    groups = sorted(writable)

    lap = _Laps(report.timings)
    groups = _wait_until_empty(groups, target, options, report, show, sleep, clock)
    lap("wait")

    current = target.committed_offsets(groups) if groups else {}
    lap("read_current")
    commits: dict[str, dict[TP, CommittedOffset]] = {}
    for group in groups:
        offsets = _offsets_to_write(group, writable[group], current.get(group, {}), options, report)
        if offsets:
            commits[group] = offsets
    if options.dry_run:
        return report
    save(plan)  # the offsets about to be replaced are on record before the first write
    lap("save_previous")
    # Right before the writes: does the target still hold the records the plan read next to each
    # mapped offset? (One pass over every group's anchors, in shared fetch rounds.)
    for group, why in changed_since_plan([e for g in commits for e in writable[g]], target, plan.offset_header).items():
        report.groups_skipped[group] = why  # its entries say so too (_record_skips)
        del commits[group]
    lap("check_target")

    _commit_saving_progress(plan, commits, writable, target, report, show, before_commit, current, options, save)
    lap("commit")
    # Also what an interrupted run committed but never got to verify.
    unverified = {e.group for e in plan.entries if e.status == "committed" and e.verified is None}
    verify_groups(plan, report, target, sorted(unverified | set(report.groups_committed)))
    lap("verify")
    _record_skips(writable, report)
    plan_note = f"applied {datetime.now(UTC).isoformat()}: {len(report.groups_committed)} groups committed"
    plan.notes.append(plan_note)
    save(plan)
    lap("save_result")
    return report


def _wait_until_empty(
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


def _commit_saving_progress(
    plan: Plan,
    commits: dict[str, dict[TP, CommittedOffset]],
    writable: dict[str, list[PlanEntry]],
    target: ApplyTarget,
    report: ApplyReport,
    show: Progress,
    before_commit: Callable[[Sequence[str]], None] | None,
    current: Mapping[str, Mapping[TP, CommittedOffset]],
    options: ApplyOptions,
    save: Callable[[Plan], None],
) -> None:
    """Commit group by group, saving progress as it goes; on a failure, what is known (committed
    groups, groups without an answer) is saved before the error goes up."""
    try:
        progress_saved = _Throttled(lambda: save(plan), every_s=PROGRESS_SAVE_S)
        _commit_in_batches(
            commits, writable, target, report, show, before_commit, current, options.rewinds, progress_saved
        )
    except OffsetRestoreError as error:
        # Keep what is known (committed groups, groups without an answer) before giving up.
        _record_skips(writable, report)
        plan.notes.append(f"apply interrupted {datetime.now(UTC).isoformat()}: {error}")
        save(plan)
        if isinstance(error, CommitInterruptedError):
            raise CommitInterruptedError(
                f"{error}. {len(report.groups_committed)} groups were committed; {len(error.unanswered)} got no "
                "answer and hold either all their planned offsets or all their previous ones. Nothing is lost: "
                "run apply again when the cluster answers, it reads the target first and finishes the rest",
                error.answered,
                error.unanswered,
            ) from None
        raise


def _offsets_to_write(
    group: str,
    entries: list[PlanEntry],
    now: Mapping[TP, CommittedOffset],
    options: ApplyOptions,
    report: ApplyReport,
) -> dict[TP, CommittedOffset]:
    """What to commit for one group, given its offsets on the target now: records them as the
    previous offsets (the first time only), leaves out what is already there and what would rewind
    the group (unless allowed); a group with nothing left to write is ``unchanged``. A dry run only
    describes it."""
    offsets: dict[TP, CommittedOffset] = {}
    unchanged = True
    for entry in entries:
        tp = entry.target
        assert entry.target_offset is not None
        before = now.get(tp)
        if entry.status == "skipped":  # left ahead by an earlier run: decided again (its reason with it)
            entry.status, entry.reason = "mapped", None
        if not entry.previous_recorded or not maybe_written(entry, before):
            # The first time; or again when nothing of this restore is there: an earlier run recorded
            # the offsets and stopped before writing, and the consumers committed since. What the group
            # holds now is what this write replaces (and what rollback puts back).
            entry.previous_target_offset = before.offset if before else None
            entry.previous_metadata = before.metadata if before else None
            entry.previous_recorded = True
        if before is not None and before.offset == entry.target_offset:
            continue  # already there: nothing to write
        unchanged = False
        if before is not None and before.offset > entry.target_offset and not options.rewinds(group):
            if entry.previous_target_offset == before.offset:
                # Nothing this restore wrote is there: the consumers own the partition. Whatever it holds
                # when the operator does rewind it is the offset to record then (rollback's way back).
                entry.previous_recorded = False
            _left_ahead(entry, before.offset, report)
            continue
        offsets[tp] = CommittedOffset(entry.target_offset, entry.metadata)
    if options.dry_run:
        _describe(group, entries, offsets, report)
        return {}
    if unchanged:
        report.groups_unchanged.append(group)
        for entry in entries:
            entry.status = "committed"
            if entry.reason == NO_ANSWER:
                entry.reason = None
    return offsets


def _left_ahead(entry: PlanEntry, at: int, report: ApplyReport) -> None:
    """A partition the group is past on the target, not rewound: ``skipped``, with the offsets it skips."""
    assert entry.target_offset is not None
    skipped = at - entry.target_offset
    entry.status = "skipped"
    entry.reason = (
        f"ahead: the group is at {at} on the target, past the mapped {entry.target_offset}; not rewound, it "
        f"skips {skipped:,} offsets ({entry.target_offset} to {at - 1}) unless rewound ({rewind_option([entry.group])})"
    )
    report.rewinds_skipped += 1
    report.ahead[entry.group] = report.ahead.get(entry.group, 0) + skipped
    report.dry_run_lines.append(f"{entry.group} {entry.target}: {at} -> {entry.target_offset} ({entry.reason})")


def _still_ahead(entries: list[PlanEntry], target: ApplyTarget, report: ApplyReport) -> None:
    """Partitions an earlier run left ahead, not rewound now either: said again with where their
    group is now (one offset read; their groups are neither waited for nor written)."""
    if not entries:
        return
    now = target.committed_offsets(sorted({e.group for e in entries}))
    for entry in entries:
        at = now.get(entry.group, {}).get(entry.target)
        if at is not None and entry.target_offset is not None and at.offset > entry.target_offset:
            _left_ahead(entry, at.offset, report)


def _describe(group: str, entries: list[PlanEntry], offsets: Mapping[TP, CommittedOffset], report: ApplyReport) -> None:
    """A preview of one group: a line per offset that would change (what it is now, what it would be,
    how it was found), counts of those and of the offsets already in place."""
    report.would_write += len(offsets)
    report.would_write_groups += bool(offsets)
    for entry in entries:
        if entry.status == "skipped":
            continue  # said by _left_ahead
        if entry.target not in offsets:
            report.in_place += 1
            continue
        was = "none" if entry.previous_target_offset is None else str(entry.previous_target_offset)
        where = f"{group} {entry.target}: {was} -> {entry.target_offset}"
        report.dry_run_lines.append(f"{where} ({entry.method}, {_precision(entry)})")


def _precision(entry: PlanEntry) -> str:
    if entry.exact:
        return "exact"
    return f"<={entry.max_duplicates} duplicates" if entry.max_duplicates is not None else "duplicates not bounded"


def _commit_in_batches(
    commits: dict[str, dict[TP, CommittedOffset]],
    writable: dict[str, list[PlanEntry]],
    target: ApplyTarget,
    report: ApplyReport,
    show: Progress,
    before_commit: Callable[[Sequence[str]], None] | None,
    read_at_start: Mapping[str, Mapping[TP, CommittedOffset]],
    allow_moved: Callable[[str], bool],
    after_batch: Callable[[], None] = lambda: None,
) -> None:
    """Per batch: re-check that each group is still empty and that its offsets are still those read
    at the start (a consumer may commit without joining the group), then one OffsetCommit per group."""
    for start in range(0, len(commits), BATCH):
        batch = sorted(commits)[start : start + BATCH]
        if before_commit is not None:
            before_commit(batch)
        states = target.describe_groups(batch)
        ready = [g for g in batch if not states.get(g) or states[g].state in WRITABLE_STATES]
        for group in batch:
            if group not in ready:
                report.groups_skipped[group] = f"a member joined before the write ({states[group].state})"
        checked = [g for g in ready if not allow_moved(g)]
        if checked:
            moved = _moved_on(checked, writable, target.committed_offsets(checked), read_at_start)
            report.groups_skipped.update(moved)
            ready = [g for g in ready if g not in moved]
        answers: Mapping[str, dict[TP, str | None]] = {}
        try:
            answers = target.alter_offsets_many({g: commits[g] for g in ready})
        except CommitInterruptedError as error:
            answers = error.answered
            for group in error.unanswered:
                for entry in writable[group]:
                    entry.reason = NO_ANSWER
            raise
        finally:
            for group in ready:
                if group in answers:
                    errors = {tp: e for tp, e in answers[group].items() if e}
                    _record_commit(group, writable[group], commits[group], errors, report)
        show("committing", min(start + BATCH, len(commits)), len(commits))
        after_batch()


def _moved_on(
    groups: Sequence[str],
    writable: Mapping[str, list[PlanEntry]],
    now: Mapping[str, Mapping[TP, CommittedOffset]],
    read_at_start: Mapping[str, Mapping[TP, CommittedOffset]],
) -> dict[str, str]:
    """Groups whose offsets on the planned partitions changed since apply read them: group -> why."""
    moved: dict[str, str] = {}
    for group in groups:
        for entry in writable[group]:
            tp = entry.target
            was, is_now = read_at_start.get(group, {}).get(tp), now.get(group, {}).get(tp)
            if (was.offset if was else None) != (is_now.offset if is_now else None):
                moved[group] = (
                    f"moved on since apply read it ({tp} was {was.offset if was else 'none'}, now "
                    f"{is_now.offset if is_now else 'none'}): not written — something commits for it without "
                    "joining; stop it and apply again (or --allow-rewind to write over it)"
                )
                break
    return moved


NOT_WRITTEN = "not written: "


def _record_skips(writable: Mapping[str, list[PlanEntry]], report: ApplyReport) -> None:
    """Every group this run did not write says why in its entries (still ``mapped``: a later run
    writes them), so that nothing is skipped in silence — in the plan, the table and the report."""
    for group, why in report.groups_skipped.items():
        for entry in writable.get(group, []):
            if entry.status == "mapped" and entry.reason != NO_ANSWER:
                entry.reason = why if why.startswith(NOT_WRITTEN) else NOT_WRITTEN + why


class _Throttled:
    """Call ``action`` at most every ``every_s`` seconds: the plan records each batch's outcomes as
    they are answered without saving a large plan after every batch."""

    def __init__(self, action: Callable[[], None], every_s: float) -> None:
        self.action, self.every_s, self.last = action, every_s, time.monotonic()

    def __call__(self) -> None:
        if time.monotonic() - self.last >= self.every_s:
            self.action()
            self.last = time.monotonic()


class _Laps:
    def __init__(self, timings: dict[str, float]) -> None:
        self.timings, self.last = timings, time.perf_counter()

    def __call__(self, phase: str) -> None:
        now = time.perf_counter()
        self.timings[phase] = round(now - self.last, 3)
        self.last = now


def _record_commit(
    group: str,
    entries: list[PlanEntry],
    written: dict[TP, CommittedOffset],
    errors: dict[TP, str],
    report: ApplyReport,
) -> None:
    if not errors:
        report.groups_committed.append(group)
        report.offsets_committed += len(written)
        for entry in entries:
            if entry.status == "mapped":
                entry.status = "committed"
                if entry.reason == NO_ANSWER:
                    entry.reason = None
        return
    if len(errors) == len(written):
        reason = ", ".join(sorted(set(errors.values())))
        report.groups_skipped[group] = f"the broker refused the commit ({reason}): a member joined meanwhile"
        return
    # The broker accepted some partitions and refused others: say exactly which.
    report.groups_failed[group] = "; ".join(f"{tp}: {e}" for tp, e in sorted(errors.items()))
    for entry in entries:
        tp = entry.target
        if tp in errors:
            entry.status, entry.reason = "failed", f"commit refused: {errors[tp]}"
        elif tp in written:
            entry.status = "committed"


def verify_groups(plan: Plan, report: ApplyReport, target: ApplyTarget, groups: Sequence[str]) -> None:
    """Read committed offsets back; fetch the record at each new offset whose fingerprint is known."""
    if not groups:
        return
    wanted = set(groups)
    back = target.committed_offsets(list(groups))
    checks: dict[TP, list[PlanEntry]] = defaultdict(list)
    for entry in plan.entries:
        if entry.group not in wanted or entry.status != "committed":
            continue
        tp = entry.target
        now = back.get(entry.group, {}).get(tp)
        if now is None or now.offset != entry.target_offset:
            entry.verified = False
            report.verify_failed.append(f"{entry.group} {tp}: reads back {now.offset if now else 'nothing'}")
            continue
        if entry.expected_fingerprint or entry.anchor_offset is not None:
            checks[tp].append(entry)
        else:
            entry.verified = True
            report.verified += 1
    offsets: dict[TP, set[int]] = defaultdict(set)
    for tp, entries in checks.items():
        for e in entries:
            offsets[tp].update(_checked_offsets(e))
    records = records_at(target, offsets)
    for tp, entries in checks.items():
        for entry in entries:
            problem = _verify_problem(entry, records, tp, plan.offset_header)
            entry.verified = problem is None
            if problem is None:
                report.verified += 1
            else:
                report.verify_failed.append(f"{entry.group} {tp}@{entry.target_offset}: {problem}")


def _checked_offsets(entry: PlanEntry) -> set[int]:
    """The target offsets whose records the checks before and after a commit read: the mapped one
    (when the plan found the snapshot's record there) and the anchor."""
    at = entry.target_offset if entry.expected_fingerprint else None
    return {o for o in (at, entry.anchor_offset) if o is not None}


def _verify_problem(
    entry: PlanEntry, records: Mapping[tuple[TP, int], FetchedRecord], tp: TP, header: str | None
) -> str | None:
    """Why the target does not hold what the plan says at this entry's offset (None: it does)."""
    if entry.expected_fingerprint and entry.target_offset is not None:
        record = records.get((tp, entry.target_offset))
        if record is None:
            return "no record is there"
        # The restore's offset header is not part of the source record the fingerprint was taken of.
        printed = fingerprint(record.key, record.value, record.headers, exclude_header=header or DEFAULT_OFFSET_HEADER)
        if printed != entry.expected_fingerprint:
            return f"another record is there (record {entry.target_offset} is not the snapshot's record the plan found)"
    if entry.anchor_offset is not None:
        return _anchor_problem(entry, records.get((tp, entry.anchor_offset)), header)
    return None


def records_at(target: ApplyTarget, wanted: Mapping[TP, set[int]]) -> dict[tuple[TP, int], FetchedRecord]:
    """The record at each wanted offset that is on the target (absent: no record there), in shared
    fetch rounds: a window often holds several offsets asked for. A partition that cannot be read
    (an error, or unserved round after round) counts as holding none of them: the check that asked
    then fails, which never lets a commit through."""
    pending = {tp: set(offsets) for tp, offsets in wanted.items() if offsets}
    found: dict[tuple[TP, int], FetchedRecord] = {}
    rounds = FetchRounds(fetch_from(target))
    while any(pending.values()):
        positions = {tp: min(offsets) for tp, offsets in pending.items() if offsets}
        for tp, outcome in rounds.round(positions).items():
            offsets = pending[tp]
            if isinstance(outcome, Served):
                for r in outcome.answer.records:
                    if r.offset in offsets:
                        found[(tp, r.offset)] = r
                # Every offset the answer read past is settled, found or not (compacted away).
                pending[tp] = {offset for offset in offsets if offset >= outcome.answer.read_to}
            elif not isinstance(outcome, Unserved):
                pending[tp] = set()  # past the log's end, or unreadable: not there
    return found


def changed_since_plan(entries: Sequence[PlanEntry], target: ApplyTarget, header: str | None) -> dict[str, str]:
    """Groups whose target no longer holds, next to a mapped offset, the record the plan read there
    (a restore run again, a topic refilled), or whose mapped offset no longer holds the snapshot's
    record the plan found there: group -> which partition and why. Checked just before the commit
    (the same checks as the verification after it); such a group is not written."""
    checked = [e for e in entries if e.anchor_offset is not None or e.expected_fingerprint]
    wanted: dict[TP, set[int]] = defaultdict(set)
    for e in checked:
        wanted[e.target].update(_checked_offsets(e))
    records = records_at(target, wanted)
    changed: dict[str, str] = {}
    for e in checked:
        tp = e.target
        problem = _verify_problem(e, records, tp, header)
        if problem and e.group not in changed:
            changed[e.group] = (
                f"the target changed since the plan: {tp} {problem}; nothing written to the group, plan again"
            )
    return changed


def _anchor_problem(entry: PlanEntry, record: FetchedRecord | None, header: str | None) -> str | None:
    if record is None:
        return f"has no record at {entry.anchor_offset} any more"
    if entry.anchor_timestamp is not None and record.timestamp != entry.anchor_timestamp:
        return f"record {entry.anchor_offset} has timestamp {record.timestamp}, the plan read {entry.anchor_timestamp}"
    if entry.anchor_source_offset is not None and header:
        carried = next((v for name, v in record.headers if name == header), None)
        try:
            source = parse_offset_header(carried)
        except ValueError:
            source = None
        if source != entry.anchor_source_offset:
            planned = entry.anchor_source_offset
            return f"record {entry.anchor_offset} carries source offset {source}, the plan read {planned}"
    return None
