"""A plan of the same target reads the same bytes and gives the same entries in every process: what the
plan's one budget holds (the samples, the search's windows) follows the order the partitions are read in,
which must not follow how the process happens to hash topic names (``PYTHONHASHSEED``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PLAN = """
import hashlib, json, random
from offset_restore.kafka.model import TP, FetchedRecord
from offset_restore.snapshot.fingerprint import fingerprint
from offset_restore.snapshot.model import GroupSnapshot, PartitionSnapshot, RecordEvidence
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.translation import translate
from tests.fake_log import FakeLog, FakeTarget

PARTITIONS, RECORDS, GROUPS = 52, 6_000, 3  # samples of one 1 MB batch each: more than the budget holds
value, rng = b"x" * 50, random.Random(1)
def record(p, o):
    return FetchedRecord(o, 1_000 + o // 4, f"k{p}-{o}".encode(), value, (("x-source-offset", str(o).encode()),))
def evidence(p, o):
    return RecordEvidence(offset=o, timestamp=1_000 + o // 4, fingerprint=fingerprint(f"k{p}-{o}".encode(), value))
log = FakeLog(
    {TP("t", p): [record(p, o) for o in range(RECORDS)] for p in range(PARTITIONS)},
    batch=RECORDS, record_bytes=170, broker="apache",
)
groups = []
for g in range(GROUPS):
    parts = []
    for p in range(PARTITIONS):
        c = rng.randrange(RECORDS + 1)
        parts.append(PartitionSnapshot(
            topic="t", partition=p, committed_offset=c, log_start=0, log_end=RECORDS,
            next=evidence(p, c) if c < RECORDS else None, before=[evidence(p, s) for s in range(max(0, c - 3), c)],
        ))
    groups.append(GroupSnapshot(group=f"g{g}", state="Empty", partitions=parts))
entries, _ = translate(groups, FakeTarget(log), PlanOptions())
digest = hashlib.sha256("".join(e.model_dump_json() for e in entries).encode()).hexdigest()
print(json.dumps({"bytes": log.sent_bytes, "entries": digest, "exact": sum(e.exact for e in entries)}))
"""


def _plan(seed: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": f"{ROOT / 'functions'}{os.pathsep}{ROOT}"}
    return subprocess.Popen([sys.executable, "-c", PLAN], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)


def test_a_plan_reads_the_same_bytes_and_answers_the_same_however_names_hash() -> None:
    """Two hash seeds under which the plan read its partitions in different orders (and held different
    samples, so its entries' reasons differed) before the order was fixed."""
    runs = [_plan(seed) for seed in (1, 2)]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0]
    first, second = (json.loads(output) for output in outputs)
    assert first["exact"] == 156
    assert first == second
