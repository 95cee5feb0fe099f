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
from datetime import UTC, datetime
from pathlib import Path

import pytest
from offset_restore.apply.commit import apply_plan
from offset_restore.apply.model import ApplyOptions
from offset_restore.apply.rollback import rollback_plan
from offset_restore.devtools.apache_broker import ApacheBroker, java_tool, kafka_classpath
from offset_restore.formats.plan import ClusterRef, Plan, PlanEntry, PlanSummary
from offset_restore.kafka.cluster import KafkaCluster, ProducedRecord
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.kafka.model import TP, CommittedOffset
from offset_restore.reading.whole import read_partition
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.storage import open_location
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.run import SnapshotChoice, run_plan

from tests.helpers import TEST_BROKER, Brokers, Produced, commit, produce, restore, unique
from tests.integration.test_apply import Restored
from tests.integration.test_apply import run as run_cli

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


def console_consumer(broker: ApacheBroker, group: str, topic: str, *options: str) -> list[str]:
    """Kafka's own console consumer (kafka-tools) in the new consumer protocol (KIP-848)."""
    return [
        "java", "-Xmx128m", "-XX:+UseSerialGC", f"-Dlog4j2.configurationFile={broker.log4j}",
        "-cp", kafka_classpath(), "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "--bootstrap-server", broker.bootstrap_servers, "--topic", topic, "--group", group,
        "--consumer-property", "group.protocol=consumer", *options,
    ]  # fmt: skip


@contextmanager
def java_consumer(broker: ApacheBroker, group: str, topic: str) -> Iterator[subprocess.Popen[bytes]]:
    """Kafka's own console consumer in the new consumer protocol (``group.protocol=consumer``), not
    committing, so the group is active on the broker while this lasts."""
    command = console_consumer(
        broker, group, topic, "--consumer-property", "enable.auto.commit=false", "--consumer-property",
        "client.id=java-worker-3",
    )  # fmt: skip
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
        assert info.clients[0].startswith("java-worker-3 from /"), info  # who to stop, as ConsumerGroupDescribe says
        status, out, err = s.apply("--wait-timeout", "1", "--on-wait-timeout", "commit_empty")
        assert status == 3, out + err
        assert "still active on the target (Stable, 1 members: java-worker-3 from /" in out + err
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
    target.delete_groups({group: ()})
    info = target.describe_groups([group])[group]
    assert (info.state, info.members, info.error) == ("Dead", 0, "GroupIdNotFoundError")
    status, out, err = s.apply()
    assert status == 0, out + err
    assert s.offsets("a") == {0: 40}


@pytest.fixture(scope="module")
def secure() -> Iterator[ApacheBroker]:
    """A broker as MSK offers SCRAM: SASL_SSL, SCRAM-SHA-512, a user added at format time, TLS from a
    throw-away CA."""
    broker = ApacheBroker("secure", protocol="SASL_SSL").start()
    try:
        yield broker
    finally:
        broker.stop()


def restored_and_planned(settings: ConnectionSettings, flags: list[str], tmp_path: Path) -> tuple[str, str, str, str]:
    """A group at 20 on a topic, the topic restored from source offset 5 under ``dr.<topic>`` on the
    same cluster, then snapshot and plan (topic map) through the CLI with ``flags``. Returns the group,
    the restored topic, the plan's location and the plan's output."""
    topic, group = unique("restored"), unique("restored-g")
    with KafkaCluster(settings) as cluster:
        cluster.create_topics({topic: 1, f"dr.{topic}": 1})
        records = produce(cluster, topic, 0, 30)
        commit(cluster, group, {TP(topic, 0): 20})
        restore(cluster, f"dr.{topic}", 0, records, keep=lambda r: r.offset >= 5)
    snaps, plan = str(tmp_path / "snaps"), str(tmp_path / "plan.json")
    assert run_cli("snapshot", *flags, "--groups", group, "--output", snaps)[0] == 0
    status, out, err = run_cli(
        "plan", "--snapshot", snaps, *flags, "--output", plan, "--topic-map", f"{topic}=dr.{topic}"
    )
    assert status == 0, out + err
    return group, f"dr.{topic}", plan, out + err


