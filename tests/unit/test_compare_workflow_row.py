"""``make compare``'s workflow row (bench/compare.py): the bench stops, naming the group-partition,
when the workflow's entries or offsets differ from the CLI's in anything the comparison covers, and
only then (what apply records is left out of the plans' comparison)."""

from __future__ import annotations

import pytest
from offset_restore.formats.plan import PlanEntry

from bench.compare import Tool, WorkflowRun, same_as_cli


def entry(group: str, partition: int, target: int, **more: object) -> PlanEntry:
    return PlanEntry.model_validate(
        {"group": group, "topic": "orders", "partition": partition, "target_topic": "orders", "source_offset": target}
        | {"target_offset": target, "method": "fingerprint", "exact": True, "max_duplicates": 0, "status": "mapped"}
        | more
    )


def rows(planned: list[PlanEntry], committed: dict[tuple[str, int], int]) -> tuple[Tool, WorkflowRun]:
    cli = Tool("cli", dict(committed), 1.0)
    applied = [e.model_copy(update={"status": "committed", "verified": True}) for e in planned]
    return cli, WorkflowRun(Tool("workflow", dict(committed), 2.0), planned, applied, {"Translate": 1})


def test_the_same_answers_pass_and_say_what_was_compared() -> None:
    planned = [entry("g", 0, 10), entry("g", 1, 20)]
    cli, flow = rows(planned, {("g", 0): 10, ("g", 1): 20})
    cli_applied = [
        e.model_copy(update={"status": "committed", "verified": True, "previous_seal": "x"}) for e in planned
    ]
    # The CLI's seal is its own, and the plan-mode comparison leaves out what apply records.
    flow.planned = [planned[0].model_copy(update={"previous_target_offset": 3}), planned[1]]
    assert same_as_cli(cli, planned, cli_applied, flow) == {"entries": 2, "committed": 2}


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("plan", "plan ('g', 'orders', 1, None): max_duplicates CLI 0 workflow 5"),
        ("missing", "plan ('g', 'orders', 1, None): only the CLI has it"),
        ("applied", "applied ('g', 'orders', 0, None): verified CLI True workflow False"),
        ("committed", "committed ('g', 1): CLI 20 workflow 21"),
    ],
)
def test_a_difference_stops_the_bench_and_names_where(change: str, said: str) -> None:
    planned = [entry("g", 0, 10), entry("g", 1, 20)]
    cli, flow = rows(planned, {("g", 0): 10, ("g", 1): 20})
    cli_applied = list(flow.applied)
    if change == "plan":
        flow.planned = [planned[0], planned[1].model_copy(update={"max_duplicates": 5})]
    elif change == "missing":
        flow.planned = planned[:1]
    elif change == "applied":
        flow.applied = [flow.applied[0].model_copy(update={"verified": False}), flow.applied[1]]
    else:
        flow.tool.committed[("g", 1)] = 21
    with pytest.raises(SystemExit, match=r"differs from the CLI's \(differences: 1\)") as stopped:
        same_as_cli(cli, planned, cli_applied, flow)
    assert said in str(stopped.value)
