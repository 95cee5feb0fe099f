"""The deployed workflow (the ASL file through moto's interpreter, the real handlers) against a target
whose broker resets a commit's connection after acting on it, then goes silent mid-batch and comes
back: the commit Lambda fails with ``CommitInterruptedError``, the Map retries the batch, and the run
ends with every group at its planned offsets, verified, each commit having reached the broker once
after the silence."""

from __future__ import annotations

import threading
from pathlib import Path

import boto3
import pytest
from offset_restore.apply.table import table_plan as plan_of
from offset_restore.devtools.local_aws import REGION, local_workflow
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import S3Store

from tests.figures import record
from tests.helpers import Brokers, restore
from tests.reliability.conftest import Faulty
from tests.reliability.scenarios import check_planned_or_previous, groups_on

pytestmark = pytest.mark.integration


def test_a_commit_batch_interrupted_by_a_silent_broker_is_retried_by_the_map_and_completes(
    brokers: Brokers, source: KafkaCluster, faulty: Faulty, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = groups_on(source, "flowfault", 16, partitions=2)
    with KafkaCluster(faulty.settings()) as target:
        target.create_topics({scenario.topic: 2})
        for p, records in scenario.records.items():
            restore(target, scenario.topic, p, [r for r in records if r.offset >= 5])
    with local_workflow(brokers.source.bootstrap_servers, faulty.broker.bootstrap_servers) as workflow:
        monkeypatch.setenv("KAFKA_CONNECT_TIMEOUT_S", "2")
        monkeypatch.setenv("KAFKA_RETRIES", "1")
        run_snapshot(
            brokers.source_settings,
            S3Store("offset-restore", "", workflow.s3),
            SnapshotOptions(groups="|".join(scenario.groups), cluster="src"),
        )
        faulty.proxy.heal()
        faulty.proxy.latency_s = 0.005
        faulty.proxy.inject("TxnOffsetCommit", 3, "reset_after")
        faulty.proxy.inject("TxnOffsetCommit", 8, "blackhole")
        healer = threading.Timer(6.0, faulty.proxy.heal)
        healer.start()
        try:
            result = workflow.run(
                {"groups": "|".join(scenario.groups), "mode": "apply", "restore_id": "faulty-1"}, name="faulty-1"
            )
        finally:
            healer.cancel()
        assert result["status"] == "SUCCEEDED", result.get("cause")
        failures = [e for e in result["history"] if e["type"] == "LambdaFunctionFailed"]
        store = MappingStore("offset-restore", boto3.client("dynamodb", region_name=REGION))
        entries = store.entries("faulty-1")
    with KafkaCluster(faulty.settings()) as target:
        planned, previous, unanswered = check_planned_or_previous(target, plan_of("faulty-1", "dr", entries))
    ok = len(planned) == 16 and not previous and not unanswered and all(e.verified for e in entries)
    record("network", phase="workflow apply", fault="commit reset + broker silent mid-batch", injected=2, correct=ok)
    assert any("CommitInterruptedError" in str(e) for e in failures), "the Map should have retried the batch"
    assert ok
