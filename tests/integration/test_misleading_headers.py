"""Issue 29 end to end on the real brokers: restores whose headers mislead (the first records without
the header, one wrong header), replicas copied twice, evidence cut by the restore's start. The CLI
takes the snapshot, plans and applies; an independent reader of the target log judges every entry
(tests/disorder.py) and a real consumer of each group reads what the group reads next."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition
from offset_restore.cli.main import main
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP

from tests.disorder import Judgement, Slot, copy, read_target, record_key, write_layout
from tests.helpers import Brokers, Produced, commit, produce, unique

N = 60
GROUPS = (0, 2, 3, 4, 5, 20, 21, 35, 45, 60)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


class Case:
    """A source partition of 60 records, a group at each of ``GROUPS``, snapshotted by the CLI."""

    def __init__(self, brokers: Brokers, source: KafkaCluster, folder: Path) -> None:
        self.brokers, self.folder = brokers, folder
        self.topic = unique("mislead")
        source.create_topics({self.topic: 1})
        self.records: list[Produced] = produce(source, self.topic, 0, N)
        self.groups = {unique(f"mislead-c{c}"): c for c in GROUPS}
        for group, c in self.groups.items():
            commit(source, group, {TP(self.topic, 0): c})
        status, _, err = run(
            "snapshot", "--bootstrap-servers", brokers.source.bootstrap_servers, "--output", str(folder / "snaps"),
            "--groups", "|".join(self.groups),
        )  # fmt: skip
        assert status == 0, err

    def restore(self, target: KafkaCluster, layout: list[Slot]) -> str:
        restored = unique("mislead-dr")
        target.create_topics({restored: 1})
        stamps = {r.offset: r.timestamp for r in self.records}
        values = {r.offset: r.value for r in self.records}
        write_layout(
            target,
            restored,
            0,
            layout,
            stamps,
            values=values,
            extra_headers={r.offset: r.headers for r in self.records},
        )
        return restored

    def plan(self, restored: str, *options: str) -> dict:
        plan = self.folder / f"{restored}.json"
        status, out, err = run(
            "plan", "--snapshot", str(self.folder / "snaps"), "--bootstrap-servers",
            self.brokers.target.bootstrap_servers, "--topic-map", f"{self.topic}={restored}", "--output", str(plan),
            *options,
        )  # fmt: skip
        assert status in (0, 3), out + err
        return json.loads(plan.read_text())

    def judged(self, restored: str, plan: dict) -> Judgement:
        from offset_restore.formats.plan import PlanEntry

        keys = {record_key(0, r.offset): r.offset for r in self.records}
        log = read_target(self.brokers.target.bootstrap_servers, restored, 0, keys)
        judgement = Judgement()
        for entry in plan["entries"]:
            judgement.judge(PlanEntry.model_validate(entry), log)
        return judgement

    def apply(self, restored: str) -> tuple[int, str]:
        plan = self.folder / f"{restored}.json"
        status, out, err = run(
            "apply", "--plan", str(plan), "--bootstrap-servers", self.brokers.target.bootstrap_servers,
            "--poll-interval", "0.2", "--execute",
        )  # fmt: skip
        return status, out + err

    def next_read(self, restored: str, group: str) -> int | None:
        """The source record a real consumer of ``group`` reads first on the target (None: none)."""
        consumer = KafkaConsumer(
            bootstrap_servers=self.brokers.target.bootstrap_servers,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="none",
        )
        tp = TopicPartition(restored, 0)
        keys = {record_key(0, r.offset): r.offset for r in self.records}
        try:
            consumer.assign([tp])
            if (consumer.committed(tp) or 0) >= consumer.end_offsets([tp])[tp]:
                return None  # at the log's end: nothing to read (polling would wait in vain)
            for _ in range(20):
                for record in consumer.poll(timeout_ms=500).get(tp, []):
                    return keys.get(record.key)
            return None
        finally:
            consumer.close()


@pytest.fixture
def case(brokers: Brokers, source: KafkaCluster, tmp_path: Path) -> Case:
    return Case(brokers, source, tmp_path)


def by_source(plan: dict) -> dict[int, dict]:
    return {e["source_offset"]: e for e in plan["entries"]}


@pytest.mark.parametrize("order_check", ["windows", "full"])
def test_the_restores_first_records_without_the_header_are_not_skipped(
    case: Case, target: KafkaCluster, order_check: str
) -> None:
    """Source records 0..4 restored without the header (same key, value, timestamp), 5.. with it: the
    groups committed at 0..4 used to resume at target 5, 'earliest, exact'. Each resumes at its own
    record; apply verifies it, and a real consumer reads source 2 next for the group at 2."""
    layout = [*(Slot(s, None) for s in range(5)), *copy(range(5, N))]
    restored = case.restore(target, layout)
    plan = case.plan(restored, "--order-check", order_check)
    judgement = case.judged(restored, plan)
    assert judgement.holds and judgement.positions == len(GROUPS), judgement.problems
    entries = by_source(plan)
    assert [entries[c]["target_offset"] for c in (0, 2, 3, 4, 5)] == [0, 2, 3, 4, 5]
    assert entries[2]["method"] == "fingerprint" and "no offset header" in entries[2]["reason"]
    status, said = case.apply(restored)
    assert status == 0, said
    for group, c in case.groups.items():
        assert case.next_read(restored, group) == (c if c < N else None), (group, c)


@pytest.mark.parametrize("header", [18, 45, 50], ids=["says-earlier", "says-later", "says-unread"])
def test_one_wrong_header_at_the_committed_record_is_not_skipped(case: Case, target: KafkaCluster, header: int) -> None:
    """Source record 20 restored with a header that says 18, 45 or 50: the group at 20 used to resume
    one past it, 'exact'. It resumes at it, not exact, and says why. Where the snapshot read the record
    the header names (18, 45) and it is another record, the header is wrong and the groups past it
    stay exact; where it did not (50), the record may be either, and the groups up to 50 resume no
    later than it (read again, never skipped)."""
    layout = copy(range(N))
    layout[20] = Slot(20, header)
    restored = case.restore(target, layout)
    plan = case.plan(restored)
    judgement = case.judged(restored, plan)
    assert judgement.holds, judgement.problems
    at_20 = by_source(plan)[20]
    assert at_20["target_offset"] == 20 and not at_20["exact"]
    assert "its content is the snapshot's record 20" in at_20["reason"]
    at_45 = by_source(plan)[45]
    if header == 50:
        assert at_45["target_offset"] == 20 and not at_45["exact"] and at_45["max_duplicates"] >= 25
    else:
        assert "the header is wrong" in at_20["reason"]
        assert (at_45["target_offset"], at_45["exact"]) == (45, True)
    assert case.apply(restored)[0] == 0
    group_20 = next(g for g, c in case.groups.items() if c == 20)
    assert case.next_read(restored, group_20) == 20


def test_a_replica_copied_twice_is_not_called_exact(case: Case, target: KafkaCluster) -> None:
    """A replica without headers where a task restarted: 0..40, then 30..34 again, then 41..59. The
    groups at 35 (and before) read 30..34 again: not exact; the group at 45 after the second copy is."""
    layout = [Slot(s, None) for s in [*range(41), *range(30, 35), *range(41, N)]]
    restored = case.restore(target, layout)
    plan = case.plan(restored, "--strategies", "fingerprint")
    judgement = case.judged(restored, plan)
    assert judgement.holds, judgement.problems
    entries = by_source(plan)
    assert not entries[35]["exact"] and entries[35]["max_duplicates"] is None
    assert entries[45]["exact"] and entries[45]["target_offset"] == 50
    status, said = case.apply(restored)
    assert status == 0, said
    for group, c in case.groups.items():  # a real consumer reads its own record next (or an earlier one)
        first = case.next_read(restored, group)
        assert (first is None) if c == N else (first == c if entries[c]["exact"] else first is not None and first <= c)


def test_evidence_cut_by_the_restores_start_is_exact(case: Case, target: KafkaCluster) -> None:
    """Source records 0..19 lost before the copy, a replica without headers from record 20: the group
    at 20 (its evidence 17..19 not on the target) finds its record at the target's start, once: exact."""
    restored = case.restore(target, [Slot(s, None) for s in range(20, N)])
    plan = case.plan(restored, "--strategies", "fingerprint")
    assert case.judged(restored, plan).holds
    at_20 = by_source(plan)[20]
    assert (at_20["target_offset"], at_20["exact"], at_20["method"]) == (0, True, "fingerprint"), at_20


@pytest.mark.parametrize("lost", [1, 3], ids=["one-lost", "three-lost"])
def test_a_header_naming_a_lost_record_does_not_hide_the_record_it_is_on(
    case: Case, target: KafkaCluster, lost: int
) -> None:
    """Source records 20-lost..19 lost in the restore, and source 20 restored with a header that says 19 (a
    restore worker's bug). The headers still rise (…, 19, 21, …): no order check reads the region, and the
    group at 20 used to resume past its own next record by the headers alone, 'exact'. It resumes at it,
    not exact: its content is the snapshot's record 20, and the snapshot's record 19 is another."""
    layout = [*copy(range(20 - lost)), Slot(20, 19), *copy(range(21, N))]
    restored = case.restore(target, layout)
    plan = case.plan(restored)
    judgement = case.judged(restored, plan)
    assert judgement.holds, judgement.problems
    at_20 = by_source(plan)[20]
    assert (at_20["target_offset"], at_20["exact"]) == (20 - lost, False), at_20
    assert "the header is wrong" in at_20["reason"]
    assert case.apply(restored)[0] == 0
    group_20 = next(g for g, c in case.groups.items() if c == 20)
    assert case.next_read(restored, group_20) == 20
