"""The proof every answer passes, through the state machine (moto's interpreter, the real handlers): a
Kafka Streams application whose repartition topic is missing or empty on the target is written nowhere,
an answer at the end found by nothing waits, and the workflow's entries are the CLI's."""

from __future__ import annotations

import json
from pathlib import Path

from offset_restore.devtools.local_aws import Workflow
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.stores.storage import S3Store
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.run import SnapshotChoice, run_plan

from tests.helpers import Brokers, commit, produce, restore, unique


def test_the_workflow_holds_an_application_whole_and_waits_for_an_unproven_end(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, tmp_path: Path
) -> None:
    inputs = unique("flow-proof-input")
    source.create_topics({inputs: 1})
    target.create_topics({inputs: 1})
    restore(target, inputs, 0, produce(source, inputs, 0, 60))
    apps = {case: unique(f"flow-proof-{case}") for case in ("missing", "empty", "restored")}
    for case, app in apps.items():
        repartition = f"{app}-agg-repartition"
        source.create_topics({repartition: 1})
        moved = produce(source, repartition, 0, 46)
        commit(source, app, {TP(inputs, 0): 46, TP(repartition, 0): 23})
        if case != "missing":
            target.create_topics({repartition: 1})
        if case == "restored":
            restore(target, repartition, 0, moved)
    # A topic the restore has not reached: the target holds records the group had processed only.
    partial = unique("flow-proof-partial")
    source.create_topics({partial: 1})
    target.create_topics({partial: 1})
    restore(target, partial, 0, produce(source, partial, 0, 40)[:20])
    waiting = unique("flow-proof-waiting")
    commit(source, waiting, {TP(partial, 0): 30})
    groups = [*apps.values(), waiting]
    run_snapshot(
        brokers.source_settings,
        S3Store("offset-restore", "", workflow.s3),
        SnapshotOptions(groups="|".join(groups), cluster="src"),
    )

    run_input = {"groups": "|".join(groups), "mode": "apply", "pending_retries": 0}
    result = workflow.run(run_input, name="proof-run")
    assert result["status"] == "SUCCEEDED", result.get("cause")
    committed = target.committed_offsets(groups)
    assert committed.get(apps["missing"], {}) == {} and committed.get(apps["empty"], {}) == {}
    assert committed.get(waiting, {}) == {}
    assert {tp.topic: o.offset for tp, o in committed[apps["restored"]].items()} == {
        inputs: 46,
        f"{apps['restored']}-agg-repartition": 23,
    }
    report = workflow.report("proof-run")
    held = report["do_not_start_yet"]
    assert held[apps["missing"]]["held_by"] == "application", held
    assert "kafka-streams-application-reset" in held[apps["missing"]]["next"]
    assert held[apps["empty"]]["held_by"] == "pending" and held[waiting]["held_by"] == "pending", held

    cli = tmp_path / "plan.json"
    run_plan(SnapshotChoice("s3://offset-restore"), brokers.target_settings, str(cli), PlanOptions())
    by_cli = json.loads(cli.read_text())["entries"]
    plan_states = {(e["group"], e["topic"]): (e["status"], e["target_offset"], e["holds_group"]) for e in by_cli}
    flow_states = {
        (e["group"], e["topic"]): (
            "mapped" if e["status"] == "committed" else e["status"],
            e["target_offset"],
            e["holds_group"],
        )
        for e in report["entries"]
    }
    assert {k: v for k, v in plan_states.items() if k[0] in groups} == flow_states