def restored_planned_and_applied(
    settings: ConnectionSettings, flags: list[str], tmp_path: Path
) -> tuple[str, str, str]:
    """``restored_and_planned``, then apply through the CLI with ``flags``; the group resumes at the
    restored record of source offset 20 (15), the record it would have read next. Returns the group, the
    restored topic and the commands' output."""
    group, restored, plan, said = restored_and_planned(settings, flags, tmp_path)
    status, out, err = run_cli("apply", "--plan", plan, *flags, "--poll-interval", "0.2", "--execute")
    assert status == 0, out + err
    with KafkaCluster(settings) as cluster:
        assert cluster.committed_offsets([group])[group][TP(restored, 0)].offset == 15
    return group, restored, said + out + err


def test_sasl_ssl_with_scram_snapshot_plan_and_apply_with_the_flags_a_user_gives(
    secure: ApacheBroker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole CLI path (snapshot, plan, apply) on a SCRAM-over-TLS cluster, as source and target
    (the topic restored under another name), with the password only in an environment variable."""
    settings = secure.settings()
    assert settings.sasl_username and settings.sasl_password and settings.ssl_cafile
    monkeypatch.setenv("KAFKA_PASSWORD", settings.sasl_password.get_secret_value())
    flags = [
        "--bootstrap-servers", secure.bootstrap_servers, "--security-protocol", "SASL_SSL",
        "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-username", settings.sasl_username,
        "--sasl-password-env", "KAFKA_PASSWORD", "--ssl-cafile", settings.ssl_cafile,
    ]  # fmt: skip
    _, _, output = restored_planned_and_applied(settings, flags, tmp_path)
    assert settings.sasl_password.get_secret_value() not in output


def test_a_client_properties_file_works_as_it_does_for_kafka_consumer_groups(
    secure: ApacheBroker, tmp_path: Path
) -> None:
    """One SCRAM client.properties as an MSK user keeps it (the password inside, a PEM truststore,
    Java-only tuning): snapshot, plan and apply through ``--command-config`` alone, and Apache Kafka's own
    kafka-consumer-groups reads the same file and sees the offset apply wrote."""
    settings = secure.settings()
    assert settings.sasl_username and settings.sasl_password and settings.ssl_cafile
    secret = settings.sasl_password.get_secret_value()
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f'  username="{settings.sasl_username}" password="{secret}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={settings.ssl_cafile}\nreconnect.backoff.ms=100\n"
    )
    flags = ["--bootstrap-servers", secure.bootstrap_servers, "--command-config", str(config)]
    group, restored, output = restored_planned_and_applied(settings, flags, tmp_path)
    assert secret not in output and "not used by offset-restore (Java client settings): reconnect.backoff.ms" in output
    describe = ["--bootstrap-server", secure.bootstrap_servers, "--command-config", str(config), "--describe"]
    described = java_tool(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", [*describe, "--group", group], log4j=secure.log4j
    )
    assert described.returncode == 0, described.stdout + described.stderr
    assert any(line.split()[:4] == [group, restored, "0", "15"] for line in described.stdout.splitlines()), described


def test_a_cluster_whose_id_starts_with_an_underscore_is_snapshotted_planned_and_applied(tmp_path: Path) -> None:
    """Kafka's ids are URL-safe base64 and start with '_' one time in 64: the snapshot and the plan
    name such a cluster ``cluster-_...``, and apply must know it as the same cluster (it refused
    it, met in a fresh CI run)."""
    broker = ApacheBroker("underscore", cluster_id="_" + "Q" * 21).start()
    try:
        flags = ["--bootstrap-servers", broker.bootstrap_servers]
        with KafkaCluster(broker.settings()) as cluster:
            assert cluster.cluster_id.startswith("_")
        group, restored, _ = restored_planned_and_applied(broker.settings(), flags, tmp_path)
        plan = tmp_path / "plan.json"
        assert Plan.model_validate_json(plan.read_text()).target.cluster == "cluster-_" + "Q" * 21
        # The way back works on such a cluster too: the group had no offset on the restored topic.
        status, out, err = run_cli("rollback", "--plan", str(plan), *flags, "--execute")
        assert status == 0, out + err
        with KafkaCluster(broker.settings()) as cluster:
            assert TP(restored, 0) not in cluster.committed_offsets([group]).get(group, {})
    finally:
        broker.stop()


def test_a_wrong_scram_password_or_an_untrusted_ca_is_named_not_only_a_timeout(
    secure: ApacheBroker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kafka-python only logs why the broker closed the connection and then times out; the operator
    must read "invalid credentials" or "certificate verify failed", not "cannot reach"."""
    settings = secure.settings()
    assert settings.sasl_username and settings.ssl_cafile
    monkeypatch.setenv("KAFKA_PASSWORD", "not-the-password")
    base = [
        "snapshot", "--bootstrap-servers", secure.bootstrap_servers, "--security-protocol", "SASL_SSL",
        "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-username", settings.sasl_username,
        "--sasl-password-env", "KAFKA_PASSWORD", "--output", str(tmp_path / "snaps"), "--connect-timeout", "5",
    ]  # fmt: skip
    status, _, err = run_cli(*base, "--ssl-cafile", settings.ssl_cafile)
    # kafka-python names the broker's refusal when it reads it before the connection ends; on a loaded
    # machine it sometimes sees only the close (every attempt "socket disconnected", seen in CI), and
    # then the error says what a bare close during SASL means.
    named = "SaslAuthenticationFailedError" in err and "invalid credentials" in err
    assert status != 0 and "cannot reach" in err and (named or "check the username and the password" in err), err
    assert "not-the-password" not in err
    status, _, err = run_cli(*base)
    assert status != 0 and "CERTIFICATE_VERIFY_FAILED" in err, err
    assert not (tmp_path / "snaps").exists() or not any((tmp_path / "snaps").rglob("*.json*"))


def copy_offsets_topic(servers: str, target: KafkaCluster, copy: str) -> int:
    """Every record of the real ``__consumer_offsets`` appended to ``copy`` (same partition, key,
    value, headers, timestamp), as a backup tool restores it; returns how many. Read with
    kafka-python's own consumer: the adapter reads only the topics a restore is about."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition

    consumer = KafkaConsumer(bootstrap_servers=servers, enable_auto_commit=False, exclude_internal_topics=False)
    try:
        partitions = [
            KafkaTopicPartition("__consumer_offsets", p)
            for p in sorted(consumer.partitions_for_topic("__consumer_offsets") or ())
        ]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        ends = consumer.end_offsets(partitions)
        target.create_topics({copy: len(partitions)})
        copied = 0
        while any(consumer.position(tp) < ends[tp] for tp in partitions):
            for tp, records in consumer.poll(timeout_ms=1000).items():
                rows: list[ProducedRecord] = [
                    (r.key, r.value, [(k, v or b"") for k, v in r.headers], r.timestamp) for r in records
                ]
                copied += target.produce(copy, tp.partition, rows)
        return copied
    finally:
        consumer.close()


def test_a_byte_for_byte_copy_of_the_real_consumer_offsets_is_decoded(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """The real ``__consumer_offsets`` of Apache Kafka 4.1, copied record by record into a topic: a
    classic group's admin commits and a KIP-848 group's own commits decode to the offsets the broker
    reports, and the new protocol's membership records are skipped and counted, not read as commits
    (before, Kafka 4's record types were counted as corrupt)."""
    assert isinstance(brokers.source, ApacheBroker)
    topic, classic, modern = unique("offsets"), unique("classic"), unique("kip848")
    source.create_topics({topic: 2})
    for p in range(2):
        produce(source, topic, p, 30)
    commit(source, classic, {TP(topic, 0): 7, TP(topic, 1): 12}, "meta-7")
    command = console_consumer(brokers.source, modern, topic, "--from-beginning", "--max-messages", "45")
    subprocess.run(command, capture_output=True, timeout=120, check=True)
    expected = source.committed_offsets([classic, modern])
    assert sum(c.offset for c in expected[modern].values()) == 45
    # The live snapshot lists and describes the KIP-848 group like any other.
    live = run_snapshot(brokers.source_settings, open_location(str(tmp_path / "live")), SnapshotOptions(groups=modern))
    repository = SnapshotRepository(open_location(str(tmp_path / "live")))
    [group] = list(repository.load(*repository.latest()).groups)
    assert live.counts.groups == 1 and group.state == "Empty"
    assert {TP(p.topic, p.partition): p.committed_offset for p in group.partitions} == {
        tp: c.offset for tp, c in expected[modern].items()
    }
    restored = unique("restored-offsets")
    assert copy_offsets_topic(brokers.source.bootstrap_servers, target, restored) > 0
    snaps = tmp_path / "snaps"
    status, out, err = run_cli(
        "snapshot", "--bootstrap-servers", brokers.target.bootstrap_servers,
        "--from-offsets-topic", restored, "--groups", f"{classic}|{modern}", "--output", str(snaps),
    )  # fmt: skip
    assert status == 0, out + err
    repository = SnapshotRepository(open_location(str(snaps)))
    snapshot = repository.load(*repository.latest())
    found = {
        g.group: {TP(p.topic, p.partition): (p.committed_offset, p.metadata) for p in g.partitions}
        for g in snapshot.groups
    }
    assert found == {g: {tp: (c.offset, c.metadata) for tp, c in offsets.items()} for g, offsets in expected.items()}
    assert snapshot.manifest.counts.offsets_topic_corrupt == 0
    assert any("not offset commits skipped (type" in note for note in snapshot.manifest.notes), snapshot.manifest.notes


def produce_transactions(servers: str, topic: str) -> None:
    """Three transactions on partition 0: 10 records committed (offsets 0-9, marker 10), 5 aborted
    (11-15, marker 16), 10 committed (17-26, marker 27)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=servers, transactional_id=unique("txn"), acks="all")
    try:
        producer.init_transactions()
        for count, commit_it, first in ((10, True, 0), (5, False, 100), (10, True, 200)):
            producer.begin_transaction()
            for i in range(count):
                producer.send(topic, key=f"k{first + i}".encode(), value=f"v{first + i}".encode(), partition=0)
            producer.flush()
            producer.commit_transaction() if commit_it else producer.abort_transaction()
    finally:
        producer.close()


@pytest.mark.parametrize("header", ["int64", None])
def test_groups_next_to_transaction_markers_and_aborted_records_resume_at_the_next_committed_record(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path, header: str | None
) -> None:
    """A read_committed consumer can commit just after a marker (11: the next records were aborted;
    17: after the abort marker) or at the end (28). A backup keeps committed records only, so each
    group must resume at the first committed record at or after its offset: target 10, 10 and the end.
    With offset headers and without them (the fingerprint strategy)."""
    topic = unique("txn-topic")
    source.create_topics({topic: 1})
    produce_transactions(brokers.source.bootstrap_servers, topic)
    offsets = {g: o for g, o in zip((unique("at11"), unique("at17"), unique("at28")), (11, 17, 28), strict=True)}
    for group, offset in offsets.items():
        commit(source, group, {TP(topic, 0): offset})
    committed = [r for r in source.fetch({TP(topic, 0): 0}, partition_max_bytes=1 << 20)[TP(topic, 0)].records]
    # Every read is read_committed (issue 32): the aborted records 11-15 are in the log, never read.
    assert [r.offset for r in committed] == [*range(10), *range(17, 27)]
    kept = committed
    target.create_topics({topic: 1})
    restored = [
        Produced(r.offset, r.key or b"", r.value or b"", tuple((k, v or b"") for k, v in r.headers), r.timestamp)
        for r in kept
    ]
    restore(target, topic, 0, restored, header=header)
    snaps, plan = tmp_path / "snaps", tmp_path / "plan.json"
    run_snapshot(brokers.source_settings, open_location(str(snaps)), SnapshotOptions(groups="|".join(offsets)))
    run_plan(SnapshotChoice(str(snaps)), brokers.target_settings, str(plan), PlanOptions())
    entries = {e.group: e for e in Plan.model_validate_json(plan.read_text()).entries}
    expected = dict(zip(offsets, (10, 10, 20), strict=True))
    assert all(entries[g].status == "mapped" for g in offsets)
    # With headers and without (issue 32: the snapshot reads as read_committed, so the evidence next to
    # 11 and 17 is record 17, the first committed one, which the restore holds): exact, by either strategy.
    # (Before, without headers, the aborted records were evidence and those groups fell to timestamps.)
    assert {g: (entries[g].target_offset, entries[g].exact) for g in offsets} == {
        g: (o, True) for g, o in expected.items()
    }, {g: (e.method, e.reason) for g, e in entries.items()}


def test_records_deleted_by_delete_records_after_the_plan_are_refused_then_planned_from_the_new_start(
    brokers: Brokers, target: KafkaCluster, scene: Callable[..., Restored]
) -> None:
    """Real retention (DeleteRecords, which the local broker lacks) moves a partition's log start past
    a planned offset: apply refuses the plan and writes nothing; a new plan resumes that group at the
    first record still there (its earlier records are gone, none is skipped), the other as before."""
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KafkaTopicPartition

    s = scene({"a": {0: 15}, "b": {0: 60}})  # restored from source offset 10: target 5 and 50
    admin = KafkaAdminClient(bootstrap_servers=brokers.target.bootstrap_servers)
    try:
        admin.delete_records({KafkaTopicPartition(s.topic, 0): 20})
    finally:
        admin.close()
    assert target.log_bounds([TP(s.topic, 0)])[TP(s.topic, 0)].start == 20
    status, out, err = s.apply()
    assert status == 2 and "outside the target's logs" in err, out + err
    assert s.offsets("a") == {} and s.offsets("b") == {}
    from offset_restore.translate.run import SnapshotChoice, run_plan

    s.plan_path.unlink()
    run_plan(
        SnapshotChoice(str(s.plan_path.parent / "snaps")), brokers.target_settings, str(s.plan_path), PlanOptions()
    )
    entries = {e.group: e for e in s.plan().entries if e.partition == 0}
    a, b = entries[s.groups["a"]], entries[s.groups["b"]]
    assert a.target_offset == 20 and b.target_offset == 50, a.reason  # records below the start are not read
    status, out, err = s.apply()
    assert status == 0, out + err
    assert s.offsets("a")[0] == 20 and s.offsets("b")[0] == 50


def _key(batch: int, i: int) -> bytes:
    """Every other record has a key of its own (kept by compaction); the rest share five keys, so
    only their last writes survive and the log is left with gaps between records kept."""
    return f"unique-{batch}-{i}".encode() if i % 2 == 0 else f"shared-{i % 5}".encode()


def compacted_topic(servers: str, cluster: KafkaCluster, topic: str, timeout_s: float = 60) -> list[int]:
    """A compacted topic whose cleaner has really run: 60 records in 6 rolled segments (half with keys
    of their own, half rewriting five shared keys), then a last record to close the segment before it;
    returns the offsets still there once compaction has left gaps."""
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=servers)
    configs = {
        "cleanup.policy": "compact",
        "segment.ms": "100",
        "min.cleanable.dirty.ratio": "0.01",
        "min.compaction.lag.ms": "0",
        "delete.retention.ms": "0",
    }
    try:
        admin.create_topics([NewTopic(topic, 1, 1, topic_configs=configs)])
    finally:
        admin.close()
    for batch in range(7):
        rows: list[ProducedRecord] = [
            (_key(batch, i), f"value-{batch}-{i}".encode(), [], None) for i in range(10 if batch < 6 else 1)
        ]
        cluster.produce(topic, 0, rows)
        time.sleep(0.3)  # past segment.ms: the next append rolls a new segment
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        offsets = [r.offset for r in read_partition(cluster, TP(topic, 0))]
        if len(offsets) < 61:
            return offsets
        time.sleep(0.5)
    raise TimeoutError(f"the log cleaner did not compact {topic} within {timeout_s} s")


def test_gaps_left_by_real_compaction_resume_at_the_next_record_kept(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """A group committed inside a gap the cleaner left on the source (the local broker never compacts):
    the snapshot's record at that offset is the next one kept, and the plan resumes there on the target,
    exact, with the header strategy and with the fingerprint strategy."""
    topic = unique("compacted")
    kept = compacted_topic(brokers.source.bootstrap_servers, source, topic)
    gaps = [o for o in range(kept[0], kept[-1]) if o not in set(kept)]  # between records kept, not before
    assert gaps, kept
    inside, caught_up = unique("in-gap"), unique("end")
    commit(source, inside, {TP(topic, 0): gaps[0]})
    commit(source, caught_up, {TP(topic, 0): kept[-1] + 1})
    produced = [
        Produced(r.offset, r.key or b"", r.value or b"", (), r.timestamp) for r in read_partition(source, TP(topic, 0))
    ]
    restored = {"header": (f"dr.{topic}", "int64"), "fingerprint": (f"mm2.{topic}", None)}
    for name, header in restored.values():
        target.create_topics({name: 1})
        restore(target, name, 0, produced, header=header)
    snaps = tmp_path / "snaps"
    run_snapshot(brokers.source_settings, open_location(str(snaps)), SnapshotOptions(groups=f"{inside}|{caught_up}"))
    next_kept = kept.index(next(o for o in kept if o >= gaps[0]))  # its target offset: the restore is dense
    for method, (name, _) in restored.items():
        plan = tmp_path / f"plan-{method}.json"
        run_plan(SnapshotChoice(str(snaps)), brokers.target_settings, str(plan), PlanOptions(topic_map={topic: name}))
        entries = {e.group: e for e in Plan.model_validate_json(plan.read_text()).entries}
        assert (entries[inside].target_offset, entries[inside].exact) == (next_kept, True), entries[inside]
        assert entries[inside].method == method, entries[inside]
        assert entries[caught_up].target_offset == len(kept)


@pytest.fixture(scope="module")
def authorizing() -> Iterator[ApacheBroker]:
    """The SCRAM broker with Kafka's ACL authorizer (KRaft's StandardAuthorizer): what a self-managed cluster
    with ACLs looks like. Resources without ACLs stay open, so a test denies only what it names."""
    config = {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
        "super.users": "User:ANONYMOUS",  # the broker's own plaintext listeners
    }
    broker = ApacheBroker("acl", protocol="SASL_SSL", config=config).start()
    try:
        yield broker
    finally:
        broker.stop()


def test_credentials_denied_the_fence_are_refused_by_name_and_nothing_is_written(
    authorizing: ApacheBroker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user may commit group offsets but an ACL denies it the transactional ids of the fence: apply takes
    the fence before any write, is refused (TransactionalIdAuthorizationFailed), names the permission it
    needs, exits 1 and writes nothing — never an unfenced write the operator did not ask for. With
    ``--unfenced`` (the operator's say-so) it writes."""
    from kafka.admin import (
        ACL,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourceType,
    )

    settings = authorizing.settings()
    assert settings.sasl_username and settings.sasl_password and settings.ssl_cafile
    admin = KafkaAdminClient(
        bootstrap_servers=authorizing.bootstrap_servers, security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username=settings.sasl_username, sasl_plain_password=settings.sasl_password.get_secret_value(),
        ssl_cafile=settings.ssl_cafile,
    )  # fmt: skip
    fence_ids = ResourcePattern(ResourceType.TRANSACTIONAL_ID, "offset-restore-", ACLResourcePatternType.PREFIXED)
    denied = ACL(f"User:{settings.sasl_username}", "*", ACLOperation.ALL, ACLPermissionType.DENY, fence_ids)
    try:
        assert not admin.create_acls([denied])["failed"]
    finally:
        admin.close()
    flags = [
        "--bootstrap-servers", authorizing.bootstrap_servers, "--security-protocol", "SASL_SSL",
        "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-username", settings.sasl_username,
        "--sasl-password-env", "KAFKA_PASSWORD", "--ssl-cafile", settings.ssl_cafile,
    ]  # fmt: skip
    monkeypatch.setenv("KAFKA_PASSWORD", settings.sasl_password.get_secret_value())
    group, restored, plan, _ = restored_and_planned(settings, flags, tmp_path)
    status, out, err = run_cli("apply", "--plan", plan, *flags, "--poll-interval", "0.2", "--execute")
    assert status == 1, out + err
    assert "taking the write fence was refused (TransactionalIdAuthorizationFailedError)" in err, err
    assert "kafka-cluster:AlterTransactionalId" in err
    with KafkaCluster(settings) as cluster:
        assert TP(restored, 0) not in cluster.committed_offsets([group])[group]
    status, out, err = run_cli("apply", "--plan", plan, *flags, "--poll-interval", "0.2", "--execute", "--unfenced")
    assert status == 0, out + err
    with KafkaCluster(settings) as cluster:
        assert cluster.committed_offsets([group])[group][TP(restored, 0)].offset == 15


def test_a_rollback_of_a_large_apply_deletes_every_group_the_apply_created(target: KafkaCluster) -> None:
    """Kafka 4's group coordinator writes the tombstones of every group one DeleteGroups request names as one
    batch per offsets-topic partition, and answers UNKNOWN_SERVER_ERROR for a batch past the broker's message
    size: a rollback of a large apply deleted none of the groups it created (the previous state, no offsets,
    could not be put back). Deleting them sizes each request by the offsets the groups hold, so every group
    goes, under the fence."""
    topic = unique("t" * 200)
    target.create_topics({topic: 120})

    def groups_holding_offsets() -> dict[str, list[TP]]:
        held = {unique("g" * 140): [TP(topic, p) for p in range(120)] for _ in range(100)}
        answers = target.commit_offsets_many(
            {g: dict.fromkeys(tps, CommittedOffset(1, None)) for g, tps in held.items()}
        )
        assert not any(e for per in answers.values() for e in per.values())
        return held

    # The shape is one the coordinator cannot delete in one request (else this test shows nothing).
    probe = list(groups_holding_offsets())
    refused = target._admin.delete_groups(probe)
    assert any(answer == "UnknownError" for answer in refused.values()), refused

    groups = [unique("g" * 140) for _ in range(100)]
    entries = [
        PlanEntry(
            group=g, topic=topic, partition=p, target_topic=topic, source_offset=0, target_offset=0,
            method="header", exact=True, max_duplicates=0, status="mapped",
        )
        for g in groups
        for p in range(120)
    ]  # fmt: skip
    plan = Plan(
        restore_id="large", snapshot_id="large", created_at=datetime.now(UTC), source=ClusterRef(cluster="s"),
        target=ClusterRef(cluster="t"), entries=entries, summary=PlanSummary.of(entries),
    )  # fmt: skip
    target.hold_fence()
    applied = apply_plan(plan, target, ApplyOptions(wait_timeout_s=0), lambda _: None)
    assert sorted(applied.groups_committed) == sorted(groups) and applied.offsets_committed == 12_000
    assert all(e.previous_recorded and e.previous_target_offset is None for e in plan.entries)

    rolled = rollback_plan(plan, target, lambda _: None)
    assert rolled.groups_failed == {} and sorted(rolled.groups_committed) == sorted(groups)
    assert not any(target.committed_offsets(groups).values())
