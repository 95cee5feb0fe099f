"""The approval gate's rules (pure, and against moto's DynamoDB): which runs the deployment's setting
gates, one answer per question, an expired question unanswerable, and what the report then says."""

from __future__ import annotations

import os
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from offset_restore.errors import BadInputError, OffsetRestoreError
from offset_restore.workflow.approval import answer, ask, close_question, waiting
from offset_restore.workflow.report_text import approval_phrase
from offset_restore.workflow.states.validate import gate, validate_input

DEFAULTS = {"source_cluster": "src", "target_cluster": "dr"}
ALARM = {"alarm": "primary-down", "time": "2026-12-01T03:00:00Z"}


def run_of(**fields: Any) -> tuple[Any, dict[str, Any]]:
    event = {"restore_id": "r-1", **fields}
    return validate_input(event, DEFAULTS), event


@pytest.mark.parametrize(
    ("policy", "fields", "required"),
    [
        ("never", {"mode": "apply", "trigger": ALARM}, False),
        ("alarm", {"mode": "apply", "trigger": ALARM}, True),
        ("alarm", {"mode": "migrate", "trigger": ALARM}, True),
        ("alarm", {"mode": "apply"}, False),  # an operator's own run
        ("alarm", {"mode": "plan", "trigger": ALARM}, False),  # a plan writes nothing
        ("always", {"mode": "apply"}, True),
        ("always", {"mode": "rollback"}, False),  # undoing is not gated: it puts back what was there
        ("never", {"mode": "apply", "approval": {"required": True}}, True),  # asked for by the input
    ],
)
def test_which_runs_the_setting_gates(policy: str, fields: dict[str, Any], required: bool) -> None:
    run, event = run_of(**fields)
    assert gate(run, event, policy, 1_800).approval.required is required


def test_the_timeout_is_the_settings_unless_the_input_gives_one_and_the_gate_cannot_be_turned_off() -> None:
    run, event = run_of(mode="apply", trigger=ALARM)
    assert gate(run, event, "alarm", 1_800).approval.timeout_seconds == 1_800
    run, event = run_of(mode="apply", trigger=ALARM, approval={"timeout_seconds": 120})
    assert gate(run, event, "alarm", 1_800).approval.timeout_seconds == 120
    run, event = run_of(mode="apply", trigger=ALARM, approval={"required": False})
    with pytest.raises(BadInputError, match="this deployment gates alarm-started runs"):
        gate(run, event, "alarm", 1_800)
    with pytest.raises(BadInputError, match=r"approval\.required"):
        validate_input({"restore_id": "r", "approval": {"required": "yes"}}, DEFAULTS)


class Service:
    """The Step Functions calls an answer makes; ``gone``: the token is no longer known; ``throttled``: how
    many sends fail with ThrottlingException before one goes through."""

    def __init__(self, gone: bool = False, throttled: int = 0) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.gone, self.throttled = gone, throttled

    def _call(self, name: str, **kwargs: Any) -> None:
        if self.gone:
            raise ClientError({"Error": {"Code": "TaskTimedOut", "Message": "gone"}}, name)
        if self.throttled:
            self.throttled -= 1
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, name)
        self.sent.append((name, kwargs))

    def send_task_success(self, **kwargs: Any) -> None:
        self._call("send_task_success", **kwargs)

    def send_task_failure(self, **kwargs: Any) -> None:
        self._call("send_task_failure", **kwargs)


def test_one_answer_per_question_and_none_after_it_expired(table: str) -> None:
    dynamodb = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"])
    run = {"restore_id": "r-1", "summary": {"summary": {"groups": 3}}}
    ask(table, dynamodb, run, "token-1", "arn:exec:1", 600, now=1_000)
    service = Service()
    with pytest.raises(BadInputError, match="no approval was asked for restore r-2"):
        answer(table, dynamodb, service, "r-2", approve=True, who="alice", now=1_010)
    done = answer(table, dynamodb, service, "r-1", approve=False, who="alice", now=1_010, reason="not now")
    assert done.status == "denied" and service.sent[0][0] == "send_task_failure"
    assert service.sent[0][1]["error"] == "ApprovalDenied" and "denied by alice" in service.sent[0][1]["cause"]
    with pytest.raises(BadInputError, match=r"denied by alice at .* \(not now\); not answered again"):
        answer(table, dynamodb, service, "r-1", approve=True, who="bob", now=1_020)
    assert len(service.sent) == 1 and waiting(table, dynamodb, "r-1")[0].summary == {"groups": 3}  # type: ignore[index]

    ask(table, dynamodb, run, "token-2", "arn:exec:2", 600, now=2_000)
    with pytest.raises(BadInputError, match=r"expired at .*: nothing was written"):
        answer(table, dynamodb, service, "r-1", approve=True, who="bob", now=2_600)
    ask(table, dynamodb, run, "token-3", "arn:exec:3", 600, now=3_000)
    with pytest.raises(OffsetRestoreError, match=r"no longer waits for this answer \(TaskTimedOut"):
        answer(table, dynamodb, Service(gone=True), "r-1", approve=True, who="bob", now=3_010)
    closed = waiting(table, dynamodb, "r-1")[0]  # type: ignore[index]
    assert closed.status == "ended" and "TaskTimedOut" in closed.phrase(3_020)  # not "approved" of a run it missed


def no_sleep(_: float) -> None:
    return None


