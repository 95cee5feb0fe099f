"""``offset-restore migrate`` on Apache Kafka (issue 35): the source is up, so every group moves exactly —
the live ones too. Consumers run on the source until the migration starts and stop during its wait; a
replica brings the last records only after the snapshot (the migration plans again until it has); a group
that never stops is waited for, then named: nothing written, or the others moved without it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from kafka import KafkaConsumer
from offset_restore.formats.plan import Plan
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP

from tests.helpers import Brokers, Produced, active_member, commit, produce, restore, unique
from tests.integration.test_apply import run

LOST = 10
"""The source's first 10 records were deleted (retention) before the replica was made from its log start:
offsets differ by 10."""
FIRST_COPY = 150
"""The replica holds source offsets 10..149 when the migration starts; the rest comes later."""


@contextmanager
def consuming(bootstrap_servers: str, group: str, topic: str, stop: threading.Event) -> Iterator[None]:
    """A real consumer of ``group``, reading a few records at a time and committing after each poll, until
    ``stop`` is set (then it closes, as an operator's stopped service does)."""

    def work() -> None:
        consumer = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap_servers,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=3,
        )
        try:
            while not stop.is_set():
                if consumer.poll(timeout_ms=300):  # what it read, committed as a service does after processing it
                    consumer.commit()
        except Exception as error:  # a dying consumer must say why, not hang the test
            failures.append(error)
        finally:
            consumer.close()

    failures: list[Exception] = []
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not failures, failures


class Migrating:
    """Two partitions of 200 records, the first 10 deleted; static groups at the end, inside, near the
    start; a replica (no offset headers, as MirrorMaker 2's) of the source from its log start, the last 50
    records of each partition copied only ``late_s`` after the migration starts."""

    def __init__(self, brokers: Brokers, source: KafkaCluster, target: KafkaCluster, folder: Path) -> None:
        self.brokers, self.source, self.target, self.folder = brokers, source, target, folder
        self.topic, self.prefix = unique("accounts"), unique("move")
        source.create_topics({self.topic: 2})
        target.create_topics({self.topic: 2})
        self.records: dict[int, list[Produced]] = {p: produce(source, self.topic, p, 200) for p in range(2)}
        source.delete_records({TP(self.topic, p): LOST for p in range(2)})
        self.static = {
            f"{self.prefix}-caught-up": {0: 200, 1: 200},
            f"{self.prefix}-inside": {0: 120, 1: 37},
            f"{self.prefix}-near-start": {0: 12, 1: 160},
        }
        for group, offsets in self.static.items():
            commit(source, group, {TP(self.topic, p): o for p, o in offsets.items()})
        for p in range(2):
            restore(target, self.topic, p, self.records[p], keep=lambda r: LOST <= r.offset < FIRST_COPY, header=None)

    def copy_the_rest(self, late_s: float) -> threading.Timer:
        def rest() -> None:
            with KafkaCluster(self.brokers.target_settings) as target:
                for p in range(2):
                    restore(target, self.topic, p, self.records[p], keep=lambda r: r.offset >= FIRST_COPY, header=None)

        timer = threading.Timer(late_s, rest)
        timer.start()
        return timer

    def migrate(self, *options: str) -> tuple[int, str, str]:
        return run(
            "migrate", "--source-bootstrap-servers", self.brokers.source.bootstrap_servers,
            "--bootstrap-servers", self.brokers.target.bootstrap_servers,
            "--snapshots", str(self.folder / "snapshots"), "--plan", str(self.folder / "plan.json"),
            "--groups", f"{self.prefix}-.*", "--poll-interval", "0.3", "--target-cluster", "new", *options,
        )  # fmt: skip

    @contextmanager
    def started_again(self, final_snapshot_taken: Callable[[], bool]) -> Iterator[threading.Event]:
        """Once the final snapshot is taken, group ``inside``'s consumer runs on the source for 30 records and
        stops (its committed offset moves 120 -> 150), and ``near-start``'s starts and keeps running (the
        event yielded is set once it has joined) until the block ends."""
        _, inside, near = self.static
        joined, stop = threading.Event(), threading.Event()

        def meddle() -> None:
            deadline = time.monotonic() + 60
            while not final_snapshot_taken() and time.monotonic() < deadline:
                time.sleep(0.05)  # from now on the final snapshot's positions are the plan's
            with KafkaCluster(self.brokers.source_settings) as source:
                commit(source, inside, {TP(self.topic, 0): 150, TP(self.topic, 1): 37})
            with active_member(self.brokers.source.bootstrap_servers, near, self.topic):
                joined.set()
                stop.wait(120)

        meddler = threading.Thread(target=meddle, daemon=True)
        meddler.start()
        try:
            yield joined
        finally:
            stop.set()
            meddler.join(timeout=30)

    def truth(self, groups: list[str]) -> dict[tuple[str, int], int]:
        """Where each group must resume on the target: the replica's copy of source record c (c - 10), or
        the first record for a group at or before the source's log start."""
        final = self.source.committed_offsets(groups)
        return {(g, tp.partition): max(0, c.offset - LOST) for g in groups for tp, c in final[g].items()}

    def on_target(self, groups: list[str]) -> dict[tuple[str, int], int]:
        committed = self.target.committed_offsets(groups)
        return {(g, tp.partition): c.offset for g in groups for tp, c in committed[g].items()}


