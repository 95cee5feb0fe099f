"""Peak memory of the handlers whose work grows with the restore, at the largest scale, each in its own
process as in Lambda:

    python -m bench.handler_memory --groups 20000   # 240,000 group-partitions (~17 min, moto's Query)
    python -m bench.handler_memory                  # 2,000 groups, what `make bench` runs by default

AWS is a moto server on a local port (``AWS_ENDPOINT_URL``), so a handler's process holds only what
the handler holds; its peak resident memory (``VmHWM``) is what Lambda compares with the function's
memory setting. The bench writes a snapshot of the given size with 3 evidence records per position
and the restore's mappings (every one committed, as after an apply), then runs Prepare, Summarize and
Report on them. Translate and Commit work on one bounded work item or batch whatever the scale, and
the Snapshot function's peak is measured by ``bench.snapshot_bench`` in the same way.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from moto.server import ThreadedMotoServer
from offset_restore.devtools.local_aws import BUCKET, REGION, TABLE, create_table, faster_moto
from offset_restore.formats.plan import PlanEntry
from offset_restore.snapshot.fingerprint import fingerprint
from offset_restore.snapshot.live import GroupTally, SnapshotStream
from offset_restore.snapshot.model import GroupSnapshot, PartitionSnapshot, RecordEvidence, SnapshotManifest
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import S3Store

RESULTS = Path(__file__).parent / "results"
PARTITIONS = 12
VALUE = b"v" * 100
LIMITS = {"Prepare": 512, "Summarize": 512, "Report": 512}

RUNNER = """
import json, sys
from offset_restore.devtools import process_memory
from offset_restore.devtools.local_aws import _Context
module = __import__("offset_restore_handlers." + sys.argv[1], fromlist=["handler"])
result = module.handler(json.loads(sys.argv[2]), _Context(function_name=sys.argv[1]))
work = result.get("work_items") if isinstance(result, dict) else None
print(json.dumps({"peak_mb": process_memory.peak_mb(), "result_bytes": len(json.dumps(result)), "work_items": work}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def record_key(offset: int) -> bytes:
    """The key of the source record at ``offset`` (its value is ``VALUE``): the evidence's fingerprints
    are those of these records, so a benchmark that restores them finds the same content."""
    return str(offset).encode()


def groups(count: int, distinct: bool = False) -> Iterator[GroupSnapshot]:
    """``count`` groups on 12 partitions of one topic each (ten groups' worth of partitions per topic),
    at offsets 100-149; with ``distinct``, no two groups of a topic at the same offset (7-199)."""
    topics = max(1, round(count / 10 / PARTITIONS))
    for g in range(count):
        topic = f"scale-{g % topics:03d}"
        offset = 7 + (g // topics) % 193 if distinct else 100 + g % 50

        def evidence(offset: int) -> RecordEvidence:
            print_ = fingerprint(record_key(offset), VALUE)
            return RecordEvidence(offset=offset, timestamp=1_700_000_000_000 + offset, fingerprint=print_)

        yield GroupSnapshot(
            group=f"scale-group-{g:05d}",
            state="Empty",
            partitions=[
                PartitionSnapshot(
                    topic=topic,
                    partition=p,
                    committed_offset=offset,
                    log_start=0,
                    log_end=200,
                    lag=100 - g % 50,
                    next=evidence(offset),
                    before=[evidence(offset - 3 + i) for i in range(3)],
                )
                for p in range(PARTITIONS)
            ],
        )


def entries(count: int) -> Iterator[PlanEntry]:
    for group in groups(count):
        for p in group.partitions:
            yield PlanEntry(
                group=group.group,
                topic=p.topic,
                partition=p.partition,
                target_topic=p.topic,
                source_offset=p.committed_offset,
                target_offset=p.committed_offset - 7,
                method="header",
                exact=True,
                max_duplicates=0,
                status="committed",
                previous_target_offset=None,
                previous_recorded=True,
                expected_fingerprint=p.next.fingerprint if p.next else None,
                verified=True,
            )


def run_handler(name: str, event: dict[str, object], env: dict[str, str]) -> dict[str, Any]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, name, json.dumps(event)], env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(f"{name} failed:\n{done.stderr[-3000:]}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    seconds, result = time.perf_counter() - started, answer["result_bytes"]
    return {"peak_mb": answer["peak_mb"], "seconds": seconds, "result": result, "work": answer["work_items"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=2_000, help="groups of 12 partitions")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    port = free_port()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    fast = faster_moto()
    fast.__enter__()
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "TABLE_NAME": TABLE,
        "RESTORE_BUCKET": BUCKET,
        "SNAPSHOT_BUCKET": BUCKET,
        "SOURCE_CLUSTER_NAME": "src",
        "TARGET_CLUSTER_NAME": "dr",
    }
    env.pop("AWS_PROFILE", None)
    os.environ.update(env)
    rows: list[tuple[str, dict[str, Any]]] = []
    try:
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        create_table(dynamodb)
        started = time.perf_counter()
        created = datetime.now(UTC)
        manifest = SnapshotManifest(snapshot_id="big", cluster="src", created_at=created, completed_at=created)
        stream = SnapshotStream(manifest=manifest, groups=iter(()))

        def counted() -> Iterator[GroupSnapshot]:
            tally = GroupTally()
            for group in groups(args.groups):
                tally.add(group)
                yield group
            stream.manifest = manifest.model_copy(update={"counts": tally.result()})

        stream.groups = counted()
        SnapshotRepository(S3Store(BUCKET, "", s3)).write(stream)
        restore = "big-run"
        store = MappingStore(TABLE, dynamodb)
        batch: list[PlanEntry] = []
        for entry in entries(args.groups):
            batch.append(entry)
            if len(batch) == 10_000:
                store.save(restore, batch)
                batch = []
        store.save(restore, batch)
        print(f"setup {time.perf_counter() - started:.0f} s", file=sys.stderr)
        run = {
            "restore_id": restore,
            "source_cluster": "src",
            "target_cluster": "dr",
            "groups": "scale-group-.*",
            "mode": "apply",
        }
        steps: list[tuple[str, dict[str, object]]] = [
            ("prepare", {"run": run}),
            ("summarize", {"restore_id": restore, "retries_left": 0}),
            ("report", {"run": run, "outcome": "applied"}),
        ]
        work: list[str] = []
        for name, event in steps:
            if name == "summarize":  # it reads Prepare's work items again: every group-partition mapped
                event = {**event, "work_items": work}
            figures = run_handler(name, event, env)
            work = figures.pop("work") or work
            print(f"{name}: {figures}", file=sys.stderr)
            rows.append((name.capitalize(), figures))
    finally:
        fast.__exit__(None, None, None)
        server.stop()
    gp = args.groups * PARTITIONS
    lines = [
        f"Handler memory at {args.groups:,} groups x {PARTITIONS} = {gp:,} group-partitions (3 evidence records "
        f"per position; every mapping committed), each handler in a fresh process against a moto server; "
        f"{platform.machine()}, Python {platform.python_version()}. `python -m bench.handler_memory "
        f"--groups {args.groups}`.",
        "",
        "| handler | peak resident memory | Lambda memory | wall time (moto server) | step output |",
        "|---|---|---|---|---|",
    ]
    for name, figures in rows:
        limit = LIMITS[name]
        verdict = "under" if figures["peak_mb"] < limit else "OVER"
        lines.append(
            f"| {name} | {figures['peak_mb']:,.0f} MB ({verdict}) | {limit} MB | {figures['seconds']:.1f} s | "
            f"{figures['result']:,} bytes |"
        )
    text = "\n".join(lines) + "\n"
    name = "handler_memory.md" if args.groups == 2_000 else f"handler_memory-{args.groups}.md"
    output = args.output or RESULTS / name
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
