"""The cyclic collector is held off for a phase and given back as it was, whatever the phase does."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from offset_restore.apply.commit import apply_plan
from offset_restore.apply.model import ApplyOptions
from offset_restore.formats.plan import ClusterRef, Plan, PlanSummary
from offset_restore.heap import collector_paused
from offset_restore.snapshot.live import SnapshotOptions, take_snapshot
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.translation import translate

from tests.helpers import plan_entry


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was_on = gc.isenabled()
    gc.enable()
    yield
    if not was_on:
        gc.disable()


def test_off_inside_and_on_after() -> None:
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_on_again_after_the_phase_fails() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("the phase failed")
    assert gc.isenabled()


def test_a_phase_inside_a_phase_leaves_it_off_until_the_outer_one_ends() -> None:
    @collector_paused()
    def inner() -> bool:
        return gc.isenabled()

    with collector_paused():
        assert inner() is False
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_switched_off_by_the_caller_stays_off() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


class _Recording:
    """A cluster that notes whether the collector was on at its first call, then fails the phase."""

    def __init__(self) -> None:
        self.collector_on: bool | None = None

    def __getattr__(self, name: str) -> object:
        def call(*args: object, **kwargs: object) -> object:
            self.collector_on = gc.isenabled()
            raise _Stop(name)

        return call


class _Stop(Exception):
    pass


def test_the_phases_read_with_it_off() -> None:
    """A phase left out would walk the heap again at every full collection (offset_restore/heap.py)."""
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
