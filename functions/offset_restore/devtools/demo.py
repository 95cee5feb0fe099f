"""``offset-restore demo``: an incident, end to end on two local brokers and local AWS.

A source cluster with topics and groups at different lags is snapshotted to the (moto) bucket; then a
"disaster": the data is restored into a target cluster with retention loss, gaps, a renamed topic, and
one topic replicated without offset headers (as MirrorMaker 2 would), and the restore of one partition
is still running. The operator plans first (the report shows the groups still pending), the restore
finishes, and the apply runs while one application is still connected to the target (the run waits
for it by name) and another was started there with ``auto.offset.reset=latest`` (it is ahead: shown
as a decision, not rewound, until a second run allows it). Every group-partition is then proved on
the target — the record the group gets next there is the record it would have got next on the
source — and one group is rolled back to what it held before. The project's state machine runs each
step through moto's interpreter with the real handlers, shown state by state.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from offset_restore.devtools.brokers import started
from offset_restore.devtools.local_aws import BUCKET, local_workflow
from offset_restore.errors import BadInputError
from offset_restore.formats.plan import PlanEntry
from offset_restore.kafka.cluster import KafkaCluster, group_member
from offset_restore.kafka.model import TP, CommittedOffset, Record
from offset_restore.reading.whole import read_partition
from offset_restore.snapshot.filters import pattern_for
from offset_restore.snapshot.fingerprint import DEFAULT_OFFSET_HEADER, fingerprint
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.snapshot.summary import snapshot_summary
from offset_restore.stores.keys import restore_object
from offset_restore.stores.storage import S3Store
from offset_restore.terminal import printable_line
from offset_restore.workflow.executions import follow

if TYPE_CHECKING:
    from offset_restore.devtools.brokers import Broker
    from offset_restore.devtools.local_aws import Workflow

__all__ = ["run_demo"]

TOPICS = {"orders": 6, "payments": 3, "audit": 2}
RENAMED = {"orders": "dr.orders"}
RECORDS_PER_PARTITION = 200
MARKER = ".offset-restore-demo"
"""The file a demo leaves in its output folder: the next demo may clear a folder holding it, and no other."""
RUNS = ("1-plan", "2-apply", "3-rewind", "4-rollback")
"""The folders a demo writes its reports to: a folder holding only these is a demo's from before the mark."""
RETENTION_LOST = 20  # the backup of "orders" starts at source offset 20
STILL_RESTORING = TP("payments", 0)
"""The partition whose restore is still running when the operator plans: its last records come later."""
RESTORED_AT_PLAN = 150


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
    """The disaster recovery: what a backup tool and a replica would leave on the target (all but the
    last records of ``STILL_RESTORING``: ``_finish_restore`` adds them)."""
    target.create_topics({RENAMED.get(topic, topic): count for topic, count in TOPICS.items()})
    for topic, partitions in TOPICS.items():
        for partition in range(partitions):
            records = read_partition(source, TP(topic, partition))
            if topic == "orders":  # backup taken after retention removed the oldest; a few records lost
                last = records[-1].offset  # a lost last record would look like a restore still running
                records = [
                    r for r in records if r.offset >= RETENTION_LOST and (rng.random() > 0.03 or r.offset == last)
                ]
            if TP(topic, partition) == STILL_RESTORING:
                records = [r for r in records if r.offset < RESTORED_AT_PLAN]
            _copy(target, topic, partition, records)


def _finish_restore(source: KafkaCluster, target: KafkaCluster) -> None:
    records = read_partition(source, STILL_RESTORING)
    _copy(
        target, STILL_RESTORING.topic, STILL_RESTORING.partition, [r for r in records if r.offset >= RESTORED_AT_PLAN]
    )


def _copy(target: KafkaCluster, topic: str, partition: int, records: list[Record]) -> None:
    """Append ``records`` to the topic's restored name, each with its source offset in the header
    (but "audit", a replica without offset headers)."""
    header = topic != "audit"
    target.produce(
        RENAMED.get(topic, topic),
        partition,
        (
            (
                r.key,
                r.value,
                [
                    *((n, v) for n, v in r.headers if v is not None),
                    *([(DEFAULT_OFFSET_HEADER, r.offset.to_bytes(8, "big"))] if header else []),
                ],
                r.timestamp,
            )
            for r in records
        ),
    )


