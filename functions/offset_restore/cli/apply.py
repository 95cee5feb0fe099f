"""``offset-restore apply``: with ``--execute``, commit a plan's offsets to the target, group by group,
only while groups are empty; without it, preview every change (kafka-consumer-groups' convention: a
command typed at 3 am writes nothing by mistake); and the summary apply and rollback print."""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Sequence
from typing import Any, TextIO

from offset_restore.apply.model import WAIT_TIMEOUT_S, ApplyOptions, ApplyReport, OffsetChange
from offset_restore.apply.run import PlanFile, run_apply
from offset_restore.apply.waiting import first_groups
from offset_restore.cli.arguments import (
    Commands,
    add_allow_rewind,
    add_connection,
    add_execute,
    add_group_choice,
    add_plan_key,
    add_remove_static_members,
    add_unfenced,
    chosen_groups,
    connection_settings,
    previewing,
    rewind_groups,
    sealing,
    seconds,
    target_lock,
    write_result,
)
from offset_restore.cli.progress import ProgressLine
from offset_restore.formats.plan import Plan
from offset_restore.snapshot.filters import rewind_option
from offset_restore.terminal import printable_line

__all__ = ["apply_status", "offset_table", "preview_parts", "register", "report_parts", "run", "write_apply_report"]


def register(commands: Commands) -> None:
    apply = commands.add_parser(
        "apply",
        help="commit a plan's offsets to the target, group by group, only while groups are empty",
        description="Without --execute: a preview (as kafka-consumer-groups without --execute) that reads the "
        "target, waits for nobody and prints every offset that would change. With --execute: wait until every "
        "group of the plan is empty on the target, then commit its mapped offsets, recording the offsets it "
        "replaces in the plan, and verify them.",
    )
    add_connection(apply)
    apply.add_argument("--plan", required=True, metavar="PLAN_LOCATION", help="the plan file (updated in place)")
    apply.add_argument(
        "--wait-timeout",
        type=seconds(0, 7 * 86_400),
        default=float(WAIT_TIMEOUT_S),
        metavar="SECONDS",
        help="how long to wait for active groups (default: %(default)g, as the workflow)",
    )
    apply.add_argument(
        "--poll-interval",
        type=seconds(0.1, 3600),
        default=5.0,
        metavar="SECONDS",
        help="how often to look again (default: %(default)s)",
    )
    apply.add_argument(
        "--on-wait-timeout",
        choices=["fail", "commit_empty"],
        default="fail",
        help="when groups stay active: write nothing, or commit the empty ones (default: fail)",
    )
    add_allow_rewind(
        apply,
        "also move back the groups matching GROUP_REGEX (alone: every group) that are already past the mapped "
        "offset on the target (their consumers started there, e.g. with auto.offset.reset=latest); without it such "
        "partitions are left, and the offsets each group skips are shown",
    )
    add_group_choice(apply, "the plan's groups to write", "the others are neither waited for nor written")
    add_execute(apply)
    add_remove_static_members(apply)
    add_plan_key(apply)
    apply.add_argument("--target-cluster", metavar="NAME", help="the target's name if the plan used --target-cluster")
    add_unfenced(apply)
    apply.add_argument(
        "--lock-table",
        metavar="TABLE",
        help="DynamoDB table for the single-writer lock of the target cluster, keyed by --target-cluster (else the "
        "plan's target name): give the name the deployed workflow uses (TARGET_CLUSTER_NAME) and the two exclude "
        "each other",
    )
    apply.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    apply.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    preview = previewing(args)
    options = ApplyOptions(
        wait_timeout_s=0 if preview else args.wait_timeout,  # a preview names the active groups, never waits
        poll_interval_s=args.poll_interval,
        on_wait_timeout=args.on_wait_timeout,
        rewind_groups=rewind_groups(args),
        dry_run=preview,
        groups=chosen_groups(args),
        remove_static_members=args.remove_static_members,
    )
    plan_file = PlanFile(args.plan)
    connection = connection_settings(args, err)
    lock = target_lock(args, args.target_cluster or plan_file.load().target.cluster)
    progress = ProgressLine(err)
    try:
        plan, report = run_apply(
            args.plan,
            connection,
            options,
            target_name=args.target_cluster,
            lock=lock,
            progress=progress,
            sealing=sealing(args, create=not preview),
        )
    finally:
        progress.finish()
    if preview:
        return write_preview(args, plan, report, out, err)
    return write_apply_report(args, plan, report, out, err, "Apply")


