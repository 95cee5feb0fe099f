"""The seal on a plan file's previous offsets (apply/seal.py): what it binds, and the key file."""

from __future__ import annotations

import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest
from offset_restore.apply.seal import PlanKey, seal_plan, unsealed
from offset_restore.errors import BadInputError
from offset_restore.formats.plan import ClusterRef, Plan, PlanEntry


def plan_with(*entries: PlanEntry, restore_id: str = "r1", cluster_id: str = "c1") -> Plan:
    return Plan(
        restore_id=restore_id, snapshot_id="s", created_at=datetime(2026, 12, 1, tzinfo=UTC),
        source=ClusterRef(cluster="a"), target=ClusterRef(cluster="b", cluster_id=cluster_id), entries=list(entries),
    )  # fmt: skip


def recorded(group: str = "g", partition: int = 0, previous: int | None = 12, meta: str | None = "m") -> PlanEntry:
    return PlanEntry(
        group=group, topic="t", partition=partition, target_topic="t", source_offset=50, target_offset=40,
        method="header", status="committed", previous_target_offset=previous, previous_metadata=meta,
        previous_recorded=True,
    )  # fmt: skip


def test_the_key_is_made_once_readable_by_its_owner_only_and_a_wrong_file_is_refused(tmp_path: Path) -> None:
    where = tmp_path / "conf" / "plan.key"
    key = PlanKey.load(where, create=True)
    assert stat.S_IMODE(where.stat().st_mode) == 0o600 and PlanKey.load(where) == key
    with pytest.raises(BadInputError, match="cannot read the plan key"):
        PlanKey.load(tmp_path / "absent.key")
    (tmp_path / "short.key").write_bytes(b"x" * 5)
    with pytest.raises(BadInputError, match="holds 5 bytes, not 32"):
        PlanKey.load(tmp_path / "short.key")


@pytest.mark.parametrize(
    "change",
    [
        {"previous_target_offset": 11},
        {"previous_target_offset": None},
        {"previous_metadata": "other"},
        {"group": "h"},
        {"target_partition": 3},
        {"previous_seal": None},
    ],
    ids=lambda c: next(iter(c)),
)
def test_a_seal_binds_the_previous_offset_its_metadata_and_where_it_goes(tmp_path: Path, change: dict) -> None:
    key = PlanKey.load(tmp_path / "k", create=True)
    plan = plan_with(recorded(), recorded(partition=1, previous=None, meta=None))
    seal_plan(plan, key)
    assert unsealed(plan, key) == []
    plan.entries[0] = plan.entries[0].model_copy(update=change)
    (problem,) = unsealed(plan, key)
    assert problem.startswith("entry 0 (")


def test_a_seal_is_of_its_own_plan_and_key(tmp_path: Path) -> None:
    key, other = PlanKey.load(tmp_path / "k", create=True), PlanKey.load(tmp_path / "o", create=True)
    plan = plan_with(recorded())
    seal_plan(plan, key)
    assert unsealed(plan, other)
    for moved in (plan_with(*plan.entries, restore_id="r2"), plan_with(*plan.entries, cluster_id="c2")):
        assert unsealed(moved, key), "a seal copied into another plan, or onto another cluster"


def test_an_offset_no_longer_recorded_needs_no_seal(tmp_path: Path) -> None:
    key = PlanKey.load(tmp_path / "k", create=True)
    plan = plan_with(recorded().model_copy(update={"previous_recorded": False}))
    seal_plan(plan, key)
    assert plan.entries[0].previous_seal is None and unsealed(plan, key) == []