def _source_offset(record: Record | None) -> int | None:
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
    records: dict[TP, dict[int, Record]] = {}
    for tp in {e.target for e in entries}:
        records[tp] = {r.offset: r for r in read_partition(target, tp)}
    committed = target.committed_offsets(sorted({e.group for e in entries}))
    for e in entries:
        now = committed.get(e.group, {}).get(e.target)
        if e.status != "committed" or now is None or now.offset != e.target_offset:
            outcome["WRONG: not committed at the mapped offset"] += 1
            continue
        on_target = records[e.target]
        record, before = on_target.get(now.offset), on_target.get(now.offset - 1)
        got = fingerprint(record.key, record.value, record.headers) if record else None
        if got == next_records[e.group].get(TP(e.topic, e.partition)):
            outcome["same record"] += 1
            continue
        restored_from, previous = _source_offset(record), _source_offset(before)
        # Only a restore's offset header proves what was lost (a replica without one proves nothing here).
        if (
            restored_from is not None
            and restored_from > e.source_offset
            and (previous is None or previous < e.source_offset)
        ):
            outcome["next restored record (its own was lost before the backup)"] += 1
        else:
            outcome["WRONG: another record"] += 1
    return outcome


@dataclass
class _Scene:
    """What the demo's steps share."""

    flow: Workflow
    source: Broker
    target: Broker
    stories: dict[str, str]
    out: TextIO

    def run(self, run_input: dict[str, object], name: str, hold: threading.Event | None = None) -> dict[str, Any]:
        """Start a run of the state machine and follow it state by state; Ctrl-C stops it too."""
        execution = self.flow.start({"topic_map": RENAMED, "restore_id": "demo", **run_input}, name)
        try:
            described = follow(self.flow.sfn, execution, self.out, timeout_s=120, poll_s=0.3)
        except KeyboardInterrupt:
            self.flow.sfn.stop_execution(executionArn=execution, error="Interrupted", cause="Ctrl-C in the demo")
            raise
        finally:
            if hold is not None:
                hold.set()
        if described["status"] == "RUNNING":  # not done within the demo's patience: stop it, say so
            self.flow.sfn.stop_execution(executionArn=execution, error="TimedOut", cause="the demo waited 120 s")
        self.out.write(f"run {described['status']}" + (f": {described.get('cause')}" if described.get("cause") else ""))
        self.out.write("\n")
        return described

    def report(self) -> dict[str, Any]:
        body = self.flow.s3.get_object(Bucket=BUCKET, Key=restore_object("demo", "report.json"))["Body"].read()
        return dict(json.loads(body))

    def glance(self, report: dict[str, Any]) -> None:
        self.out.write(f"  report: {report['outcome']}; {report['headline_text']}\n")
        for group, why in list(report["do_not_start_yet"].items())[:6]:
            self.out.write(f"  do not start {group} yet: {why['held_by'].replace('_', ' ')} -> {why['next']}\n")


def clear_output(location: Path) -> None:
    """Empty the demo's output folder, and leave the mark that lets the next demo empty it again.

    A folder a demo did not write (``--output .``, a home folder given by mistake) is refused with nothing
    deleted: the demo's reports are not worth anyone's files.
    """
    if location.exists() and not location.is_dir():
        raise BadInputError(f"--output {location} is a file, not a folder: give a new or empty folder")
    if location.is_dir() and any(location.iterdir()):
        if not (location / MARKER).is_file() and not all(p.name in RUNS for p in location.iterdir()):
            raise BadInputError(
                f"--output {location} holds files no demo wrote (no {MARKER} in it): give a new or empty folder; "
                "nothing was deleted"
            )
        shutil.rmtree(location)
    location.mkdir(parents=True, exist_ok=True)
    (location / MARKER).write_text("written by offset-restore demo: the next demo empties this folder\n")


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
    rng = random.Random(seed)
    location = Path(output)
    clear_output(location)
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
        # Tansu acknowledges transactional offset commits and does not apply them: the write fence cannot
        # hold there, so the demo on it writes unfenced, as an operator would say so for such a cluster.
        unfenced = broker != "apache"
        with local_workflow(source_broker.bootstrap_servers, target_broker.bootstrap_servers, unfenced) as flow:
            scene = _Scene(flow, source_broker, target_broker, stories, out)
            proof = _incident(scene, rng, hold_s, location)
        if keep_running:
            out.write("brokers still running; Ctrl-C to stop\n")
            try:
                while True:
                    time.sleep(1)
            except KeyboardInterrupt:
                pass
    return 0 if proof and not any(what.startswith("WRONG") for what in proof) else 1


