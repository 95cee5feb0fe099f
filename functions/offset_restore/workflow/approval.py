"""The human gate before a run's commit (docs/aws.md "The approval gate"): the run stops after its plan
and waits on a Step Functions task token until someone approves or denies it, or the gate times out.

One DynamoDB item per restore holds the question (``pk=RESTORE#<id>``, ``sk=APPROVAL``): the token, the
execution, when it was asked and until when, the plan's summary — and, once answered, who answered, when
and how, and whether the answer reached the run. Answers are conditional writes on that item, pinned to
the execution and token the answerer read, so one token is answered once: a second approval, an approval
after a denial or the time-out, or one that lands on a newer run's question of the same restore id, is
refused naming what stands. An answer is recorded before it is sent: a send that fails (throttled, denied)
leaves it recorded and not delivered, and the same answer given again delivers it; a send the run can no
longer take (it stopped waiting) ends the question. AWS clients are passed in.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
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
    delivered: bool = True
    """False while an answer is recorded and not yet sent to the run (its send failed: give it again)."""

    def phrase(self, now: float) -> str:
        """``waiting for approval since ..., expires ...`` or what was answered, by whom and when."""
        asked, expires = _iso(self.asked_at), _iso(self.expires_at)
        if self.status == "waiting":
            if now >= self.expires_at:
                return f"the approval asked at {asked} expired at {expires}: nothing was written"
            return f"waiting for approval since {asked}, expires {expires}"
        if self.status == ENDED:
            ended = _iso(self.answered_at or 0)
            return f"the run asking ended at {ended} before an answer reached it ({self.reason})"
        said = f"{self.status} by {self.answered_by} at {_iso(self.answered_at or 0)}"
        said += f" ({self.reason})" if self.reason else ""
        if not self.delivered:
            said += f", not yet delivered to the run ({'approve' if self.status == 'approved' else 'deny'} again)"
        return said


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
        item.get("delivered", {}).get("BOOL", True),
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
    sleep: Callable[[float], None] = time.sleep,
) -> Approval:
    """Approve or deny the restore's waiting question as ``who``: recorded first (a conditional write on
    the question read, still waiting and unexpired: one answer per token), then sent to the execution.
    The same answer given again to a question whose answer was recorded and not delivered delivers it."""
    found = waiting(table, dynamodb, restore_id)
    if found is None:
        raise BadInputError(f"no approval was asked for restore {restore_id}: nothing to answer")
    asked, token = found
    status = "approved" if approve else "denied"
    if not asked.delivered and asked.status == status:
        _deliver(table, dynamodb, sfn, asked, token, sleep)
        return replace(asked, delivered=True)
    if asked.status != "waiting" or now >= asked.expires_at:
        raise BadInputError(f"restore {restore_id}: {asked.phrase(now)}; not answered again")
    values = {
        ":waiting": {"S": "waiting"},
        ":now": {"N": str(now)},
        ":status": {"S": status},
        ":who": {"S": who},
        ":execution": {"S": asked.execution},
        ":token": {"S": token},
        ":no": {"BOOL": False},
    }
    recorded = conditional_write(
        dynamodb.update_item,
        TableName=table,
        Key=_key(restore_id),
        UpdateExpression="SET #status = :status, answered_by = :who, answered_at = :now, delivered = :no"
        + (", reason = :reason" if reason else ""),
        ConditionExpression="#status = :waiting AND expires_at > :now AND execution = :execution AND #token = :token",
        ExpressionAttributeNames={"#status": "status", "#token": "token"},
        ExpressionAttributeValues={**values, **({":reason": {"S": reason}} if reason else {})},
    )
    if not recorded:
        raise BadInputError(f"restore {restore_id}: {_what_stands(table, dynamodb, asked, now)}; not answered again")
    answered = replace(asked, status=status, answered_by=who, answered_at=now, reason=reason, delivered=False)
    _deliver(table, dynamodb, sfn, answered, token, sleep)
    return replace(answered, delivered=True)


def _what_stands(table: str, dynamodb: Any, asked: Approval, now: float) -> str:
    """Why a recorded answer did not take: the question read was answered meanwhile, or a newer run of the
    restore id asks now (an answer to the old question must not land on the new one)."""
    again = waiting(table, dynamodb, asked.restore_id)
    if again is None:
        return "no longer asked"
    if again[0].execution != asked.execution:
        return (
            f"the question read was replaced by a newer run's ({again[0].execution}, asked {_iso(again[0].asked_at)}): "
            "read its plan's report and answer again"
        )
    return again[0].phrase(now)


ENDED = "ended"
SEND_ATTEMPTS = 5
"""A throttled or failing send is tried this many times (1 s, 2 s, 4 s, 8 s apart) before the answer is left
recorded and not delivered, for the answerer to give again."""
_GONE = ("TaskTimedOut", "TaskDoesNotExist", "InvalidToken")
"""Step Functions' answers for a token whose task no longer waits."""


