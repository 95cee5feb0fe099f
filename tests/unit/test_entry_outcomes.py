"""What apply and rollback did with an entry is data (``PlanEntry.outcome``), not words: plans and
DynamoDB items written before the field existed still read with the outcome their reason said, and a
document that has the field is never second-guessed from its reason.

The fixtures were written by the code before the field (commit 46d85f5's model and MappingStore), with
the reasons that code's apply and rollback wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from offset_restore.formats.plan import Plan, PlanEntry
from offset_restore.stores.mappings import entry_of

FIXTURES = Path(__file__).parent.parent / "fixtures"

EXPECTED = {
    ("settled", 0): None,
    ("reapplied", 0): None,  # committed again after a rollback: the old words stayed, the write holds
    ("silent", 0): "unanswered",
    ("racing", 0): "active",
    ("live", 0): "active",
    ("refused_all", 0): "active",
    ("mover", 0): "moved_on",
    ("changed", 0): "target_changed",
    ("ahead", 0): "ahead",
    ("split", 0): "refused",
    ("split", 1): None,
    ("undone", 0): "rolled_back",
    ("undoing", 0): "rollback_started",
    ("waiting", 0): None,
    ("planned", 0): None,  # a reason the plan gave is not an outcome
}


def _outcomes(entries: list[PlanEntry]) -> dict[tuple[str, int], str | None]:
    return {(e.group, e.partition): e.outcome for e in entries}


def test_a_plan_file_written_before_outcomes_reads_with_them() -> None:
    text = (FIXTURES / "plan-before-outcomes.json").read_text()
    assert '"outcome"' not in text
    plan = Plan.model_validate_json(text)
    assert _outcomes(plan.entries) == EXPECTED


def test_dynamodb_items_written_before_outcomes_read_with_them() -> None:
    items = json.loads((FIXTURES / "mapping-items-before-outcomes.json").read_text())
    assert all("outcome" not in item for item in items)
    entries = [entry_of(item) for item in items]
    assert _outcomes(entries) == EXPECTED


def test_a_document_with_the_field_keeps_it_whatever_its_reason_says() -> None:
    plan = Plan.model_validate_json((FIXTURES / "plan-before-outcomes.json").read_text())
    for entry in plan.entries:
        entry.outcome = None
    written = plan.model_dump_json(indent=2)
    assert written.count('"outcome": null') == len(plan.entries)  # every entry carries the field
    again = Plan.model_validate_json(written)
    assert {e.outcome for e in again.entries} == {None}  # the reasons still read "not written: ..."


@pytest.mark.parametrize("outcome", ["unanswered", "rolled_back", "ahead"])
def test_the_outcome_is_cleared_with_its_words_when_the_entry_is_written(outcome: str) -> None:
    plan = Plan.model_validate_json((FIXTURES / "plan-before-outcomes.json").read_text())
    entry = next(e for e in plan.entries if e.outcome == outcome)
    entry.mark_committed()
    assert (entry.status, entry.outcome, entry.reason) == ("committed", None, None)


def test_a_reason_the_plan_gave_survives_the_commit() -> None:
    plan = Plan.model_validate_json((FIXTURES / "plan-before-outcomes.json").read_text())
    entry = next(e for e in plan.entries if e.group == "planned")
    reason = entry.reason
    entry.mark_committed()
    assert entry.reason == reason


def test_an_unknown_outcome_is_refused() -> None:
    item = json.loads((FIXTURES / "plan-before-outcomes.json").read_text())["entries"][0]
    with pytest.raises(ValueError, match="outcome"):
        PlanEntry.model_validate({**item, "outcome": "probably fine"})