def _incident(scene: _Scene, rng: random.Random, hold_s: float, location: Path) -> Counter[str]:
    """The story, step by step; returns the proof's counts (empty when a run failed)."""
    out, source, target = scene.out, scene.source.settings(), scene.target.settings()
    result = run_snapshot(source, S3Store(BUCKET, "", scene.flow.s3), SnapshotOptions(cluster="src"))
    summary = "".join(f"{printable_line(line)}\n" for line in snapshot_summary(result))
    out.write("the scheduled snapshot, to the (local) S3 bucket:\n" + summary + "\n")
    out.write(
        "disaster: restoring into the target — orders renamed to dr.orders, its first "
        f"{RETENTION_LOST} records lost to retention and a few more missing; audit replicated without offset "
        f"headers; the restore of {STILL_RESTORING} is still running (up to source offset {RESTORED_AT_PLAN})\n"
    )
    with KafkaCluster(source) as src, KafkaCluster(target) as tgt:
        _restore(src, tgt, rng)
    out.write("\n1. plan first (mode plan): nothing is written\n")
    if scene.run({"mode": "plan", "pending_retries": 0}, "demo-plan")["status"] != "SUCCEEDED":
        return Counter()
    scene.glance(scene.report())
    _save_reports(scene, location / RUNS[0])
    with KafkaCluster(source) as src, KafkaCluster(target) as tgt:
        _finish_restore(src, tgt)
    out.write(f"\nthe restore of {STILL_RESTORING} finishes\n")
    busy, ahead, release = _on_the_target(scene, hold_s)
    out.write(f"\n2. apply (mode apply): it waits for {busy} by name, and leaves {ahead} for a decision\n")
    wait = {"timeout_seconds": 120, "interval_seconds": 2}
    if scene.run({"mode": "apply", "wait": wait}, "demo-apply", hold=release)["status"] != "SUCCEEDED":
        return Counter()
    scene.glance(scene.report())
    _save_reports(scene, location / RUNS[1])
    scope = pattern_for([ahead])
    out.write(f'\n3. the operator decides: {ahead} must reread what it skipped ("allow_rewind": {json.dumps(scope)})\n')
    if scene.run({"mode": "apply", "allow_rewind": scope}, "demo-rewind")["status"] != "SUCCEEDED":
        return Counter()
    report = scene.report()
    scene.glance(report)
    _save_reports(scene, location / RUNS[2])
    proof = _prove_all(scene, report)
    entries = [PlanEntry.model_validate(e) for e in report["entries"]]
    if not _roll_back_one(scene, sorted(report["safe_to_start"])[-1], entries):
        proof["WRONG: the rollback did not put back the offsets held before the apply"] += 1
    scene.glance(scene.report())
    _save_reports(scene, location / RUNS[3])
    out.write(f"reports, one folder per run as the workflow wrote them (report.html, .md, .json): {location}/\n")
    for run in RUNS:
        out.write(f"  {location / run / 'report.html'}\n")
    return proof


