"""The journal of previous offsets beside a plan (apply/journal.py), on Apache Kafka through the CLI: apply
writes what it replaces there before its first write, in records never rewritten; rollback follows it where
the plan says otherwise, and refuses an edited or garbage record by name with nothing written."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from offset_restore.apply.journal import Journal, JournalRecord
from offset_restore.apply.seal import PlanKey
from offset_restore.errors import AlreadyExistsError
from offset_restore.formats.plan import Plan, PlanEntry
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP, CommittedOffset
from offset_restore.stores.storage import LocalStore, open_location

from tests.helpers import Brokers, commit
from tests.integration.test_apply import Restored, rollback
from tests.integration.test_plan_seal import applied, edit, entry_of  # noqa: F401  (applied: a fixture)


def journal_of(s: Restored) -> Journal:
    return Journal(LocalStore(s.plan_path.parent), s.plan_path.name)


def records(s: Restored) -> list[Path]:
    return sorted((s.plan_path.parent / "plan.json.journal").glob("*.json"))


def previous(s: Restored, plan: Plan | None = None) -> dict[str, int | None]:
    """The journal's previous offset of each group's partition 0, by group name."""
    found = journal_of(s).previous(plan or s.plan())
    mine = {name: found.get((group, TP(s.topic, 0))) for name, group in s.groups.items()}
    return {name: offset.offset for name, offset in mine.items() if offset is not None}


def test_apply_journals_what_it_replaces_before_its_first_write(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the moment of the write, the journal already holds the offsets it replaces, sealed with the plan
    key; a second apply that records nothing adds no record."""
    s = Restored(brokers, source, target, tmp_path, {"a": {0: 30}, "b": {0: 50}})
    commit(target, s.groups["a"], {TP(s.topic, 0): 3})
    seen_at_write: list[dict[str, int | None]] = []
    original = KafkaCluster.alter_offsets_many

    def watched(self: KafkaCluster, offsets_by_group: Any, **kwargs: Any) -> Any:
        seen_at_write.append(previous(s))
        return original(self, offsets_by_group, **kwargs)

    monkeypatch.setattr(KafkaCluster, "alter_offsets_many", watched)
    status, out, err = s.apply()
    assert status == 0 and s.offsets("a") == {0: 20}, out + err
    assert seen_at_write and seen_at_write[0] == {"a": 3, "b": None}
    [record] = records(s)
    body, seal = record.read_text().splitlines()
    assert JournalRecord.model_validate_json(body).restore_id == s.plan().restore_id and json.loads(seal)["seal"]
    status, out, err = s.apply()
    assert status == 0 and len(records(s)) == 1, out + err


