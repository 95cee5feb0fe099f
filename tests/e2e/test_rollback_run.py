"""A run the deployed workflow applied is rolled back, from the previous offsets its commits saved in
DynamoDB: by the workflow's rollback mode (through moto's interpreter with the real handlers) and by
`offset-restore rollback --restore-id ID --stack ENV` — each restoring the exact previous offsets on a
real broker, removing only what the run created, and refusing what would undo the wrong thing."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import boto3
from offset_restore.cli.main import main
from offset_restore.devtools.local_aws import REGION, TABLE, Workflow
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.workflow.executions import run_ending

from tests.e2e.test_workflow import setup
from tests.helpers import Brokers, active_member, commit, table_rows


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


def offsets(target: KafkaCluster, group: str) -> dict[int, int]:
    return {tp.partition: c.offset for tp, c in target.committed_offsets([group])[group].items()}


def applied(brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, name: str) -> Any:
    """A run applied by the workflow onto a target where group a already had an offset (3 on
    partition 0: the previous offset the rollback must put back) and group b had none."""
    s = setup(brokers, source, target, workflow)
    a, b, topic = str(s["a"]), str(s["b"]), str(s["topic"])
    commit(target, a, {TP(topic, 0): 3})
    result = workflow.run({"groups": f"{a}|{b}", "mode": "apply"}, name=name)
    assert result["status"] == "SUCCEEDED", result.get("cause")
    assert offsets(target, a) == {0: 10, 1: 0} and offsets(target, b) == {0: 40}
    return a, b, topic


def deployed_stack(workflow: Workflow, name: str = "offset-restore-dr1") -> None:
    """The stack's outputs as infra/stack.py declares them, pointing at the local workflow."""
    outputs = {"LockTableName": TABLE, "TargetClusterName": "dr", "StateMachineArn": workflow.arn, "BucketName": TABLE}
    body = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    boto3.client("cloudformation", region_name=REGION).create_stack(StackName=name, TemplateBody=json.dumps(body))


def test_the_workflow_rolls_back_a_run_it_applied_exactly(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow
) -> None:
    a, b, _ = applied(brokers, source, target, workflow, "applied-1")
    result = workflow.run({"mode": "rollback", "restore_id": "applied-1"}, name="rollback-1")
    assert result["status"] == "SUCCEEDED", result.get("cause")
    assert result["states"][:4] == ["ValidateInput", "AcquireLock", "RunChoice", "Rollback"]
    assert "Prepare" not in result["states"] and "ReportRollback" in result["states"]
    assert offsets(target, a) == {0: 3}  # the previous offset back; partition 1's, which the run created, gone
    assert b not in target.list_group_ids()  # the run created every offset of b: the group is deleted
    report = workflow.report("applied-1")
    assert report["outcome"] == "rolled back" and report["statuses"] == {"mapped": 3}
    assert any("applied-1: rolled back" in m for m in workflow.sns_queue)
    # Run again, it finds everything in place and writes nothing; an apply of the same restore writes again.
    again = workflow.run({"mode": "rollback", "restore_id": "applied-1"}, name="rollback-2")
    assert again["status"] == "SUCCEEDED" and offsets(target, a) == {0: 3}
    reapplied = workflow.run({"groups": f"{a}|{b}", "mode": "apply", "restore_id": "applied-1"}, name="reapply-1")
    assert reapplied["status"] == "SUCCEEDED", reapplied.get("cause")
    assert offsets(target, a) == {0: 10, 1: 0} and offsets(target, b) == {0: 40}


