"""The commit index: batches of whole groups by topic and name, the keys of all their mappings, and
which groups wait for pending entries."""

from __future__ import annotations

from pathlib import Path

import pytest
from offset_restore.apply import commit_index
from offset_restore.apply.commit_index import IndexBuilder, read_batch, read_groups
from offset_restore.errors import BadInputError
from offset_restore.formats.plan import PlanEntry, Status
from offset_restore.stores.storage import open_location

from tests.helpers import plan_entry


def entry(group: str, partition: int, status: Status) -> PlanEntry:
    return plan_entry(group, partition, status, 3)


def test_batches_hold_whole_groups_and_waiting_groups_are_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commit_index, "COMMIT_BATCH_GROUPS", 2)
    entries = [
        entry("c", 0, "mapped"),
        entry("c", 1, "unmapped"),
        entry("a", 0, "committed"),
        entry("a", 1, "mapped"),
        entry("b", 0, "pending"),
        entry("b", 1, "mapped"),
        entry("d", 0, "mapped"),
        entry("e", 0, "unmapped"),
    ]
    store = open_location(str(tmp_path))
    builder = IndexBuilder()
    for e in entries:
        builder.add(e, f"MAP#{e.group}#{e.topic}#{e.partition}")
    assert builder.write(store) == 2
    groups = read_groups(store)
    assert (groups.writable, groups.waiting, groups.batches) == (["a", "c", "d"], ["b"], 2)
    first, second = read_batch(store, 0), read_batch(store, 1)
    assert first.groups == ["a", "c"] and second.groups == ["d"]
    assert first.keys == ["MAP#a#t#0", "MAP#a#t#1", "MAP#c#t#0", "MAP#c#t#1"]
    with pytest.raises(BadInputError, match=r"no commit batch 2 .*summarize the restore again"):
        read_batch(store, 2)


def test_no_index_is_named(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match=r"no commit index .*the summarize step has not run"):
        read_groups(open_location(str(tmp_path)))


def test_a_group_an_unmapped_entry_of_a_changed_topic_holds_waits_with_the_pending_ones(tmp_path: Path) -> None:
    held = entry("h", 1, "unmapped").model_copy(update={"holds_group": True})
    entries = [entry("h", 0, "mapped"), held, entry("u", 0, "mapped"), entry("u", 1, "unmapped")]
    builder = IndexBuilder()
    for e in entries:
        builder.add(e, f"MAP#{e.group}#{e.topic}#{e.partition}")
    assert builder.writable_and_waiting() == (["u"], ["h"])
    assert builder.candidates() == ["u"]


def test_apply_writes_no_partition_of_a_group_two_entries_would_write_twice() -> None:
    """Entries of an earlier shape beside the new ones (one target partition written by both): the
    group is held with why, the other groups are written."""
    from datetime import UTC, datetime

    from offset_restore.apply.commit import _groups_to_write
    from offset_restore.apply.model import ApplyOptions
    from offset_restore.formats.plan import ClusterRef, Plan

    twice = [entry("g", 0, "mapped"), entry("g", 1, "mapped").model_copy(update={"target_partition": 0})]
    plan = Plan(
        restore_id="r", snapshot_id="s", created_at=datetime.now(UTC), source=ClusterRef(cluster="a"),
        target=ClusterRef(cluster="b"), entries=[*twice, entry("ok", 0, "mapped")],
    )  # fmt: skip
    writable, waiting = _groups_to_write(plan, ApplyOptions())
    assert list(writable) == ["ok"]
    assert "two entries write t/0 (source partitions 0 and 1)" in waiting["g"]


def test_batches_gather_the_groups_of_the_same_topics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Groups named across topics (g0 on t0, g1 on t1, ...) are batched by topic, then name: a batch
    reads the records of few partitions around its commits, and the order is the same every time the
    index is built from the same mappings (a batch number keeps its meaning)."""
    monkeypatch.setattr(commit_index, "COMMIT_BATCH_GROUPS", 3)
    entries = [
        plan_entry(f"g{i}", p, "mapped", 3).model_copy(update={"target_topic": f"t{i % 2}"})
        for i in range(6)
        for p in range(2)
    ]
    store = open_location(str(tmp_path))
    builder = IndexBuilder()
    for e in reversed(entries):
        builder.add(e, f"MAP#{e.group}#{e.partition}")
    assert builder.write(store) == 2
    assert [read_batch(store, n).groups for n in (0, 1)] == [["g0", "g2", "g4"], ["g1", "g3", "g5"]]
    assert read_groups(store).writable == [f"g{i}" for i in range(6)]  # the lists stay in name order


@pytest.mark.parametrize("batches", [0, 1, 39, 40, 41, 85, 400])
def test_each_batch_is_written_by_one_lane_and_no_lane_twice_at_once(batches: int) -> None:
    """One transactional id has one transaction open at a time: every batch falls in exactly one lane of
    the fence, and the Commit Map runs one step per lane, so no two steps write under one id."""
    from offset_restore.kafka.fence import FENCE_LANES
    from offset_restore.workflow.states.summarize import commit_lanes

    lanes = commit_lanes(batches)
    assert [lane.lane for lane in lanes] == list(range(min(batches, FENCE_LANES)))
    assert sorted(b for lane in lanes for b in lane.batches) == list(range(batches))
    assert all(b % FENCE_LANES == lane.lane for lane in lanes for b in lane.batches)


def test_a_commit_step_names_a_lane_its_fence_has() -> None:
    from offset_restore_handlers.requests import BatchRequest, parse

    fence = [{"transactional_id": f"offset-restore-c-{k}", "producer_id": k, "epoch": 3} for k in range(2)]
    step = parse(BatchRequest, {"restore_id": "r", "batches": [1, 41], "lane": 1, "fence": fence}, "commit").step()
    assert step.fence is not None and (step.fence.transactional_id, step.fence.epoch) == ("offset-restore-c-1", 3)
    with pytest.raises(BadInputError, match="lane 2 is not in the fence's 2 lanes"):
        parse(BatchRequest, {"restore_id": "r", "batches": [2], "lane": 2, "fence": fence}, "commit")
    with pytest.raises(BadInputError, match="give either groups or batches"):
        parse(BatchRequest, {"restore_id": "r", "fence": fence}, "commit")


def test_a_commit_step_of_an_execution_started_before_the_upgrade_writes_its_one_batch() -> None:
    """An execution keeps the state machine it started with: after an upgrade its Commit Map still sends
    one ``batch`` and no fence. Before, the new code refused the input ("give either groups or batches")
    and the run failed at its commit; now the step writes that batch and takes the cluster's fence itself."""
    from offset_restore.workflow.states.commit import CommitBatches
    from offset_restore_handlers.requests import BatchRequest, parse

    step = parse(BatchRequest, {"restore_id": "r", "batch": 3, "execution": "e"}, "commit").step()
    assert step.selection == CommitBatches((3,)) and step.fence is None
    with pytest.raises(BadInputError, match="give either groups or batches"):
        parse(BatchRequest, {"restore_id": "r", "batch": "3"}, "commit")
