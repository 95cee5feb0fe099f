"""The report's words (pure): what to do about each kind of trouble, what to do next for each thing
that holds a group back, and the sentences that sum a run up — one copy, so that report.json, the
page, the Markdown and the SNS message say the same thing in the same words."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from offset_restore.workflow.report_facts import CARDS
from offset_restore.workflow.report_model import Headline, counted

__all__ = [
    "ADVICE",
    "ATTENTION",
    "NEXT",
    "NOTHING_WRITTEN",
    "SAFE",
    "approval_phrase",
    "done",
    "done_phrase",
    "glance",
    "headline_text",
    "ready_title",
]

ADVICE = {
    "pending": "The restore has not reached these records yet. Run again when it has: the same restore_id "
    "continues where this run stopped. If the restore is finished and will bring nothing more, run again with "
    '"restore_complete" (true, or the topics and topic/partitions that are done): these groups then resume after '
    "the last restored record, and each entry's reason says what they would never read.",
    "reshaped": "The restore re-partitioned these topics (see the reason) and their records do not carry the "
    "source partition: no partition of these groups is written, on any topic, lest their consumers read the "
    "changed topic from their reset policy. Restore with the source-partition header (partition_header, default "
    "x-source-partition) or into a topic of the source's shape, then run again.",
    "application": "These groups are Kafka Streams applications (the group is the application.id) whose "
    "repartition topics are not on the target, or hold less than their position there needs: written without "
    "them, an application would resume its inputs past records it consumed but had not processed through the "
    "repartition topic. No partition of these groups is written. Restore the application's internal topics and run "
    "again, or reset the application (kafka-streams-application-reset) and let it start from its inputs.",
    "unmapped": "No strategy could place these partitions (see the reason). Check that the topic exists on the "
    "target and carries the restore's offset header, or give a topic_map; otherwise reset them by hand.",
    "skipped": "Ahead: the group's consumers started on the target and are past the mapped offset, so they skip "
    'the records between. Rewind it ("allow_rewind": "GROUP" in a run of the same restore_id, or apply '
    "--allow-rewind='GROUP') if they must read them, or "
    "accept the skip.",
    "failed": "The broker refused part of the group's commit. Check the target cluster and run again; the "
    "previous offsets are kept in the table for a rollback.",
    "not_written": "This run did not write these groups (the reason says why: still active, moved on since the "
    "run read them, the target changed since the plan). Nothing of theirs changed; deal with the reason and run "
    "again with the same restore_id.",
    "unverified": "Written, but the target does not hold what the plan says at the offset (another record is "
    "there, or the offset reads back otherwise). Check the group before its consumers start; roll it back if need "
    "be (the previous offsets are in the table).",
    "left_on_source": "A migration moves only groups whose consumers stopped on the source: these still had "
    "members there when its final snapshot was taken (on_wait_timeout commit_empty), so they were left out and "
    "nothing of theirs changed on the target. Stop their consumers and migrate them in a new run (a new "
    "restore_id).",
    "not_exact": "A migration commits only groups whose every partition is proven exact: these were not, after "
    "the wait for the target to catch up (see each entry's reason: the records are not on the target, or not "
    "provably where the plan puts them), and nothing of theirs changed. Migrate them again once the target holds "
    "their records, or accept the entries' bounds with a run in mode apply of the same snapshot.",
    "unanswered": "The commit went out but its end is not on record — the cluster stopped answering before it "
    "confirmed, or the run failed saving what it wrote: each group holds either all its planned offsets or all "
    "its previous ones. Run again (the same restore_id) when the cluster answers: it reads the target first and "
    "finishes them.",
}
ATTENTION = (
    "unverified",
    "unanswered",
    "failed",
    "not_written",
    "left_on_source",
    "not_exact",
    "skipped",
    "pending",
    "reshaped",
    "application",
    "unmapped",
)
"""The kinds of trouble a report lists, the most serious first."""

NEXT = {
    "failed": "check the target cluster, then run again with the same restore_id",
    "unverified": "check the group before its consumers start; roll it back if need be (offset-restore rollback "
    "--restore-id ID --stack ENV)",
    "pending": "run again with the same restore_id once the restore has reached its records, or with "
    '"restore_complete" if it is finished (the reason says what the group would never read)',
    "unmapped": "give a topic_map for a renamed topic, or reset the partition by hand",
    "reshaped": "the restore re-partitioned a topic it reads and its records do not say their source partition: "
    "restore it with the source-partition header (partition_header) or into a topic of the source's shape, then run "
    "again; until then none of its partitions is written",
    "application": "a Kafka Streams application whose repartition topic is not on the target: restore its internal "
    "topics and run again, or reset the application (kafka-streams-application-reset); until then none of its "
    "partitions is written",
    "active": "stop its consumers on the target, then run again with the same restore_id",
    "not_written": "deal with the reason shown, then run again with the same restore_id",
    "ahead": 'its consumers started on the target and skip records: rewind it ("allow_rewind": "GROUP", or '
    "apply --allow-rewind='GROUP'), or accept the skip",
    "unanswered": "apply again with the same restore_id: it reads the target first and finishes the commit",
    "rolled_back": "it is back at the offsets it held before the apply (or on its way: run the rollback again "
    "if it did not finish); apply again to write the plan's offsets",
    "end_unsure": "it resumes at the end without proof: wait until the restore has finished, then plan again",
}
"""For each thing that holds a group back, what to do next."""

SAFE = "Safe to start consumers"


NOTHING_WRITTEN = ("planned", "not approved", "awaiting approval")
"""Outcomes of runs that wrote nothing by design: a plan, an apply its approval gate did not let through,
and one its gate holds (the plan's report the approver reads)."""


def done(outcome: str) -> str:
    """The status a partition has once the run did its part."""
    return "mapped" if outcome in NOTHING_WRITTEN else "committed"


def approval_phrase(run: Mapping[str, Any]) -> str | None:
    """What the run's approval gate decided, by whom and when; None for a run without a gate."""
    gate = run.get("approval")
    if not isinstance(gate, dict) or not gate.get("required"):
        return None
    answer, refusal, record = gate.get("answer"), gate.get("refusal"), gate.get("record")
    if isinstance(record, dict) and record.get("answered_by"):  # the table's record: what approve/deny wrote
        why = f": {record['reason']}" if record.get("reason") else ""
        said = f"{record.get('status')} by {record['answered_by']} at {record.get('answered_at')}{why}"
        if record.get("status") == "approved" and (record.get("delivered") is False or refusal):
            return f"not approved: {said}, but the answer never reached the run; nothing was written"
        return said if record.get("status") == "approved" else f"not approved: {said}; nothing was written"
    if isinstance(answer, dict):
        if answer.get("approved_by"):
            return f"approved by {answer['approved_by']} at {answer.get('approved_at', '?')}"
        return "approved from outside offset-restore (the console or the API: CloudTrail's SendTaskSuccess names who)"
    if isinstance(refusal, dict):
        if refusal.get("Error") == "States.Timeout":
            return f"not approved: nobody answered within {gate.get('timeout_seconds')} s; nothing was written"
        return f"not approved: {refusal.get('Cause') or refusal.get('Error')}; nothing was written"
    return "waiting for approval"


def ready_title(outcome: str) -> str | None:
    """What the groups the run did its part for are: safe to start after an apply, ready to apply
    after a plan (nothing is written: started now, consumers would begin from their reset policy); a
    rollback's report has no such list."""
    if outcome in NOTHING_WRITTEN:
        return "Ready to apply (nothing is written yet)"
    return None if outcome.startswith("rolled back") or outcome == FAILED else SAFE


FAILED = "failed"
"""The outcome of a run that ended in an error: nothing it wrote is called safe (another writer may have
taken the target since, or the run stopped half way); its report says what it did, for a person to judge."""


def done_phrase(outcome: str) -> str:
    if outcome in NOTHING_WRITTEN:
        return "ready to apply (nothing written)"
    if outcome == FAILED:
        return "restored, not yet safe to start: the run failed (read its error first)"
    return "still at the run's offsets" if outcome.startswith("rolled back") else "restored, safe to start"


def groups_said(head: Headline, outcome: str, *, short: bool = False) -> str:
    """Where the run's groups are, the first words of the headline and of the glance: true in every
    outcome — a rollback names the groups it left as they were (their entries still say committed), and
    groups whose commit was sent without its end on record are said to be possibly written."""
    groups = counted(head.groups, "group")
    if head.groups_rolled_back is not None:
        said = f"{head.groups_rolled_back:,} of {groups} rolled back to their previous offsets"
        if head.groups_left_count:
            named = "; ".join(f"{group}: {why}" for group, why in head.groups_left.items())
            more = head.groups_left_count - len(head.groups_left)
            named += f"; and {more:,} more" if more > 0 else ""
            said += f"; {head.groups_left_count:,} left as they were ({named})"
        still = max(0, head.groups_restored - head.groups_left_count)
        return said + (f"; {still:,} still at the run's offsets" if still else "")
    phrase = done_phrase(outcome)
    said = f"{head.groups_restored:,} of {groups} " + (
        f"{phrase.split(',')[0]} (every partition {done(outcome)})" if short else phrase
    )
    if head.groups_in_doubt:
        said += (
            f"; {head.groups_in_doubt:,} more may be: their commit was sent and its end is not on record (apply "
            "again with the same restore_id: it reads the target first and finishes them)"
        )
    return said


def _ratio(head: Headline) -> str:
    return "-" if head.exact_ratio is None else f"{100 * head.exact_ratio:.1f}%"


def headline_text(head: Headline, outcome: str, lost_partitions: int) -> str:
    """The headline in one sentence: groups restored, exact partitions, the bound on duplicates and
    the records lost before the backup, each over every partition of the run."""
    text = (
        f"{groups_said(head, outcome, short=True)}; {head.exact:,} of {counted(head.partitions, 'partition')} exact "
        f"({_ratio(head)}); at most {head.records_at_risk:,} records read twice"
    )
    if head.entries_without_bound:
        text += f" ({head.entries_without_bound:,} partitions without a bound)"
    if head.redelivered:
        text += f"; {head.redelivered:,} records share groups had acknowledged delivered again"
    if head.lost_records:
        text += (
            f"; {head.lost_records:,} records the groups will not read, lost before the backup or never restored "
            f"({counted(lost_partitions, 'partition')})"
        )
    return text + f" — exact as of the snapshot's positions; {exposure_text(head)}"


def exposure_text(head: Headline) -> str:
    """What happened after the snapshot, which no plan can see: the groups live then read again what they
    processed since (their estimated exposure)."""
    if not head.groups_live:
        return (
            f"{head.exposure_unknown:,} partitions without an estimate"
            if head.exposure_unknown
            else "no group was live then"
        )
    unknown = f", {head.exposure_unknown:,} partitions without an estimate" if head.exposure_unknown else ""
    return (
        f"after them, {counted(head.groups_live, 'live group')} may read again about "
        f"{head.exposure_records:,} records they processed since{unknown}"
    )


def glance(head: Headline, outcome: str) -> str:
    """The headline in one sentence, with what needs attention counted (the SNS message: a run that
    left partitions behind must not read as a clean one)."""
    attention = [(title, head.cards[key]) for key, title, serious in CARDS if serious and head.cards[key]]
    said = f"{groups_said(head, outcome)}; {head.exact:,} of {counted(head.partitions, 'partition')} exact"
    if attention:
        said += "; needs attention: " + ", ".join(f"{count:,} {title}" for title, count in attention)
    if head.groups_live:  # what no plan can see, said where the exact count is read
        said += f"; exact as of the snapshot, {exposure_text(head)}"
    return said