def close_question(
    table: str, dynamodb: Any, restore_id: str, execution: str, why: str, now: float, *, waiting: bool = True
) -> bool:
    """A question whose run ended while it still waited (``waiting``: the run failed, was stopped or timed
    out), or whose answer was recorded and never delivered, ends with it: ``status`` then says so instead of
    "waiting" or "approved", and an answer is refused. Only that execution's question (a newer run of the
    restore id may be asking); True when one was closed."""
    return _end(table, dynamodb, restore_id, execution, why, now, waiting=waiting)


def _end(table: str, dynamodb: Any, restore_id: str, execution: str, why: str, now: float, *, waiting: bool) -> bool:
    """End the execution's question if its answer was never delivered, or (``waiting``) was never given."""
    unanswered = {":waiting": {"S": "waiting"}} if waiting else {}  # DynamoDB refuses a value no expression uses
    return conditional_write(
        dynamodb.update_item,
        TableName=table,
        Key=_key(restore_id),
        UpdateExpression="SET #status = :ended, answered_at = :now, reason = :why, delivered = :yes",
        ConditionExpression=("(#status = :waiting OR delivered = :no)" if waiting else "delivered = :no")
        + " AND execution = :execution",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={
            ":ended": {"S": ENDED},
            ":yes": {"BOOL": True},
            ":no": {"BOOL": False},
            ":execution": {"S": execution},
            ":now": {"N": str(now)},
            ":why": {"S": why},
            **unanswered,
        },
    )


def _deliver(
    table: str, dynamodb: Any, sfn: Any, answered: Approval, token: str, sleep: Callable[[float], None]
) -> None:
    """Send a recorded answer to the waiting task, retried while the service throttles or fails; then mark
    it delivered. A token the service no longer knows ends the question (the run stopped waiting: the gate
    timed out or the execution was stopped); a send that still fails leaves it recorded, not delivered."""
    from botocore.exceptions import BotoCoreError, ClientError

    code = ""
    for attempt in range(SEND_ATTEMPTS):
        if attempt:
            sleep(2.0 ** (attempt - 1))
        try:
            _send(sfn, token, answered)
            break
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            if code in _GONE:
                why = f"it no longer waited when the answer was sent ({code}); nothing was written"
                _end(table, dynamodb, answered.restore_id, answered.execution, why, time.time(), waiting=False)
                raise OffsetRestoreError(
                    f"the execution no longer waits for this answer ({code}: the gate timed out or the run was "
                    "stopped); nothing was written, and the question is closed"
                ) from None
        except BotoCoreError as error:
            code = type(error).__name__
    else:
        verb = "approve" if answered.status == "approved" else "deny"
        raise OffsetRestoreError(
            f"the answer is recorded but did not reach the run ({code}, {SEND_ATTEMPTS} tries): run `offset-restore "
            f"{verb} --restore-id {answered.restore_id}` again to deliver it; the run waits until then or its gate "
            "times out"
        )
    conditional_write(  # of this question only (a newer run's replaces it)
        dynamodb.update_item,
        TableName=table,
        Key=_key(answered.restore_id),
        UpdateExpression="SET delivered = :yes",
        ConditionExpression="execution = :execution",
        ExpressionAttributeValues={":yes": {"BOOL": True}, ":execution": {"S": answered.execution}},
    )


def _send(sfn: Any, token: str, answered: Approval) -> None:
    who, at = answered.answered_by, _iso(answered.answered_at or 0)
    if answered.status == "approved":
        sfn.send_task_success(taskToken=token, output=json.dumps({"approved_by": who, "approved_at": at}))
    else:
        cause = f"denied by {who} at {at}" + (f": {answered.reason}" if answered.reason else "")
        sfn.send_task_failure(taskToken=token, error=APPROVAL_DENIED, cause=cause)


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
    said = {
        "status": record.status,
        "expires_at": _iso(record.expires_at),
        "delivered": record.delivered,
        **(answered if record.answered_by else {}),
    }
    return {**run, "approval": {**gate, "record": said}}
