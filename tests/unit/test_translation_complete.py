"""Summarize's check that every group-partition Prepare selected has an entry: an entry of a
re-partitioned topic accounts for the source partitions it follows, a missing one is named with the work
item that held it, and names that are hard to print stay one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from offset_restore.errors import TranslationIncompleteError
from offset_restore.formats.plan import PlanEntry
from offset_restore.snapshot.model import GroupSnapshot, PartitionSnapshot
from offset_restore.stores.storage import LocalStore
from offset_restore.translate.work_items import GroupPartition, WorkItem, covered
from offset_restore.workflow.states.summarize import Selected


def _item(groups: dict[str, dict[str, int]]) -> WorkItem:
    return WorkItem(
        restore_id="r",
        snapshot_id="s",
        source_cluster="src",
        groups=[
            GroupSnapshot(
                group=g,
                state="Empty",
                partitions=[
                    PartitionSnapshot(topic=t, partition=p, committed_offset=5)
                    for t, n in topics.items()
                    for p in range(n)
                ],
            )
            for g, topics in groups.items()
        ],
    )


def _entry(group: str, topic: str, partition: int, **fields: Any) -> PlanEntry:
    values = {"group": group, "topic": topic, "partition": partition, "target_topic": topic}
    return PlanEntry.model_validate({**values, "source_offset": 5, "target_offset": 5, "status": "mapped", **fields})


def _selected(tmp_path: Path, *items: WorkItem) -> Selected:
    store, keys = LocalStore(tmp_path), []
    for number, item in enumerate(items):
        keys.append(f"restores/r/work/item-{number:05d}.json")
        store.put(keys[-1], item.model_dump_json().encode(), "application/json")
    return Selected(keys, store)


def _mapped(entries: list[PlanEntry]) -> set[GroupPartition]:
    return {gp for e in entries for gp in covered(e)}


def test_every_group_partition_with_an_entry_passes(tmp_path: Path) -> None:
    selected = _selected(tmp_path, _item({"a": {"t": 2}}), _item({"b": {"t": 1, "u": 1}}))
    selected.check(_mapped([_entry("a", "t", 0), _entry("a", "t", 1), _entry("b", "t", 0), _entry("b", "u", 0)]))


def test_a_topic_re_partitioned_from_four_to_two_is_covered_by_the_source_partitions_its_entries_follow(
    tmp_path: Path,
) -> None:
    """Source partitions 2 and 3 have no entry under their own number: the two target partitions' entries
    follow all four (``source_positions``). Without them the same entries leave 2 and 3 missing."""
    selected = _selected(tmp_path, _item({"a": {"t": 4}}))
    follows = {0: 5, 1: 5, 2: 5, 3: 5}
    onto = [_entry("a", "t", p, target_partition=p, source_positions=follows) for p in (0, 1)]
    selected.check(_mapped(onto))
    with pytest.raises(TranslationIncompleteError, match=r"^2 of 4 group-partitions selected have no plan entry"):
        selected.check(_mapped([_entry("a", "t", p, target_partition=p) for p in (0, 1)]))


def test_a_missing_entry_is_named_with_its_work_item_and_hostile_names_stay_on_one_line(tmp_path: Path) -> None:
    odd = 'b"\n#x'
    selected = _selected(tmp_path, _item({"a": {"t": 1}}), _item({odd: {"t": 2}}))
    with pytest.raises(TranslationIncompleteError) as refused:
        selected.check(_mapped([_entry("a", "t", 0), _entry(odd, "t", 1)]))
    message = str(refused.value)
    assert message.startswith("1 of 3 group-partitions selected have no plan entry")
    assert f"{odd!r} t/0 (restores/r/work/item-00001.json)" in message and "\n" not in message


def test_more_than_ten_missing_are_counted_not_listed(tmp_path: Path) -> None:
    selected = _selected(tmp_path, _item({f"g{i:02d}": {"t": 1} for i in range(25)}))
    with pytest.raises(TranslationIncompleteError) as refused:
        selected.check(set())
    message = str(refused.value)
    assert message.startswith("25 of 25") and "'g09' t/0" in message and "'g10'" not in message
    assert "and 15 more" in message
