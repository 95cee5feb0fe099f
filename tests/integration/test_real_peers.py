"""Side by side with the real tools (issue 19): Apache Kafka's own ``kafka-consumer-groups``
(``ConsumerGroupCommand`` from Maven Central's kafka-tools 4.1.1 jar, run with ``java`` as the script
runs it) reading the CSV ``offset-restore plan --csv`` writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from offset_restore.devtools.apache_broker import ApacheBroker, java_tool
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.translate.model import Plan

from tests.helpers import TEST_BROKER, Brokers, commit, produce, restore, unique
from tests.integration.test_apply import run as run_cli

pytestmark = pytest.mark.skipif(TEST_BROKER != "apache", reason="runs Apache Kafka's own tools")

CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


def test_kafka_consumer_groups_from_file_puts_every_group_where_the_plan_does(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """Groups at the start, in the middle, caught up and absent from a partition; the target a
    restore that lost the first 7 records of each partition. ``--reset-offsets --from-file plan.csv
    --execute`` must commit exactly the plan's mapped offsets (what ``apply`` writes) and nothing else."""
    assert isinstance(brokers.target, ApacheBroker)
    topic = unique("peer")
    source.create_topics({topic: 3})
    target.create_topics({topic: 3})
    records = {p: produce(source, topic, p, 40) for p in range(3)}
    groups = [unique("peer-g") for _ in range(4)]
    placed = [{0: 3, 1: 20, 2: 39}, {0: 40, 1: 40, 2: 40}, {0: 10, 2: 25}, {1: 7}]
    for group, offsets in zip(groups, placed, strict=True):
        commit(source, group, {TP(topic, p): o for p, o in offsets.items()})
    for p in range(3):
        restore(target, topic, p, records[p], keep=lambda r: r.offset >= 7)
    snaps, plan, csv = tmp_path / "snaps", tmp_path / "plan.json", tmp_path / "plan.csv"
    status, out, err = run_cli(
        "snapshot", "--bootstrap-servers", brokers.source.bootstrap_servers, "--groups", "|".join(groups),
        "--output", str(snaps),
    )  # fmt: skip
    assert status == 0, out + err
    status, out, err = run_cli(
        "plan", "--snapshot", str(snaps), "--bootstrap-servers", brokers.target.bootstrap_servers,
        "--output", str(plan), "--csv", str(csv),
    )  # fmt: skip
    assert status == 0, out + err
    planned = {
        (e.group, TP(e.target_topic, e.partition)): e.target_offset
        for e in Plan.model_validate_json(plan.read_text()).entries
        if e.status == "mapped"
    }
    assert len(planned) == 9 and planned[(groups[0], TP(topic, 0))] == 0 and planned[(groups[1], TP(topic, 2))] == 33

    selected = [flag for group in groups for flag in ("--group", group)]
    done = java_tool(
        CONSUMER_GROUP_COMMAND,
        ["--bootstrap-server", brokers.target.bootstrap_servers, "--reset-offsets", "--from-file", str(csv),
         "--execute", *selected],
        log4j=brokers.target.log4j,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    committed = target.committed_offsets(groups)
    landed = {(group, tp): c.offset for group, found in committed.items() for tp, c in found.items()}
    assert landed == planned, done.stdout