def test_a_throttled_answer_is_sent_again_and_one_that_never_went_through_is_delivered_by_answering_again(
    table: str,
) -> None:
    """Before, an answer whose SendTaskSuccess was throttled was recorded "approved" and never reached the
    run: it timed out "not approved" under a report headline "approved by ...". Now the send is tried again;
    when it still fails the answer stays recorded as not delivered, a different answer is refused, the same
    answer given again delivers it (once), and a run that went on without it closes it."""
    dynamodb = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"])
    ask(table, dynamodb, {"restore_id": "r-1"}, "token-1", "arn:exec:1", 600, now=1_000)
    service = Service(throttled=2)
    assert answer(table, dynamodb, service, "r-1", approve=True, who="alice", now=1_010, sleep=no_sleep).delivered
    assert len(service.sent) == 1 and waiting(table, dynamodb, "r-1")[0].delivered  # type: ignore[index]

    ask(table, dynamodb, {"restore_id": "r-2"}, "token-2", "arn:exec:2", 600, now=1_000)
    service = Service(throttled=100)
    with pytest.raises(OffsetRestoreError, match=r"recorded but did not reach the run \(ThrottlingException"):
        answer(table, dynamodb, service, "r-2", approve=True, who="alice", now=1_010, sleep=no_sleep)
    recorded = waiting(table, dynamodb, "r-2")[0]  # type: ignore[index]
    assert recorded.status == "approved" and not recorded.delivered and service.sent == []
    assert "not yet delivered to the run (approve again)" in recorded.phrase(1_020)
    with pytest.raises(BadInputError, match="not yet delivered"):
        answer(table, dynamodb, service, "r-2", approve=False, who="bob", now=1_020, sleep=no_sleep)
    service.throttled = 0
    again = answer(table, dynamodb, service, "r-2", approve=True, who="bob", now=1_030, sleep=no_sleep)
    assert again.delivered and again.answered_by == "alice" and len(service.sent) == 1
    assert service.sent[0][1]["taskToken"] == "token-2"

    ask(table, dynamodb, {"restore_id": "r-3"}, "token-3", "arn:exec:3", 600, now=1_000)
    with pytest.raises(OffsetRestoreError):
        answer(table, dynamodb, Service(throttled=100), "r-3", approve=True, who="alice", now=1_010, sleep=no_sleep)
    assert close_question(table, dynamodb, "r-3", "arn:exec:3", "the run went on without it", 1_700)
    assert waiting(table, dynamodb, "r-3")[0].status == "ended"  # type: ignore[index]


class Replaced:
    """moto's DynamoDB, with a newer run asking the same restore id right after the answerer read the question
    (the answerer paused between its read and its write)."""

    def __init__(self, dynamodb: Any, table: str) -> None:
        self.dynamodb, self.table, self.reads = dynamodb, table, 0

    def get_item(self, **kwargs: Any) -> Any:
        found = self.dynamodb.get_item(**kwargs)
        self.reads += 1
        if self.reads == 1:
            ask(self.table, self.dynamodb, {"restore_id": "r-1"}, "token-2", "arn:exec:2", 600, now=1_100)
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self.dynamodb, name)


def test_an_answer_read_from_an_older_question_never_lands_on_a_newer_runs(table: str) -> None:
    """Before, the answer's conditional write checked only "waiting": an approval read from run 1's question
    was recorded on run 2's and sent to run 1's dead token; run 2 then timed out "not approved" with a record
    "approved by ...". Now the write is pinned to the execution and token read: refused, naming the newer run;
    run 2's question still waits and nothing was sent."""
    dynamodb = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"])
    ask(table, dynamodb, {"restore_id": "r-1"}, "token-1", "arn:exec:1", 600, now=1_000)
    service = Service()
    with pytest.raises(BadInputError, match=r"replaced by a newer run's \(arn:exec:2"):
        answer(table, Replaced(dynamodb, table), service, "r-1", approve=True, who="alice", now=1_150)
    newer = waiting(table, dynamodb, "r-1")[0]  # type: ignore[index]
    assert (newer.status, newer.execution, service.sent) == ("waiting", "arn:exec:2", [])


@pytest.mark.parametrize(
    ("approval", "said"),
    [
        (None, None),
        ({"required": False}, None),
        ({"required": True}, "waiting for approval"),
        ({"required": True, "answer": {"approved_by": "alice", "approved_at": "T"}}, "approved by alice at T"),
        ({"required": True, "answer": {}}, "approved from outside offset-restore"),
        (
            {"required": True, "timeout_seconds": 60, "refusal": {"Error": "States.Timeout"}},
            "nobody answered within 60",
        ),
        ({"required": True, "refusal": {"Error": "ApprovalDenied", "Cause": "denied by bob"}}, "not approved: denied"),
        (
            {"required": True, "record": {"status": "denied", "answered_by": "bob", "answered_at": "T", "reason": "x"}},
            "not approved: denied by bob at T: x; nothing was written",
        ),
        (
            {
                "required": True,
                "record": {"status": "approved", "answered_by": "al", "answered_at": "T", "delivered": False},
            },
            "not approved: approved by al at T, but the answer never reached the run",
        ),
        (
            {
                "required": True,
                "refusal": {"Error": "States.Timeout"},
                "record": {"status": "approved", "answered_by": "al", "answered_at": "T"},
            },
            "never reached the run",
        ),
    ],
)
def test_the_report_says_what_the_gate_decided(approval: dict[str, Any] | None, said: str | None) -> None:
    phrase = approval_phrase({"approval": approval} if approval is not None else {})
    assert phrase == said if said is None else phrase is not None and said in phrase
