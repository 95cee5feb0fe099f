"""A plan file apply has saved, edited or replayed, on Apache Kafka through the CLI (apply/seal.py): the
previous offsets are what rollback writes, and the rest of each entry decides whether it writes them — so
the plan is sealed whole at every save, with a generation this machine records. A flipped recorded flag, a
deleted entry, a moved target offset, a removed seal or an older copy is refused by name with nothing
written; ``--trust-previous-offsets`` never seals again a previous offset it did not read from the cluster."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from offset_restore.apply.seal import PlanKey
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP

from tests.helpers import Brokers, active_member, commit
from tests.integration.test_apply import Restored, rollback
from tests.integration.test_apply import run as run_cli


@pytest.fixture
def applied(brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path) -> Restored:
    """Two groups with offsets on the target before the apply (3 and 4), both written by it (20 and 40)."""
    s = Restored(brokers, source, target, tmp_path, {"a": {0: 30}, "b": {0: 50}})
    commit(target, s.groups["a"], {TP(s.topic, 0): 3})
    commit(target, s.groups["b"], {TP(s.topic, 0): 4})
    status, out, err = s.apply()
    assert status == 0 and s.offsets("a") == {0: 20} and s.offsets("b") == {0: 40}, out + err
    return s


def edit(s: Restored, change: Callable[[dict[str, Any]], None]) -> None:
    document = json.loads(s.plan_path.read_text())
    change(document)
    s.plan_path.write_text(json.dumps(document))


def entry_of(document: dict[str, Any], s: Restored, name: str) -> dict[str, Any]:
    return next(e for e in document["entries"] if e["group"] == s.groups[name])


def planned(brokers: Brokers, folder: Path, output: Path, *more: str) -> tuple[int, str, str]:
    """``offset-restore plan`` of the scene's snapshots into ``output``."""
    servers = brokers.target.bootstrap_servers
    return run_cli(
        "plan", "--snapshot", str(folder / "snaps"), "--bootstrap-servers", servers, "--output", str(output), *more
    )


def refused(s: Restored, said: str) -> None:
    """Rollback and apply both refuse the plan, naming why, and nothing on the target changes."""
    before = s.offsets("a"), s.offsets("b")
    for status, _, err in (rollback(s), s.apply()):
        assert status == 2 and said in err and "nothing was written" in err, err
    assert (s.offsets("a"), s.offsets("b")) == before


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda d, s: entry_of(d, s, "a").update(previous_recorded=False), id="recorded-flag-flipped"),
        pytest.param(lambda d, s: d["entries"].remove(entry_of(d, s, "b")), id="entry-deleted"),
        pytest.param(
            lambda d, s: entry_of(d, s, "a").update(target_offset=25, anchor_offset=None), id="target-offset-moved"
        ),
        pytest.param(lambda d, s: entry_of(d, s, "b").update(status="mapped"), id="status-changed"),
    ],
)
def test_an_entry_edited_after_apply_saved_the_plan_is_refused_by_name(applied: Restored, change: Any) -> None:
    """Before, each of these passed every check: rollback left applied offsets (flag flipped, entry deleted)
    or took another offset for the run's own (target offset moved), exit 0."""
    edit(applied, lambda d: change(d, applied))
    refused(applied, "it was edited since it was planned or apply or rollback last saved it")


def test_a_plan_whose_whole_seal_was_removed_is_refused(applied: Restored) -> None:
    edit(applied, lambda d: d.pop("seal"))
    refused(applied, "its seal as a whole was removed")


def test_an_older_copy_of_the_plan_is_refused_whatever_its_seals(applied: Restored, tmp_path: Path) -> None:
    """A copy taken after the apply; a rollback then put the previous offsets back and saved the plan. The
    old copy's seals are valid and it says the offsets are still the apply's: put back in place, a second
    rollback from it would act on a state that is gone. Refused, naming the generations."""
    old = tmp_path / "plan-copy.json"
    shutil.copy(applied.plan_path, old)
    status, out, err = rollback(applied)
    assert status == 0 and applied.offsets("a") == {0: 3}, out + err
    shutil.copy(old, applied.plan_path)
    refused(applied, "it is an older copy of the plan")


