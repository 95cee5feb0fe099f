"""A restore that ended short (issue 34): the backup of ``payments/2`` ended at source offset 279, the
snapshot saw the caught-up ``settlement`` group at 300 and ``billing`` at 290. Without a decision both
wait (``pending``) and say what declaring the restore complete would cost; with it — for the whole
restore, one partition, or recorded by the restore tool in DynamoDB — they resume after the last
restored record, exact on what exists, and what ``billing`` will never read is counted. The CLI and the
workflow's translate step answer alike."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from offset_restore.errors import BadInputError
from offset_restore.formats.plan import Plan, PlanEntry
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.keys import COMPLETE_SK, progress_key, progress_sk
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import open_location
from offset_restore.translate.checkpoints import DynamoCheckpoints
from offset_restore.workflow.report import render_report
from offset_restore.workflow.states.prepare import prepare_work
from offset_restore.workflow.states.translate import translate_work_item
from offset_restore.workflow.states.validate import RunInput

from tests.helpers import Brokers, commit, produce, restore, unique
from tests.integration.test_apply import run

RESTORED_UP_TO = 280  # payments/2's backup ends at source offset 279; partitions 0 and 1 are whole


class ShortRestore:
    """Three partitions of 300 records; ``settlement`` caught up, ``billing`` behind on 0 and 1 and at
    290 on 2; the snapshot, then a restore whose partition 2 stops at 279."""

    def __init__(self, brokers: Brokers, source: KafkaCluster, target: KafkaCluster, folder: Path) -> None:
        self.brokers, self.folder = brokers, folder
        self.topic, prefix = unique("payments"), unique("short")
        self.settlement, self.billing, self.behind = f"{prefix}-settlement", f"{prefix}-billing", f"{prefix}-behind"
        self.reader, self.ledger = f"{prefix}-reader", unique("ledger")  # the ledger topic is not restored
        source.create_topics({self.topic: 3, self.ledger: 1})
        produce(source, self.ledger, 0, 10)
        commit(source, self.reader, {TP(self.topic, 0): 50, TP(self.ledger, 0): 5})
        records = {p: produce(source, self.topic, p, 300) for p in range(3)}
        commit(source, self.settlement, {TP(self.topic, p): 300 for p in range(3)})
        commit(source, self.billing, {TP(self.topic, 0): 120, TP(self.topic, 1): 200, TP(self.topic, 2): 290})
        commit(source, self.behind, {TP(self.topic, 2): 100})  # inside the restored range, short of its end
        self.snapshots = folder / "snapshots"
        status, out, err = run(
            "snapshot", "--bootstrap-servers", brokers.source.bootstrap_servers, "--groups", f"{prefix}-.*",
            "--output", str(self.snapshots),
        )  # fmt: skip
        assert status == 0, out + err
        target.create_topics({self.topic: 3})
        for p in range(3):
            restore(target, self.topic, p, records[p] if p < 2 else records[p][:RESTORED_UP_TO])

    def plan(self, name: str, *options: str) -> tuple[int, str, dict[tuple[str, int], PlanEntry]]:
        path = self.folder / f"{name}.json"
        status, out, err = run(
            "plan", "--snapshot", str(self.snapshots), "--bootstrap-servers", self.brokers.target.bootstrap_servers,
            "--output", str(path), "--target-cluster", "dr", *options,
        )  # fmt: skip
        assert status in (0, 3), out + err
        return status, out, {(e.group, e.partition): e for e in Plan.model_validate_json(path.read_text()).entries}


@pytest.fixture
def short(brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path) -> ShortRestore:
    return ShortRestore(brokers, source, target, tmp_path)


def _resumes_after_the_restore(entry: PlanEntry, never_restored: int) -> None:
    assert (entry.status, entry.method, entry.exact, entry.max_duplicates) == ("mapped", "end", True, 0), entry
    assert entry.target_offset == RESTORED_UP_TO and entry.never_restored == never_restored, entry
    assert "declared complete at source offset 279" in (entry.reason or ""), entry.reason


def test_without_the_decision_the_short_partition_waits_and_says_its_cost(short: ShortRestore) -> None:
    status, out, entries = short.plan("waiting")
    assert status == 3, out
    settled, billed = entries[(short.settlement, 2)], entries[(short.billing, 2)]
    assert settled.status == billed.status == "pending"
    scope = f"--restore-complete {short.topic}/2"
    assert scope in (settled.reason or "") and "misses nothing it had not processed" in (settled.reason or "")
    assert scope in (billed.reason or "") and "would never read source records 290..299" in (billed.reason or "")
    assert "at most 10 records" in (billed.reason or "")
    assert all(e.status == "mapped" and e.exact for e in entries.values() if e.topic == short.topic and e.partition < 2)


@pytest.mark.parametrize("scope", [None, "{topic}/2", "{topic}"])
def test_declared_complete_the_caught_up_group_resumes_exactly_and_the_lost_tail_is_counted(
    short: ShortRestore, scope: str | None
) -> None:
    options = ["--restore-complete"] + ([scope.format(topic=short.topic)] if scope else [])
    _, out, entries = short.plan("complete", *options)
    assert "pending           0" in out, out  # exit 3 still: the reader's ledger topic is not on the target
    assert "never restored    at most 30 records the groups had not processed" in out, out
    _resumes_after_the_restore(entries[(short.settlement, 2)], 0)
    _resumes_after_the_restore(entries[(short.billing, 2)], 10)
    behind = entries[(short.behind, 2)]  # resumes at its own record; what follows the restore's end is lost
    assert (behind.method, behind.exact, behind.target_offset, behind.never_restored) == ("header", True, 100, 20)
    assert "source records 280..299 (at most 20) will never be read" in (behind.reason or ""), behind.reason
    billed = entries[(short.billing, 0)]  # whole partition: nothing lost (or, not declared, not counted)
    assert billed.target_offset == 120 and billed.never_restored in (None, 0), billed
    document = json.loads(render_report({"restore_id": "r"}, list(entries.values()), "planned")["report.json"])
    assert document["headline"]["lost_records"] == 30 and document["headline"]["cards"]["pending"] == 0


def test_another_partition_declared_complete_leaves_the_short_one_waiting(short: ShortRestore) -> None:
    status, _, entries = short.plan("other", "--restore-complete", f"{short.topic}/1")
    assert status == 3 and entries[(short.settlement, 2)].status == "pending"


def test_the_workflow_reads_the_decision_from_its_input_or_from_the_restore_tool(
    short: ShortRestore, table: str
) -> None:
    """The execution input's ``restore_complete``, or the restore tool's ``COMPLETE`` item in the table:
    the translate step gives the CLI's entries."""
    _, _, cli = short.plan("cli", "--restore-complete", f"{short.topic}/2")
    _resumes_after_the_restore(cli[(short.settlement, 2)], 0)
    dynamodb = boto3.client("dynamodb")

    def workflow(restore_id: str, **given: object) -> dict[tuple[str, int], PlanEntry]:
        repository = SnapshotRepository(open_location(str(short.snapshots)))
        _, manifest = repository.latest(None)
        run_input = RunInput.model_validate(
            {"restore_id": restore_id, "source_cluster": manifest.cluster, "target_cluster": "dr", **given}
        )
        store = open_location(str(short.folder / restore_id))
        mappings = MappingStore(table, dynamodb)
        for key in prepare_work(run_input, repository, store)["work_items"]:
            checkpoints = DynamoCheckpoints(table, dynamodb)
            translate_work_item(store, key, short.brokers.target.settings(), mappings, target_cluster="dr",
                                checkpoints=checkpoints)  # fmt: skip
        return {(e.group, e.partition): e for e in mappings.entries(restore_id)}

    def answer(entries: dict[tuple[str, int], PlanEntry]) -> dict[tuple[str, int], tuple[object, ...]]:
        return {k: (e.status, e.target_offset, e.method, e.exact, e.never_restored) for k, e in entries.items()}

    assert answer(workflow("by-input", restore_complete=[f"{short.topic}/2"])) == answer(cli)
    # The runbook's sequence: a run, then the same restore run again once the restore is declared complete. An
    # entry the first run mapped keeps its answer and takes the count the second found (20 never restored).
    assert workflow("in-two-runs")[(short.behind, 2)].never_restored is None
    assert answer(workflow("in-two-runs", restore_complete=[f"{short.topic}/2"])) == answer(cli)
    with pytest.raises(BadInputError, match="no group of the snapshot commits on topic dr-payments"):
        workflow("refused", restore_complete=["dr-payments/2"])  # refused in Prepare, before any work item
    assert workflow("before-record")[(short.settlement, 2)].status == "pending"
    dynamodb.put_item(
        TableName=table,
        Item={"pk": {"S": progress_key("dr", short.topic, 2)}, "sk": {"S": COMPLETE_SK},
              "last_source_offset": {"N": "279"}},
    )  # fmt: skip
    assert answer(workflow("by-record")) == answer(cli)