def write_preview(args: argparse.Namespace, plan: Plan, report: ApplyReport, out: TextIO, err: TextIO) -> int:
    """Every change, then what ``--execute`` would do; exit 0 (a preview that ran is done)."""
    document, lines = preview_parts(args, plan, report)
    write_result(args, out, err, json.dumps(document, indent=2), lines)
    return 0


def preview_parts(args: argparse.Namespace, plan: Plan, report: ApplyReport) -> tuple[dict[str, Any], list[str]]:
    """A preview's JSON document and its lines (``migrate`` prints them after its own)."""
    lines = [
        f"Preview of plan {plan.restore_id} on {plan.target.cluster} (nothing written)",
        *offset_table(report.changes),
        *(
            f"  {g}: the whole group would be deleted (apply created every offset it holds)"
            for g in report.groups_to_delete
        ),
        *(f"  not now: {g}: {why}" for g, why in sorted(report.groups_skipped.items())),
        f"would write {report.would_write:,} offsets in {report.would_write_groups:,} groups; "
        f"{report.in_place:,} already in place; {report.rewinds_skipped:,} not rewound; "
        f"{len(report.groups_skipped):,} groups not writable now (--execute waits up to {args.wait_timeout:g} s for "
        "active ones)",
        *_ahead_lines(args, report),
        *_not_chosen(report),
        "run again with --execute to write",
    ]
    document = {
        "restore_id": plan.restore_id,
        "preview": True,
        "changes": report.dry_run_lines,
        "would_write": report.would_write,
        "would_write_groups": report.would_write_groups,
        "in_place": report.in_place,
        "rewinds_skipped": report.rewinds_skipped,
        "ahead": report.ahead,
        "not_now": report.groups_skipped,
    }
    return document, lines


def write_apply_report(
    args: argparse.Namespace, plan: Plan, report: ApplyReport, out: TextIO, err: TextIO, what: str
) -> int:
    document, lines = report_parts(args, plan, report, what)
    write_result(args, out, err, json.dumps(document, indent=2), lines)
    return apply_status(report)


def apply_status(report: ApplyReport) -> int:
    """1 when a group failed or did not verify, 3 when some were left, else 0."""
    if report.groups_failed or report.verify_failed:
        return 1
    return 3 if report.done_in_part else 0


def report_parts(
    args: argparse.Namespace, plan: Plan, report: ApplyReport, what: str
) -> tuple[dict[str, Any], list[str]]:
    """An apply's (or rollback's) JSON document and its lines."""
    lines = [
        f"{what} of plan {plan.restore_id} on {plan.target.cluster}",
        f"  groups written    {len(report.groups_committed):,} ({report.offsets_committed:,} offsets)",
        f"  already in place  {len(report.groups_unchanged):,} groups",
        f"  skipped           {len(report.groups_skipped):,} groups; {report.rewinds_skipped:,} partitions not rewound",
        f"  failed            {len(report.groups_failed):,} groups",
    ]
    lines.append(f"  verified          {report.verified:,} partitions; {len(report.verify_failed):,} did not verify")
    lines += [f"  waited            {report.waited_s:.1f} s ({report.polls} polls){_waited_for(report)}"]
    lines += _not_chosen(report)
    lines += [f"  skipped: {g}: {reason}" for g, reason in sorted(report.groups_skipped.items())[:20]]
    lines += _listed("static member removed", report.static_removed)
    lines += _listed("from the journal", report.journal_corrections)
    lines += _listed("left alone", report.left_alone)
    lines += _ahead_lines(args, report)
    lines += [f"  FAILED: {g}: {reason}" for g, reason in sorted(report.groups_failed.items())]
    lines += [f"  NOT VERIFIED: {line}" for line in report.verify_failed[:20]]
    lines += offset_table(report.changes)
    document = {
        "restore_id": plan.restore_id,
        "groups_committed": report.groups_committed,
        "groups_unchanged": report.groups_unchanged,
        "groups_skipped": report.groups_skipped,
        "groups_failed": report.groups_failed,
        "offsets_committed": report.offsets_committed,
        "rewinds_skipped": report.rewinds_skipped,
        "ahead": report.ahead,
        "verified": report.verified,
        "verify_failed": report.verify_failed,
        "left_alone": report.left_alone,
        "journal_corrections": report.journal_corrections,
        "static_removed": report.static_removed,
    }
    return document, lines


