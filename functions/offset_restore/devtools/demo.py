"""``offset-restore demo``: the main job end to end on two local brokers and local AWS.

A source cluster with topics and groups at different lags is snapshotted to the (moto) bucket; then a
"disaster": the data is restored into a target cluster with retention loss, gaps, a renamed topic, and
one topic replicated without offset headers (as MirrorMaker 2 would), while one application is still
connected to the target. The project's state machine runs in apply mode through moto's interpreter
with the real handlers, shown state by state; then every group-partition is proved on the target: the
record the group gets next there is the record it would have got next on the source.
"""

from __future__ import annotations

import json
import random
import shutil
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from offset_restore.cli.operations import follow
from offset_restore.devtools.brokers import started
from offset_restore.kafka.cluster import KafkaCluster, group_member
from offset_restore.kafka.model import TP, CommittedOffset, FetchedRecord
from offset_restore.snapshot.fingerprint import DEFAULT_OFFSET_HEADER, fingerprint
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.stores.keys import restore_object
from offset_restore.stores.snapshot_store import SnapshotRepository
from offset_restore.stores.storage import S3Store
from offset_restore.translate.model import PlanEntry

if TYPE_CHECKING:
    pass

__all__ = ["run_demo"]

TOPICS = {"orders": 6, "payments": 3, "audit": 2}
RENAMED = {"orders": "dr.orders"}
RECORDS_PER_PARTITION = 200
RETENTION_LOST = 20  # the backup of "orders" starts at source offset 20


def _fill(cluster: KafkaCluster, rng: random.Random) -> None:
    cluster.create_topics(TOPICS)
    start_ms = int(time.time() * 1000) - 3_600_000
    for topic, partitions in TOPICS.items():
        for partition in range(partitions):
            cluster.produce(
                topic,
                partition,
                (
                    (
                        f"{topic}-{rng.randrange(50)}".encode(),
                        f'{{"n":{i},"p":{partition}}}'.encode(),
                        [("trace-id", f"{i:08x}".encode())],
                        start_ms + i * 1000,
                    )
                    for i in range(RECORDS_PER_PARTITION)
                ),
            )