def test_trusted_previous_offsets_are_used_as_they_are_and_never_sealed_again(applied: Restored) -> None:
    """An operator repairs a's previous offset by hand (3 -> 5). Without the flag, refused naming the entry.
    ``apply --trust-previous-offsets`` goes on (nothing to write: the groups are at the plan's offsets) and
    saves the plan — before, sealing 5 as if apply had read it; now a's previous offset stays unsealed (no run
    read 5 from the cluster), b's stays sealed, and the next command without the flag is refused again. A
    rollback that trusts it still writes 3: the journal beside the plan holds what apply read from the
    cluster (apply/journal.py), and rollback follows it."""
    edit(applied, lambda d: entry_of(d, applied, "a").update(previous_target_offset=5))
    status, _, err = rollback(applied)
    assert status == 2 and "does not match its seal" in err and applied.groups["a"] in err, err
    status, out, err = applied.apply("--trust-previous-offsets")
    assert status == 0, out + err
    document = json.loads(applied.plan_path.read_text())
    assert entry_of(document, applied, "a")["previous_seal"] is None
    assert entry_of(document, applied, "b")["previous_seal"] is not None
    status, _, err = rollback(applied)
    assert status == 2 and applied.groups["a"] in err and "has no seal" in err, err
    assert applied.offsets("a") == {0: 20}
    status, out, err = rollback(applied, "--trust-previous-offsets")
    assert status == 0 and applied.offsets("a") == {0: 3} and applied.offsets("b") == {0: 4}, out + err


def test_an_untouched_plan_still_applies_and_rolls_back_as_saved(applied: Restored, brokers: Brokers) -> None:
    """The seals refuse nothing of a plan as apply and rollback saved it, across several saves."""
    with active_member(brokers.target.bootstrap_servers, applied.groups["b"], applied.topic):
        status, out, err = rollback(applied, "--wait-timeout", "0")
    assert status == 3 and applied.offsets("a") == {0: 3} and applied.offsets("b") == {0: 40}, out + err
    status, out, err = rollback(applied)
    assert status == 0 and applied.offsets("b") == {0: 4}, out + err
    status, out, err = applied.apply()
    assert status == 0 and applied.offsets("a") == {0: 20} and applied.offsets("b") == {0: 40}, out + err


def test_a_plan_is_sealed_whole_from_the_moment_it_is_made(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """``plan`` seals what it writes: a plan edited before its first apply — every entry moved consistently,
    which before was written and verified — is refused as one edited after; a plan applied with another key
    than the one that sealed it is refused, naming --plan-key; the plan as made applies."""
    s = Restored(brokers, source, target, tmp_path, {"a": {0: 30}, "b": {0: 50}})
    made = tmp_path / "made.json"
    status, out, err = planned(brokers, tmp_path, made)
    assert status == 0, out + err
    document = json.loads(made.read_text())
    assert document["seal"] and document["generation"] == 1
    s.plan_path = made
    pristine = made.read_text()

    def moved(document: dict[str, Any]) -> None:  # consistently: the plan's own checks pass
        for entry in document["entries"]:
            entry.update({k: entry[k] + 5 for k in ("target_offset", "anchor_offset") if entry.get(k) is not None})

    edit(s, moved)
    status, _, err = s.apply()
    assert status == 2 and "it was edited since it was planned" in err, err
    assert s.offsets("a") == {} and s.offsets("b") == {}
    made.write_text(pristine)
    other_key = tmp_path / "other.key"
    status, _, err = s.apply("--plan-key", str(other_key))  # a key path that does not exist: not made there
    assert status == 2 and "cannot read the plan key" in err and not other_key.exists(), err
    PlanKey.load(other_key, create=True)
    status, _, err = s.apply("--plan-key", str(other_key))
    assert status == 2 and "sealed with another key" in err and "--plan-key" in err, err
    status, out, err = s.apply()
    assert status == 0 and s.offsets("a") == {0: 20} and s.offsets("b") == {0: 40}, out + err


def test_a_plan_whose_key_cannot_be_made_is_written_unsealed_and_said(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """A read-only home: the plan is still written (planning only reads the clusters), with a warning that it
    is not sealed; its first apply seals it."""
    s = Restored(brokers, source, target, tmp_path, {"a": {0: 30}})
    made = tmp_path / "unsealed.json"
    status, out, err = planned(brokers, tmp_path, made, "--plan-key", "/dev/null/nowhere/plan.key")
    assert status == 0 and "warning: the plan was not sealed" in err and "--plan-key" in err, out + err
    assert json.loads(made.read_text())["seal"] is None
    s.plan_path = made
    status, out, err = s.apply()
    assert status == 0 and s.offsets("a") == {0: 20} and json.loads(made.read_text())["seal"], out + err