def _listed(label: str, items: Sequence[str], shown: int = 20) -> list[str]:
    """The first ``shown`` items, a line each, and how many more there are."""
    lines = [f"  {label}: {item}" for item in items[:shown]]
    if len(items) > shown:
        lines.append(f"  ... and {len(items) - shown:,} more {label} (--json lists them all)")
    return lines


TABLE_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET", "METHOD", "EXACT")
"""kafka-consumer-groups' columns (its ``-`` for no offset too), then how each offset was found."""


def offset_table(changes: Sequence[OffsetChange]) -> list[str]:
    """The changes as kafka-consumer-groups prints a reset: one aligned row per partition, sorted, under
    a header (nothing when there are none). Widths are those of the printed, escaped text, so a group
    id holding a tab or a newline cannot shift the columns."""
    if not changes:
        return []
    rows = [
        [c.group, c.topic, str(c.partition), _offset(c.current), _offset(c.new), c.method, c.exact]
        for c in sorted(changes, key=lambda c: (c.group, c.topic, c.partition))
    ]
    cells = [[printable_line(cell) for cell in row] for row in [list(TABLE_COLUMNS), *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(TABLE_COLUMNS))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]


def _offset(offset: int | None) -> str:
    return "-" if offset is None else str(offset)


def _waited_for(report: ApplyReport) -> str:
    """Who the wait was for: the groups that had members, with their client ids and hosts."""
    return f" for {first_groups(report.waited_for)}" if report.waited_for else ""


def _not_chosen(report: ApplyReport) -> list[str]:
    if not report.groups_not_chosen:
        return []
    return [f"  not chosen        {report.groups_not_chosen:,} groups of the plan (--group/--groups): left as they are"]


def _ahead_lines(args: argparse.Namespace, report: ApplyReport) -> list[str]:
    """Groups ahead of their mapped position on the target (started there, e.g. with
    ``auto.offset.reset=latest``): not rewound, so each skips records — the operator's decision, with
    the command that makes it."""
    if not report.ahead:
        return []
    names = sorted(report.ahead)
    lines = [f"  ahead: {g} skips {report.ahead[g]:,} offsets on the target unless rewound" for g in names[:20]]
    option = rewind_option(names) if len(names) <= 20 else "--allow-rewind='.*'"
    return [*lines, f"  to rewind them: {_same_command(args, option)}"]


WRITE_MODES = ("--execute", "--dry-run", "--preview")


def _same_command(args: argparse.Namespace, option: str) -> str:
    """This run's own command, complete and quoted for a POSIX shell, with ``option`` in place of any
    ``--allow-rewind`` it had and ``--execute``: safe to paste as it is printed (no ``...`` to fill
    in; no secrets: a password comes from an environment variable, never from the command line)."""
    tokens: list[str] = list(getattr(args, "argv", None) or ["apply", "--plan", args.plan])
    kept: list[str] = []
    at = 0
    while at < len(tokens):
        token = tokens[at]
        at += 1
        if token == "--allow-rewind" and at < len(tokens) and not tokens[at].startswith("-"):
            at += 1  # its pattern
        if token in WRITE_MODES or token == "--allow-rewind" or token.startswith("--allow-rewind="):
            continue
        kept.append(token)
    return " ".join(["offset-restore", *map(shlex.quote, kept), option, "--execute"])
