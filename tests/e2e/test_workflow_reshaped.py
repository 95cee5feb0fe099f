"""Issue 30 through the state machine: a topic the restore re-partitioned is mapped on every target
partition by the translate handler's work items as the CLI maps it, written by the commit step, and a
group on a re-partitioned topic whose records do not say their source partition is written nowhere."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

from offset_restore.devtools.local_aws import Workflow
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.stores.storage import S3Store
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.run import SnapshotChoice, run_plan

from tests.helpers import Brokers, commit, produce, unique


def _restore(target: KafkaCluster, source_records: dict, topic: str, partitions: int, with_partition: bool) -> None:
    """Each record to the partition its key hashes to, source partitions interleaved in source order."""
    target.create_topics({topic: partitions})
    batches: dict[int, list] = {t: [] for t in range(partitions)}
    for offset in range(len(source_records[0])):
        for q, records in source_records.items():
            r = records[offset]
            headers = (*r.headers, ("x-source-offset", str(offset).encode()))
            headers = (*headers, ("x-source-partition", str(q).encode())) if with_partition else headers
            batches[zlib.crc32(r.key) % partitions].append((r.key, r.value, headers, r.timestamp))
    for t, batch in batches.items():
        target.produce(topic, t, batch)


def test_the_workflow_maps_a_re_partitioned_topic_and_holds_what_it_cannot_map(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow, tmp_path: Path
) -> None:
    mapped, held = unique("flow-shape"), unique("flow-shape-bare")
    source.create_topics({mapped: 2, held: 2})
    records = {name: {q: produce(source, name, q, 30) for q in range(2)} for name in (mapped, held)}
    readers = {unique("flow-shape-a"): {0: 5, 1: 30}, unique("flow-shape-b"): {0: 0, 1: 12}}
    for group, positions in readers.items():
        commit(source, group, {TP(mapped, q): c for q, c in positions.items()})
    blocked = unique("flow-shape-held")
    commit(source, blocked, {TP(mapped, 0): 3, TP(held, 0): 4, TP(held, 1): 9})
    groups = [*readers, blocked]
    run_snapshot(
        brokers.source_settings,
        S3Store("offset-restore", "", workflow.s3),
        SnapshotOptions(groups="|".join(groups), cluster="src"),
    )
    _restore(target, records[mapped], mapped, 4, with_partition=True)
    _restore(target, records[held], held, 3, with_partition=False)
    result = workflow.run({"groups": "|".join(groups), "mode": "apply"}, name="shape-run")
    assert result["status"] == "SUCCEEDED", result.get("cause")
    committed = target.committed_offsets(groups)
    assert committed[blocked] == {}, "a held group is written on no topic, not even the one that was mapped"
    for group, positions in readers.items():
        assert sorted(tp.partition for tp in committed[group]) == [0, 1, 2, 3]
        for t in range(4):
            resume = committed[group][TP(mapped, t)].offset
            log = target.fetch({TP(mapped, t): 0}, partition_max_bytes=1 << 20)[TP(mapped, t)].records
            for r in log:
                h = dict(r.headers)
                q, o = int(h["x-source-partition"] or b"-1"), int(h["x-source-offset"] or b"-1")
                assert o < positions[q] or r.offset >= resume, (group, t, r.offset, resume)
    report = workflow.report("shape-run")
    mine = [e for e in report["entries"] if e["group"] == blocked]
    assert mine and all(e["holds_group"] or e["topic"] == mapped for e in mine)
    assert all(e["status"] != "committed" for e in mine)
    assert report["do_not_start_yet"][blocked]["held_by"] == "reshaped", report["do_not_start_yet"]
    assert "source-partition header" in report["do_not_start_yet"][blocked]["next"]
    cli = tmp_path / "plan.json"
    run_plan(SnapshotChoice("s3://offset-restore"), brokers.target_settings, str(cli), PlanOptions())
    by_cli = json.loads(cli.read_text())["entries"]
    same = ("group", "topic", "target_partition", "target_offset", "exact", "max_duplicates", "holds_group")
    assert sorted([e.get(k) for k in same] for e in by_cli if e["group"] in groups) == sorted(
        [e.get(k) for k in same] for e in report["entries"]
    )
