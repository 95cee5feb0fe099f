"""The target broker restarts and loses its data between plan and apply (the local broker keeps
everything in memory, so a restart is exactly that). Apply — from the CLI and as the workflow's
commit step — must see that the plan no longer fits and refuse, writing nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from offset_restore.apply.model import ApplyOptions
from offset_restore.apply.run import PlanFile, run_apply
from offset_restore.errors import BadInputError
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import open_location
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.run import SnapshotChoice, run_plan
from offset_restore.workflow.states.commit import commit_groups

from tests.figures import record
from tests.helpers import Brokers, Produced, TestBroker, commit, new_broker, produce, restore, unique

pytestmark = pytest.mark.integration


@pytest.fixture
def resettable() -> Iterator[TestBroker]:
    broker = new_broker("resettable").start()
    try:
        yield broker
    finally:
        broker.stop()


class Planned:
    def __init__(self, brokers: Brokers, source: KafkaCluster, broker: TestBroker, folder: Path) -> None:
        self.topic = unique("reset")
        source.create_topics({self.topic: 2})
        self.records: dict[int, list[Produced]] = {p: produce(source, self.topic, p, 50) for p in range(2)}
        self.groups = [unique(f"reset-g{i}") for i in range(6)]
        for i, group in enumerate(self.groups):
            commit(source, group, {TP(self.topic, p): 20 + i * 4 for p in range(2)})
        store = open_location(str(folder / "snaps"))
        run_snapshot(brokers.source_settings, store, SnapshotOptions(groups="|".join(self.groups)))
        self.broker, self.plan = broker, str(folder / "plan.json")
        self.fill(everything=True)
        run_plan(SnapshotChoice(str(folder / "snaps")), broker.settings(), self.plan, PlanOptions())

    def fill(self, everything: bool) -> None:
        """Restore the topic to the broker: all of it, or only its first 25 records per partition."""
        with KafkaCluster(self.broker.settings()) as target:
            target.create_topics({self.topic: 2})
            for p, records in self.records.items():
                restore(target, self.topic, p, records if everything else records[:25])

    def committed(self) -> dict[str, dict[TP, int]]:
        with KafkaCluster(self.broker.settings()) as target:
            found = target.committed_offsets(self.groups)
        return {g: {tp: c.offset for tp, c in offsets.items()} for g, offsets in found.items() if offsets}

    def restart(self) -> None:
        self.broker.stop()
        self.broker.start()


@pytest.mark.parametrize("refilled", [False, True], ids=["topics-gone", "log-end-below-the-plan"])
def test_apply_refuses_a_plan_the_restarted_target_no_longer_fits(
    brokers: Brokers, source: KafkaCluster, resettable: TestBroker, tmp_path: Path, refilled: bool
) -> None:
    planned = Planned(brokers, source, resettable, tmp_path)
    planned.restart()
    if refilled:
        planned.fill(everything=False)
    # A broker that restarted empty created the refilled topics anew: their ids say so before their log ends
    # do (a broker that gives no topic ids is caught by the log ends).
    refilled_message = "was deleted and created again since the plan|mapped offsets lie outside the target's logs now"
    message = refilled_message if refilled else "which the target no longer has"
    before = PlanFile(planned.plan).load().model_dump_json()
    with pytest.raises(BadInputError, match=message):
        run_apply(planned.plan, resettable.settings(), ApplyOptions(wait_timeout_s=5))
    refused = not planned.committed() and PlanFile(planned.plan).load().model_dump_json() == before
    record("target_reset", path="cli", case="refilled short" if refilled else "empty", correct=refused)
    assert refused


@pytest.mark.parametrize("refilled", [False, True], ids=["topics-gone", "log-end-below-the-plan"])
def test_the_workflow_commit_step_refuses_it_too(
    brokers: Brokers, source: KafkaCluster, resettable: TestBroker, tmp_path: Path, table: str, refilled: bool
) -> None:
    planned = Planned(brokers, source, resettable, tmp_path)
    store = MappingStore(table, boto3.client("dynamodb"))
    store.put("r-reset", PlanFile(planned.plan).load().entries)
    planned.restart()
    if refilled:
        planned.fill(everything=False)
    with KafkaCluster(resettable.settings()) as target, pytest.raises(BadInputError, match="plan again"):
        commit_groups("r-reset", planned.groups, target, store, allow_rewind=False)
    statuses = {e.status for e in store.entries("r-reset")}
    refused = not planned.committed() and statuses == {"mapped"}
    record("target_reset", path="workflow", case="refilled short" if refilled else "empty", correct=refused)
    assert refused