def test_rollback_follows_the_journal_when_the_plan_lost_what_apply_recorded(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """The plan as it was before apply put back in place (its last saves lost; the operator removed this
    machine's seal record as the refusal told them to): it records no previous offset. Before the journal,
    rollback found nothing to undo and exited 0 with the groups left at the apply's offsets; now it puts
    back 3 and 4 from the journal and says so."""
    s = Restored(brokers, source, target, tmp_path, {"a": {0: 30}, "b": {0: 50}})
    commit(target, s.groups["a"], {TP(s.topic, 0): 3})
    commit(target, s.groups["b"], {TP(s.topic, 0): 4})
    before_apply = tmp_path / "before-apply.json"
    shutil.copy(s.plan_path, before_apply)
    status, out, err = s.apply()
    assert status == 0 and s.offsets("a") == {0: 20} and s.offsets("b") == {0: 40}, out + err
    shutil.copy(before_apply, s.plan_path)
    shutil.rmtree(PlanKey.load().path.parent / "sealed")
    status, out, err = rollback(s)
    assert status == 0, out + err
    assert (s.offsets("a"), s.offsets("b")) == ({0: 3}, {0: 4})
    assert f"from the journal: {s.groups['a']} {s.topic}/0: the plan said nothing recorded, the journal 3" in out


def test_a_trusted_edit_of_a_previous_offset_gives_way_to_the_journal(applied: Restored) -> None:  # noqa: F811
    """``--trust-previous-offsets`` lets an unsealed previous offset through; the journal still knows what
    apply read from the cluster: rollback writes that, naming the difference."""
    edit(applied, lambda d: entry_of(d, applied, "a").update(previous_target_offset=5))
    status, out, err = rollback(applied, "--trust-previous-offsets", "--json")
    assert status == 0, out + err
    assert applied.offsets("a") == {0: 3} and applied.offsets("b") == {0: 4}
    [said] = json.loads(out)["journal_corrections"]
    assert "the plan said previous offset 5, the journal 3" in said


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda r: r.write_text(r.read_text().replace(",true,3,", ",true,7,")), id="edited"),
        pytest.param(lambda r: r.write_text("{not json"), id="garbage"),
        pytest.param(lambda r: r.write_text(r.read_text().splitlines()[0]), id="seal-removed"),
        pytest.param(lambda r: r.write_text(r.read_text().replace('"seal"', '"seal":1,"x"')), id="seal-garbled"),
    ],
)
def test_a_spoiled_journal_record_is_refused_by_name_and_nothing_is_written(
    applied: Restored,  # noqa: F811
    spoil: Any,
) -> None:
    [record] = records(applied)
    spoil(record)
    status, out, err = rollback(applied)
    assert status == 2 and "plan.json.journal/00000001.json" in err, out + err
    assert "not as apply wrote it" in err or "is not a journal record" in err, err
    assert applied.offsets("a") == {0: 20} and applied.offsets("b") == {0: 40}


def test_a_write_the_fence_refused_is_given_up_in_the_journal(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer takes the fence and writes 5 right before the apply's write: the apply's record says
    it replaced nothing (the offset it had recorded was never its to put back), and a rollback leaves 5."""
    s = Restored(brokers, source, target, tmp_path, {"a": {0: 50}})
    group, tp = s.groups["a"], TP(s.topic, 0)
    original = KafkaCluster.alter_offsets_many

    def overtaken(self: KafkaCluster, offsets_by_group: Any, **kwargs: Any) -> Any:
        with KafkaCluster(target.settings) as other:
            taken = other.hold_fence()
            assert taken is not None
            other.fenced_offsets({group: {tp: CommittedOffset(5, None)}}, taken)
        return original(self, offsets_by_group, **kwargs)

    monkeypatch.setattr(KafkaCluster, "alter_offsets_many", overtaken)
    status, out, err = s.apply()
    assert status == 1 and s.offsets("a") == {0: 5}, out + err
    assert len(records(s)) == 2 and previous(s) == {}
    monkeypatch.undo()
    status, out, err = rollback(s)
    assert status == 0 and s.offsets("a") == {0: 5}, out + err


def test_records_are_created_never_replaced_on_s3(s3: Any) -> None:
    """On S3 each record is a conditional put: a second record gets the next number, and a put on a taken
    name is refused by S3 itself."""
    store = open_location("s3://snapshots/restores/r1")
    plan = Plan.model_validate(
        {
            "restore_id": "r1",
            "snapshot_id": "s",
            "created_at": "2026-12-05T00:00:00Z",
            "source": {"cluster": "a"},
            "target": {"cluster": "b", "cluster_id": "id-b"},
            "entries": [],
        }
    )
    journal = Journal(store, "plan.json")
    entry = _entry()
    journal.append(plan, [entry])
    entry.previous_target_offset = 9
    journal.append(plan, [entry])
    assert store.list("plan.json.journal/") == ["plan.json.journal/00000001.json", "plan.json.journal/00000002.json"]
    assert {k: o.offset for k, o in journal.previous(plan).items()} == {("g", TP("t", 0)): 9}
    with pytest.raises(AlreadyExistsError):
        store.create_file("plan.json.journal/00000001.json", io.BytesIO(b"{}"))


def _entry() -> PlanEntry:
    return PlanEntry.model_validate(
        {
            "group": "g",
            "topic": "t",
            "partition": 0,
            "target_topic": "t",
            "source_offset": 1,
            "target_offset": 1,
            "status": "committed",
            "previous_recorded": True,
            "previous_target_offset": 4,
        }
    )
