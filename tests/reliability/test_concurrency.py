"""Concurrency: a consumer joining at every moment of an apply, a commit batch retried after a
partial write (as a Map iteration or a Lambda retry would), and one writer per target."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from offset_restore.apply.commit import apply_plan
from offset_restore.apply.fit import check_plan_fits
from offset_restore.apply.model import ApplyOptions
from offset_restore.apply.run import PlanFile
from offset_restore.errors import CommitInterruptedError
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.stores.mappings import MappingStore
from offset_restore.workflow.states.commit import commit_groups

from tests.figures import record
from tests.helpers import Brokers, active_member
from tests.integration.test_apply import Restored
from tests.reliability.conftest import Faulty
from tests.reliability.scenarios import check_planned_or_previous, plan_on, restored

pytestmark = pytest.mark.integration

CALLS = (
    "topic_partitions", "log_bounds", "describe_groups", "committed_offsets", "alter_offsets_many", "fetch",
    "partition_identities",
)  # fmt: skip


class JoinsAt:
    """The real target cluster, with a real consumer joining ``group`` just before the ``moment``-th
    call the apply makes to it (counted over every call, in order)."""

    def __init__(self, target: KafkaCluster, moment: int, join: Callable[[], Any], stack: contextlib.ExitStack):
        self._target, self._moment, self._join, self._stack = target, moment, join, stack
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._target, name)
        if name not in CALLS:
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            if len(self.calls) == self._moment:
                self._stack.enter_context(self._join())
            self.calls.append(name)
            return attribute(*args, **kwargs)

        return call


# The calls of check_plan_fits + apply_plan, in order; a member joining before call k:
MOMENTS = [
    ("partition_identities", "skipped"),  # 0: before the fit check (the target topics' ids)
    ("topic_partitions", "skipped"),  # 1: during the fit check
    ("log_bounds", "skipped"),  # 2: during the fit check
    ("describe_groups", "skipped"),  # 3: before the wait: the group is active
    ("committed_offsets", "skipped"),  # 4: after the wait, before the current offsets are read
    ("partition_identities", "skipped"),  # 5: before the plan's anchor records are read again
    ("fetch", "skipped"),  # 6: while they are read
    ("describe_groups", "skipped"),  # 7: before the re-check of the batch
    ("committed_offsets", "skipped"),  # 8: before the offsets are compared with those read at the start
    ("alter_offsets_many", "skipped"),  # 9: after the re-checks: the broker refuses the commit
    ("committed_offsets", "committed"),  # 10: after the commit, before the read-back
    ("partition_identities", "committed"),  # 11: before the fingerprint and anchor check (still the same log?)
    ("log_bounds", "committed"),  # 12: its log start (the records read before the commit are reused)
]


@pytest.mark.parametrize(("moment", "expected"), [(i, e) for i, (_, e) in enumerate(MOMENTS)])
def test_a_member_joining_at_any_moment_leaves_planned_or_previous_offsets_and_the_report_says_which(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path, moment: int, expected: str
) -> None:
    scene = Restored(brokers, source, target, tmp_path, {"a": {0: 50, 1: 5}, "b": {0: 100}})
    joiner, bystander = scene.groups["a"], scene.groups["b"]
    plan_file = PlanFile(str(scene.plan_path))
    plan = plan_file.load()
    with contextlib.ExitStack() as stack:
        join = lambda: active_member(brokers.target.bootstrap_servers, joiner, scene.topic)  # noqa: E731
        wrapped = JoinsAt(target, moment, join, stack)
        check_plan_fits(plan, wrapped, None)
        options = ApplyOptions(wait_timeout_s=0, on_wait_timeout="commit_empty")
        report = apply_plan(plan, wrapped, options, plan_file.save)
        assert wrapped.calls[moment] == MOMENTS[moment][0]
    planned, _, _ = check_planned_or_previous(target, plan)
    outcome = (
        "committed" if joiner in report.groups_committed else "skipped" if joiner in report.groups_skipped else "?"
    )
    correct = outcome == expected and (joiner in planned) == (expected == "committed") and bystander in planned
    record(
        "concurrency",
        trial=f"member joins before call {moment} ({MOMENTS[moment][0]})",
        double_commits=0,
        correct=correct,
    )
    assert outcome == expected, report
    assert correct


def test_a_commit_batch_retried_after_a_partial_write_commits_nothing_twice(
    brokers: Brokers, source: KafkaCluster, faulty: Faulty, tmp_path: Path, table: str
) -> None:
    """The workflow's commit step dies mid-batch (the broker goes silent after 8 commits); the Map
    runs the same batch again. Each group's commit reaches the broker at most once over both runs."""
    scenario = restored(brokers, source, faulty, tmp_path, 24)
    store = MappingStore(table, boto3.client("dynamodb"))
    store.put("r-retry", plan_on(faulty, tmp_path, "plan.json").entries)
    groups = sorted(scenario.groups)
    faulty.proxy.heal()  # count from here: the setup committed older offsets for half the groups
    faulty.proxy.latency_s = 0.005
    faulty.proxy.inject("OffsetCommit", 9, "blackhole")
    with KafkaCluster(faulty.settings()) as target, pytest.raises(CommitInterruptedError):
        commit_groups("r-retry", groups, target, store, allow_rewind=False)
    first = dict(faulty.proxy.commits_forwarded)
    faulty.proxy.heal()
    with KafkaCluster(faulty.settings()) as target:
        result = commit_groups("r-retry", groups, target, store, allow_rewind=False)
        again = commit_groups("r-retry", groups, target, store, allow_rewind=False)  # a Lambda retry
    second = dict(faulty.proxy.commits_forwarded)
    per_group = {g: first.get(g, 0) + second.get(g, 0) for g in groups}
    twice = sum(1 for n in per_group.values() if n > 1)
    with KafkaCluster(faulty.settings()) as target:
        planned, previous, _ = check_planned_or_previous(target, _plan_of(store.entries("r-retry")))
    record(
        "concurrency",
        trial="commit batch retried after a partial write",
        double_commits=twice,
        correct=twice == 0 and len(planned) == 24,
    )
    assert result.committed and not again.committed and not again.unchanged
    assert {e.status for e in store.entries("r-retry")} == {"committed"}
    assert twice == 0 and all(n == 1 for n in per_group.values()), per_group
    assert len(planned) == 24 and not previous


def _plan_of(entries: list[Any]) -> Any:
    from offset_restore.apply.table import table_plan as plan

    return plan("r", "t", entries)
