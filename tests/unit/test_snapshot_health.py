"""Which groups a snapshot names in its metrics and which numbers it emits (snapshot/health.py), and
the refusal of filters that match nothing (snapshot/run.py): pure, no broker."""

from __future__ import annotations

import pytest
from offset_restore.cli.snapshot import empty_reason
from offset_restore.errors import BadInputError
from offset_restore.snapshot.health import (
    MAX_DIMENSION_VALUE,
    TOP_GROUPS,
    GroupLag,
    LagTally,
    dimension_value,
    group_metrics,
    total_metrics,
)
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.model import GroupSnapshot, PartitionSnapshot, SnapshotCounts
from offset_restore.snapshot.run import SnapshotResult, check_selection


def group(name: str, *lags: tuple[str, int | None]) -> GroupSnapshot:
    return GroupSnapshot(
        group=name,
        state="Empty",
        partitions=[
            PartitionSnapshot(topic=topic, partition=number, committed_offset=0, lag=lag)
            for number, (topic, lag) in enumerate(lags)
        ],
    )


def test_the_top_groups_by_lag_are_kept_largest_first_ties_by_name() -> None:
    tally = LagTally(keep=3)
    for g in [
        group("a", ("t", 5)),
        group("b", ("t", 50), ("u", 1)),
        group("c", ("t", 5)),
        group("d", ("t", 0)),
        group("e", ("t", 7), ("t", None)),  # a partition whose topic is gone counts 0
        group("f"),
    ]:
        tally.add(g)
    assert [(g.group, g.lag) for g in tally.top()] == [("b", 51), ("e", 7), ("a", 5)]


def test_topics_are_summed_per_group_and_only_the_largest_kept() -> None:
    tally = LagTally(keep=1, topics=2)
    tally.add(group("g", ("orders", 3), ("orders", 4), ("audit", 1), ("billing", 2), ("zeta", 2)))
    assert tally.top() == [GroupLag(group="g", lag=12, topics={"orders": 7, "billing": 2})]


def test_the_tally_watches_a_stream_without_changing_it() -> None:
    groups = [group(f"g{n}", ("t", n)) for n in range(TOP_GROUPS + 5)]
    tally = LagTally()
    assert list(tally.watch(iter(groups))) == groups
    top = tally.top()
    assert len(top) == TOP_GROUPS and top[0].group == f"g{TOP_GROUPS + 4}" and top[-1].lag == 5


def test_totals_are_what_the_alarms_watch() -> None:
    counts = SnapshotCounts(groups=0, group_partitions=0, total_lag=0)
    blob = total_metrics(counts, 1.5)
    numbers = {name: value for name, _, value in blob.metrics}
    assert blob.dimensions == {}  # service only: the alarms' metric has that one dimension
    assert numbers["SnapshotsTaken"] == 1 and numbers["SnapshotGroups"] == 0  # an empty snapshot still counts
    assert {unit for name, unit, _ in blob.metrics if name == "SnapshotSeconds"} == {"Seconds"}
    full = {name: value for name, _, value in total_metrics(SnapshotCounts(groups=4, total_lag=99), 2).metrics}
    assert (full["SnapshotGroups"], full["SnapshotTotalLag"]) == (4, 99)


def test_one_blob_per_group_and_per_group_topic() -> None:
    blobs = group_metrics([GroupLag(group="g", lag=9, topics={"a": 7, "b": 2}), GroupLag(group="h", lag=1)])
    assert [(b.dimensions, b.metrics) for b in blobs] == [
        ({"group": "g"}, [("GroupLag", "Count", 9)]),
        ({"group": "g", "topic": "a"}, [("GroupTopicLag", "Count", 7)]),
        ({"group": "g", "topic": "b"}, [("GroupTopicLag", "Count", 2)]),
        ({"group": "h"}, [("GroupLag", "Count", 1)]),
    ]


def test_dimension_values_are_never_empty_nor_too_long() -> None:
    assert dimension_value("") == "(empty)" and dimension_value("  ") == "(blank:2)"
    long = dimension_value("x" * 5000)
    assert len(long) == MAX_DIMENSION_VALUE and long.endswith("~")
    assert dimension_value("orders") == "orders"


def test_a_groups_filter_that_matches_nothing_is_refused_naming_it() -> None:
    with pytest.raises(BadInputError, match=r"--groups 'billing' matched none of the 1,200 groups on cluster c1"):
        check_selection(SnapshotOptions(groups="billing"), 0, 0, 1200, "cluster c1")
    with pytest.raises(BadInputError, match=r"--exclude-groups '.\*' matched no group in export x.csv"):
        check_selection(SnapshotOptions(exclude_groups=".*"), 0, 0, None, "export x.csv")


def test_a_topics_filter_that_matches_no_commit_is_refused() -> None:
    with pytest.raises(BadInputError, match=r"--topics 'ord' matched no topic that the 3 selected groups"):
        check_selection(SnapshotOptions(topics="ord"), 3, 0, 10, "cluster c1")


def test_without_a_filter_an_empty_selection_passes() -> None:
    check_selection(SnapshotOptions(), 0, 0, 0, "cluster c1")
    check_selection(SnapshotOptions(exclude_groups=None), 0, 0, 0, "cluster c1")
    check_selection(SnapshotOptions(groups="g"), 2, 0, 5, "cluster c1")  # groups without commits are kept


def result(source: str, listed: int | None) -> SnapshotResult:
    return SnapshotResult(
        snapshot_id="s1",
        cluster="c1",
        source=source,
        location="/tmp/x",
        manifest="m",
        counts=SnapshotCounts(),
        duration_s=0.1,
        requests={},
        timings={},
        notes=[],
        listed_groups=listed,
    )


def test_an_empty_snapshot_says_why_it_is_empty() -> None:
    assert "it has no consumer group at all" in empty_reason(result("cluster", 0))
    assert "its 4 groups are all left out by the default --exclude-groups" in empty_reason(result("cluster", 4))
    assert "the export source holds no offset commit" in empty_reason(result("export", None))
    assert "the empty snapshot s1 is written" in empty_reason(result("cluster", 0))
