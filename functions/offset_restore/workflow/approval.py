"""The human gate before a run's commit (docs/aws.md "The approval gate"): the run stops after its plan
and waits on a Step Functions task token until someone approves or denies it, or the gate times out.

One DynamoDB item per restore holds the question (``pk=RESTORE#<id>``, ``sk=APPROVAL``): the token, the
execution, when it was asked and until when, the plan's summary — and, once answered, who answered, when
and how. Answers are conditional writes on that item, so one token is answered once: a second approval,
or an approval after a denial or the time-out, is refused naming the first answer. AWS clients are
passed in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from offset_restore.errors import BadInputError, OffsetRestoreError
from offset_restore.stores.conditional import conditional_write
from offset_restore.stores.keys import APPROVAL_SK, restore_pk

__all__ = [
    "APPROVAL_DENIED",
    "Approval",
    "answer",
    "ask",
    "close_question",
    "open_gate",
    "question_text",
    "waiting",
    "with_approval_record",
]

APPROVAL_DENIED = "ApprovalDenied"
"""The error a denial fails the gate's task with (the state machine's Catch names it)."""


@dataclass(frozen=True)
class Approval:
    """The gate's item as it stands."""

    restore_id: str
    execution: str
    status: str
    """``waiting``, ``approved``, ``denied``, or ``ended`` (its run ended before an answer: ``close_question``)."""
    asked_at: float
    expires_at: float
    summary: dict[str, Any]
    answered_by: str | None = None
    answered_at: float | None = None
    reason: str | None = None

    def phrase(self, now: float) -> str:
        """``waiting for approval since ..., expires ...`` or what was answered, by whom and when."""
        asked, expires = _iso(self.asked_at), _iso(self.expires_at)
        if self.status == "waiting":
            if now >= self.expires_at:
                return f"the approval asked at {asked} expired at {expires}: nothing was written"
            return f"waiting for approval since {asked}, expires {expires}"
        if self.status == ENDED:
            ended = _iso(self.answered_at or 0)
            return f"the run asking ended at {ended} before an answer ({self.reason}): nothing was written"
        said = f"{self.status} by {self.answered_by} at {_iso(self.answered_at or 0)}"
        return said + (f" ({self.reason})" if self.reason else "")


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def _key(restore_id: str) -> dict[str, dict[str, str]]:
    return {"pk": {"S": restore_pk(restore_id)}, "sk": {"S": APPROVAL_SK}}


def ask(
    table: str,
    dynamodb: Any,
    run: Mapping[str, Any],
    token: str,
    execution: str,
    timeout_s: float,
    now: float,
) -> Approval:
    """Record the question (replacing an earlier one of the restore id: a new execution asks anew)."""
    summarized = run.get("summary")
    summary = dict((summarized or {}).get("summary") or {}) if isinstance(summarized, dict) else {}
    restore_id = str(run["restore_id"])
    dynamodb.put_item(
        TableName=table,
        Item={
            **_key(restore_id),
            "token": {"S": token},
            "execution": {"S": execution},
            "status": {"S": "waiting"},
            "asked_at": {"N": str(now)},
            "expires_at": {"N": str(now + timeout_s)},
            "summary": {"S": json.dumps(summary, sort_keys=True)},
        },
    )
    return Approval(restore_id, execution, "waiting", now, now + timeout_s, summary)


def waiting(table: str, dynamodb: Any, restore_id: str) -> tuple[Approval, str] | None:
    """The gate's item of the restore and its token, or None when the restore never asked."""
    item = dynamodb.get_item(TableName=table, Key=_key(restore_id), ConsistentRead=True).get("Item")
    if not item:
        return None

    def text(name: str) -> str | None:
        return item[name]["S"] if name in item else None

    approval = Approval(
        restore_id,
        text("execution") or "?",
        text("status") or "?",
        float(item["asked_at"]["N"]),
        float(item["expires_at"]["N"]),
        json.loads(text("summary") or "{}"),
        text("answered_by"),
        float(item["answered_at"]["N"]) if "answered_at" in item else None,
        text("reason"),
    )
    return approval, text("token") or ""


def answer(
    table: str,
    dynamodb: Any,
    sfn: Any,
    restore_id: str,
    *,
    approve: bool,
    who: str,
    now: float,
    reason: str | None = None,
) -> Approval:
    """Approve or deny the restore's waiting question as ``who``: recorded first (a conditional write on
    the question still waiting and unexpired: one answer per token), then sent to the execution."""
    found = waiting(table, dynamodb, restore_id)
    if found is None:
        raise BadInputError(f"no approval was asked for restore {restore_id}: nothing to answer")
    asked, token = found
    if asked.status != "waiting" or now >= asked.expires_at:
        raise BadInputError(f"restore {restore_id}: {asked.phrase(now)}; not answered again")
    status = "approved" if approve else "denied"
    values = {":waiting": {"S": "waiting"}, ":now": {"N": str(now)}, ":status": {"S": status}, ":who": {"S": who}}
    recorded = conditional_write(
        dynamodb.update_item,
        TableName=table,
        Key=_key(restore_id),
        UpdateExpression="SET #status = :status, answered_by = :who, answered_at = :now"
        + (", reason = :reason" if reason else ""),
        ConditionExpression="#status = :waiting AND expires_at > :now",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={**values, **({":reason": {"S": reason}} if reason else {})},
    )
    if not recorded:
        again = waiting(table, dynamodb, restore_id)
        said = again[0].phrase(now) if again else "no longer asked"
        raise BadInputError(f"restore {restore_id}: {said}; not answered again")
    _send(sfn, token, approve, who, now, reason)
    return Approval(
        restore_id, asked.execution, status, asked.asked_at, asked.expires_at, asked.summary, who, now, reason
    )


