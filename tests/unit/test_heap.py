"""Full collections are rare during a phase, and the thresholds as they were after it, whatever the phase does."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from offset_restore.apply.commit import apply_plan
from offset_restore.apply.model import ApplyOptions
from offset_restore.formats.plan import ClusterRef, Plan, PlanSummary
from offset_restore.heap import FULL_COLLECTION_AFTER, full_collections_rare
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.snapshot.live import SnapshotOptions, take_snapshot
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.storage import LocalStore
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.run import SnapshotChoice, run_plan
from offset_restore.translate.translation import translate
from offset_restore.workflow.states.translate import translate_work_item

from tests.helpers import plan_entry
from tests.unit.test_snapshot_store import make


@pytest.fixture(autouse=True)
def default_thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_rare_inside_and_as_it_was_after() -> None:
    with full_collections_rare():
        assert gc.get_threshold() == (700, 10, FULL_COLLECTION_AFTER)
        assert gc.isenabled()  # the young collections still run
    assert gc.get_threshold() == (700, 10, 10)


def test_as_it_was_after_the_phase_fails() -> None:
    with pytest.raises(RuntimeError), full_collections_rare():
        raise RuntimeError("the phase failed")
    assert gc.get_threshold() == (700, 10, 10)


def test_a_phase_inside_a_phase_leaves_them_rare_until_the_outer_one_ends() -> None:
    @full_collections_rare()
    def inner() -> int:
        return gc.get_threshold()[2]

    with full_collections_rare():
        assert inner() == FULL_COLLECTION_AFTER
        assert gc.get_threshold()[2] == FULL_COLLECTION_AFTER
    assert gc.get_threshold() == (700, 10, 10)


def test_a_rarer_setting_of_the_caller_is_kept() -> None:
    gc.set_threshold(700, 10, 5000)
    with full_collections_rare():
        assert gc.get_threshold()[2] == 5000
    assert gc.get_threshold() == (700, 10, 5000)


def test_cycles_made_during_a_phase_are_still_freed() -> None:
    """The young collections run: a phase that makes cycles (a client's futures and callbacks) does not
    keep them."""

    class Node:
        def __init__(self) -> None:
            self.other: Node | None = None

    gc.collect()
    with full_collections_rare():
        for _ in range(50_000):
            a, b = Node(), Node()
            a.other, b.other = b, a
        alive = sum(isinstance(o, Node) for o in gc.get_objects())
    assert alive < 10_000, alive


class _Recording:
    """A cluster that notes how rare full collections were at its first call, then fails the phase."""

    def __init__(self) -> None:
        self.full_after: int | None = None

    def __getattr__(self, name: str) -> object:
        def call(*args: object, **kwargs: object) -> object:
            self.full_after = gc.get_threshold()[2]
            raise _Stop(name)

        return call

    def __enter__(self) -> _Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _Stop(Exception):
    pass


def test_the_phases_read_with_full_collections_rare() -> None:
    """A phase left out would walk its whole heap again at every tenth young collection (offset_restore/heap.py)."""
    entries = [plan_entry("g", 0, "mapped")]
    plan = Plan(
        restore_id="r",
        snapshot_id="s",
        created_at=datetime.now(UTC),
        source=ClusterRef(cluster="source", bootstrap_servers="-"),
        target=ClusterRef(cluster="target", bootstrap_servers="-"),
        entries=entries,
        summary=PlanSummary.of(entries),
    )
    for run in (
        lambda cluster: take_snapshot(cluster, SnapshotOptions()),
        lambda cluster: translate([], cluster, PlanOptions()),
        lambda cluster: apply_plan(plan, cluster, ApplyOptions(), save=lambda _: None),
    ):
        cluster = _Recording()
        with pytest.raises(_Stop):
            run(cluster)
        assert cluster.full_after == FULL_COLLECTION_AFTER
        assert gc.get_threshold() == (700, 10, 10)


def test_the_cli_plan_and_the_workflow_translate_step_too(tmp_path: Path) -> None:
    """The CLI's plan and the workflow's translate step write their entries after the translation: both
    connect, and write, with full collections rare (the same as ``translate``)."""
    SnapshotRepository(LocalStore(tmp_path / "snapshots")).write(make("s-1", datetime.now(UTC)))
    cluster = _Recording()
    with pytest.raises(_Stop):
        run_plan(
            SnapshotChoice(location=str(tmp_path / "snapshots")),
            ConnectionSettings(bootstrap_servers="b-1:9092"),
            str(tmp_path / "plans"),
            PlanOptions(),
            connect=lambda _: cluster,  # type: ignore[arg-type,return-value]
        )
    assert cluster.full_after == FULL_COLLECTION_AFTER

    read = _Recording()
    with pytest.raises(_Stop):
        translate_work_item(read, "item.json", ConnectionSettings(bootstrap_servers="b-1:9092"), read)  # type: ignore[arg-type]
    assert read.full_after == FULL_COLLECTION_AFTER
    assert gc.get_threshold() == (700, 10, 10)
