"""Shared by the reliability tests: a scenario restored to a (faulty) target, and docs/design.md §6's
invariant checked on the target's real committed offsets."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from offset_restore.formats.plan import Plan, PlanEntry
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.stores.storage import open_location
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.run import SnapshotChoice, run_plan

from tests.helpers import Brokers, Produced, commit, produce, restore, unique
from tests.reliability.conftest import Faulty


@dataclass
class Scenario:
    topic: str
    groups: dict[str, dict[TP, int]]
    records: dict[int, list[Produced]]


def groups_on(cluster: KafkaCluster, prefix: str, count: int, partitions: int = 3) -> Scenario:
    topic = unique(prefix)
    cluster.create_topics({topic: partitions})
    records = {p: produce(cluster, topic, p, 60) for p in range(partitions)}
    groups = {}
    for i in range(count):
        group = f"{topic}-g{i}"  # one regex selects a scenario's groups, however many
        offsets = {TP(topic, p): 10 + (i * 7 + p * 5) % 50 for p in range(partitions)}
        commit(cluster, group, offsets, "m")
        groups[group] = offsets
    return Scenario(topic, groups, records)


def restored(brokers: Brokers, source: KafkaCluster, faulty: Faulty, folder: Path, count: int) -> Scenario:
    """Groups on the session's source broker, snapshotted; their topic restored to the faulty broker
    from source offset 10 with gaps (so every mapping needs a search); half the groups already have
    older offsets on the target (so that rollback has something to put back)."""
    scenario = groups_on(source, "faultplan", count, partitions=2)
    store = open_location(str(folder / "snaps"))
    selected = rf"{re.escape(scenario.topic)}-g\d+"  # a joined list of 160 names passes the 4,096 limit
    run_snapshot(brokers.source_settings, store, SnapshotOptions(groups=selected, cluster="src"))
    with KafkaCluster(faulty.settings()) as target:
        target.create_topics({scenario.topic: 2})
        for p, records in scenario.records.items():
            restore(target, scenario.topic, p, [r for r in records if r.offset >= 10 and r.offset % 13])
        for group in list(scenario.groups)[: count // 2]:
            # Older than any plan (offset 0): a plan below them would be a rewind, which apply leaves
            # alone by design, and at 160 groups one group's plan is target offset 0.
            commit(target, group, {TP(scenario.topic, p): 0 for p in range(2)}, "old")
    return scenario


def plan_on(faulty: Faulty, folder: Path, name: str) -> Plan:
    run_plan(SnapshotChoice(str(folder / "snaps")), faulty.settings(), str(folder / name), PlanOptions())
    return Plan.model_validate_json((folder / name).read_text())


def mappings(plan: Plan) -> list[tuple[str, str, int, int | None, str]]:
    return sorted((e.group, e.topic, e.partition, e.target_offset, e.status) for e in plan.entries)


def offsets_of(target: KafkaCluster, plan: Plan) -> dict[str, dict[TP, int]]:
    groups = sorted({e.group for e in plan.entries})
    return {g: {tp: c.offset for tp, c in found.items()} for g, found in target.committed_offsets(groups).items()}


def check_planned_or_previous(
    target: KafkaCluster, plan: Plan, *, completed: bool = True
) -> tuple[set[str], set[str], set[str]]:
    """docs/design.md §6: the invariant: each group holds exactly its planned offsets or exactly its previous
    ones, never a mix; and the plan says which (committed = planned, and verified once a run has
    completed; a group whose commit got no answer is named by its reason). Returns (planned,
    previous, unanswered) groups."""
    now = offsets_of(target, plan)
    planned: set[str] = set()
    previous: set[str] = set()
    unanswered: set[str] = set()
    by_group: dict[str, list[PlanEntry]] = {}
    for entry in plan.entries:
        by_group.setdefault(entry.group, []).append(entry)
    for group, entries in by_group.items():
        held = now.get(group, {})
        at_plan = all(held.get(TP(e.target_topic, e.partition)) == e.target_offset for e in entries)
        at_previous = all(held.get(TP(e.target_topic, e.partition)) == e.previous_target_offset for e in entries)
        assert at_plan or at_previous, f"{group} holds a mix: {held}"
        if any(e.outcome == "unanswered" for e in entries):
            unanswered.add(group)
        elif at_plan and not at_previous:
            assert all(e.status == "committed" for e in entries), f"{group} is written but the plan does not say so"
            assert not completed or all(e.verified for e in entries), f"{group} is written but not verified"
        elif not at_plan:
            assert all(e.status == "mapped" for e in entries), f"{group} is not written but the plan says it is"
        (planned if at_plan else previous).add(group)
    return planned, previous, unanswered
