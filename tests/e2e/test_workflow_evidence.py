"""Issue 29 through the state machine: the automated path (the translate handler's work items, the
commit step's checks) answers a restore whose headers mislead as the CLI does."""

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

from tests.disorder import Slot, copy, write_layout
from tests.helpers import Brokers, commit, produce, unique


def test_the_workflow_resumes_groups_the_headers_would_skip(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, tmp_path: Path
) -> None:
    """The restore's first 5 records without the header, record 20 with a header that says 45 (the
    snapshot read 45: a lie) and record 30 with one that says 50 (never read: it may be true). The
    groups at 2 and 20 resume at their own records (the one at 20 not exact, with why); the one at 45
    at record 30, which may be 50 (read twice, never skipped, and nothing counted as lost before the
    backup); the commit step writes and verifies them. (No evidence names record 30: its duplicates
    are counted by its header's word, 14 where the record itself makes 15.) The CLI's plan of the same
    snapshot says the same, and the workflow's rollback puts back every previous offset."""
    topic = unique("flow-mislead")
    source.create_topics({topic: 1})
    records = produce(source, topic, 0, 60)
    groups = {unique(f"flow-mislead-c{c}"): c for c in (2, 20, 45)}
    for group, c in groups.items():
        commit(source, group, {TP(topic, 0): c})
    run_snapshot(
        brokers.source_settings,
        S3Store("offset-restore", "", workflow.s3),
        SnapshotOptions(groups="|".join(groups), cluster="src"),
    )
    layout = [*(Slot(s, None) for s in range(5)), *copy(range(5, 60))]
    layout[20] = Slot(20, 45)
    layout[30] = Slot(30, 50)
    target.create_topics({topic: 1})
    write_layout(
        target, topic, 0, layout, {r.offset: r.timestamp for r in records},
        values={r.offset: r.value for r in records}, extra_headers={r.offset: r.headers for r in records},
    )  # fmt: skip
    at_20 = next(g for g, c in groups.items() if c == 20)
    commit(target, at_20, {TP(topic, 0): 7})  # an offset it held on the target before the run
    result = workflow.run({"groups": "|".join(groups), "mode": "apply"}, name="mislead-run")
    assert result["status"] == "SUCCEEDED", result.get("cause")
    committed = target.committed_offsets(list(groups))
    assert {c: committed[g][TP(topic, 0)].offset for g, c in groups.items()} == {2: 2, 20: 20, 45: 30}
    report = workflow.report("mislead-run")
    entries = {e["source_offset"]: e for e in report["entries"]}
    assert entries[2]["exact"]
    assert not entries[20]["exact"] and "the header is wrong" in entries[20]["reason"]
    assert not entries[45]["exact"] and entries[45]["max_duplicates"] >= 14
    assert all(e["verified"] for e in entries.values())
    assert report["headline"]["lost_records"] == 0
    cli = tmp_path / "plan.json"
    run_plan(SnapshotChoice("s3://offset-restore"), brokers.target_settings, str(cli), PlanOptions())
    by_cli = {e["source_offset"]: e for e in json.loads(cli.read_text())["entries"] if e["group"] in groups}
    same = ("target_offset", "exact", "max_duplicates", "method", "expected_fingerprint", "anchor_source_offset")
    assert {c: [e[k] for k in same] for c, e in by_cli.items()} == {c: [e[k] for k in same] for c, e in entries.items()}
    undone = workflow.run({"mode": "rollback", "restore_id": "mislead-run"}, name="mislead-rollback")
    assert undone["status"] == "SUCCEEDED", undone.get("cause")
    after = target.committed_offsets(list(groups))
    assert {tp: c.offset for tp, c in after[at_20].items()} == {TP(topic, 0): 7}
    assert all(not after[g] for g in groups if g != at_20)  # apply created them: removed