def _on_the_target(scene: _Scene, hold_s: float) -> tuple[str, str, threading.Event]:
    """One application still connected to the target (for ``hold_s``), and one group started there
    with ``auto.offset.reset=latest``: at the log end, past the records its restored position needs."""
    busy = next(g for g in sorted(scene.stories) if g.startswith("orders-"))
    ahead = next(g for g in sorted(scene.stories) if scene.stories[g] == "far behind" and g != busy)
    topic = ahead.split("-", 1)[0]
    with KafkaCluster(scene.target.settings()) as target:
        bounds = target.log_bounds([TP(RENAMED.get(topic, topic), p) for p in range(TOPICS[topic])])
        at_end = {tp: CommittedOffset(b.end, None) for tp, b in bounds.items()}
        failed = {tp: e for tp, e in target.alter_offsets(ahead, at_end).items() if e}
    if failed:
        raise RuntimeError(f"demo could not start {ahead} on the target: {failed}")
    scene.out.write(f"{ahead} was started on the target with auto.offset.reset=latest: it sits at the log end\n")
    scene.out.write(f"an application of group {busy} is still connected to the target for {hold_s:g} s\n")
    release, joined, failed_to_join = threading.Event(), threading.Event(), list[BaseException]()

    def application() -> None:
        try:
            with group_member(scene.target.settings(), busy, RENAMED["orders"]):
                joined.set()
                release.wait(hold_s)
        except Exception as error:  # the main thread says why instead of going on without the member
            failed_to_join.append(error)
            joined.set()

    threading.Thread(target=application, daemon=True).start()
    if not joined.wait(90) or failed_to_join:
        raise RuntimeError(f"demo: the application of {busy} did not join the target: {failed_to_join or 'no answer'}")
    _until_active(scene, busy)
    return busy, ahead, release


def _until_active(scene: _Scene, group: str, timeout_s: float = 30) -> None:
    """Until the target itself reports the group with a member: the apply looks there, not at the
    consumer's view of its assignment."""
    deadline = time.monotonic() + timeout_s
    with KafkaCluster(scene.target.settings()) as target:
        while (info := target.describe_groups([group]).get(group)) is None or info.members == 0:
            if time.monotonic() > deadline:
                raise RuntimeError(f"demo: the target does not show {group} with a member after {timeout_s:g} s")
            time.sleep(0.2)


def _save_reports(scene: _Scene, location: Path) -> None:
    """The report the run just finished wrote (each run rewrites the restore's), kept in its own folder:
    the files tell the whole story, the rollback's last, not only the state before it."""
    location.mkdir(parents=True, exist_ok=True)
    for name in ("report.json", "report.md", "report.html"):
        body = scene.flow.s3.get_object(Bucket=BUCKET, Key=restore_object("demo", name))["Body"].read()
        (location / name).write_bytes(body)


def _prove_all(scene: _Scene, report: dict[str, Any]) -> Counter[str]:
    out = scene.out
    entries = [PlanEntry.model_validate(e) for e in report["entries"]]
    repository = SnapshotRepository(S3Store(BUCKET, "", scene.flow.s3))
    key, manifest = repository.latest("src")
    next_records = {
        g.group: {TP(p.topic, p.partition): (p.next.fingerprint if p.next else None) for p in g.partitions}
        for g in repository.groups(key, manifest)
    }
    head = report["headline"]
    out.write(
        f"\n{head['groups_restored']} of {head['groups']} groups restored; {head['exact']} of {head['partitions']} "
        f"partitions exact; at most {head['records_at_risk']} records reprocessed\n\n"
    )
    _table(entries, scene.stories, out)
    with KafkaCluster(scene.target.settings()) as target:
        proof = _prove(entries, next_records, target)
    out.write(f"\nproof, over all {len(entries)} group-partitions: where each resumes on the target\n")
    for what, count in sorted(proof.items(), key=lambda item: -item[1]):
        out.write(f"  {count:>4}  {what}\n")
    return proof


def _roll_back_one(scene: _Scene, group: str, entries: list[PlanEntry]) -> bool:
    """The way back, shown on one group: the workflow's rollback mode puts back what it held before
    the apply (as the apply recorded it); True when the target holds exactly that again."""
    scene.out.write(f"\n4. roll back one group (mode rollback): {group}\n")
    if scene.run({"mode": "rollback", "groups": re.escape(group)}, "demo-rollback")["status"] != "SUCCEEDED":
        return False
    before = {
        e.target: e.previous_target_offset for e in entries if e.group == group and e.previous_target_offset is not None
    }
    with KafkaCluster(scene.target.settings()) as target:
        now = {tp: c.offset for tp, c in target.committed_offsets([group]).get(group, {}).items()}
    shown = ", ".join(f"{tp} at {offset}" for tp, offset in sorted(now.items())) or "no offsets"
    said = " (as before the apply)" if now == before else f" (WRONG: it held {before} before the apply)"
    scene.out.write(f"  {group} on the target now: {shown}{said}\n")
    return now == before


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
