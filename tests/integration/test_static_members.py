"""Static members on the target (``group.instance.id``): the broker keeps one in its group after its consumer
stops, until the session timeout it joined with ends. The wait names them and what keeps them, and only the
explicit ``--remove-static-members`` ends it sooner, each removal printed and recorded."""

from __future__ import annotations

import json
from pathlib import Path

from kafka import KafkaConsumer
from offset_restore.kafka.cluster import KafkaCluster

from tests.helpers import Brokers, unique
from tests.integration.test_apply import Restored


def stopped_static_consumer(bootstrap_servers: str, group: str, topic: str, instance: str) -> None:
    """A static member whose consumer joined and then stopped: its close sends no LeaveGroup, so the group
    keeps it for the minute-long session timeout it joined with."""
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap_servers,
        group_id=group,
        group_instance_id=instance,
        session_timeout_ms=60_000,
        heartbeat_interval_ms=1_000,
        enable_auto_commit=False,
    )
    try:
        while not consumer.assignment():
            consumer.poll(timeout_ms=3000, max_records=1)
    finally:
        consumer.close(autocommit=False)


def test_a_stopped_static_member_is_named_and_removed_only_when_asked(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    s = Restored(brokers, source, target, tmp_path, {"app": {0: 50, 1: 5}})
    group, instance = s.groups["app"], unique("pod-7")
    stopped_static_consumer(brokers.target.bootstrap_servers, group, s.topic, instance)
    assert target.describe_groups([group])[group].static_members == (instance,)
    before = s.offsets("app")

    status, out, err = s.apply("--wait-timeout", "2")
    assert status == 1, out + err
    assert f"static, group.instance.id {instance}: kept after their consumers stop until the session timeout" in err
    assert "--remove-static-members removes static members" in err
    assert s.offsets("app") == before, "a refused apply writes nothing"

    status, out, err = s.apply("--wait-timeout", "40", "--remove-static-members", "--json")
    assert status == 0, out + err
    document = json.loads(out)
    assert document["static_removed"] == [f"{group}: {instance}"]
    assert s.offsets("app") == {0: 40, 1: 0}
    assert target.describe_groups([group])[group].static_members == ()


def test_without_static_members_the_option_removes_nothing(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    s = Restored(brokers, source, target, tmp_path, {"plain": {0: 30}})
    status, out, err = s.apply("--remove-static-members", "--json")
    assert status == 0, out + err
    assert json.loads(out)["static_removed"] == [] and s.offsets("plain") == {0: 20}