def _place_groups(cluster: KafkaCluster, count: int, rng: random.Random) -> dict[str, str]:
    """Commit positions for ``count`` groups; returns the story of each group."""
    kinds = ["caught up", "a few behind", "far behind", "part of the topic"]
    stories = {}
    for number in range(count):
        kind = kinds[number % len(kinds)]
        topic = list(TOPICS)[number % len(TOPICS)]
        group = f"{topic}-{kind.replace(' ', '-')}-{number:02d}"
        offsets = {}
        for partition in range(TOPICS[topic]):
            if kind == "caught up":
                offset = RECORDS_PER_PARTITION
            elif kind == "a few behind":
                offset = RECORDS_PER_PARTITION - rng.randint(1, 9)
            elif kind == "far behind":
                offset = rng.randint(0, RECORDS_PER_PARTITION // 2)
            elif partition % 2:
                continue  # never committed on the odd partitions
            else:
                offset = rng.randint(10, RECORDS_PER_PARTITION - 10)
            offsets[TP(topic, partition)] = CommittedOffset(offset, f"demo commit {number}")
        failed = {tp: e for tp, e in cluster.alter_offsets(group, offsets).items() if e}
        if failed:
            raise RuntimeError(f"demo could not commit {group}: {failed}")
        stories[group] = kind
    return stories


def _restore(source: KafkaCluster, target: KafkaCluster, rng: random.Random) -> None:
    """The disaster recovery: what a backup tool and a replica would leave on the target."""
    target.create_topics({RENAMED.get(topic, topic): count for topic, count in TOPICS.items()})
    for topic, partitions in TOPICS.items():
        for partition in range(partitions):
            records = source.read_partition(TP(topic, partition))
            if topic == "orders":  # backup taken after retention removed the oldest; a few records lost
                last = records[-1].offset  # a lost last record would look like a restore still running
                records = [
                    r for r in records if r.offset >= RETENTION_LOST and (rng.random() > 0.03 or r.offset == last)
                ]
            with_header = topic != "audit"  # "audit" is a replica without offset headers
            target.produce(
                RENAMED.get(topic, topic),
                partition,
                (
                    (
                        r.key,
                        r.value,
                        [
                            *((n, v) for n, v in r.headers if v is not None),
                            *([(DEFAULT_OFFSET_HEADER, r.offset.to_bytes(8, "big"))] if with_header else []),
                        ],
                        r.timestamp,
                    )
                    for r in records
                ),
            )


def _source_offset(record: FetchedRecord | None) -> int | None:
    value = dict(record.headers).get(DEFAULT_OFFSET_HEADER) if record else None
    return int.from_bytes(value, "big") if value else None


def _prove(
    entries: list[PlanEntry], next_records: dict[str, dict[TP, str | None]], target: KafkaCluster
) -> Counter[str]:
    """Check every group-partition against the target itself: the offset the group has committed
    there, and the record at it. That record must be the one the group would have read next on the
    source (same fingerprint, or both at the end); where that record was lost before the backup, the
    first restored record after it (by the restore's header), with nothing before it the group had
    not processed."""
    outcome: Counter[str] = Counter()
    records: dict[TP, dict[int, FetchedRecord]] = {}
    for tp in {TP(e.target_topic, e.partition) for e in entries}:
        records[tp] = {r.offset: r for r in target.read_partition(tp)}
    committed = target.committed_offsets(sorted({e.group for e in entries}))
    for e in entries:
        now = committed.get(e.group, {}).get(TP(e.target_topic, e.partition))
        if e.status != "committed" or now is None or now.offset != e.target_offset:
            outcome["WRONG: not committed at the mapped offset"] += 1
            continue
        on_target = records[TP(e.target_topic, e.partition)]
        record, before = on_target.get(now.offset), on_target.get(now.offset - 1)
        got = fingerprint(record.key, record.value, record.headers) if record else None
        if got == next_records[e.group].get(TP(e.topic, e.partition)):
            outcome["same record"] += 1
            continue
        restored_from, previous = _source_offset(record), _source_offset(before)
        if (restored_from is None or restored_from > e.source_offset) and (
            previous is None or previous < e.source_offset
        ):
            outcome["next restored record (its own was lost before the backup)"] += 1
        else:
            outcome["WRONG: another record"] += 1
    return outcome


def run_demo(
    *,
    groups: int,
    output: str,
    keep_running: bool,
    out: TextIO,
    hold_s: float = 6.0,
    seed: int = 7,
    broker: str = "local",
) -> int:
    from offset_restore.devtools.local_aws import BUCKET, local_workflow

    rng = random.Random(seed)
    location = Path(output)
    if location.exists():
        shutil.rmtree(location)
    if broker == "apache":
        out.write("starting two Apache Kafka 4.1 brokers (the jars are fetched by Maven on first use)\n")
    with started(broker, "demo-source", "demo-target") as (source_broker, target_broker):
        out.write(f"source cluster on {source_broker.bootstrap_servers}, target on {target_broker.bootstrap_servers}\n")
        with KafkaCluster(source_broker.settings()) as source:
            _fill(source, rng)
            stories = _place_groups(source, groups, rng)
        out.write(
            f"created {len(TOPICS)} topics, {sum(TOPICS.values()) * RECORDS_PER_PARTITION:,} records, "
            f"{len(stories)} groups\n\n"
        )
        with local_workflow(source_broker.bootstrap_servers, target_broker.bootstrap_servers) as flow:
            store = S3Store(BUCKET, "", flow.s3)
            result = run_snapshot(source_broker.settings(), store, SnapshotOptions(cluster="src"))
            from offset_restore.cli.snapshot import snapshot_summary

            out.write("the scheduled snapshot, to the (local) S3 bucket:\n" + snapshot_summary(result) + "\n")
            out.write(
                "disaster: restoring into the target — orders renamed to dr.orders, its first "
                f"{RETENTION_LOST} records lost to retention and a few more missing; audit replicated "
                "without offset headers\n"
            )
            with KafkaCluster(source_broker.settings()) as source, KafkaCluster(target_broker.settings()) as target:
                _restore(source, target, rng)
            busy = next(g for g in sorted(stories) if g.startswith("orders-"))
            out.write(f"an application of group {busy} is still connected to the target for {hold_s:g} s\n\n")
            release = threading.Event()
            joined = threading.Event()

            def application() -> None:
                with group_member(target_broker.settings(), busy, RENAMED["orders"]):
                    joined.set()
                    release.wait(hold_s)

            thread = threading.Thread(target=application, daemon=True)
            thread.start()
            joined.wait(20)
            out.write("the workflow (the project's state machine, run by the local interpreter), in apply mode:\n")
            run_input = {
                "mode": "apply",
                "topic_map": RENAMED,
                "restore_id": "demo",
                "wait": {"timeout_seconds": 120, "interval_seconds": 2},
            }
            execution = flow.start(run_input, "demo")
            try:
                described = follow(flow.sfn, execution, out, timeout_s=120, poll_s=0.3)
            except KeyboardInterrupt:
                flow.sfn.stop_execution(executionArn=execution, error="Interrupted", cause="Ctrl-C in the demo")
                release.set()
                raise
            release.set()
            thread.join(10)
            out.write(f"run {described['status']}\n\n")
            if described["status"] != "SUCCEEDED":
                out.write(f"  {described.get('error')}: {described.get('cause')}\n")
                return 1
            location.mkdir(parents=True, exist_ok=True)
            for name in ("report.json", "report.md", "report.html"):
                body = flow.s3.get_object(Bucket=BUCKET, Key=restore_object("demo", name))["Body"].read()
                (location / name).write_bytes(body)
            report = json.loads((location / "report.json").read_text())
            entries = [PlanEntry.model_validate(e) for e in report["entries"]]
            repository = SnapshotRepository(store)
            key, manifest = repository.latest("src")
            next_records = {
                g.group: {TP(p.topic, p.partition): (p.next.fingerprint if p.next else None) for p in g.partitions}
                for g in repository.groups(key, manifest)
            }
        head = report["headline"]
        out.write(
            f"{head['groups_restored']} of {head['groups']} groups restored; exact "
            f"{100 * (head['exact_ratio'] or 0):.0f}%; at most {head['records_at_risk']} records reprocessed\n\n"
        )
        _table(entries, stories, out)
        with KafkaCluster(target_broker.settings()) as target:
            proof = _prove(entries, next_records, target)
        out.write(f"\nproof, over all {len(entries)} group-partitions: where each resumes on the target\n")
        for what, count in sorted(proof.items(), key=lambda item: -item[1]):
            out.write(f"  {count:>4}  {what}\n")
        out.write(f"reports: {location / 'report.html'}, {location / 'report.md'}, {location / 'report.json'}\n")
        if keep_running:
            out.write("brokers still running; Ctrl-C to stop\n")
            try:
                while True:
                    time.sleep(1)
            except KeyboardInterrupt:
                pass
    return 0 if not any(what.startswith("WRONG") for what in proof) else 1


def _table(entries: list[PlanEntry], stories: dict[str, str], out: TextIO) -> None:
    by_group: dict[str, list[PlanEntry]] = defaultdict(list)
    for entry in entries:
        by_group[entry.group].append(entry)
    out.write(f"{'group':32} {'story':18} {'parts':>5}  {'methods':28} {'exact':>5} {'dup bound':>9}  status\n")
    for group, group_entries in sorted(by_group.items()):
        methods = ", ".join(f"{m} {n}" for m, n in sorted(Counter(e.method or "-" for e in group_entries).items()))
        statuses = ", ".join(sorted({e.status for e in group_entries}))
        bound = sum(e.max_duplicates or 0 for e in group_entries)
        exact = sum(1 for e in group_entries if e.exact)
        out.write(
            f"{group:32} {stories.get(group, ''):18} {len(group_entries):>5}  {methods:28} "
            f"{exact:>5} {bound:>9}  {statuses}\n"
        )
