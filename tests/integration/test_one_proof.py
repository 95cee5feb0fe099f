"""The proof every answer passes, on the real brokers, judged by reading the target log: an answer at the
target's end stands only on positive evidence, whatever strategy gave it — through the CLI's plan and
apply, nothing written for an answer the proof holds."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import offset_restore.translate.strategies.header as header_strategy
import pytest
from offset_restore.formats.plan import Plan, PlanEntry
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.translate.header_reads import HeaderReads

from tests.disorder import Slot, copy, layouts, random_layout
from tests.helpers import Brokers, Produced, commit, produce, restore, unique
from tests.integration.test_apply import run
from tests.integration.test_never_skip import Source, committed_source, judged, plan_layout

RESTORED_AT = 1_760_000_000_000
"""When the DR's restore ran: the copies it wrote carry this time, not the primary's."""


def plan_back(brokers: Brokers, folder: Path, groups: list[str], *options: str) -> dict[str, PlanEntry]:
    """The DR (the source broker) snapshotted and planned onto the primary (the target broker)."""
    snapshots = folder / "snaps"
    status, _, err = run(
        "snapshot", "--bootstrap-servers", brokers.source.bootstrap_servers, "--output", str(snapshots),
        "--groups", "|".join(groups), "--cluster", "dr",
    )  # fmt: skip
    assert status == 0, err
    status, out, err = run(
        "plan", "--snapshot", str(snapshots), "--bootstrap-servers", brokers.target.bootstrap_servers,
        "--output", str(folder / "plan.json"), *options,
    )  # fmt: skip
    assert status in (0, 3), out + err
    return {e.group: e for e in Plan.model_validate_json((folder / "plan.json").read_text()).entries}


def applied_in_part(brokers: Brokers, folder: Path) -> None:
    """``folder/plan.json`` applied by the CLI on the target broker: some groups held, so exit 3."""
    status, out, err = run(
        "apply", "--plan", str(folder / "plan.json"), "--bootstrap-servers", brokers.target.bootstrap_servers,
        "--execute",
    )  # fmt: skip
    assert status == 3, out + err


def test_a_timestamp_end_from_copies_with_new_times_is_held_and_never_written(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """A failback whose DR copies carry the restore's timestamps: no record of the primary is as recent as
    any group's, so the timestamp strategy finds nothing. It used to answer the primary's end with "0
    duplicates" and apply wrote it: every group skipped what it had not processed. Now nothing proves the
    primary's last record processed, so each answer waits and apply writes nothing."""
    dr, primary, topic = source, target, unique("proof-ts")
    primary.create_topics({topic: 1})
    dr.create_topics({topic: 1})
    records = produce(primary, topic, 0, 100)
    dr.produce(topic, 0, ((r.key, r.value, r.headers, RESTORED_AT + r.offset) for r in records))
    at = {"behind": 30, "middle": 60, "caught-up": 100}
    groups = {name: unique(f"proof-{name}") for name in at}
    for name, offset in at.items():
        commit(dr, groups[name], {TP(topic, 0): offset})
    commit(primary, groups["behind"], {TP(topic, 0): 12})  # where it stood before the failover

    entries = plan_back(brokers, tmp_path, list(groups.values()), "--strategies", "timestamp")

    for name in ("behind", "middle"):
        entry = entries[groups[name]]
        # The truth, read from the primary: the group resumes at its own offset there (same records).
        assert primary.log_bounds([TP(topic, 0)])[TP(topic, 0)].end == 100
        assert (entry.status, entry.target_offset) == ("pending", None), entry
        reason = entry.reason or ""
        assert (
            "the timestamp strategy answered 100 (end" in reason and "nothing proves the group processed" in reason
        ), reason
    caught_up = entries[groups["caught-up"]]
    assert caught_up.status == "pending", caught_up  # the copies' times differ: not proven the same records

    applied_in_part(brokers, tmp_path)
    committed = primary.committed_offsets(list(groups.values()))
    assert committed[groups["behind"]][TP(topic, 0)].offset == 12  # untouched
    assert TP(topic, 0) not in committed.get(groups["middle"], {})