@pytest.fixture
def migrating(brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path) -> Migrating:
    return Migrating(brokers, source, target, tmp_path)


def test_live_groups_and_a_replica_catching_up_all_move_exactly(migrating: Migrating) -> None:
    """Two groups consume on the source until 2 s into the migration's wait; the replica brings the last
    records 4 s in. Every group-partition resumes at its true next record: 0 read twice, 0 skipped. The
    offsets the target held before (an early one a replicator's sync had written) are kept in the plan:
    a rollback puts them back, and removes what the migration created."""
    inside = f"{migrating.prefix}-inside"
    commit(migrating.target, inside, {TP(migrating.topic, 0): 100})  # MM2's sync, early: 110 is true
    live = [f"{migrating.prefix}-live-a", f"{migrating.prefix}-live-b"]
    stop = threading.Event()
    with ExitStack() as running:
        for group in live:
            running.enter_context(consuming(migrating.brokers.source.bootstrap_servers, group, migrating.topic, stop))
        deadline = time.monotonic() + 20
        while len(migrating.source.committed_offsets(live)[live[1]]) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        scheduled = run(
            "snapshot", "--bootstrap-servers", migrating.brokers.source.bootstrap_servers,
            "--groups", f"{migrating.prefix}-.*", "--output", str(migrating.folder / "snapshots"),
        )  # fmt: skip
        assert scheduled[0] == 0, scheduled  # a scheduled one, while the live groups run: their rates
        time.sleep(0.5)
        threading.Timer(2.0, stop.set).start()
        late = migrating.copy_the_rest(4.0)
        status, out, err = migrating.migrate("--wait-timeout", "60", "--catch-up-timeout", "60", "--execute")
        late.join()
    plan = Plan.model_validate_json((migrating.folder / "plan.json").read_text())
    assert status == 0, out + err + str([e for e in plan.entries if not e.exact])
    groups = [*migrating.static, *live]
    truth = migrating.truth(groups)
    assert len(truth) == 10 and migrating.on_target(groups) == truth, out
    assert all(e.exact and e.status == "committed" for e in plan.entries), [e for e in plan.entries if not e.exact]
    assert "5 of 5 groups stopped on the source" in out and "every one of 10 group-partitions exact" in out, out
    assert plan.summary.groups_live == 0 and plan.summary.entries_exposure_unknown == 0, plan.summary
    assert all(e.exposure == 0 for e in plan.entries)  # stopped before the final snapshot: none read again
    waited = float(out.split("stopped on the source after ")[1].split()[0])
    assert waited >= 1.0, out  # the live groups were consuming when the migration started, and it waited
    plans = int(out.split(" exact after ")[1].split()[0])
    assert plans >= 2, out  # the caught-up group waited for the replica's last records
    status, out, err = run(
        "rollback", "--plan", str(migrating.folder / "plan.json"),
        "--bootstrap-servers", migrating.brokers.target.bootstrap_servers, "--target-cluster", "new", "--execute",
    )  # fmt: skip
    assert status == 0, out + err
    assert migrating.on_target(groups) == {(inside, 0): 100}  # the previous offset back; the others removed


def test_a_group_that_never_stops_is_named_and_nothing_is_written(migrating: Migrating) -> None:
    stuck = f"{migrating.prefix}-stuck"
    commit(migrating.source, stuck, {TP(migrating.topic, 0): 50})
    migrating.copy_the_rest(0).join()
    with active_member(migrating.brokers.source.bootstrap_servers, stuck, migrating.topic):
        status, out, err = migrating.migrate("--wait-timeout", "1.5", "--execute")
        assert status == 1, out + err
        assert f"1 groups still have members on the source after 1.5 s: {stuck} (Stable, 1 members" in err, err
        assert "nothing was written" in err
        assert not (migrating.folder / "plan.json").exists()
        assert migrating.on_target([*migrating.static, stuck]) == {}
        status, out, err = migrating.migrate("--wait-timeout", "1.5", "--on-wait-timeout", "commit_empty", "--execute")
    assert status == 3, out + err
    assert f"still active on the source, not moved: {stuck} (Stable, 1 members" in out, out
    groups = list(migrating.static)
    assert migrating.on_target(groups) == migrating.truth(groups) and migrating.on_target([stuck]) == {}


