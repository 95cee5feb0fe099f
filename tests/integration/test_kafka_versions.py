"""The two promises on every Apache Kafka version users run, each from its own jars: the last 3.x line (still
common on managed services) and the newest Maven Central serves, beside the version the whole suite runs on.

The tests are the suite's own promise-bearing ones, collected here a second time: this module's ``brokers``
fixture overrides the session's, so ``source``, ``target`` and every fixture built on them meet a source and a
target of the version in the test's id. What they prove: a snapshot, a plan on every untidy restore layout
that skips nothing, apply and its wait, rollback that puts the previous offsets back and rewinds nothing, the
fence against a second writer, and static members named and removed on request. And the group kinds each
version lists: share groups (queues, on by default from Kafka 4.2) carried by their start offsets, through the
fence, and rolled back; a Streams application of the streams protocol holds its group while it runs; Kafka
3.9 lists every group as a classic one.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from offset_restore.apply.run import PlanFile
from offset_restore.devtools.apache_broker import (
    DEFAULT_VERSION,
    JVM,
    VERSIONS,
    ApacheBroker,
    java_tool,
    kafka_classpath,
)
from offset_restore.devtools.brokers import start_all
from offset_restore.devtools.local_aws import local_workflow
from offset_restore.errors import ClusterError, WriterFencedError
from offset_restore.formats.streams import internal_topic
from offset_restore.kafka import internals, share_protocol
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.fence import SHARE_GROUP_THERE
from offset_restore.kafka.model import TP, CommittedOffset
from offset_restore.reading.whole import read_partition
from offset_restore.snapshot.live import SnapshotOptions, take_snapshot
from offset_restore.snapshot.run import run_snapshot
from offset_restore.stores.storage import S3Store

from tests.helpers import TEST_BROKER, Brokers, Produced, commit, produce, restore, unique

# Collected again below, against this module's brokers (their names are what pytest collects).
from tests.integration.test_apply import (  # noqa: F401
    Restored,
    scene,
    test_a_group_ahead_on_the_target_is_a_decision_made_by_name,
    test_an_active_group_blocks_only_itself_and_a_rerun_commits_it,
    test_apply_commits_verifies_and_a_second_apply_changes_nothing,
    test_rollback_never_rewinds_consumers_that_ran_on_the_target,
    test_rollback_removes_only_what_apply_created,
)
from tests.integration.test_apply import (
    run as run_cli,
)
from tests.integration.test_fence import (  # noqa: F401
    test_a_fenced_writer_deletes_nothing,
    test_a_writer_fenced_in_the_middle_of_its_transaction_leaves_nothing,
    test_an_apply_paused_before_its_write_while_another_writer_takes_the_fence_writes_nothing,
    test_two_writers_taking_the_fence_at_once_never_both_write,
)
from tests.integration.test_never_skip import (  # noqa: F401
    source_groups,
    test_no_position_skips_a_record_whatever_the_order,
)
from tests.integration.test_snapshot_cli import group_on_source, test_snapshot_to_a_folder_then_list_it  # noqa: F401
from tests.integration.test_static_members import (  # noqa: F401
    test_a_stopped_static_member_is_named_and_removed_only_when_asked,
)

pytestmark = pytest.mark.skipif(TEST_BROKER != "apache", reason="runs Apache Kafka's own jars of each version")

OTHER_VERSIONS = [version for version in VERSIONS if version != DEFAULT_VERSION]


@pytest.fixture(scope="module", params=OTHER_VERSIONS)
def brokers(request: pytest.FixtureRequest) -> Iterator[Brokers]:
    """A source and a target of one version (the test's id names it), for the module's tests of that version."""
    with ExitStack() as stack:
        source, target = ApacheBroker("source", version=request.param), ApacheBroker("target", version=request.param)
        start_all([source, target], stack)
        yield Brokers(source=source, target=target)


def test_each_version_runs_its_own_jars(brokers: Brokers) -> None:
    """What the brokers run is the version in the test's id, not the default's jars under another name: the
    cluster's first metadata record carries its version's metadata.version."""
    for broker in (brokers.source, brokers.target):
        assert isinstance(broker, ApacheBroker) and broker.version != DEFAULT_VERSION
        major_minor = ".".join(broker.version.split(".")[:2])
        log = broker.log_file.read_text(errors="replace")
        assert f"metadata.version {major_minor}-IV" in log, log[-2000:]


STREAMS_APP = Path(__file__).parent.parent / "fixtures" / "StreamsApp.java"
"""A stateless Kafka Streams application of the streams rebalance protocol (run from source by ``java``)."""
STREAMS_GROUP_DESCRIBE = 89
"""The request that describes a streams-protocol group (Kafka 4.1 on): what a broker without that kind lacks."""


@contextmanager
def java_application(broker: ApacheBroker, source_file: Path, args: list[str], ready: str) -> Iterator[str]:
    """A Java program of ours run from source on ``broker``'s jars until the block ends (its stdin closed: it
    stops as its users' applications do, its members leaving). Yields its first line starting with ``ready``."""
    command = ["java", "-Xmx256m", *JVM, "-cp", kafka_classpath(broker.version), str(source_file)]
    app = subprocess.Popen(
        [*command, broker.bootstrap_servers, *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(line.rstrip() for line in app.stdout or ()), daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    try:
        while not (said := next((line for line in lines if line.startswith(ready)), "")):
            assert app.poll() is None and time.monotonic() < deadline, "\n".join(lines[-30:])
            time.sleep(0.2)
        yield said
    finally:
        assert app.stdin is not None
        app.stdin.close()
        app.wait(60)
        reader.join(5)


@contextmanager
def streams_application(
    broker: ApacheBroker, app_id: str, source: str, sink: str, state: Path, *, repartition: bool = False
) -> Iterator[None]:
    """A Streams application of the streams protocol running on ``broker`` until the block ends (then closed,
    its member gone): the group ``app_id`` of kind ``streams``; ``repartition``: its records pass through a
    repartition topic of its own."""
    args = [app_id, source, sink, str(state), *["repartition"][: int(repartition)]]
    with java_application(broker, STREAMS_APP, args, "STATE RUNNING"):
        yield


def test_a_streams_application_of_the_new_protocol_is_waited_for_and_written_once_it_stops(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """On 4.4 a Streams application of the streams rebalance protocol running on the target holds its group:
    DescribeGroups and ConsumerGroupDescribe answer GROUP_ID_NOT_FOUND while it runs (and the broker would take
    our transactional commit), StreamsGroupDescribe names its member: apply names it and writes nothing; closed,
    the group is Empty and apply writes it. Kafka 3.9 has no such groups (no StreamsGroupDescribe)."""
    assert isinstance(brokers.target, ApacheBroker)
    if brokers.target.version.startswith("3."):
        target.list_groups()  # ApiVersions known
        assert not internals.api_supported(target._admin, STREAMS_GROUP_DESCRIBE)
        return
    s = Restored(brokers, source, target, tmp_path, {"app": {0: 50, 1: 5}})
    group = s.groups["app"]
    app_in, app_out = unique("app-in"), unique("app-out")  # its own input: it commits nothing on the planned topic
    target.create_topics({app_in: 1, app_out: 1})
    with streams_application(brokers.target, group, app_in, app_out, tmp_path / "state"):
        assert target.list_groups()[group] == "streams"
        target.produce(app_in, 0, [(b"k", b"v", [], None)] * 5)
        deadline = time.monotonic() + 30
        while (done := target.committed_offsets([group])[group].get(TP(app_in, 0))) is None or done.offset < 5:
            assert time.monotonic() < deadline, f"the application committed {done} of 5 records"
            time.sleep(0.2)
        # Snapshotted where it runs, as a DR source holds it: its offsets carried, the group live.
        [taken] = take_snapshot(target, SnapshotOptions(groups=group, evidence_records=0)).groups
        assert [(p.topic, p.committed_offset) for p in taken.partitions] == [(app_in, 5)]
        assert (taken.state, taken.protocol_type) == ("Stable", "streams")
        status, out, err = s.apply("--wait-timeout", "2")
        assert status == 1, out + err
        assert f"Stable, 1 members: {group}-" in err and "StreamThread-1-consumer from" in err, err
        assert s.offsets("app") == {}, "nothing written under a running application"
    status, out, err = s.apply("--wait-timeout", "30")
    assert status == 0, out + err
    assert s.offsets("app") == {0: 40, 1: 0}


def test_a_streams_application_of_the_new_protocol_is_held_while_its_repartition_topic_is_short(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """On 4.4 a Streams application of the streams protocol whose records pass through a repartition topic
    commits on that topic as on its input. Restored with its input whole and its repartition topic short, the
    plan holds the whole group (written alone, its input's position would skip records it had consumed but
    not yet processed through the repartition topic) and apply writes none of it; with the repartition topic
    whole, both positions are exact and written. The application started on the target takes them (the
    brokers make the written group a streams group on its first join) and processes nothing again."""
    assert isinstance(brokers.source, ApacheBroker) and isinstance(brokers.target, ApacheBroker)
    if brokers.source.version.startswith("3."):
        return  # no streams protocol: Kafka Streams applications commit as consumer groups there
    app, app_in, app_out = unique("rapp"), unique("rapp-in"), unique("rapp-out")
    source.create_topics({app_in: 1, app_out: 1})
    records = produce(source, app_in, 0, 40)
    with streams_application(brokers.source, app, app_in, app_out, tmp_path / "state", repartition=True):
        deadline = time.monotonic() + 60
        while len(done := source.committed_offsets([app])[app]) < 2 or any(c.offset < 40 for c in done.values()):
            assert time.monotonic() < deadline, f"the application committed {done}"
            time.sleep(0.3)
    [repartition] = [tp for tp in done if internal_topic(app, tp.topic)]
    through = [Produced(r.offset, r.key or b"", r.value or b"", tuple((k, v or b"") for k, v in r.headers), r.timestamp)
               for r in read_partition(source, repartition)]  # fmt: skip
    assert len(through) == 40
    snaps = str(tmp_path / "snaps")
    status, out, err = run_cli("snapshot", "--bootstrap-servers", brokers.source.bootstrap_servers, "--groups", app,
                               "--output", snaps)  # fmt: skip
    assert status == 0, out + err
    target.create_topics({app_in: 1, app_out: 1, repartition.topic: 1})
    restore(target, app_in, 0, records)
    restore(target, repartition.topic, 0, through[:25])  # the restore of the repartition topic is short
    where = ("--bootstrap-servers", brokers.target.bootstrap_servers)

    def plan_and_apply(plan_path: str) -> tuple[int, str]:
        status, out, err = run_cli("plan", "--snapshot", snaps, *where, "--output", plan_path)
        assert status in (0, 3), out + err  # 3: entries pending
        status, out, err = run_cli("apply", "--plan", plan_path, *where, "--poll-interval", "0.2", "--execute")
        return status, out + err

    status, said = plan_and_apply(first := str(tmp_path / "plan.json"))
    assert status == 3 and f"skipped: {app}: 1 partitions still pending" in said, said
    held = {e.topic: e for e in PlanFile(first).load().entries}
    assert held[repartition.topic].holds_group and "Kafka Streams application" in (held[repartition.topic].reason or "")
    assert target.committed_offsets([app])[app] == {}, "nothing of the application written"

    restore(target, repartition.topic, 0, through[25:])
    status, said = plan_and_apply(str(tmp_path / "plan-whole.json"))
    assert status == 0, said
    written = {tp.topic: c.offset for tp, c in target.committed_offsets([app])[app].items()}
    assert written == {app_in: 40, repartition.topic: 40}
    with streams_application(brokers.target, app, app_in, app_out, tmp_path / "state-target", repartition=True):
        time.sleep(3)  # it runs: what it would process again reaches its output
        assert target.list_groups()[app] == "streams"
        assert {tp.topic: c.offset for tp, c in target.committed_offsets([app])[app].items()} == written
    assert target.log_bounds([TP(app_out, 0)])[TP(app_out, 0)].end == 0, "nothing processed twice"


def share_groups_tool(broker: ApacheBroker, *args: str) -> str:
    """Kafka's own kafka-share-groups (ShareGroupCommand): what an operator sets and reads a share group with."""
    done = java_tool(
        "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
        ["--bootstrap-server", broker.bootstrap_servers, *args],
        log4j=broker.log4j,
        version=broker.version,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def start_offsets_shown(broker: ApacheBroker, group: str, topic: str) -> dict[int, str]:
    """The start offset per partition kafka-share-groups --describe --offsets shows (``-``: none)."""
    rows = [
        line.split() for line in share_groups_tool(broker, "--describe", "--group", group, "--offsets").splitlines()
    ]
    return {int(row[2]): row[3] for row in rows if len(row) >= 4 and row[0] == group and row[1] == topic}


def set_start_offsets(cluster: KafkaCluster, group: str, offsets: dict[TP, int]) -> None:
    """Set a share group's start offsets as the tests' setting (Kafka's own tool does it in the test of the
    restore, which checks this code against it; here a JVM start each time is time the suite spends)."""
    done = cluster.alter_share_start_offsets({group: {tp: CommittedOffset(o, None) for tp, o in offsets.items()}})
    assert not any(done[group].values()), done


def start_offsets(cluster: KafkaCluster, group: str) -> dict[int, int]:
    """A share group's start offset per partition, as this code reads them (checked against Kafka's tool)."""
    return {tp.partition: c.offset for tp, c in cluster.share_start_offsets([group]).get(group, {}).items()}


SHARE_APP = Path(__file__).parent.parent / "fixtures" / "ShareApp.java"
"""A share consumer that acknowledges out of order and holds (run from source by ``java``)."""


@contextmanager
def share_consumer(broker: ApacheBroker, group: str, topic: str, accepts_from: int) -> Iterator[str]:
    """Kafka's share consumer in ``group`` given one delivery of ``topic``: it acknowledges the records at or
    past ``accepts_from`` and leaves those before unacknowledged (the start offset stays at the first), until
    the block ends. Yields what it said it did."""
    with java_application(broker, SHARE_APP, [group, topic, str(accepts_from)], "HOLDING") as said:
        yield said


def test_a_share_groups_start_offsets_are_restored_exactly_and_rolled_back(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """On 4.4 a share group, beside a consumer group, is snapshotted as one: on partition 0 Kafka's own tool
    set its start offset to 120 and its consumer then acknowledged the records from 170 on and left 120-169
    unacknowledged (the start offset stays at 120; 30 records past it are done), on partition 1 the tool set
    its end, 200. It is planned exactly onto a restore that began at source offset 10 (110 and 190), the 30
    records said to be delivered again, applied through the fence with AlterShareGroupOffsets — Kafka's tool
    reads 110 and 190 on the target — and rolled back to what the target held before. Kafka 3.9 has no share
    groups: every group it lists is classic."""
    assert isinstance(brokers.source, ApacheBroker) and isinstance(brokers.target, ApacheBroker)
    if brokers.source.version.startswith("3."):
        assert set(source.list_groups().values()) <= {"classic"}
        assert not internals.api_supported(source._admin, share_protocol.DESCRIBE_SHARE_GROUP_OFFSETS)
        return
    topic, queue, consumers = unique("orders"), unique("queue"), unique("billing")
    source.create_topics({topic: 2})
    records = {p: produce(source, topic, p, 200) for p in range(2)}
    commit(source, consumers, {TP(topic, 0): 12})
    for partition, start in ((0, 120), (1, 200)):
        share_groups_tool(brokers.source, "--reset-offsets", "--group", queue, "--topic", f"{topic}:{partition}",
                          "--to-offset", str(start), "--execute")  # fmt: skip
    assert source.list_groups()[queue] == "share"
    snaps, plan_path = str(tmp_path / "snaps"), tmp_path / "plan.json"
    source_flags = ("--bootstrap-servers", brokers.source.bootstrap_servers)
    with share_consumer(brokers.source, queue, topic, accepts_from=170) as said:
        assert said == "HOLDING 80 seen, 30 accepted", said  # partition 0's 120-199; none past 1's end
        status, out, err = run_cli("snapshot", *source_flags, "--groups", f"{queue}|{consumers}", "--output", snaps)
        assert status == 0, out + err
    target.create_topics({topic: 2})
    for p in range(2):
        restore(target, topic, p, [r for r in records[p] if r.offset >= 10])
    target_flags = ("--bootstrap-servers", brokers.target.bootstrap_servers)
    status, out, err = run_cli("plan", "--snapshot", snaps, *target_flags, "--output", str(plan_path))
    assert status == 0, out + err
    assert "delivered again   30 records share groups had acknowledged past their start" in out, out
    planned = {(e.group, e.partition): e for e in PlanFile(str(plan_path)).load().entries}
    assert {k: (e.target_offset, e.exact, e.group_kind, e.redelivered) for k, e in planned.items()} == {
        (queue, 0): (110, True, "share", 30),
        (queue, 1): (190, True, "share", 0),
        (consumers, 0): (2, True, None, None),
    }
    # The target's share group already holds partition 1 (at 3), not partition 0: what rollback puts back.
    share_groups_tool(brokers.target, "--reset-offsets", "--group", queue, "--topic", f"{topic}:1",
                      "--to-offset", "3", "--execute")  # fmt: skip
    where = ("--plan", str(plan_path), "--bootstrap-servers", brokers.target.bootstrap_servers)
    status, out, err = run_cli("apply", *where, "--execute")
    assert status == 0, out + err
    assert start_offsets_shown(brokers.target, queue, topic) == {0: "110", 1: "190"}
    assert target.list_groups()[queue] == "share" and target.list_groups()[consumers] == "classic"
    assert target.committed_offsets([consumers])[consumers] == {TP(topic, 0): CommittedOffset(2, None)}

    status, out, err = run_cli("rollback", *where, "--execute")
    assert status == 0, out + err
    # DeleteShareGroupOffsets removes a whole topic's: partition 1 is set back to what it held.
    assert start_offsets_shown(brokers.target, queue, topic) == {1: "3"}
    assert target.committed_offsets([consumers]) == {consumers: {}}


def test_a_migration_moves_a_share_group_once_it_is_empty_on_the_source(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """On 4.4 ``migrate`` moves a share group as it moves a consumer group: named among the groups it waits for
    while its consumer holds records on the source (listed Stable), then, empty, its start offset (60) proven
    on a replica without headers and written there."""
    assert isinstance(brokers.source, ApacheBroker) and isinstance(brokers.target, ApacheBroker)
    if brokers.source.version.startswith("3."):
        return
    topic, queue = unique("move-jobs"), unique("move-queue")
    source.create_topics({topic: 1})
    target.create_topics({topic: 1})
    records = produce(source, topic, 0, 100)
    restore(target, topic, 0, records, header=None)
    set_start_offsets(source, queue, {TP(topic, 0): 60})
    flags = ["--source-bootstrap-servers", brokers.source.bootstrap_servers, "--bootstrap-servers",
             brokers.target.bootstrap_servers, "--snapshots", str(tmp_path / "snapshots"), "--groups", queue,
             "--poll-interval", "0.3", "--execute"]  # fmt: skip
    with share_consumer(brokers.source, queue, topic, accepts_from=1_000):  # holds 60-99, acknowledges none
        status, out, err = run_cli("migrate", *flags, "--plan", str(tmp_path / "held.json"), "--wait-timeout", "1")
    assert status != 0 and queue in out + err and "Stable" in out + err, out + err
    assert target.committed_offsets([queue]) == {queue: {}}
    status, out, err = run_cli("migrate", *flags, "--plan", str(tmp_path / "plan.json"))
    assert status == 0, out + err
    assert start_offsets(target, queue) == {0: 60}


def test_a_consumer_groups_write_into_a_share_group_of_its_id_is_refused_by_name(
    brokers: Brokers, target: KafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On 4.4 the brokers acknowledge a transactional commit into a share group and apply none of it (shown
    with the write's own check left out): the fenced write refuses a consumer group's offsets where the target
    holds a share group of that id, by name, and writes nothing; an admin commit the brokers refuse."""
    assert isinstance(brokers.target, ApacheBroker)
    if brokers.target.version.startswith("3."):
        return
    topic, queue = unique("kinds"), unique("kinds-queue")
    target.create_topics({topic: 1})
    target.produce(topic, 0, [(b"k", b"v", [], None)] * 10)
    tp = TP(topic, 0)
    set_start_offsets(target, queue, {tp: 4})
    with KafkaCluster(target.settings) as writer:  # the plan says consumer group: not told it is a share group
        writer.hold_fence()
        assert writer.alter_offsets_many({queue: {tp: CommittedOffset(7, None)}}) == {queue: {tp: SHARE_GROUP_THERE}}
        monkeypatch.setattr(writer, "_not_writable", lambda groups: {})
        with pytest.raises(ClusterError, match="acknowledged the write's transaction and shows none of its offsets"):
            writer.alter_offsets_many({queue: {tp: CommittedOffset(8, None)}})
    assert target.alter_offsets(queue, {tp: CommittedOffset(9, None)}) == {tp: "GroupIdNotFoundError"}
    assert start_offsets(target, queue) == {0: 4}, "acknowledged, and none of it applied"
    assert target.committed_offsets([queue]) == {queue: {}}


def test_the_workflow_restores_a_share_group_and_reports_it(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster
) -> None:
    """On 4.4 the deployed workflow (moto's state machine, the real handlers) carries a share group as the
    CLI does: the scheduled snapshot reads its start offset (60), the run plans it exactly onto a restore that
    began at source offset 10 and writes 50 with AlterShareGroupOffsets; its report names the kind."""
    assert isinstance(brokers.source, ApacheBroker) and isinstance(brokers.target, ApacheBroker)
    if brokers.source.version.startswith("3."):
        return
    topic, queue = unique("flow-jobs"), unique("flow-queue")
    source.create_topics({topic: 1})
    records = produce(source, topic, 0, 100)
    set_start_offsets(source, queue, {TP(topic, 0): 60})
    with local_workflow(brokers.source.bootstrap_servers, brokers.target.bootstrap_servers) as flow:
        run_snapshot(brokers.source_settings, S3Store("offset-restore", "", flow.s3),
                     SnapshotOptions(groups=queue, cluster="src"))  # fmt: skip
        target.create_topics({topic: 1})
        restore(target, topic, 0, [r for r in records if r.offset >= 10])
        result = flow.run({"groups": queue, "mode": "apply"}, name="share-run-1")
        assert result["status"] == "SUCCEEDED", result.get("cause")
        report = flow.report("share-run-1")
    assert start_offsets(target, queue) == {0: 50}
    [entry] = report["entries"]
    assert (entry["group_kind"], entry["target_offset"], entry["exact"], entry["status"]) == (
        "share",
        50,
        True,
        "committed",
    )
    assert report["outcome"] == "applied"


def test_a_share_group_with_a_consumer_on_the_target_is_waited_for_and_a_fenced_writer_sets_nothing(
    brokers: Brokers, target: KafkaCluster
) -> None:
    """On 4.4 a share group whose consumer runs on the target is listed Stable: the write's check sees it
    and the broker refuses AlterShareGroupOffsets into it (NON_EMPTY_GROUP); a writer another took the fence
    from sets no start offset and removes none (the share requests have no transactional form: the fence is
    confirmed right before them); the writer holding the fence sets them once the consumer is gone."""
    assert isinstance(brokers.target, ApacheBroker)
    if brokers.target.version.startswith("3."):
        return
    topic, queue = unique("jobs"), unique("queue")
    target.create_topics({topic: 1})
    target.produce(topic, 0, [(b"k", f"v{i}".encode(), [], None) for i in range(50)])
    tp, broker = TP(topic, 0), brokers.target
    set_start_offsets(target, queue, {tp: 7})
    with KafkaCluster(target.settings) as writer:
        writer.treat_as_share_groups([queue])
        writer.hold_fence()
        with KafkaCluster(target.settings) as newer:
            newer.hold_fence()
        with pytest.raises(WriterFencedError):
            writer.alter_offsets_many({queue: {tp: CommittedOffset(20, None)}})
        with pytest.raises(WriterFencedError):
            writer.delete_offsets(queue, [tp])
    assert start_offsets(target, queue) == {0: 7}

    command = ["java", "-Xmx256m", *JVM, "-cp", kafka_classpath(broker.version),
               "org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server", broker.bootstrap_servers,
               "--topic", topic, "--group", queue]  # fmt: skip
    consumer = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while (info := target.describe_groups([queue]).get(queue)) is None or not info.occupied:
            assert consumer.poll() is None and time.monotonic() < deadline, info
            time.sleep(0.3)
        assert info.state == "Stable" and info.protocol_type == "share"
        with KafkaCluster(target.settings) as holder:
            holder.treat_as_share_groups([queue])
            holder.hold_fence()
            refused = holder.alter_offsets_many({queue: {tp: CommittedOffset(20, None)}})
        assert refused == {queue: {tp: share_protocol.NOT_EMPTY}}
    finally:
        consumer.terminate()
        consumer.wait(30)
    deadline = time.monotonic() + 60
    while target.describe_groups([queue])[queue].occupied:
        assert time.monotonic() < deadline, "the console share consumer did not leave"
        time.sleep(0.3)
    with KafkaCluster(target.settings) as holder:
        holder.treat_as_share_groups([queue])
        holder.hold_fence()
        assert holder.alter_offsets_many({queue: {tp: CommittedOffset(20, None)}}) == {queue: {tp: None}}
    assert start_offsets(target, queue) == {0: 20}
