"""Apply a plan to the target cluster safely (docs/design.md §2.3-2.6, §6); rollback.py undoes it.

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
5. read the offsets back, and fetch the record at each new offset whose fingerprint is known
   (verification.py; the same checks as before the write, anchors.py).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from offset_restore.apply.anchors import ReadRecords, changed_since_plan
from offset_restore.apply.fit import check_entries_fit
from offset_restore.apply.model import ApplyOptions, ApplyReport, ApplyTarget, OffsetChange, Progress, WriteCheck
from offset_restore.apply.verification import verify_groups
from offset_restore.apply.waiting import wait_until_empty
from offset_restore.errors import CommitInterruptedError, OffsetRestoreError, WriterFencedError
from offset_restore.formats.plan import Plan, PlanEntry, share_groups, written_by_apply
from offset_restore.formats.streams import internal_topic
from offset_restore.heap import collections_paused, full_collections_rare
from offset_restore.kafka.fence import MEMBER_JOINED
from offset_restore.kafka.model import TP, CommittedOffset
from offset_restore.kafka.share_protocol import NOT_EMPTY
from offset_restore.snapshot.filters import rewind_option

__all__ = ["NOT_WRITTEN", "NO_ANSWER", "apply_plan", "maybe_written"]

NO_ANSWER = "the commit got no answer (the cluster stopped answering): apply again"
NOT_WRITTEN = "not written: "
Hold = Callable[[Mapping[str, Sequence[PlanEntry]]], Mapping[str, str]]
"""A last look before a write: given each group's entries, the groups not to write now and why."""
JournalHook = Callable[[Sequence[PlanEntry]], None]
"""Where the previous offsets of these entries, as they stand now, are kept apart from the plan."""
BATCH = 500
PROGRESS_SAVE_S = 5.0
"""During the commits, the plan is saved after a batch at most this often (and always at the end)."""


MEMBER_ERRORS = {MEMBER_JOINED, NOT_EMPTY, "IllegalGenerationError", "RebalanceInProgressError"}
"""The refusals of a write into a group that has members: the group is active, to be written by a later run.
Any other refusal of a whole group (a group of another kind there) fails it, in the brokers' words."""


@full_collections_rare()
def apply_plan(
    plan: Plan,
    target: ApplyTarget,
    options: ApplyOptions,
    save: Callable[[Plan], None],
    *,
    progress: Progress | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    before_write: WriteCheck | None = None,
    hold: Hold | None = None,
    journal: JournalHook | None = None,
) -> ApplyReport:
    """Write the plan's mapped offsets; updates ``plan`` in place and saves it at each safe point.
    ``hold``: a last look right before each write, naming the groups not to write now and why (a
    migration's look at the source). ``journal``: told of every previous offset this run records or
    gives up, after the save that records it and before the first write (apply/journal.py). ``before_write``:
    this run's right to write (``WriteCheck``), asked before each batch's re-checks and before each write."""
    target.treat_as_share_groups(share_groups(plan.entries))
    run = _ApplyRun(plan, target, options, save, progress or (lambda phase, done, total: None), before_write)
    run.hold, run.journal = hold, journal
    groups = run.choose()
    lap = _Laps(run.report.timings)
    groups = wait_until_empty(groups, target, options, run.report, run.show, sleep, clock)
    lap("wait")
    run.current = target.committed_offsets(groups) if groups else {}
    lap("read_current")
    for group in groups:
        offsets = run.offsets_to_write(group)
        if offsets:
            run.commits[group] = offsets
    if options.dry_run:
        return run.report
    save(plan)  # the offsets about to be replaced are on record before the first write
    run.tell_journal()
    lap("save_previous")
    with collections_paused():  # the records read to check each target (offset_restore/heap.py)
        run.drop_changed_targets()
    lap("check_target")
    run.commit_saving_progress()
    lap("commit")
    # Also what an interrupted run committed but never got to verify.
    unverified = {e.group for e in plan.entries if e.status == "committed" and e.verified is None}
    with collections_paused():
        verify_groups(plan, run.report, target, sorted(unverified | set(run.report.groups_committed)), run.read)
    lap("verify")
    run.record_skips()
    plan.notes.append(f"applied {datetime.now(UTC).isoformat()}: {len(run.report.groups_committed)} groups committed")
    save(plan)
    lap("save_result")
    return run.report


