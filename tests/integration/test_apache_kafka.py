"""What Apache Kafka brings that the local broker never showed: groups of the new consumer protocol
(KIP-848), members that die without leaving and expire, groups gone between list and describe."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from offset_restore.apache_broker import ApacheBroker, kafka_classpath
from offset_restore.cluster_types import TP
from offset_restore.kafka_adapter import KafkaCluster

from tests.helpers import TEST_BROKER, Brokers, commit
from tests.integration.test_apply import Restored

pytestmark = pytest.mark.skipif(
    TEST_BROKER != "apache", reason="Apache Kafka's own behaviour; this session runs on tansu"
)


@pytest.fixture
def scene(brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path) -> Callable[..., Restored]:
    return lambda offsets, **kw: Restored(brokers, source, target, tmp_path, offsets, **kw)


def wait_for_state(cluster: KafkaCluster, group: str, state: str, timeout_s: float = 60) -> float:
    """Seconds until ``group`` describes as ``state``."""
    started = time.monotonic()
    while (found := cluster.describe_groups([group]).get(group)) is None or found.state != state:
        if time.monotonic() - started > timeout_s:
            raise TimeoutError(f"{group} is {found} after {timeout_s} s, not {state}")
        time.sleep(0.2)
    return time.monotonic() - started


@contextmanager
def java_consumer(broker: ApacheBroker, group: str, topic: str) -> Iterator[subprocess.Popen[bytes]]:
    """Kafka's own console consumer in the new consumer protocol (``group.protocol=consumer``), not
    committing, so the group is active on the broker while this lasts."""
    command = [
        "java", "-Xmx128m", "-XX:+UseSerialGC", f"-Dlog4j2.configurationFile={broker.log4j}",
        "-cp", kafka_classpath(), "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "--bootstrap-server", broker.bootstrap_servers, "--topic", topic, "--group", group,
        "--consumer-property", "group.protocol=consumer", "--consumer-property", "enable.auto.commit=false",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        yield process
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_group_of_the_new_consumer_protocol_is_seen_active_waited_for_and_committed(
    brokers: Brokers, target: KafkaCluster, scene: Callable[..., Restored]
) -> None:
    """Kafka 4 answers the classic DescribeGroups for a KIP-848 group as GROUP_ID_NOT_FOUND / Dead
    even while it has members; described that way, apply would take it for absent and write under a
    running consumer (the broker refuses the write, but the run would call it an error, not a wait).
    ConsumerGroupDescribe shows it Stable with its member, so apply waits, skips, and writes once it
    is empty."""
    s = scene({"a": {0: 50, 1: 5}})
    assert isinstance(brokers.target, ApacheBroker)
    group = s.groups["a"]
    with java_consumer(brokers.target, group, s.topic):
        wait_for_state(target, group, "Stable")
        info = target.describe_groups([group])[group]
        assert (info.protocol_type, info.members, info.error) == ("consumer", 1, None)
        status, out, err = s.apply("--wait-timeout", "1", "--on-wait-timeout", "commit_empty")
        assert status == 3, out + err
        assert "still active on the target (Stable, 1 members)" in out + err
        assert s.offsets("a") == {}
    wait_for_state(target, group, "Empty")
    status, out, err = s.apply()
    assert status == 0, out + err
    assert s.offsets("a") == {0: 40, 1: 0}


def test_a_member_that_dies_without_leaving_expires_and_the_wait_sees_the_group_empty(
    brokers: Brokers, target: KafkaCluster, scene: Callable[..., Restored]
) -> None:
    """A consumer killed with SIGKILL never sends LeaveGroup: the broker keeps the group Stable until
    the member's session times out (here 2 s), then it is Empty and apply's wait goes on. (The local
    broker never expires such a member, so this was never shown.)"""
    s = scene({"a": {0: 50}})
    group = s.groups["a"]
    code = (
        "import sys, time\n"
        "from kafka import KafkaConsumer\n"
        f"c = KafkaConsumer({s.topic!r}, bootstrap_servers={brokers.target.bootstrap_servers!r}, group_id={group!r},"
        " enable_auto_commit=False, session_timeout_ms=2000, heartbeat_interval_ms=300)\n"
        "while not c.assignment():\n    c.poll(timeout_ms=3000, max_records=1)\n"
        "print('joined', flush=True)\n"
        "time.sleep(600)\n"
    )
    member = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert member.stdout is not None and member.stdout.readline().strip() == b"joined"
        assert target.describe_groups([group])[group].state == "Stable"
        os.killpg(member.pid, signal.SIGKILL)
        member.wait(timeout=10)
        status, out, err = s.apply("--wait-timeout", "60")
        assert status == 0, out + err
        assert s.offsets("a") == {0: 40}
    finally:
        if member.poll() is None:
            os.killpg(member.pid, signal.SIGKILL)
            member.wait(timeout=10)


def test_a_group_deleted_after_the_plan_describes_as_dead_and_is_written_as_absent(
    target: KafkaCluster, scene: Callable[..., Restored]
) -> None:
    """Kafka 4 answers DescribeGroups v6 for a deleted (or never created) group with GROUP_ID_NOT_FOUND
    and state Dead (KIP-1043), where the local broker said Empty. Both mean nobody consumes: a group
    deleted on the target between plan and apply is written like an absent one."""
    s = scene({"a": {0: 50}})
    group = s.groups["a"]
    commit(target, group, {TP(s.topic, 0): 3})
    target.delete_groups([group])
    info = target.describe_groups([group])[group]
    assert (info.state, info.members, info.error) == ("Dead", 0, "GroupIdNotFoundError")
    status, out, err = s.apply()
    assert status == 0, out + err
    assert s.offsets("a") == {0: 40}
