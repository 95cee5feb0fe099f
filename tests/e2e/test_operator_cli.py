"""The operator's commands against a moto-hosted state machine: start and follow, status, report."""

from __future__ import annotations

import io
import json
from pathlib import Path

from offset_restore.cli.main import main
from offset_restore.devtools.local_aws import BUCKET, TABLE, Workflow
from offset_restore.kafka.cluster import KafkaCluster

from tests.e2e.test_workflow import setup
from tests.helpers import Brokers


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


def test_start_follow_status_and_report(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, tmp_path: Path
) -> None:
    s = setup(brokers, source, target, workflow)
    (tmp_path / "input.json").write_text(json.dumps({"groups": f"{s['a']}|{s['b']}", "mode": "plan"}))
    status, out, err = run("start", "--state-machine", workflow.arn, "--input", str(tmp_path / "input.json"),
                           "--restore-id", "ops-1")  # fmt: skip
    assert (status, out) == (0, "SUCCEEDED\n"), err  # a plan first; the same restore id then applies it
    status, out, err = run(
        "start",
        "--state-machine",
        workflow.arn,
        "--input",
        str(tmp_path / "input.json"),
        "--mode",
        "apply",
        "--restore-id",
        "ops-1",
        "--json",
    )
    assert status == 0, err
    assert json.loads(out)["status"] == "SUCCEEDED"
    assert "ValidateInput" in err and "Commit" in err  # followed state by state; --mode overrode the file
    status, out, _ = run("status", "--restore-id", "ops-1", "--table", TABLE, "--json")
    assert status == 0 and json.loads(out)["statuses"] == {"committed": 3}
    status, out, _ = run("report", "--restore-id", "ops-1", "--bucket", BUCKET, "--output", str(tmp_path / "r"))
    assert status == 0 and (tmp_path / "r" / "report.html").exists()
    assert json.loads((tmp_path / "r" / "report.json").read_text())["outcome"] == "applied"


def test_operator_mistakes_are_named(workflow: Workflow, tmp_path: Path) -> None:
    status, _, err = run("start", "--state-machine", workflow.arn + "-nope", "--mode", "plan")
    assert status == 2 and "no state machine" in err
    status, _, err = run("status", "--restore-id", "never-ran", "--table", TABLE)
    assert status == 2 and "no mappings for restore never-ran" in err
    status, _, err = run("report", "--restore-id", "never-ran", "--bucket", BUCKET, "--output", str(tmp_path))
    assert status == 2 and "no report for restore never-ran" in err
    (tmp_path / "bad.json").write_text("[1, 2]")
    status, _, err = run("start", "--state-machine", workflow.arn, "--input", str(tmp_path / "bad.json"))
    assert status == 2 and "must hold a JSON object" in err