def test_an_empty_topic_on_the_target_waits_for_what_the_source_still_had(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """A topic re-created empty on the target (a Streams application's repartition topic that was not
    restored): the source held 23 records the group had not processed. The timestamp strategy found no
    record and answered the log start, saying nothing; now the group waits, its reason naming the records,
    until the restore is declared complete — then it resumes there, knowingly."""
    topic = unique("proof-empty")
    source.create_topics({topic: 1})
    target.create_topics({topic: 1})
    records: list[Produced] = produce(source, topic, 0, 46)
    group = unique("proof-app")
    commit(source, group, {TP(topic, 0): 23})

    entry = plan_back(brokers, tmp_path, [group], "--strategies", "timestamp")[group]
    assert (entry.status, entry.target_offset) == ("pending", None), entry
    assert "the source had records 23..45 the group had not processed" in (entry.reason or "")
    assert records[23].offset == 23

    status, out, err = run(
        "plan", "--snapshot", str(tmp_path / "snaps"), "--bootstrap-servers", brokers.target.bootstrap_servers,
        "--output", str(tmp_path / "declared.json"), "--strategies", "timestamp", "--restore-complete",
    )  # fmt: skip
    assert status in (0, 3), out + err
    [declared] = Plan.model_validate_json((tmp_path / "declared.json").read_text()).entries
    assert (declared.status, declared.target_offset) == ("mapped", 0), declared


def test_a_streams_application_is_written_whole_or_not_at_all(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """A Kafka Streams application commits on its input and on ``<application.id>-…-repartition``. Restored
    without its repartition topic, or with it empty, its input offsets used to be written alone: the 23
    records it had consumed from the input but not processed through the repartition topic were lost to it.
    Now the whole group is held (the plan, the CSV and apply), and written once the topic is restored."""
    apps = {case: unique(f"proof-streams-{case}") for case in ("missing", "empty", "restored")}
    inputs = unique("proof-input")
    source.create_topics({inputs: 1})
    target.create_topics({inputs: 1})
    records = produce(source, inputs, 0, 60)
    restore(target, inputs, 0, records)
    for case, app in apps.items():
        repartition = f"{app}-KSTREAM-AGGREGATE-0000000003-repartition"
        source.create_topics({repartition: 1})
        moved = produce(source, repartition, 0, 46)  # the input's records 0..45, re-keyed
        commit(source, app, {TP(inputs, 0): 46, TP(repartition, 0): 23})
        if case != "missing":
            target.create_topics({repartition: 1})
        if case == "restored":
            restore(target, repartition, 0, moved)

    plan_back(brokers, tmp_path, list(apps.values()), "--csv", str(tmp_path / "plan.csv"))
    plan = Plan.model_validate_json((tmp_path / "plan.json").read_text())
    grouped = {app: [e for e in plan.entries if e.group == app] for app in apps.values()}
    for case in ("missing", "empty"):
        held = [e for e in grouped[apps[case]] if e.holds]
        assert len(held) == 1 and held[0].topic.endswith("-repartition"), grouped[apps[case]]
        assert "Kafka Streams application" in (held[0].reason or "") and inputs in (held[0].reason or "")
        assert [e.target_offset for e in grouped[apps[case]] if e.topic == inputs] == [46]  # mapped, not written
    assert not any(e.holds for e in grouped[apps["restored"]])
    csv = (tmp_path / "plan.csv").read_text()
    assert apps["restored"] in csv and apps["missing"] not in csv and apps["empty"] not in csv

    applied_in_part(brokers, tmp_path)
    committed = target.committed_offsets(list(apps.values()))
    assert committed.get(apps["missing"], {}) == {} and committed.get(apps["empty"], {}) == {}
    written = {tp.topic: o.offset for tp, o in committed[apps["restored"]].items()}
    assert written == {inputs: 46, f"{apps['restored']}-KSTREAM-AGGREGATE-0000000003-repartition": 23}


def _block_re_routed(
    source: KafkaCluster, target: KafkaCluster, name: str, positions: list[tuple[int, int]], *, headers: bool
) -> tuple[str, dict[str, tuple[int, int]], dict[int, list[tuple[int, int]]]]:
    """Two source partitions of 200 records and a group at each (c0, c1) of ``positions``, restored onto two
    target partitions with a block of source partition 1 (records 20..29) written into target partition 0
    after its record 99; with ``headers``, every record carries x-source-offset and x-source-partition.
    Each run of one source partition's records is produced on its own (its own batches), so the plan's probe
    from target 0's start, 16 KB of whole batches, always reaches the block: what a read meets is what the plan
    sees (where no read meets such a block, only ``--order-check full`` does: docs/translation.md).
    Returns the topic, the groups and the layout (target partition -> (source partition, offset) in order)."""
    topic = unique(name)
    source.create_topics({topic: 2})
    records = {q: produce(source, topic, q, 200) for q in range(2)}
    groups = {unique(f"{name}-{c0}-{c1}"): (c0, c1) for c0, c1 in positions}
    for group, (c0, c1) in groups.items():
        commit(source, group, {TP(topic, 0): c0, TP(topic, 1): c1})
    target.create_topics({topic: 2})
    layout = {0: [(0, o) for o in range(100)] + [(1, o) for o in range(20, 30)] + [(0, o) for o in range(100, 200)],
              1: [(1, o) for o in range(20)] + [(1, o) for o in range(30, 200)]}  # fmt: skip

    def restored(q: int, o: int) -> tuple[Any, ...]:
        record = records[q][o]
        added = (("x-source-offset", str(o).encode()), ("x-source-partition", str(q).encode())) if headers else ()
        return record.key, record.value, (*record.headers, *added), record.timestamp

    for t, placed in layout.items():
        for _, same in itertools.groupby(placed, key=lambda record: record[0]):
            target.produce(topic, t, [restored(q, o) for q, o in same])
    return topic, groups, layout


def test_records_re_routed_far_from_the_end_are_seen_by_any_read(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """Two partitions restored onto two, every record carrying x-source-partition and x-source-offset, but a
    block of source partition 1 (records 20..29) written into target partition 0 after its record 99, far
    from the end (the shape check samples the last 64 records of each partition). A group reads both target
    partitions: mapped partition by partition, a group at 25 on partition 1 and past 100 on partition 0
    resumed past the block on target 0 and never read 25..29 anywhere. Now a record of the other partition,
    in any read of the plan, makes the topic re-partitioned: mapped by its headers, no group skips."""
    positions = [(0, 0), (60, 15), (105, 28), (110, 30), (120, 25), (150, 22), (200, 200)]
    topic, groups, layout = _block_re_routed(source, target, "proof-routed", positions, headers=True)
    plan_back(brokers, tmp_path, list(groups))
    plan = json.loads((tmp_path / "plan.json").read_text())
    skipped = []
    for group, committed in groups.items():
        mine = {e["target_partition"] if e.get("target_partition") is not None else e["partition"]: e
                for e in plan["entries"] if e["group"] == group}  # fmt: skip
        for t, placed in layout.items():
            entry = mine[t]
            needed = [i for i, (q, o) in enumerate(placed) if o >= committed[q]]  # not processed yet
            if needed and (entry["status"] != "mapped" or entry["target_offset"] > needed[0]):
                skipped.append((committed, t, entry["target_offset"], needed[0]))
    assert skipped == []
    assert topic in plan["reshaped"], plan["reshaped"]


def test_a_strategy_whose_own_checks_are_switched_off_cannot_move_a_group_to_the_end(
    brokers: Brokers,
    source: KafkaCluster,
    target: KafkaCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A strategy that checks nothing and answers the target's end, "exact", for every position: the proof
    knows nothing of it and still holds every group that had not processed the target's last records (the
    restore's headers there say so), letting stand only the caught-up ones."""
    from offset_restore.translate import plan as plan_module
    from offset_restore.translate.positions import Decision

    def reckless(undecided: dict, ctx: object) -> dict:
        bounds = ctx.bounds  # type: ignore[attr-defined]
        return {key: Decision("mapped", bounds[pos.target].end, "end", True, 0) for key, pos in undecided.items()}

    monkeypatch.setattr(plan_module, "by_timestamp", reckless)
    topic = unique("proof-reckless")
    source.create_topics({topic: 1})
    target.create_topics({topic: 1})
    records = produce(source, topic, 0, 80)
    restore(target, topic, 0, records)
    groups = {unique(f"proof-reckless-{c}"): c for c in (0, 10, 79, 80)}
    for group, c in groups.items():
        commit(source, group, {TP(topic, 0): c})
    entries = plan_back(brokers, tmp_path, list(groups), "--strategies", "timestamp")
    for group, c in groups.items():
        entry = entries[group]
        if c == 80:
            assert (entry.status, entry.target_offset) == ("mapped", 80), entry
        else:  # the records the plan read before the end carry source offsets at or past the position
            assert entry.status == "pending", entry
            assert "held by the proof every answer passes" in (entry.reason or ""), entry


@pytest.mark.parametrize(("shift", "held_by"), [(3, "before the resume point"), (-2, "at the resume point")])
def test_an_exact_answer_a_strategy_placed_wrong_inside_the_log_is_held(
    brokers: Brokers,
    source: KafkaCluster,
    target: KafkaCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    shift: int,
    held_by: str,
) -> None:
    """A strategy that reads nothing answers "exact" a few records past (or before) each group's record on a
    tidy restore: the proof identifies the records at either side of every answer itself (their offset
    headers, read again) and holds each one, naming the record; apply writes none of them."""
    from offset_restore.translate import plan as plan_module
    from offset_restore.translate.positions import Decision

    def misplaced(undecided: dict, ctx: object) -> dict:
        return {key: Decision("mapped", pos.committed + shift, "timestamp", True, 0) for key, pos in undecided.items()}

    monkeypatch.setattr(plan_module, "by_timestamp", misplaced)
    topic = unique("proof-misplaced")
    source.create_topics({topic: 1})
    target.create_topics({topic: 1})
    records = produce(source, topic, 0, 300)  # the shape check reads the last 64: none near the groups
    restore(target, topic, 0, records)
    groups = {unique(f"proof-misplaced-{c}"): c for c in (10, 100, 150)}
    for group, c in groups.items():
        commit(source, group, {TP(topic, 0): c})
    entries = plan_back(brokers, tmp_path, list(groups), "--strategies", "timestamp")
    for group in groups:
        entry = entries[group]
        assert entry.status == "pending", entry
        assert f"{held_by} is the copy of source record" in (entry.reason or ""), entry.reason
    applied_in_part(brokers, tmp_path)
    committed = target.committed_offsets(list(groups))
    assert not any(committed.get(g) for g in groups), committed


def test_a_checkpoint_that_lies_is_not_written_as_exact(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replica without offset headers whose restore's checkpoint pair says source 40 -> target 45 (it is
    at 40): the checkpoint strategy reads nothing of the target and answered "exact" at 45, skipping five
    records. The proof reads the records around 45: neither is the copy of a record the snapshot read (the
    group's next one, or one it processed), so nothing bounds the answer, and it is held."""
    from offset_restore.translate import plan as plan_module
    from offset_restore.translate.positions import Decision

    def lying_pair(undecided: dict, ctx: object) -> dict:
        return {key: Decision("mapped", pos.committed + 5, "checkpoint", True, 0) for key, pos in undecided.items()}

    monkeypatch.setattr(plan_module, "by_checkpoint", lying_pair)
    topic = unique("proof-pair")
    source.create_topics({topic: 1})
    target.create_topics({topic: 1})
    records = produce(source, topic, 0, 80)
    restore(target, topic, 0, records, header=None)
    group = unique("proof-pair-40")
    commit(source, group, {TP(topic, 0): 40})
    entry = plan_back(brokers, tmp_path, [group], "--strategies", "checkpoint")[group]
    assert entry.status == "pending", entry
    assert "neither end of the answer is identified" in (entry.reason or ""), entry.reason
    truthful = plan_back(brokers, tmp_path / "again", [group], "--strategies", "fingerprint")[group]
    assert (truthful.status, truthful.target_offset, truthful.exact) == ("mapped", 40, True), truthful


def test_records_re_routed_on_a_replica_without_headers_are_seen_by_content_in_any_read(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """The same block of source partition 1 (records 20..29) written into target partition 0 after its record
    99, on a replica that carries no header at all: only content tells. Any read of the plan that meets a
    record the snapshot read of the other partition makes the topic re-partitioned (its groups held: nothing
    maps a topic without headers across partitions), and no group resumes past a record it needs."""
    topic, groups, _ = _block_re_routed(source, target, "proof-bare", [(105, 28), (110, 25), (120, 22)], headers=False)
    plan_back(brokers, tmp_path, list(groups))
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert topic in plan["reshaped"], plan["reshaped"]
    assert "partition 1 (same key and content)" in plan["reshaped"][topic], plan["reshaped"]
    assert all(e["status"] != "mapped" for e in plan["entries"] if e["topic"] == topic), plan["entries"]


# -- order: the proof alone, with the header strategy's own order checks switched off -------------

BIG = 600
"""Source records of the order cases: large enough that a search reads windows, not the whole partition."""


@pytest.fixture(scope="module")
def big_source(brokers: Brokers) -> Source:
    """600 records on one source partition and a group at every 7th offset (86 groups), snapshotted."""
    return committed_source(brokers, "proof-order", BIG, range(0, BIG + 1, 7))


LYING = "a header that lies at the resume point"
"""A sorted restore whose record 248 (the copy of source record 248) says it is source record 457."""


def _order_cases() -> dict[str, list[Slot]]:
    cases = dict(layouts(BIG))
    cases[LYING] = [*copy(range(248)), Slot(248, 457), *copy(range(249, BIG))]
    for seed in (4, 7, 8, 9, 12):  # damaged restores whose exact claims the header strategy alone proves
        cases[f"random damage {seed}"] = random_layout(random.Random(seed), BIG)
    return cases


@pytest.mark.parametrize("case", list(_order_cases()))
def test_the_proof_alone_holds_every_untidy_restore_with_the_header_strategys_order_checks_off(
    big_source: Source, target: KafkaCluster, brokers: Brokers, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """The header strategy's own order check switched off (no window's headers ever fall back, so nothing is
    read whole): the strategy then answers as if every restore were in order — resuming a group inside a
    chunk written twice "exact", or "earliest, exact" before the chunk of workers written last. The proof,
    knowing nothing of the strategy, takes "exact" from every answer after which the plan read a record
    the group processed (and bounds what is read twice only where it read every record after it), and holds
    every answer before which what it read falls back and it did not read everything: 0 records skipped,
    0 entries wrongly exact, no bound below the truth, judged by kafka-python reading the target."""
    monkeypatch.setattr(header_strategy, "disorder_in", lambda *read: None)
    monkeypatch.setattr(HeaderReads, "fallen", lambda self, tp: None)
    entries, _, topic = plan_layout(big_source, target, _order_cases()[case], whole_when_cheaper=False)
    judgement = judged(big_source, brokers, topic, entries)
    assert judgement.holds, judgement.problems
    assert judgement.positions > 0
    said = [e.reason or "" for e in entries]
    if case in ("repeated chunk", "reordered and repeated batch", "workers in the wrong order"):
        # The proof's word, not the strategy's. Where the producer's batches on the target (their bounds vary
        # with the machine's load) let the strategy's reads cover every group's records, its answers are all
        # right, each exact as the judgement above shows, and the proof has nothing to hold.
        proof_said = any("not exact: the plan read" in why for why in said)
        assert proof_said or all(e.exact for e in entries), said


def test_a_header_that_lies_at_the_resume_point_is_counted_among_the_records_read_twice(
    big_source: Source, target: KafkaCluster, brokers: Brokers
) -> None:
    """With every check on: the record at the resume point says it is source record 457 but is the copy of
    248, which the groups at 252..455 processed; the strategy's bound left it out (at most 3 read twice where
    4 are). The proof counts a record whose header lies before one the group processed as possibly read
    twice."""
    entries, _, topic = plan_layout(big_source, target, _order_cases()[LYING], whole_when_cheaper=False)
    judgement = judged(big_source, brokers, topic, entries)
    assert judgement.holds, judgement.problems
    at_252 = next(e for e in entries if e.source_offset == 252)
    assert (at_252.target_offset, at_252.exact, at_252.max_duplicates) == (248, False, 4), at_252
