"""How a followed run ends for ``offset-restore start`` (workflow/executions.run_ending): a SUCCEEDED
execution whose output says something was left — an outcome that needs attention, a report not
written, a lock not released — exits 3 and says it; a failed or stopped one exits 1."""

from __future__ import annotations

import json

from offset_restore.workflow.executions import run_ending


def ended(**output: object) -> dict[str, object]:
    return {"status": "SUCCEEDED", "output": json.dumps(output)}


def test_a_clean_run_is_one_word_and_exit_0() -> None:
    assert run_ending(ended(report={"outcome": "applied"})) == (0, ["SUCCEEDED"])
    assert run_ending(ended(report={"outcome": "planned"})) == (0, ["SUCCEEDED"])


def test_what_a_succeeded_run_left_is_said_and_exits_3() -> None:
    status, lines = run_ending(ended(report={"outcome": "applied, needs attention"}))
    assert (status, lines) == (3, ["SUCCEEDED: applied, needs attention"])
    failure = {"Error": "NotFoundException", "Cause": "Publish: topic does not exist"}
    status, lines = run_ending(ended(report_error=failure, release_error={"Error": "Throttling", "Cause": "slow"}))
    assert status == 3 and lines[0] == "SUCCEEDED"
    assert lines[1] == "but its report or notification was not written (offset-restore status shows its mappings): " \
        "NotFoundException: Publish: topic does not exist"  # fmt: skip
    assert (
        lines[2].startswith("but its lock was not released (offset-restore unlock") and "Throttling: slow" in lines[2]
    )


def test_a_failed_or_stopped_run_exits_1_with_its_error() -> None:
    assert run_ending({"status": "FAILED", "error": "WaitTimeoutError", "cause": "2 groups"}) == (
        1,
        ["FAILED: WaitTimeoutError: 2 groups"],
    )
    assert run_ending({"status": "ABORTED"}) == (1, ["ABORTED"])