def maybe_written(entry: PlanEntry, now: CommittedOffset | None) -> bool:
    """Whether an apply may have written ``entry``'s offset: it says so (committed, or a commit sent
    without an answer), or the target holds the very offset (a run that died after its commit and
    before its save). Otherwise whatever the target holds there is not this restore's doing."""
    at = now.offset if now is not None else None
    return entry.status == "committed" or entry.outcome == "unanswered" or at == entry.target_offset


@dataclass
class _ApplyRun:
    """One apply of one plan: what it was given, what it decided per group, and the report it fills —
    held together so each step reads what it needs instead of being handed ten parameters."""

    plan: Plan
    target: ApplyTarget
    options: ApplyOptions
    save: Callable[[Plan], None]
    show: Progress
    before_write: WriteCheck | None
    report: ApplyReport = field(default_factory=ApplyReport)
    writable: dict[str, list[PlanEntry]] = field(default_factory=dict)
    """Per group, the entries this run writes."""
    current: Mapping[str, Mapping[TP, CommittedOffset]] = field(default_factory=dict)
    """The chosen groups' offsets on the target when the run read them (before any write)."""
    commits: dict[str, dict[TP, CommittedOffset]] = field(default_factory=dict)
    """Per group, what its one OffsetCommit writes."""
    read: ReadRecords = field(default_factory=ReadRecords)
    """The records the check before the commits read: the verification reuses them where it may."""
    recorded_now: set[int] = field(default_factory=set)
    """The entries (by id) whose previous offsets this run recorded: undone if its write is refused."""
    changed: dict[int, PlanEntry] = field(default_factory=dict)
    """The entries (by id) whose previous offsets this run recorded or gave up, for the journal."""
    hold: Hold | None = None
    journal: JournalHook | None = None

    def choose(self) -> list[str]:
        """The groups to write, sorted; the others are recorded as skipped with why."""
        self.report.groups_not_chosen = self.options.not_chosen(e.group for e in self.plan.entries)
        self.writable, waiting = _groups_to_write(self.plan, self.options)
        ahead = [
            e
            for e in self.plan.entries
            if e.status == "skipped" and not self.options.rewinds(e.group) and self.options.chosen(e.group)
        ]
        self.still_ahead(ahead)
        revived = [e for entries in self.writable.values() for e in entries if e.status == "skipped"]
        if revived:  # ahead partitions the operator now rewinds: they must fit the log as the mapped ones did
            check_entries_fit(revived, self.target)
        self.report.groups_planned = len(self.writable) + len(waiting)
        for group, why in waiting.items():
            self.report.skip(group, "not_written", why)
        return sorted(self.writable)

    def offsets_to_write(self, group: str) -> dict[TP, CommittedOffset]:
        """What to commit for one group, given its offsets on the target now: records them as the
        previous offsets (the first time only), leaves out what is already there and what would rewind
        the group (unless allowed); a group with nothing left to write is ``unchanged``. A dry run only
        describes it."""
        entries, now = self.writable[group], self.current.get(group, {})
        offsets: dict[TP, CommittedOffset] = {}
        unchanged = True
        for entry in entries:
            assert entry.target_offset is not None
            tp = entry.target
            before = now.get(tp)
            if entry.status == "skipped":  # left ahead by an earlier run: decided again
                entry.status = "mapped"
                entry.clear_outcome()
            if _record_previous(entry, before):
                self.recorded_now.add(id(entry))
                self.changed[id(entry)] = entry
            if before is not None and before.offset == entry.target_offset:
                continue  # already there: nothing to write
            unchanged = False
            if before is not None and before.offset > entry.target_offset and not self.options.rewinds(group):
                if entry.previous_target_offset == before.offset:
                    # Nothing this restore wrote is there: the consumers own the partition. Whatever it holds
                    # when the operator does rewind it is the offset to record then (rollback's way back).
                    entry.previous_recorded = False
                    self.changed[id(entry)] = entry
                self.left_ahead(entry, before.offset)
                continue
            offsets[tp] = CommittedOffset(entry.target_offset, entry.metadata)
        if self.options.dry_run:
            self.describe(group, entries, offsets)
            return {}
        if unchanged:
            self.report.groups_unchanged.append(group)
            for entry in entries:
                entry.mark_committed()
        return offsets

    def left_ahead(self, entry: PlanEntry, at: int) -> None:
        """A partition the group is past on the target, not rewound: ``skipped``, with the offsets it skips."""
        assert entry.target_offset is not None
        skipped = at - entry.target_offset
        entry.record_outcome(
            "ahead",
            f"ahead: the group is at {at} on the target, past the mapped {entry.target_offset}; not rewound, it "
            f"skips {skipped:,} offsets ({entry.target_offset} to {at - 1}) unless rewound "
            f"({rewind_option([entry.group])})",
            status="skipped",
        )
        self.report.rewinds_skipped += 1
        self.report.ahead[entry.group] = self.report.ahead.get(entry.group, 0) + skipped
        self.report.dry_run_lines.append(
            f"{entry.group} {entry.target}: {at} -> {entry.target_offset} ({entry.reason})"
        )
        self.report.changes.append(_change(entry, at, "not rewound"))

    def still_ahead(self, entries: list[PlanEntry]) -> None:
        """Partitions an earlier run left ahead, not rewound now either: said again with where their
        group is now (one offset read; their groups are neither waited for nor written)."""
        if not entries:
            return
        now = self.target.committed_offsets(sorted({e.group for e in entries}))
        for entry in entries:
            at = now.get(entry.group, {}).get(entry.target)
            if at is not None and entry.target_offset is not None and at.offset > entry.target_offset:
                self.left_ahead(entry, at.offset)

    def describe(self, group: str, entries: list[PlanEntry], offsets: Mapping[TP, CommittedOffset]) -> None:
        """A preview of one group: a line per offset that would change (what it is now, what it would be,
        how it was found), counts of those and of the offsets already in place."""
        report = self.report
        report.would_write += len(offsets)
        report.would_write_groups += bool(offsets)
        for entry in entries:
            if entry.status == "skipped":
                continue  # said by left_ahead
            if entry.target not in offsets:
                report.in_place += 1
                continue
            was = "none" if entry.previous_target_offset is None else str(entry.previous_target_offset)
            where = f"{group} {entry.target}: {was} -> {entry.target_offset}"
            report.dry_run_lines.append(f"{where} ({entry.method}, {_precision(entry)})")
            report.changes.append(_change(entry, self._now(entry)))

    def _now(self, entry: PlanEntry) -> int | None:
        """The entry's group's offset on its target partition when this run read it."""
        now = self.current.get(entry.group, {}).get(entry.target)
        return None if now is None else now.offset

    def drop_changed_targets(self) -> None:
        """Right before the writes: does the target still hold the records the plan read next to each
        mapped offset? (One pass over every group's anchors, in shared fetch rounds.) A group whose
        target changed is not written; its entries say so (``record_skips``)."""
        entries = [e for g in self.commits for e in self.writable[g]]
        changed, self.read = changed_since_plan(entries, self.target, self.plan.offset_header)
        for group, why in changed.items():
            self.report.skip(group, "target_changed", why)
            del self.commits[group]

    def commit_saving_progress(self) -> None:
        """Commit group by group, saving progress as it goes; on a failure, what is known (committed
        groups, groups without an answer) is saved before the error goes up."""
        try:
            progress_saved = _Throttled(lambda: self.save(self.plan), every_s=PROGRESS_SAVE_S)
            for start in range(0, len(self.commits), BATCH):
                self.commit_batch(sorted(self.commits)[start : start + BATCH])
                self.show("committing", min(start + BATCH, len(self.commits)), len(self.commits))
                progress_saved()
        except OffsetRestoreError as error:
            self.record_skips()
            self.plan.notes.append(f"apply interrupted {datetime.now(UTC).isoformat()}: {error}")
            self.save(self.plan)
            if isinstance(error, CommitInterruptedError):
                raise CommitInterruptedError(
                    f"{error}. {len(self.report.groups_committed)} groups were committed; {len(error.unanswered)} "
                    "got no answer and hold either all their planned offsets or all their previous ones. Nothing "
                    "is lost: run apply again when the cluster answers, it reads the target first and finishes "
                    "the rest",
                    error.answered,
                    error.unanswered,
                ) from None
            raise

    def commit_batch(self, batch: list[str]) -> None:
        """Re-check that each group is still empty and that its offsets are still those read at the
        start (a consumer may commit without joining the group), then one OffsetCommit per group."""
        if self.before_write is not None:
            self.before_write()
        states = self.target.describe_groups(batch)
        ready = [g for g in batch if (info := states.get(g)) is None or not info.occupied]
        for group in batch:
            if group not in ready:
                self.report.skip(group, "active", f"a member joined before the write ({states[group].state})")
        checked = [g for g in ready if not self.options.rewinds(g)]
        if checked:
            moved = _moved_on(checked, self.writable, self.target.committed_offsets(checked), self.current)
            for group, why in moved.items():
                self.report.skip(group, "moved_on", why)
            ready = [g for g in ready if g not in moved]
        if self.hold is not None and ready:
            held = self.hold({g: self.writable[g] for g in ready})
            for group, why in held.items():
                self.report.skip(group, "not_written", why)
            ready = [g for g in ready if g not in held]
        answers: Mapping[str, dict[TP, str | None]] = {}
        try:
            # The fence once more right before the write (the reads above take time: a pause there must
            # not let a run write after its lock's lease), and before every retry of it.
            answers = self.target.alter_offsets_many(
                {g: self.commits[g] for g in ready}, before_attempt=self.before_write
            )
        except CommitInterruptedError as error:
            answers = error.answered
            for group in error.unanswered:
                for entry in self.writable[group]:
                    entry.record_outcome("unanswered", NO_ANSWER)
            raise
        except WriterFencedError as error:
            self.refused_by_fence(ready, error)
            raise
        finally:
            for group in ready:
                if group in answers:
                    self.record_commit(group, {tp: e for tp, e in answers[group].items() if e})

    def refused_by_fence(self, groups: Sequence[str], error: WriterFencedError) -> None:
        """Another writer took the fence: the cluster wrote nothing of these groups. The previous offsets this
        run recorded for them are not offsets it replaced, and a rollback must not put them back (the other
        writer's offsets are there now, whatever they are); ones an earlier run recorded stay."""
        for group in groups:
            self.report.skip(group, "not_written", f"the cluster refused the write: {error}")
            for entry in self.writable[group]:
                if id(entry) in self.recorded_now:
                    entry.previous_recorded = False
                    entry.previous_target_offset = entry.previous_metadata = None
                    self.changed[id(entry)] = entry
        self.tell_journal()

    def tell_journal(self) -> None:
        """The journal learns of the previous offsets this run recorded or gave up since it last told it."""
        if self.journal is not None and self.changed:
            self.journal(list(self.changed.values()))
        self.changed.clear()

    def record_commit(self, group: str, errors: dict[TP, str]) -> None:
        entries, written = self.writable[group], self.commits[group]
        self.report.changes += [
            _change(e, self._now(e)) for e in entries if (tp := e.target) in written and tp not in errors
        ]
        if not errors:
            self.report.groups_committed.append(group)
            self.report.offsets_committed += len(written)
            for entry in entries:
                if entry.status == "mapped":
                    entry.mark_committed()
            return
        if len(errors) == len(written) and set(errors.values()) <= MEMBER_ERRORS:
            reason = ", ".join(sorted(set(errors.values())))
            self.report.skip(group, "active", f"the broker refused the commit ({reason}): a member joined meanwhile")
            return
        # The broker accepted some partitions and refused others: say exactly which.
        self.report.groups_failed[group] = "; ".join(f"{tp}: {e}" for tp, e in sorted(errors.items()))
        for entry in entries:
            if entry.target in errors:
                entry.record_outcome("refused", f"commit refused: {errors[entry.target]}", status="failed")
            elif entry.target in written:
                entry.mark_committed()

    def record_skips(self) -> None:
        """Every group this run did not write says why in its entries (still ``mapped``: a later run
        writes them), so that nothing is skipped in silence — in the plan, the table and the report."""
        for group, why in self.report.groups_skipped.items():
            outcome = self.report.skip_outcomes.get(group, "not_written")
            for entry in self.writable.get(group, []):
                if entry.status == "mapped" and entry.outcome != "unanswered":
                    entry.record_outcome(outcome, why if why.startswith(NOT_WRITTEN) else NOT_WRITTEN + why)


