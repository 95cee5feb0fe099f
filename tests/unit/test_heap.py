"""The collector is paused during a phase, and on again after it, whatever the phase does."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from offset_restore.apply.commit import apply_plan
from offset_restore.apply.model import ApplyOptions
from offset_restore.formats.plan import ClusterRef, Plan, PlanSummary
from offset_restore.heap import collections_paused
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
def collector_on() -> Iterator[None]:
    was_on = gc.isenabled()
    gc.enable()
    yield
    if not was_on:
        gc.disable()


def test_paused_inside_and_on_after() -> None:
    with collections_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_on_after_the_phase_fails() -> None:
    with pytest.raises(RuntimeError), collections_paused():
        raise RuntimeError("the phase failed")
    assert gc.isenabled()


def test_a_phase_inside_a_phase_leaves_it_paused_until_the_outer_one_ends() -> None:
    @collections_paused()
    def inner() -> bool:
        return gc.isenabled()

    with collections_paused():
        assert inner() is False
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_caller_that_turned_it_off_keeps_it_off() -> None:
    gc.disable()
    with collections_paused():
        pass
    assert not gc.isenabled()


def test_cycles_made_during_a_phase_are_freed_after_it() -> None:
    """A phase that makes cycles keeps them until it ends, not after (the collector's next run frees them)."""

    class Node:
        def __init__(self) -> None:
            self.other: Node | None = None

    def alive() -> int:
        return sum(isinstance(o, Node) for o in gc.get_objects())

    gc.collect()
    with collections_paused():
        for _ in range(20_000):
            a, b = Node(), Node()
            a.other, b.other = b, a
        del a, b
        assert alive() == 40_000  # none collected while the phase runs
    # the next allocations after the phase: the collector runs on its own again
    kept: list[list[int]] = [[] for _ in range(1_000)]
    assert kept and alive() == 0


class _Recording:
    """A cluster that notes whether the collector was on at its first call, then fails the phase."""

    def __init__(self) -> None:
        self.collector_on: bool | None = None

    def __getattr__(self, name: str) -> object:
        def call(*args: object, **kwargs: object) -> object:
            self.collector_on = gc.isenabled()
            raise _Stop(name)

        return call

    def __enter__(self) -> _Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _Stop(Exception):
    pass


def test_the_phases_read_with_collections_paused() -> None:
    """A phase left out would walk every record it holds at each young collection (offset_restore/heap.py)."""
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
        assert cluster.collector_on is False
        assert gc.isenabled()


def test_the_cli_plan_and_the_workflow_translate_step_too(tmp_path: Path) -> None:
    """The CLI's plan and the workflow's translate step write their entries after the translation: both
    connect, and write, with the collector paused (the same as ``translate``)."""
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
    assert cluster.collector_on is False

    read = _Recording()
    with pytest.raises(_Stop):
        translate_work_item(read, "item.json", ConnectionSettings(bootstrap_servers="b-1:9092"), read)  # type: ignore[arg-type]
    assert read.collector_on is False
    assert gc.isenabled()
