"""Full collections are rare during a phase and the collector paused while it reads the cluster; both as they
were after it, whatever the phase does."""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from offset_restore.apply.commit import apply_plan
from offset_restore.apply.model import ApplyOptions
from offset_restore.heap import FULL_COLLECTION_AFTER, collections_paused, collections_resumed, full_collections_rare
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.snapshot.live import SnapshotOptions, stream_snapshot, take_snapshot
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.storage import LocalStore
from offset_restore.translate.checkpoints import MemoryCheckpoints
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.plan import collect_positions, decide_positions
from offset_restore.translate.run import SnapshotChoice, run_plan
from offset_restore.translate.translation import translate
from offset_restore.workflow.states.translate import translate_work_item

from tests.helpers import plan_entry, plan_of
from tests.unit.test_snapshot_store import make


@pytest.fixture(autouse=True)
def default_thresholds() -> Iterator[None]:
    before, was_on = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(700, 10, 10)
    gc.enable()
    yield
    gc.set_threshold(*before)
    if not was_on:
        gc.disable()


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


def test_blocks_of_threads_ending_in_any_order_leave_it_as_it_was() -> None:
    """Phases run side by side in threads (the workflow's Map iterations): whichever ends first, the collector
    is off while any paused block runs, on inside a resumed one, and as it was once the last ends."""
    first, second, inside = collections_paused(), collections_paused(), collections_resumed()
    first.__enter__()
    second.__enter__()  # another thread's step begins while the first runs
    assert not gc.isenabled()
    inside.__enter__()  # the second reads checkpoints in DynamoDB
    assert gc.isenabled()
    first.__exit__(None, None, None)  # the first step ends before the second's read does
    assert gc.isenabled()
    inside.__exit__(None, None, None)
    assert not gc.isenabled()  # the second step still reads the cluster
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_resumed_outside_a_paused_step_changes_nothing() -> None:
    gc.disable()
    with collections_resumed():
        assert not gc.isenabled()
    with collections_paused(), collections_resumed():
        assert not gc.isenabled()  # the caller had it off: a resumed block does not turn it on
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
    """A cluster that notes, at each call, whether the collector was on and how rare full collections were;
    it answers nothing (``stop``: fails the phase at its first call)."""

    cluster_id = "recording"

    def __init__(self, *, stop: bool = True) -> None:
        self.calls: list[tuple[str, bool, int]] = []
        self.stop = stop

    def __getattr__(self, name: str) -> object:
        def call(*args: object, **kwargs: object) -> object:
            self.calls.append((name, gc.isenabled(), gc.get_threshold()[2]))
            if self.stop:
                raise _Stop(name)
            return {}

        return call

    def __enter__(self) -> _Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _Stop(Exception):
    pass


def test_what_reads_the_cluster_in_memory_runs_with_the_collector_paused() -> None:
    """No collection walks the records they hold (offset_restore/heap.py): the in-memory snapshot and plan,
    and the reads inside the CLI's and the workflow's phases."""
    options = PlanOptions()
    for run in (
        lambda cluster: take_snapshot(cluster, SnapshotOptions()),
        lambda cluster: translate(make("s-1", datetime.now(UTC)).groups, cluster, options),
        lambda cluster: stream_snapshot(cluster, SnapshotOptions()),
        lambda cluster: decide_positions(
            collect_positions(make("s-1", datetime.now(UTC)).groups, options), cluster, options
        ),
    ):
        cluster = _Recording()
        with pytest.raises(_Stop):
            run(cluster)
        assert cluster.calls[0][1] is False
        assert gc.isenabled()


def test_apply_pauses_it_for_its_reads_and_makes_full_collections_rare_around_them() -> None:
    """Apply saves the plan as it goes (to S3 in the workflow): the young collections free what the client
    leaves in cycles; its check of the target before writing runs with the collector off."""
    target = _Recording(stop=False)
    apply_plan(plan_of([plan_entry("g", 0, "mapped")]), target, ApplyOptions(wait_timeout_s=0), save=lambda _: None)  # type: ignore[arg-type]
    on = {name: (collector_on, full_after) for name, collector_on, full_after in target.calls}
    assert on["partition_identities"][0] is False  # the check of the target before writing
    assert on["committed_offsets"] == on["alter_offsets_many"] == (True, FULL_COLLECTION_AFTER)
    assert gc.isenabled() and gc.get_threshold() == (700, 10, 10)


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
    assert cluster.calls[0][2] == FULL_COLLECTION_AFTER

    read = _Recording()
    with pytest.raises(_Stop):
        translate_work_item(read, "item.json", ConnectionSettings(bootstrap_servers="b-1:9092"), read)  # type: ignore[arg-type]
    assert read.calls[0][2] == FULL_COLLECTION_AFTER
    assert gc.get_threshold() == (700, 10, 10)


class _CheckpointsSeen(MemoryCheckpoints):
    """Checkpoints that note whether the collector was on at each call (a DynamoDB client's requests leave cycles)."""

    def __init__(self) -> None:
        super().__init__()
        self.collector_on: list[bool] = []

    def completed(self, cluster: str, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        self.collector_on.append(gc.isenabled())
        return super().completed(cluster, partitions)


def test_the_plans_reads_of_a_restore_tools_checkpoints_run_with_the_collector_on() -> None:
    options = PlanOptions()
    positions = collect_positions(make("s-1", datetime.now(UTC)).groups, options)
    checkpoints = _CheckpointsSeen()
    decide_positions(positions, _Recording(stop=False), options, checkpoints=checkpoints)  # type: ignore[arg-type]
    assert checkpoints.collector_on == [True]
    assert gc.isenabled()