def test_the_csv_leaves_out_what_apply_holds_and_writes_what_it_writes(short: ShortRestore) -> None:
    """``--csv`` follows apply's rules: a group with a pending entry is left out whole (half a group moved
    by kafka-consumer-groups is what apply refuses), a group that also reads a topic missing on the
    target has its other lines, and the missing topic is named."""
    csv = short.folder / "plan.csv"
    status, out, _ = short.plan("csv", "--csv", str(csv))
    assert status == 3
    lines = csv.read_text().splitlines()
    assert sorted(lines) == [f"{short.behind},{short.topic},2,100", f"{short.reader},{short.topic},0,50"], lines
    assert "left out of the CSV: 2 groups held whole" in out and short.settlement in out, out
    assert f"not in the CSV: the unmapped partitions of {short.ledger} (1)" in out, out
    status, out, _ = short.plan("csv-complete", "--csv", str(short.folder / "all.csv"), "--restore-complete")
    written = (short.folder / "all.csv").read_text().splitlines()
    assert len(written) == 8 and f"{short.settlement},{short.topic},2,{RESTORED_UP_TO}" in written, written


def test_a_restore_without_headers_finishes_by_its_checkpoints_and_its_recorded_end(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path, table: str
) -> None:
    """The checkpoint strategy: a restore tool that writes no header but its progress pairs, and ended at
    source offset 59 of 100. Its COMPLETE item naming 59 finishes the partition exactly; one naming
    another offset (left by an earlier restore) does not; the operator's word resumes after the last pair
    with what follows it counted as read twice."""
    topic, group = unique("ckpt"), unique("ckpt-g")
    source.create_topics({topic: 1})
    records = produce(source, topic, 0, 100)
    commit(source, group, {TP(topic, 0): 80})
    snapshots = tmp_path / "snapshots"
    status, out, err = run("snapshot", "--bootstrap-servers", brokers.source.bootstrap_servers, "--groups", group,
                           "--output", str(snapshots))  # fmt: skip
    assert status == 0, out + err
    target.create_topics({topic: 1})
    dynamodb = boto3.client("dynamodb")
    for source_offset, target_offset in restore(target, topic, 0, records[:60], header=None)[9::10]:
        item = {"pk": {"S": progress_key("dr", topic, 0)}, "sk": {"S": progress_sk(source_offset)},
                "target_offset": {"N": str(target_offset)}}  # fmt: skip
        dynamodb.put_item(TableName=table, Item=item)

    def plan(name: str, *options: str) -> PlanEntry:
        path = tmp_path / f"{name}.json"
        status, out, err = run(
            "plan", "--snapshot", str(snapshots), "--bootstrap-servers", brokers.target.bootstrap_servers,
            "--output", str(path), "--target-cluster", "dr", "--strategies", "checkpoint",
            "--checkpoint-table", table, *options,
        )  # fmt: skip
        assert status in (0, 3), out + err
        [entry] = Plan.model_validate_json(path.read_text()).entries
        return entry

    def recorded(last: int) -> None:
        item = {
            "pk": {"S": progress_key("dr", topic, 0)},
            "sk": {"S": COMPLETE_SK},
            "last_source_offset": {"N": str(last)},
        }
        dynamodb.put_item(TableName=table, Item=item)

    assert plan("running").status == "pending"
    recorded(40)  # an earlier restore's end: not this one's
    assert plan("stale").status == "pending"
    recorded(59)
    finished = plan("recorded")
    assert (finished.status, finished.method, finished.target_offset, finished.exact) == (
        "mapped",
        "checkpoint",
        60,
        True,
    )
    assert finished.never_restored == 20 and "declared complete" in (finished.reason or "")
    dynamodb.delete_item(TableName=table, Key={"pk": {"S": progress_key("dr", topic, 0)}, "sk": {"S": COMPLETE_SK}})
    declared = plan("declared", "--restore-complete")
    assert (declared.target_offset, declared.exact, declared.max_duplicates) == (60, False, 0), declared