def _record_previous(entry: PlanEntry, before: CommittedOffset | None) -> bool:
    """Record what the target holds as the offset this write replaces (what rollback puts back): the
    first time; or again when nothing of this restore is there (an earlier run recorded the offsets
    and stopped before writing, and the consumers committed since). True when recorded now."""
    if not entry.previous_recorded or not maybe_written(entry, before):
        entry.previous_target_offset = before.offset if before else None
        entry.previous_metadata = before.metadata if before else None
        entry.previous_recorded = True
        return True
    return False


def _groups_to_write(plan: Plan, options: ApplyOptions) -> tuple[dict[str, list[PlanEntry]], dict[str, str]]:
    """Per group, the entries this run writes: ``mapped`` ones, and ``skipped`` (ahead) ones only when
    the operator rewinds that group — otherwise a re-run would wait for the ahead groups' live
    consumers and check offsets it will not write. A group with a pending entry waits whole."""
    by_group: dict[str, list[PlanEntry]] = defaultdict(list)
    for entry in plan.entries:
        if options.chosen(entry.group):
            by_group[entry.group].append(entry)
    writable: dict[str, list[PlanEntry]] = {}
    waiting: dict[str, str] = {}
    for group, entries in by_group.items():
        why = _held_why(entries) or (_not_exact_why(entries) if options.exact_only else None)
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


