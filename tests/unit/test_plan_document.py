"""The plan document written entry by entry (``translate/document.py``) is the document the model
would write whole: same bytes, the same summary, the CSV lines and the problems kept to show."""

from __future__ import annotations

import csv
from datetime import UTC, datetime

import pytest
from offset_restore.cli.plan import problem_line
from offset_restore.formats.plan import ClusterRef, Plan, PlanEntry, PlanSummary
from offset_restore.translate import document as document_module
from offset_restore.translate.document import PROBLEMS_KEPT, PlanDocument


def entry(number: int, status: str = "mapped") -> PlanEntry:
    mapped = status == "mapped"
    return PlanEntry(
        group=f"g-{number % 7}",
        topic="orders",
        partition=number,
        target_topic="dr.orders",
        source_offset=100 + number,
        target_offset=90 + number if mapped else None,
        method="header" if mapped else None,
        exact=mapped,
        max_duplicates=0 if mapped else None,
        status=status,  # type: ignore[arg-type]
        reason=None if mapped else f"no record \u00e9 {number}",
        metadata='{"app": "x"}',
        anchor_offset=90 + number if mapped else None,
    )


def empty_plan() -> Plan:
    return Plan(
        restore_id="r1",
        snapshot_id="s1",
        created_at=datetime(2026, 11, 30, tzinfo=UTC),
        source=ClusterRef(cluster="src"),
        target=ClusterRef(cluster="dr", bootstrap_servers="b:9092", cluster_id="abc"),
        entries=[],
        strategies=["header"],
        offset_header="x-source-offset",
        topic_map={"orders": "dr.orders"},
        order_check="windows",
        out_of_order={"dr.orders/3": "why"},
    )


