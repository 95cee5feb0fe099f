"""``PlanEntry.made``: the entries a plan makes from its answers, built without validating them again, must be
the entries validation builds from the same values, and refuse what validation refuses of them."""

from __future__ import annotations

import copy
import itertools
import pickle
from typing import Any

import pytest
from offset_restore.formats.plan import PlanEntry, new_entry_fields
from pydantic import ValidationError

_BASE: dict[str, Any] = {
    "group": "payments \"eu\"\nline", "topic": "orders", "partition": 3, "target_topic": "orders-dr",
    "source_offset": 1_000, "status": "mapped", "target_offset": 977,
}  # fmt: skip
_VARIANTS: list[dict[str, Any]] = [
    {},
    {"method": "header", "exact": True, "max_duplicates": 0, "reason": "checked by reading all 5,000 records"},
    {"status": "pending", "target_offset": None, "reason": "held by the proof: ..."},
    {"status": "unmapped", "target_offset": None, "outcome": None, "metadata": "app-state"},
    {"target_topic_id": "AAAAAAAAAAAAAAAAAAAAAA", "group_kind": "share", "redelivered": 4},
    {"expected_fingerprint": "0" * 32, "anchor_offset": 977, "anchor_source_offset": None, "anchor_timestamp": 5},
    {"never_restored": 12, "unprovable": True, "max_duplicates": None, "exact": False},
    {"status": "committed", "target_offset": 0, "verified": True},
]


@pytest.mark.parametrize(("one", "two"), list(itertools.combinations(range(len(_VARIANTS)), 2)))
def test_a_made_entry_is_the_validated_entry(one: int, two: int) -> None:
    values = {**_BASE, **_VARIANTS[one], **_VARIANTS[two]}
    made, validated = PlanEntry.made(**values), PlanEntry(**values)
    filled = new_entry_fields()
    for name, value in values.items():  # as the plan fills them, in its own order
        filled[name] = value
    of_fields = PlanEntry.made_of(filled)
    assert made == validated == of_fields
    assert of_fields.model_dump_json() == validated.model_dump_json()
    assert made.model_dump() == validated.model_dump()
    assert made.model_dump_json() == validated.model_dump_json()
    assert made.model_fields_set is validated.model_fields_set  # the one shared set (formats/lean.py)
    assert made.model_extra == validated.model_extra == {}
    assert PlanEntry.model_validate_json(made.model_dump_json()) == made


def test_a_made_entry_changes_copies_and_pickles_as_a_validated_one() -> None:
    made = PlanEntry.made(**_BASE)
    made.status, made.previous_target_offset, made.previous_recorded = "committed", 12, True
    assert made == PlanEntry(
        **{**_BASE, "status": "committed", "previous_target_offset": 12, "previous_recorded": True}
    )
    assert made.model_copy(deep=True) == made and copy.deepcopy(made) == made
    assert pickle.loads(pickle.dumps(made)) == made
    other = PlanEntry.made(**_BASE)
    assert other.previous_target_offset is None  # no default shared with the entry changed above


@pytest.mark.parametrize("field", ["target_topic", "target_partition", "partition"])
def test_the_target_kept_once_asked_cannot_go_stale(field: str) -> None:
    """``target`` is kept once asked: the fields it is made of refuse a change, made or validated, and a
    copy or a dump does not carry it where it was not asked."""
    for entry in (PlanEntry.made(**_BASE, target_partition=5), PlanEntry(**_BASE, target_partition=5)):
        assert entry.target == ("orders-dr", 5)
        with pytest.raises(ValidationError, match="frozen"):
            setattr(entry, field, 7)
        assert entry.target == ("orders-dr", 5) and entry.target_partition == 5 and entry.partition == 3
        assert "target" not in entry.model_dump() and '"target":' not in entry.model_dump_json()
        assert entry.model_copy(deep=True) == entry and pickle.loads(pickle.dumps(entry)).target == entry.target
        moved = {"target_topic": ("t2", 5), "target_partition": ("orders-dr", 7), "partition": ("orders-dr", 5)}
        assert entry.model_copy(update={field: "t2" if field == "target_topic" else 7}).target == moved[field]
    assert PlanEntry.made(**_BASE).target == ("orders-dr", 3)


@pytest.mark.parametrize(
    ("values", "refusal"),
    [
        ({**_BASE, "target_ofset": 3}, "PlanEntry has no field target_ofset"),
        ({k: v for k, v in _BASE.items() if k != "group"}, "PlanEntry needs group"),
        ({**_BASE, "target_offset": None}, "a mapped entry needs a target_offset"),
        ({**_BASE, "status": "committed", "target_offset": -1}, "a committed entry needs a target_offset"),
    ],
)
def test_what_validation_refuses_of_a_plans_values_is_refused(values: dict[str, Any], refusal: str) -> None:
    with pytest.raises((TypeError, ValueError), match=refusal):
        PlanEntry.made(**values)


@pytest.mark.parametrize(
    ("values", "refusal"),
    [
        ({**_BASE, "target_ofset": 3}, "PlanEntry has no field target_ofset"),
        ({**_BASE, "group": None}, "PlanEntry needs group"),
        ({k: v for k, v in _BASE.items() if k not in ("topic", "status")}, "PlanEntry needs status, topic"),
        ({**_BASE, "target_offset": None}, "a mapped entry needs a target_offset"),
    ],
)
def test_fields_filled_in_place_are_refused_as_keywords_are(values: dict[str, Any], refusal: str) -> None:
    """``made_of``: a field misspelt, a required one left None, a written entry without its offset."""
    fields = new_entry_fields()
    fields.update(values)
    with pytest.raises((TypeError, ValueError), match=refusal):
        PlanEntry.made_of(fields)
    assert new_entry_fields()["group"] is None  # each caller's fields its own: the template is not filled