def _not_exact_why(entries: Sequence[PlanEntry]) -> str | None:
    """Why a migration leaves a group: an entry it maps without proof (None: every one is exact)."""
    loose = [e for e in entries if e.status == "mapped" and not e.exact]
    if not loose:
        return None
    first = loose[0]
    return (
        f"{len(loose)} partitions not proven exact (a migration writes only exact groups), e.g. {first.topic}/"
        f"{first.partition}: {first.reason or first.method}"
    )


def _held_why(entries: Sequence[PlanEntry]) -> str | None:
    """Why a group is written nowhere: pending entries, a topic whose shape changed, or a Kafka Streams
    application's repartition topic not on the target (None: it is not held)."""
    pending = sum(e.status == "pending" for e in entries)
    held = [e for e in entries if e.holds_group and e.status != "pending"]
    internal = sorted({e.topic for e in held if internal_topic(e.group, e.topic)})
    reshaped = sorted({e.topic for e in held} - set(internal))
    parts = [f"{pending} partitions still pending (the restore has not reached them)"] if pending else []
    if reshaped:
        parts.append(f"topic {', '.join(reshaped)} changed shape in the restore and was not mapped (see its entries)")
    if internal:
        parts.append(
            f"it is a Kafka Streams application and its repartition topic {', '.join(internal)} is not on the target "
            "(see its entries)"
        )
    return "; ".join(parts) or None


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


def _change(entry: PlanEntry, current: int | None, exact: str | None = None) -> OffsetChange:
    """The entry as a row of the printed table: ``exact`` in place of its precision when it is not written."""
    topic, partition = entry.target
    return OffsetChange(
        entry.group, topic, partition, current, entry.target_offset, entry.method or "-", exact or _precision(entry)
    )


def _precision(entry: PlanEntry) -> str:
    if entry.exact:
        return "exact"
    return f"<={entry.max_duplicates} duplicates" if entry.max_duplicates is not None else "duplicates not bounded"


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