@pytest.mark.parametrize("count", [0, 1, 37])
@pytest.mark.parametrize("spool", [document_module.SPOOL_BYTES, 100], ids=["in memory", "spilled to disk"])
def test_the_streamed_document_is_the_whole_document_byte_for_byte(
    count: int, spool: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(document_module, "SPOOL_BYTES", spool)
    entries = [entry(n, "unmapped" if n % 5 == 4 else "mapped") for n in range(count)]
    with PlanDocument(csv=True) as document:
        for e in entries:
            document.add(e)
        plan, content = document.finish(empty_plan())
        whole = empty_plan().model_copy(update={"entries": entries, "summary": PlanSummary.of(entries)})
        assert content.read() == whole.model_dump_json(indent=2).encode()
        assert plan.summary == whole.summary and plan.entries == []
        assert document.csv_file().read().decode().splitlines() == whole.csv_lines()
    assert Plan.model_validate_json(whole.model_dump_json(indent=2)).entries == entries


def test_a_csv_without_mapped_entries_is_empty() -> None:
    """Empty, not a lone newline: the file holds one line per offset to write and nothing else."""
    with PlanDocument(csv=True) as document:
        document.add(entry(1, "unmapped"))
        assert document.csv_file().read() == b""


def test_the_first_kinds_of_problems_are_kept_and_all_are_counted() -> None:
    document = PlanDocument()
    for n in range(40):
        document.add(entry(n, "pending" if n % 2 else "mapped"))  # each with its own reason
    plan, _ = document.finish(empty_plan())
    kinds = list(document.problems.values())
    assert [k.reason for k in kinds] == [f"no record \u00e9 {n}" for n in range(1, 2 * PROBLEMS_KEPT, 2)]
    assert plan.summary.pending == 20 and plan.summary.mapped == 20 and document.problem_count == 20


def test_entries_that_share_a_reason_are_one_kind_with_their_first_groups() -> None:
    """A topic missing on the target is one line for all its group-partitions, not one per entry."""
    document = PlanDocument()
    for n in range(42):
        document.add(entry(n, "unmapped").model_copy(update={"reason": "topic orders does not exist on the target"}))
    (kind,) = document.problems.values()
    assert (kind.status, kind.count, kind.topic) == ("unmapped", 42, "orders")
    assert kind.groups == ["g-0", "g-1", "g-2"]
    line = problem_line(kind)
    assert line.startswith("  unmapped: topic orders does not exist on the target (42 group-partitions; groups g-0,")
    assert line.endswith("restored under another name? --topic-map orders=TARGET_TOPIC")


def test_csv_lines_hold_mapped_entries_only_and_parse_back() -> None:
    document = PlanDocument(csv=True)
    for n, status in enumerate(["mapped", "unmapped", "pending", "mapped"]):
        document.add(entry(n, status))
    rows = list(csv.reader(document.csv_file().read().decode().splitlines()))
    assert rows == [["g-0", "dr.orders", "0", "90"], ["g-3", "dr.orders", "3", "93"]]


def test_a_group_an_entry_holds_is_left_out_of_the_csv_whole_and_named() -> None:
    """As apply holds it: a pending entry, or an unmapped one of a topic whose shape changed, keeps every
    line of its group out (its mapped entries included), the other groups' lines stay."""

    def of(group: str, partition: int, status: str, held: bool = False) -> PlanEntry:
        e = entry(partition, status).model_copy(update={"group": group, "holds_group": held})
        return PlanEntry.model_validate(e.model_dump())

    entries = [
        of("waits", 0, "mapped"), of("waits", 1, "pending"),
        of("reshaped", 0, "mapped"), of("reshaped", 1, "unmapped", held=True),
        of("partly", 0, "mapped"), of("partly", 1, "unmapped"),
    ]  # fmt: skip
    with PlanDocument(csv=True) as document:
        for e in entries:
            document.add(e)
        lines = document.csv_file().read().decode().splitlines()
    assert lines == ["partly,dr.orders,0,90"]
    assert (document.csv_left_out, document.csv_left_out_count) == (["waits", "reshaped"], 2)
    whole = Plan.model_validate({**empty_plan().model_dump(), "entries": [e.model_dump() for e in entries]})
    assert whole.csv_lines() == lines


def test_an_entry_of_a_re_partitioned_topic_writes_its_target_partition() -> None:
    e = entry(1).model_copy(update={"target_partition": 3})
    assert Plan.csv_line(e) == "g-1,dr.orders,3,91"
    assert e.target.partition == 3 and entry(1).target.partition == 1


def test_groups_a_spreadsheet_would_run_as_formulas_are_written_as_names_and_counted() -> None:
    """kafka-consumer-groups reads ``=cmd`` as the group's name, so the line stays as it is (any quote or
    prefix would be part of the name to it); the plan counts and names such groups, and the CLI says not to
    open the CSV in a spreadsheet."""
    names = ["=1+2", "+sum", "-dash", "@at", "plain", "a=b"]
    with PlanDocument(csv=True) as document:
        for number, name in enumerate(names):
            document.add(entry(number).model_copy(update={"group": name}))
        lines = document.csv_file().read().decode().splitlines()
    assert [line.split(",")[0] for line in lines] == names
    assert (document.csv_formulas, document.csv_formula_count) == (names[:3], 4)


def test_a_migration_waits_for_entries_a_later_plan_may_prove_not_for_held_ones() -> None:
    """Held entries (a topic whose shape changed, nothing maps it) are counted apart: a migration does not
    wait for them; pending entries and mapped ones without proof it waits for."""

    def made(partition: int, **fields: object) -> PlanEntry:
        values: dict[str, object] = {"group": "g", "topic": "t", "partition": partition, "target_topic": "t"}
        return PlanEntry.model_validate({**values, "source_offset": 5, **fields})

    summary = PlanSummary.of(
        [
            made(0, status="mapped", target_offset=3, exact=True),
            made(1, status="mapped", target_offset=3, exact=False),
            made(2, status="pending"),
            made(3, status="unmapped", holds_group=True),
            made(4, status="unmapped", holds_group=True),
            made(5, status="unmapped"),  # a topic missing on the target: a replica may still create it
        ]
    )
    assert (summary.exact, summary.held, summary.awaiting_catch_up) == (1, 2, 3)