def test_a_scope_that_names_nothing_of_the_snapshot_is_refused_and_writes_nothing(short: ShortRestore) -> None:
    """A typo, or the target's name of a renamed topic, would finish nothing in silence."""
    for scope, said in (
        ("payments-typo/2", "no group of the snapshot commits on topic payments-typo"),
        (f"{short.topic}/7", f"{short.topic} has 3 partitions on the source"),
    ):
        path = short.folder / "refused.json"
        status, _, err = run(
            "plan", "--snapshot", str(short.snapshots), "--bootstrap-servers", short.brokers.target.bootstrap_servers,
            "--output", str(path), "--restore-complete", scope,
        )  # fmt: skip
        assert status == 2 and said in err and "nothing was read or written" in err, err
        assert not path.exists()


def test_a_plan_finished_by_the_decision_applies_and_rolls_back_to_what_the_target_held(
    short: ShortRestore, target: KafkaCluster
) -> None:
    """Both promises through the new entries: apply puts each group at the record after the last restored
    one (never past a record on the target) and rollback puts back what the target held before."""
    commit(target, short.settlement, {TP(short.topic, 2): 7})  # a consumer started on the target by mistake
    _, _, entries = short.plan("applied", "--restore-complete", f"{short.topic}/2")
    path = str(short.folder / "applied.json")
    servers = (short.brokers.target.bootstrap_servers, "--target-cluster", "dr")
    status, out, err = run("apply", "--plan", path, "--bootstrap-servers", *servers, "--execute", "--allow-rewind")
    assert status in (0, 3), out + err  # 3: the reader's ledger partition is not on the target
    held = target.committed_offsets([short.settlement, short.behind])
    assert held[short.settlement][TP(short.topic, 2)].offset == RESTORED_UP_TO
    assert held[short.behind][TP(short.topic, 2)].offset == entries[(short.behind, 2)].target_offset == 100
    status, out, err = run("rollback", "--plan", path, "--bootstrap-servers", *servers, "--execute")
    assert status == 0, out + err
    back = target.committed_offsets([short.settlement, short.behind])
    assert {tp: c.offset for tp, c in back[short.settlement].items()} == {TP(short.topic, 2): 7}
    assert back.get(short.behind, {}) == {}  # apply created its offsets: rollback removed them