ENDED = "ended"


def close_question(table: str, dynamodb: Any, restore_id: str, execution: str, why: str, now: float) -> bool:
    """A question still waiting whose run ended (failed, stopped, timed out) ends with it: ``status`` then
    says so instead of "waiting", and an answer is refused. Only that execution's question (a newer run of
    the restore id may be asking); True when one was closed."""
    return conditional_write(
        dynamodb.update_item,
        TableName=table,
        Key=_key(restore_id),
        UpdateExpression="SET #status = :ended, answered_at = :now, reason = :why",
        ConditionExpression="#status = :waiting AND execution = :execution",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={
            ":ended": {"S": ENDED},
            ":waiting": {"S": "waiting"},
            ":execution": {"S": execution},
            ":now": {"N": str(now)},
            ":why": {"S": why},
        },
    )


def _send(sfn: Any, token: str, approve: bool, who: str, now: float, reason: str | None) -> None:
    """The answer to the waiting task; a token the service no longer knows (the gate timed out, the
    execution was stopped) is said so."""
    from botocore.exceptions import ClientError

    try:
        if approve:
            sfn.send_task_success(taskToken=token, output=json.dumps({"approved_by": who, "approved_at": _iso(now)}))
        else:
            cause = f"denied by {who} at {_iso(now)}" + (f": {reason}" if reason else "")
            sfn.send_task_failure(taskToken=token, error=APPROVAL_DENIED, cause=cause)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        raise OffsetRestoreError(
            f"the execution no longer waits for this answer ({code}: the gate timed out or the run was stopped); "
            "the answer is recorded, nothing was written"
        ) from None


def question_text(approval: Approval, stack_hint: str, report: str | None = None) -> str:
    """What the notification asks: what would be written (and where the plan's report is, when it was
    written before the question), how to approve or deny, and until when."""
    s = approval.summary
    report = (
        f" The plan's report: {report} (offset-restore report --restore-id {approval.restore_id} {stack_hint})."
        if report
        else ""
    )
    return (
        f"offset-restore {approval.restore_id} waits for approval before it writes anything. The plan: "
        f"{s.get('groups', 0):,} groups, {s.get('entries', 0):,} group-partitions; {s.get('exact', 0):,} exact, "
        f"{s.get('mapped', 0) - s.get('exact', 0):,} resume early with at most {s.get('max_duplicates_total', 0):,} "
        f"records read twice, {s.get('pending', 0):,} pending, {s.get('unmapped', 0):,} unmapped; "
        f"{s.get('groups_live', 0):,} groups were live at the snapshot (about {s.get('exposure_total', 0):,} records "
        f"they may read again).{report} "
        f"Approve: offset-restore approve --restore-id {approval.restore_id} {stack_hint}; "
        f"deny: offset-restore deny --restore-id {approval.restore_id} {stack_hint} [--reason TEXT]. "
        f"Expires {_iso(approval.expires_at)}: then the run ends with nothing written."
    )


def open_gate(
    run: Mapping[str, Any],
    token: str,
    execution: str,
    *,
    table: str,
    target_cluster: str,
    dynamodb: Any,
    sns: Any | None,
    topic_arn: str | None,
    stack_name: str | None,
    now: float,
) -> Approval:
    """The gate's task: hold the run's lock for the whole wait (a lock that lapsed while a person read
    the plan would let another run write), record the question with its token, and ask on the topic."""
    from offset_restore.apply.locks import TargetLock, workflow_lock_ttl

    approval_input = run.get("approval") or {}
    timeout_s = float(approval_input.get("timeout_seconds", 3_600))
    interval = float((run.get("wait") or {}).get("interval_seconds", 15))
    ttl = int(timeout_s + workflow_lock_ttl(interval))
    TargetLock.named(table, dynamodb, target_cluster, execution, ttl_s=ttl).renew(now=now)
    asked = ask(table, dynamodb, run, token, execution, timeout_s, now)
    if sns is not None and topic_arn:
        hint = f"--stack {stack_name}" if stack_name else "--stack ENV"
        sns.publish(
            TopicArn=topic_arn,
            Subject=f"offset-restore {asked.restore_id}: waiting for approval"[:100],
            Message=question_text(asked, hint, _report_location(run)),
        )
    return asked


def _report_location(run: Mapping[str, Any]) -> str | None:
    """Where the report written before the gate is (the ReportForApproval state's output), if it was."""
    written = run.get("report")
    location = written.get("report") if isinstance(written, dict) else None
    return location if isinstance(location, str) else None


def with_approval_record(run: Mapping[str, Any], table: str, dynamodb: Any, execution: str | None) -> dict[str, Any]:
    """The run with its gate's record (who answered, when, why) under ``approval.record``: the report
    says what the table says, which is what ``approve`` and ``deny`` wrote — not what the task's answer
    carried (a console answer carries what its author typed; a denial's cause may not arrive at all)."""
    gate = run.get("approval")
    if not isinstance(gate, dict) or not gate.get("required"):
        return dict(run)
    found = waiting(table, dynamodb, str(run.get("restore_id", "")))
    if found is None or (execution is not None and found[0].execution != execution):
        return dict(run)  # asked by another execution of the restore id (or never asked): not this run's
    record = found[0]
    answered = {
        "answered_by": record.answered_by,
        "answered_at": _iso(record.answered_at or 0),
        "reason": record.reason,
    }
    said = {"status": record.status, "expires_at": _iso(record.expires_at), **(answered if record.answered_by else {})}
    return {**run, "approval": {**gate, "record": said}}
