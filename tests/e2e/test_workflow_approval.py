"""Issue 37's approval gate through the state machine (moto's interpreter with its task-token callbacks, the
real handlers, real brokers): a run the failover alarm starts stops after its plan and writes nothing until
a person approves it; who approved is on record; a denial, a time-out, an approval after the target changed,
a second approval and an approval of another restore id each end cleanly with nothing written blind."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from offset_restore.apply.locks import TargetLock
from offset_restore.cli.main import main
from offset_restore.devtools.local_aws import REGION, TABLE, Workflow
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.workflow.approval import Approval, waiting
from offset_restore.workflow.executions import run_ending

from tests.e2e.test_workflow import setup
from tests.helpers import Brokers

ALARM = {"alarm": "prod-primary-kafka-down", "time": "2026-12-01T03:00:00Z"}
"""What the failover rule's input says of the alarm that started the run (infra/triggers.py)."""
MOTO_CALLER = "arn:aws:sts::123456789012:user/moto"
"""STS GetCallerIdentity under moto: the identity the answers are recorded with."""


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


def offsets(target: KafkaCluster, group: str) -> dict[int, int]:
    return {tp.partition: c.offset for tp, c in target.committed_offsets([group])[group].items()}


def asked(restore_id: str, timeout_s: float = 60) -> Approval:
    """The gate's question once the run waits at it."""
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    deadline = time.monotonic() + timeout_s
    while (found := waiting(TABLE, dynamodb, restore_id)) is None or found[0].status != "waiting":
        assert time.monotonic() < deadline, f"restore {restore_id} never asked for approval"
        time.sleep(0.1)
    return found[0]


def notified(workflow: Workflow, text: str) -> str:
    """The first notification that says ``text`` (SNS delivers to the test's queue a moment later)."""
    for _ in range(50):
        found = [m for m in workflow.sns_queue if text in m]
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no notification says {text!r}")


def lock_holder() -> tuple[str, int] | None:
    return TargetLock.named(TABLE, boto3.client("dynamodb", region_name=REGION), "dr", "x").holder()


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """The deployment's approval setting, as the stack sets it on the Validate function."""
    return lambda policy: monkeypatch.setenv("APPROVAL", policy)


def test_an_alarm_started_run_writes_nothing_until_approved_and_records_who(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, gated: Callable[[str], None]
) -> None:
    """The prod configuration (approval: alarm). The run plans, then waits: nothing is written, its lock
    is held for the whole wait, the notification says what would be written and how to answer, and
    ``status`` says since when it waits. An approval of another restore id answers nothing; the approval
    lets it write, is recorded with the caller and the time (the table, the report), and a second
    approval of the same question is refused naming the first."""
    gated("alarm")
    s = setup(brokers, source, target, workflow)
    a, b = str(s["a"]), str(s["b"])
    run_input = {"groups": f"{a}|{b}", "mode": "apply", "on_wait_timeout": "commit_empty", "trigger": ALARM}
    execution = workflow.start({**run_input, "restore_id": "gate-1"}, name="gate-1")
    question = asked("gate-1")
    assert question.summary["groups"] == 2 and question.expires_at - question.asked_at == 3_600
    assert offsets(target, a) == {} and offsets(target, b) == {}  # nothing written while it waits
    held = lock_holder()
    assert held is not None and held[0] == execution and held[1] >= time.time() + 3_600  # held for the wait
    message = notified(workflow, "gate-1 waits for approval")
    assert "2 groups, 3 group-partitions" in message and "offset-restore approve --restore-id gate-1" in message
    assert "Expires " in message and "nothing written" in message
    status, out, _ = cli("status", "--restore-id", "gate-1", "--table", TABLE)
    assert "Restore gate-1: waiting for approval since " in out and ", expires " in out, out
    assert status == 3  # not done: the gate holds it
    # The plan's report is there to read while the gate waits, and the question links it; its own
    # writing sent no notification (the question is the one).
    waiting_report = workflow.report("gate-1")
    assert waiting_report["outcome"] == "awaiting approval", waiting_report["outcome"]
    assert "2 of 2 groups ready to apply (nothing written)" in waiting_report["headline_text"]
    assert "The plan's report: s3://offset-restore/restores/gate-1/report.html" in message, message
    assert not any("gate-1: awaiting approval" in m for m in workflow.sns_queue), workflow.sns_queue

    status, _, err = cli("approve", "--restore-id", "gate-other", "--table", TABLE)
    assert status == 2 and "no approval was asked for restore gate-other" in err
    assert waiting(TABLE, boto3.client("dynamodb", region_name=REGION), "gate-1")[0].status == "waiting"  # type: ignore[index]
    status, out, err = cli("approve", "--restore-id", "gate-1", "--table", TABLE)
    assert status == 0 and f"approved by {MOTO_CALLER}" in out, err
    status, _, err = cli("approve", "--restore-id", "gate-1", "--table", TABLE)
    assert status == 2 and f"approved by {MOTO_CALLER}" in err and "not answered again" in err

    ended = workflow.wait(execution)
    assert ended["status"] == "SUCCEEDED", ended.get("cause")
    assert ended["states"].count("AwaitApproval") == 1 and ended["states"].index("AwaitApproval") < ended[
        "states"
    ].index("CheckEmpty")
    assert offsets(target, a) == {0: 10, 1: 0} and offsets(target, b) == {0: 40}
    report = workflow.report("gate-1")
    assert report["approval"].startswith(f"approved by {MOTO_CALLER} at 20"), report["approval"]
    phases = [phase["phase"] for phase in report["timeline"]]  # the gate's wait is a phase of its own
    assert phases.index("waiting for approval") == phases.index("translate") + 1, phases
    assert run_ending(ended)[0] == 0 and lock_holder() is None


