"""The deployed estimate's two corrections (bench/deployed_estimate.py): only the state transitions on the
run's path are charged, and botocore's own CPU per request is charged as the handler's time."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bench import deployed_estimate as de
from bench.client_cost import item_size
from bench.workflow_run import CHILD_STATES_PER_TRANSLATE, MAP_CONCURRENCY

RESULTS = Path(__file__).parents[2] / "bench" / "results"


def invocation(function: str, own_s: float = 1.0, calls: dict[str, int] | None = None) -> dict[str, Any]:
    return {
        "function": function,
        "own_seconds": own_s,
        "moto_seconds": 0.0,
        "aws_calls": calls or {},
        "kafka_requests": 0,
    }


def run(translate: int, commit: int) -> list[dict[str, Any]]:
    serial = ["Validate", "Lock", "Prepare", "Summarize", "CheckEmpty", "Report", "Lock"]
    return (
        [invocation(name) for name in serial]
        + [invocation("Translate") for _ in range(translate)]
        + [invocation("Commit") for _ in range(commit)]
    )


def test_each_map_iteration_is_one_state() -> None:
    assert de.ITERATION_STATES == {"Translate": CHILD_STATES_PER_TRANSLATE, "Commit": 1}


def test_only_the_transitions_on_the_path_are_charged() -> None:
    """The 120,000 run: 13 serial transitions, 61 Translate children and 20 Commit iterations (one round each)."""
    found = de.estimate(run(61, 20), transitions=94, import_s=0.5)
    assert found.path_transitions() == 13 + 1 + 1
    assert found.total_s() == pytest.approx(sum(found.path_s(f) for f in found.deployed) + 1.5)


def test_a_map_of_several_rounds_charges_one_iteration_per_round() -> None:
    translate_rounds = -(-130 // MAP_CONCURRENCY["Translate"])
    commit_rounds = -(-45 // MAP_CONCURRENCY["Commit"])
    found = de.estimate(run(130, 45), transitions=13 + 130 + 45, import_s=0.5)
    assert found.path_transitions() == 13 + translate_rounds + commit_rounds


def test_botocore_cpu_is_charged_as_own_time_scaled_by_the_cpu_share() -> None:
    calls = {"dynamodb.PutItem": 2, "dynamodb.ItemsWritten": 2}
    found = de.estimate([invocation("Lock", own_s=0.0, calls=calls)], transitions=1, import_s=0.0)
    client = 2 * de.CLIENT_CPU_S["dynamodb.PutItem"]
    assert found.client["Lock"] == pytest.approx(client)
    share = de.ONE_VCPU_MB / de.MEMORY_MB["Lock"]
    assert found.deployed["Lock"] == [
        pytest.approx(de.ENVIRONMENT_START_S + client * share + 2 * de.DYNAMODB_REQUEST_S)
    ]


def test_requests_not_measured_are_charged_as_a_small_one_of_their_service() -> None:
    assert de.client_cpu_seconds({"dynamodb.UpdateItem": 1}) == de.CLIENT_CPU_S["dynamodb.PutItem"]
    assert de.client_cpu_seconds({"s3.HeadObject": 1}) == de.CLIENT_CPU_S["s3.GetObject"]
    assert de.client_cpu_seconds({"stepfunctions.GetExecutionHistory": 1}) == de.CLIENT_CPU_S["sns.Publish"]
    assert de.client_cpu_seconds({"s3.Bytes": 1_000_000}) == pytest.approx(1_000_000 * de.CLIENT_CPU_S["s3.Bytes"])


def test_the_charged_figures_are_the_measured_ones() -> None:
    """``CLIENT_CPU_S`` as bench/results/client-cost.md records it (rounded there and here)."""
    measured: dict[str, float] = {}
    scale = {"us": 1e-6, "ns": 1e-9}
    for operation, figure, unit, per in re.findall(
        r"^\| ([\w.]+) \| [^|]+ \| ([\d,.]+) (us|ns) \| (\w+) \|$", (RESULTS / "client-cost.md").read_text(), re.M
    ):
        if per != "item":
            measured["s3.Bytes" if per == "byte" else operation] = float(figure.replace(",", "")) * scale[unit]
    assert measured.keys() == de.CLIENT_CPU_S.keys()
    for name, seconds in measured.items():
        assert de.CLIENT_CPU_S[name] == pytest.approx(seconds, rel=0.03), name


def test_the_saved_run_has_19_transitions_on_its_path() -> None:
    """67 Translate children in one round; 40 Commit iterations in one: 19 of the run's 123 transitions (the
    2026-12-06 run; docs/benchmarks.md quotes them)."""
    saved = json.loads((RESULTS / "workflow-invocations-120000.json").read_text())
    found = de.estimate(saved["invocations"], saved["transitions"], saved["import_s"])
    assert (found.transitions, found.path_transitions()) == (123, 19)


def test_item_size_counts_as_dynamodb_does() -> None:
    item = {"pk": {"S": "ab"}, "n": {"N": "-12.30"}, "ok": {"BOOL": True}, "m": {"M": {"k": {"NULL": True}}}}
    # pk 2+2; n 1 + (3 significant digits: 2+1); ok 2+1; m 1 + 3 + (k 1 + 1 + 1)
    assert item_size(item) == 4 + 4 + 3 + 7


def test_requests_sent_a_few_at_once_wait_in_rounds_and_the_others_one_after_another() -> None:
    batched = {"dynamodb.BatchWriteItem": 17, "dynamodb.BatchGetItem": 8}
    assert de.aws_seconds(batched, "Commit") == pytest.approx((4 + 2) * de.DYNAMODB_REQUEST_S)
    assert de.aws_seconds({"s3.PutObject": 41}, "Summarize") == pytest.approx(7 * de.S3_REQUEST_S)
    assert de.aws_seconds({"s3.PutObject": 3}, "Report") == pytest.approx(3 * de.S3_REQUEST_S)  # one by one
    assert de.aws_seconds({"dynamodb.PutItem": 5, "dynamodb.Query": 2}, "Commit") == pytest.approx(
        7 * de.DYNAMODB_REQUEST_S
    )


def test_alarm_to_last_commit_verified_leaves_out_the_report_and_the_release() -> None:
    found = de.estimate(run(61, 40), transitions=114, import_s=0.5)
    release = found.deployed["Lock"][-1]
    after = found.path_s("Report") + release + de.AFTER_LAST_COMMIT * de.STATE_TRANSITION_S
    assert found.verified_s() == pytest.approx(de.ALARM_TO_START_S + found.total_s() - after)
    assert found.verified_s() < found.total_s()