def test_a_workflow_rollback_leaves_active_and_moved_groups_and_needs_a_restore_id(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow
) -> None:
    a, b, topic = applied(brokers, source, target, workflow, "applied-2")
    commit(target, a, {TP(topic, 0): 15})  # a's consumers ran on the target after the run: progress to keep
    with active_member(brokers.target.bootstrap_servers, b, topic):
        result = workflow.run({"mode": "rollback", "restore_id": "applied-2"}, name="rollback-3")
    assert result["status"] == "SUCCEEDED", result.get("cause")
    assert offsets(target, a) == {0: 15, 1: 0} and offsets(target, b) == {0: 40}
    output = json.loads(result["output"])["rollback"]
    assert output["counts"]["skipped"] == 2
    assert "moved past what apply wrote" in output["skipped"][a]
    assert "still active on the target" in output["skipped"][b]
    # The report's headline names them (before: "2 of 2 groups still at the run's offsets", neither named).
    report = workflow.report("applied-2")
    text = report["headline_text"]
    assert text.startswith("0 of 2 groups rolled back to their previous offsets; 2 left as they were ("), text
    assert f"{a}: {output['skipped'][a]}" in text and f"{b}: {output['skipped'][b]}" in text
    assert "still at the run's offsets" not in text and report["outcome"].startswith("rolled back in part")
    assert run_ending(result)[0] == 3  # start/status: a run that needs attention
    refused = workflow.run({"mode": "rollback"}, name="rollback-no-id")
    assert refused["status"] == "FAILED" and "mode rollback needs restore_id" in refused["cause"]
    assert refused["states"] == ["ValidateInput"]


def test_the_cli_rolls_back_a_workflow_run_by_its_stack(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, tmp_path: Path
) -> None:
    folder = tmp_path / "report"
    a, b, _ = applied(brokers, source, target, workflow, "applied-3")
    deployed_stack(workflow)
    status, out, err = run("start", "--stack", "dr1", "--mode", "plan", "--groups", a, "--restore-id", "drill-1")
    assert status == 0 and out == "SUCCEEDED\n", err  # the state machine found by the stack's name
    servers = brokers.target.bootstrap_servers
    common = ("rollback", "--restore-id", "applied-3", "--stack", "dr1", "--bootstrap-servers", servers)
    status, out, err = run(*common)
    assert status == 0, err
    rows = table_rows(out)
    assert ("10", "3", "put back", "-") in rows.values() and any(
        r[1:3] == ("-", "removed (apply created it)") for r in rows.values()
    )
    assert all(key[0] in (a, b) for key in rows), out
    assert f"{b}: the whole group would be deleted" in out and "run again with --execute" in out
    assert offsets(target, a) == {0: 10, 1: 0}  # a preview writes nothing
    wrong = ("rollback", "--restore-id", "applied-3", "--stack", "dr1", "--bootstrap-servers")
    status, _, err = run(*wrong, brokers.source.bootstrap_servers, "--execute")  # the primary, typed by mistake
    assert status == 2 and "was committed to the cluster with id" in err and "another cluster; nothing written" in err
    status, out, err = run(*common, "--groups", a, "--execute")
    assert status == 0, err
    assert offsets(target, a) == {0: 3} and offsets(target, b) == {0: 40}  # only the groups asked for
    status, out, err = run(*common, "--execute", "--json")
    assert status == 0, err
    assert json.loads(out)["groups_committed"] == [b] and b not in target.list_group_ids()
    status, out, _ = run("status", "--restore-id", "applied-3", "--stack", "dr1", "--json")
    assert status == 0 and json.loads(out)["statuses"] == {"mapped": 3}
    status, out, _ = run("report", "--restore-id", "drill-1", "--stack", "dr1", "--output", str(folder))
    assert status == 0 and json.loads((folder / "report.json").read_text())["outcome"] == "planned"


def test_a_cli_rollback_of_a_workflow_run_refuses_what_it_cannot_do(
    brokers: Brokers, target: KafkaCluster, workflow: Workflow
) -> None:
    deployed_stack(workflow)
    servers = brokers.target.bootstrap_servers
    status, _, err = run("rollback", "--restore-id", "never-ran", "--stack", "dr1", "--bootstrap-servers", servers)
    assert status == 2 and "no mappings for restore never-ran" in err and "nothing to roll back" in err
    status, _, err = run("rollback", "--bootstrap-servers", servers)
    assert status == 2 and "give --plan PLAN_LOCATION" in err
    status, _, err = run("rollback", "--restore-id", "x", "--plan", "p.json", "--bootstrap-servers", servers)
    assert status == 2 and "give --plan PLAN_LOCATION" in err
    status, _, err = run("rollback", "--restore-id", "x", "--bootstrap-servers", servers)
    assert status == 2 and "give --stack ENV, or --lock-table and --target-cluster" in err
    status, _, err = run("rollback", "--plan", "p.json", "--stack", "dr1", "--bootstrap-servers", servers)
    assert status == 2 and "--stack goes with --restore-id" in err