def test_a_denial_or_a_time_out_ends_the_run_with_nothing_written_and_its_lock_released(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, gated: Callable[[str], None]
) -> None:
    """approval: always. A denial ends the run (SUCCEEDED, outcome "not approved", start exits 3) with
    nothing written, the lock released and the denial's author and reason in the report. A gate nobody
    answers ends the same way at its time-out — here scaled to 2 s by the input (the deployment's
    default is an hour; prod's 30 minutes) — and a late approval is refused as expired. An input that
    turns the gate off where the deployment requires it is refused before the lock."""
    gated("always")
    s = setup(brokers, source, target, workflow)
    a, b = str(s["a"]), str(s["b"])
    run_input = {"groups": f"{a}|{b}", "mode": "apply"}
    execution = workflow.start({**run_input, "restore_id": "deny-1"}, name="deny-1")
    asked("deny-1")
    status, out, err = cli("deny", "--restore-id", "deny-1", "--table", TABLE, "--reason", "primary is back")
    assert status == 0 and f"denied by {MOTO_CALLER}" in out, err
    denied = workflow.wait(execution)
    assert denied["status"] == "SUCCEEDED" and "CheckEmpty" not in denied["states"], denied.get("cause")
    code, lines = run_ending(denied)
    assert code == 3 and lines[0] == "SUCCEEDED: not approved", lines
    report = workflow.report("deny-1")
    assert report["outcome"] == "not approved" and f"denied by {MOTO_CALLER}" in report["approval"]
    assert "primary is back" in report["approval"] and report["headline_text"].startswith("not approved: denied")
    assert "2 of 2 groups ready to apply (nothing written)" in report["headline_text"]
    assert offsets(target, a) == {} and offsets(target, b) == {} and lock_holder() is None
    status, out, err = cli("status", "--restore-id", "deny-1", "--table", TABLE)
    assert status == 3 and "denied by" in out, out + err  # as start's: the gate did not let it through

    late = workflow.run({**run_input, "restore_id": "late-1", "approval": {"timeout_seconds": 2}}, name="late-1")
    assert late["status"] == "SUCCEEDED" and "CheckEmpty" not in late["states"], late.get("cause")
    assert workflow.report("late-1")["approval"] == "not approved: nobody answered within 2 s; nothing was written"
    assert offsets(target, a) == {} and lock_holder() is None
    status, out, err = cli("status", "--restore-id", "late-1", "--table", TABLE)
    assert status == 3, out + err
    # The service's timer starts before the Gate records when it asked: wait out the recorded expiry too,
    # so the late approval meets the expired question (not a token the service already let go).
    question = waiting(TABLE, boto3.client("dynamodb", region_name=REGION), "late-1")
    assert question is not None
    time.sleep(max(0.0, question[0].expires_at - time.time() + 0.1))
    status, _, err = cli("approve", "--restore-id", "late-1", "--table", TABLE)
    assert status == 2 and "expired" in err and "nothing was written" in err

    refused = workflow.run({**run_input, "restore_id": "off-1", "approval": {"required": False}}, name="off-1")
    assert refused["status"] == "FAILED" and refused["states"] == ["ValidateInput"]
    assert "this deployment gates every apply and migrate" in refused["cause"]