def test_without_execute_it_previews_and_commits_nothing(migrating: Migrating) -> None:
    """A preview looks once on the source, plans once (the replica is still behind: said, not waited
    for) and writes no offset."""
    status, out, err = migrating.migrate()
    assert status == 0, out + err
    assert "NOT CAUGHT UP" in out and "previewed as they are" in out, out
    assert "Preview of plan" in out and migrating.on_target(list(migrating.static)) == {}


def test_a_target_that_never_catches_up_writes_nothing_or_only_the_groups_proven_exact(migrating: Migrating) -> None:
    """The replica never brings source offsets 150..199: the caught-up group and near-start's partition 1
    cannot be proven. By default nothing is written; with commit_empty the group whose every partition is
    exact moves and the two others are named, untouched."""
    status, out, err = migrating.migrate("--catch-up-timeout", "1", "--execute")
    assert status == 3 and "NOT CAUGHT UP" in out and "nothing was written" in out, out + err
    assert migrating.on_target(list(migrating.static)) == {}
    (migrating.folder / "plan.json").unlink()
    status, out, err = migrating.migrate("--catch-up-timeout", "1", "--on-wait-timeout", "commit_empty", "--execute")
    assert status == 3 and "the groups proven exact are moved, the others not" in out, out + err
    caught_up, inside, near = migrating.static
    assert migrating.on_target([inside]) == migrating.truth([inside]) and migrating.on_target([caught_up, near]) == {}
    for group in (caught_up, near):
        assert f"skipped: {group}: " in out and "not proven exact (a migration writes only exact groups)" in out, out


def test_a_group_started_again_on_the_source_after_the_final_snapshot_is_not_moved(migrating: Migrating) -> None:
    """While the migration plans again for the replica's last records, one group's consumer runs on the
    source for 30 more records and stops (its committed offsets moved), and another's consumer starts and
    keeps running. Before, both were committed at the final snapshot's positions as exact, "0 read twice".
    Now one more look at the source right before each write holds both, named, and only the group that
    stayed stopped moves; the summary calls only that one stopped."""
    caught_up, inside, near = migrating.static
    planned = migrating.truth([caught_up])
    late = migrating.copy_the_rest(4.0)
    try:
        with migrating.started_again(lambda: any((migrating.folder / "snapshots").rglob("manifest.json"))) as joined:
            status, out, err = migrating.migrate("--catch-up-timeout", "60", "--execute")
            assert joined.is_set(), "the consumer never joined while the migration re-planned"
    finally:
        late.join()
    assert status == 3, out + err
    assert migrating.on_target([caught_up]) == planned and migrating.on_target([inside, near]) == {}, out
    assert f"{inside}: started again on the source after the final snapshot: its committed offsets there " in out
    assert f"moved ({migrating.topic}-0: 120 -> 150); not moved" in out, out
    assert f"{near}: started again on the source after the final snapshot: {near} (Stable, 1 members" in out, out
    assert "1 of 3 groups stopped on the source" in out and "2 more stopped, then started again" in out, out
    plan = Plan.model_validate_json((migrating.folder / "plan.json").read_text())
    held = [e for e in plan.entries if e.group in (inside, near)]
    assert held and all(e.status == "mapped" and e.outcome == "not_written" for e in held)
    assert all("started again on the source" in (e.reason or "") for e in held)


def test_a_topic_whose_shape_changed_is_not_waited_for(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """The target holds the topic in 2 partitions where the source has 4, its records without the partition
    header: no plan maps the group, however long the migration waits. It stops after its first plan, says
    so apart from "not caught up", and writes nothing — with a catch-up timeout of two minutes."""
    topic, group = unique("reshaped"), unique("move-reshaped")
    source.create_topics({topic: 4})
    target.create_topics({topic: 2})
    for q in range(4):
        records = produce(source, topic, q, 20)
        restore(target, topic, q % 2, records, header=None)
    commit(source, group, {TP(topic, q): 7 for q in range(4)})
    status, out, err = run(
        "migrate", "--source-bootstrap-servers", brokers.source.bootstrap_servers,
        "--bootstrap-servers", brokers.target.bootstrap_servers, "--snapshots", str(tmp_path / "snapshots"),
        "--plan", str(tmp_path / "plan.json"), "--groups", group, "--poll-interval", "0.3",
        "--catch-up-timeout", "120", "--execute",
    )  # fmt: skip
    assert status == 3, out + err
    assert "not exact after 1 plans" in out and "CANNOT BE MAPPED  4 of them" in out, out
    assert target.committed_offsets([group]) == {group: {}}