def test_an_approval_after_the_target_changed_is_refused_not_written_blind(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, gated: Callable[[str], None]
) -> None:
    """While the gate waits, the target changes under the plan (records deleted: the mapped offsets are
    no longer in its logs). The approval lets the run on; its commit checks the plan against the target
    before any write and refuses: the run fails naming the change, nothing is written, and the lock goes."""
    gated("always")
    s = setup(brokers, source, target, workflow)
    a, b, topic = str(s["a"]), str(s["b"]), str(s["topic"])
    execution = workflow.start({"groups": f"{a}|{b}", "mode": "apply", "restore_id": "moved-1"}, name="moved-1")
    asked("moved-1")
    target.delete_records({TP(topic, 0): 30, TP(topic, 1): 30})
    assert cli("approve", "--restore-id", "moved-1", "--table", TABLE)[0] == 0
    ended: dict[str, Any] = workflow.wait(execution)
    assert ended["status"] == "FAILED" and "the target changed since the plan was made" in ended["cause"]
    assert offsets(target, a) == {} and offsets(target, b) == {}
    assert run_ending(ended)[0] == 1


def test_a_question_ends_with_its_run(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, gated: Callable[[str], None]
) -> None:
    """A run stopped while its gate waits: the release rule's call (through the real Lock handler) frees the
    target and ends the question with the run. Before, ``status`` said "waiting for approval" of a run that
    no longer existed and an approval was recorded and sent to nothing. Now ``status`` says the run ended
    before an answer (exit 3) and an approval is refused, naming why; nothing was written."""
    from offset_restore_handlers.lock import handler

    from tests.helpers import LambdaContext

    gated("always")
    s = setup(brokers, source, target, workflow)
    a = str(s["a"])
    execution = workflow.start({"groups": a, "mode": "apply", "restore_id": "gone-1"}, name="gone-1")
    asked("gone-1")
    workflow.sfn.stop_execution(executionArn=execution, cause="an operator stopped it")
    rule = {"action": "release", "restore_id": "gone-1", "target_cluster": "dr", "owner": execution, "ended": True}
    assert handler(rule, LambdaContext())["lock"] == "released" and lock_holder() is None
    question = waiting(TABLE, boto3.client("dynamodb", region_name=REGION), "gone-1")
    assert question is not None and question[0].status == "ended", question
    status, out, err = cli("status", "--restore-id", "gone-1", "--table", TABLE)
    assert status == 3 and "the run asking ended at " in out and "before an answer" in out, out + err
    status, _, err = cli("approve", "--restore-id", "gone-1", "--table", TABLE)
    assert status == 2 and "the run asking ended" in err and "not answered again" in err, err
    assert offsets(target, a) == {}


def test_an_approval_the_service_throttled_is_delivered_by_approving_again(
    brokers: Brokers,
    source: KafkaCluster,
    target: KafkaCluster,
    workflow: Workflow,
    gated: Callable[[str], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Step Functions throttles every SendTaskSuccess of the first ``approve``. Before, the answer was recorded
    "approved" and never sent: the run timed out "not approved" under a report headline "approved by ...".
    Now ``approve`` tries again, then fails saying the answer is recorded and not delivered (exit 1);
    ``status`` says so (exit 3); nothing is written until ``approve`` given again delivers it, and then the
    run writes and its report names the approver."""
    from botocore.exceptions import ClientError
    from offset_restore.cli import approve as approve_command
    from offset_restore.workflow import approval

    gated("always")
    s = setup(brokers, source, target, workflow)
    a = str(s["a"])
    execution = workflow.start({"groups": a, "mode": "apply", "restore_id": "slow-1"}, name="slow-1")
    asked("slow-1")
    monkeypatch.setattr(approval, "SEND_ATTEMPTS", 2)
    original = approve_command.aws_client

    def throttle(**_: Any) -> None:
        raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "SendTaskSuccess")

    def throttled(args: Any, service: str) -> Any:
        client = original(args, service)
        if service == "stepfunctions":
            client.meta.events.register("before-call.sfn.SendTaskSuccess", throttle)
        return client

    monkeypatch.setattr(approve_command, "aws_client", throttled)
    status, _, err = cli("approve", "--restore-id", "slow-1", "--table", TABLE)
    assert status == 1 and "recorded but did not reach the run (ThrottlingException" in err, err
    status, out, err = cli("status", "--restore-id", "slow-1", "--table", TABLE)
    assert status == 3 and "not yet delivered to the run (approve again)" in out, out + err
    assert offsets(target, a) == {}
    monkeypatch.setattr(approve_command, "aws_client", original)
    status, out, err = cli("approve", "--restore-id", "slow-1", "--table", TABLE)
    assert status == 0 and f"approved by {MOTO_CALLER}" in out, err
    ended = workflow.wait(execution)
    assert ended["status"] == "SUCCEEDED" and "CheckEmpty" in ended["states"], ended.get("cause")
    assert offsets(target, a) == {0: 10, 1: 0}
    assert workflow.report("slow-1")["approval"].startswith(f"approved by {MOTO_CALLER} at 20")
