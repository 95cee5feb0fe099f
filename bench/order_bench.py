"""Restores written out of order: what each plan answers, and what it reads.

    python -m bench.order_bench                   # partitions of 100,000 records (about 2 minutes)
    python -m bench.order_bench --records 20000   # a quick look

One fresh local target broker. Two parts, both judged against the truth the benchmark wrote (the
layout of every target partition: which source offset each record carries):

1. **Untidy restores** (``tests/disorder.py``: a stray header, a repeated chunk, a
   reordered and repeated batch, interleaved workers, records without the header, workers in the
   wrong order; 60 source records, 61 committed positions each) and two clock-skew cases under the
   timestamp strategy. Per case: the search as it was before this check (every answer called exact;
   the timestamp strategy's first record at or after the committed time), the windows check (the
   default) and the full read. Counted: positions that skip records, records skipped, entries called
   exact that are not, bounds below the truth.
2. **Bytes on realistic partitions** (``--records``, default 100,000 per partition): a restore in
   order with few (3) and many (1,000) committed positions, and one each with a repeated chunk,
   interleaved workers and records lost before the backup (records the snapshot saw). Per case: the
   search before, the windows check, and the full read — a one-pass scan of every partition, the
   best honest alternative — with bytes the broker sent, fetch requests, records decoded and time.
"""

from __future__ import annotations

import argparse
import bisect
import platform
import random
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offset_restore.devtools.local_broker import LocalBroker
from offset_restore.formats.plan import PlanEntry
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP, LogBounds, PartitionFetch, PartitionIdentity, Record
from offset_restore.reading.rounds import fetch_from
from offset_restore.snapshot.fingerprint import fingerprint
from offset_restore.snapshot.headers import parse_offset_header
from offset_restore.snapshot.model import GroupSnapshot, PartitionSnapshot, RecordEvidence
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.search import search_first_at_least
from offset_restore.translate.translation import translate

from tests.disorder import HEADER, Judgement, Slot, TargetRecord, copy, layouts, restored_part

RESULTS = Path(__file__).parent / "results"
BASE_MS = 1_700_000_000_000
VALUE = b"v" * 40


def key_of_source(s: int) -> bytes:
    return f"k{s}".encode()


class Counted:
    """The target as translate sees it, counting what every fetch cost."""

    def __init__(self, cluster: KafkaCluster) -> None:
        self.cluster, self.bytes, self.records, self.calls = cluster, 0, 0, 0
        self.requests_before = cluster.requests_sent.get("Fetch", 0)

    @property
    def cluster_id(self) -> str:
        return self.cluster.cluster_id

    @property
    def requests(self) -> int:
        return self.cluster.requests_sent.get("Fetch", 0) - self.requests_before

    def topic_partitions(self) -> dict[str, int]:
        return self.cluster.topic_partitions()

    def log_bounds(self, partitions: Iterable[TP]) -> dict[TP, LogBounds]:
        return self.cluster.log_bounds(partitions)

    def offsets_at_times(self, times: Mapping[TP, int]) -> dict[TP, int | None]:
        return self.cluster.offsets_at_times(times)

    def partition_identities(self, partitions: Iterable[TP]) -> dict[TP, PartitionIdentity]:
        return self.cluster.partition_identities(partitions)

    def records_at_times(self, times: Mapping[TP, int]) -> dict[TP, tuple[int, int] | None]:
        return self.cluster.records_at_times(times)

    def fetch(
        self,
        positions: Mapping[TP, int],
        *,
        partition_max_bytes: int | Mapping[TP, int] = 64 * 1024,
        until: Mapping[TP, int] | None = None,
        max_wait_ms: int | None = None,
    ) -> dict[TP, PartitionFetch]:
        answers = self.cluster.fetch(positions, partition_max_bytes=partition_max_bytes, until=until)
        self.calls += 1
        self.bytes += sum(a.size for a in answers.values())
        self.records += sum(len(a.records) for a in answers.values())
        return answers


@dataclass
class Written:
    """A target partition the benchmark wrote, and the source partition it copies."""

    tp: TP
    layout: list[Slot]
    stamps: dict[int, int]  # source offset -> timestamp
    source_records: int

    def truth(self) -> list[TargetRecord]:
        return restored_part(
            [
                TargetRecord(i, s.source if s.source is not None else s.header, s.header is not None)
                for i, s in enumerate(self.layout)
            ]
        )


def write(cluster: KafkaCluster, topic: str, layout: list[Slot], stamps: dict[int, int], n: int) -> Written:
    cluster.create_topics({topic: 1})

    def record(i: int, slot: Slot) -> tuple[bytes, bytes, list[tuple[str, bytes]], int]:
        headers = [(HEADER, slot.header.to_bytes(8, "big"))] if slot.header is not None else []
        if slot.source is None:
            return f"stray-{i}".encode(), b"stray", headers, max(stamps.values())
        return key_of_source(slot.source), VALUE, headers, stamps[slot.source]

    for start in range(0, len(layout), 20_000):
        part = layout[start : start + 20_000]
        cluster.produce(topic, 0, (record(start + i, slot) for i, slot in enumerate(part)))
    return Written(TP(topic, 0), layout, stamps, n)


def snapshot(w: Written, positions: Iterable[int], sources: Sequence[int] | None = None) -> list[GroupSnapshot]:
    """Groups at ``positions`` of a source partition holding ``sources`` (default 0..n-1), with the
    evidence a real snapshot takes: the next record and three before."""
    present = sorted(sources if sources is not None else range(w.source_records))

    def evidence(s: int) -> RecordEvidence:
        return RecordEvidence(offset=s, timestamp=w.stamps[s], fingerprint=fingerprint(key_of_source(s), VALUE))

    groups = []
    for c in positions:
        at = bisect.bisect_left(present, c)
        groups.append(
            GroupSnapshot(
                group=f"g-{w.tp.topic}-{c}",
                state="Empty",
                partitions=[
                    PartitionSnapshot(
                        topic=w.tp.topic,
                        partition=0,
                        committed_offset=c,
                        log_start=0,
                        log_end=w.source_records,
                        next=evidence(present[at]) if at < len(present) else None,
                        before=[evidence(s) for s in present[max(0, at - 3) : at]],
                    )
                ],
            )
        )
    return groups


# -- the algorithms --------------------------------------------------------------------------------


def header_key(tp: TP, record: Record) -> int | None:
    value = dict(record.headers).get(HEADER)
    return parse_offset_header(value) if value is not None else None


def before_header(groups: list[GroupSnapshot], target: Counted) -> list[PlanEntry]:
    """The header search as it was before the order check: the first record the bisection finds,
    every answer called exact (what 0.1's translate did)."""
    tp = TP(groups[0].partitions[0].topic, 0)
    bounds = target.log_bounds([tp])
    wanted = {
        g.partitions[0].committed_offset: (tp, g.partitions[0].committed_offset, guess(g, bounds[tp])) for g in groups
    }
    results, _ = search_first_at_least(wanted, bounds, header_key, fetch_from(target))
    entries = []
    for c, r in results.items():
        if r.found is not None:
            entries.append(entry(tp, c, r.found.offset, "header", True, 0))
        elif r.below is not None and r.below.key >= (groups[0].partitions[0].log_end or 0) - 1:
            entries.append(entry(tp, c, r.below.offset + 1, "end", True, 0))
    return entries


def guess(group: GroupSnapshot, bounds: LogBounds) -> int | None:
    """The first guess translate makes too: where the record would be at the source's density."""
    p = group.partitions[0]
    if p.log_start is None or p.log_end is None or p.log_end <= p.log_start:
        return None
    density = (bounds.end - bounds.start) / (p.log_end - p.log_start)
    return bounds.start + int((p.committed_offset - p.log_start) * min(1.0, density))


def before_timestamp(groups: list[GroupSnapshot], target: Counted) -> list[PlanEntry]:
    """The timestamp strategy as it was: the first record at or after the committed record's time,
    bounded by the records sharing that millisecond."""
    tp = TP(groups[0].partitions[0].topic, 0)
    bounds = target.log_bounds([tp])
    stamps = {}
    for g in groups:
        p = g.partitions[0]
        evidence = p.next or (p.before[-1] if p.before else None)
        if evidence is not None:
            stamps[p.committed_offset] = evidence.timestamp
    wanted = {c: (tp, t, None) for c, t in stamps.items()}
    results, _ = search_first_at_least(wanted, bounds, lambda tp, r: r.timestamp, fetch_from(target))
    log = target.fetch({tp: bounds[tp].start}, partition_max_bytes=4 * 1024 * 1024)[tp].records
    entries = []
    for c, r in results.items():
        if r.found is not None:
            same = sum(1 for x in log if x.offset >= r.found.offset and x.timestamp == stamps[c])
            entries.append(entry(tp, c, r.found.offset, "timestamp", False, max(0, same - 1)))
    return entries


def entry(tp: TP, c: int, offset: int, method: Any, exact: bool, bound: int | None) -> PlanEntry:
    return PlanEntry(
        group=f"g{c}",
        topic=tp.topic,
        partition=0,
        target_topic=tp.topic,
        source_offset=c,
        target_offset=offset,
        method=method,
        exact=exact,
        max_duplicates=bound,
        status="mapped",
    )


def ours(**options: Any) -> Callable[[list[GroupSnapshot], Counted], list[PlanEntry]]:
    def run(groups: list[GroupSnapshot], target: Counted) -> list[PlanEntry]:
        return translate(groups, target, PlanOptions(**options))[0]

    return run


@dataclass
class Outcome:
    case: str
    algorithm: str
    judgement: Judgement
    bytes: int
    requests: int
    records: int
    seconds: float


def measure(
    cluster: KafkaCluster,
    case: str,
    w: Written,
    groups: list[GroupSnapshot],
    algorithms: Mapping[str, Callable[[list[GroupSnapshot], Counted], list[PlanEntry]]],
) -> list[Outcome]:
    truth = w.truth()
    outcomes = []
    for name, algorithm in algorithms.items():
        target = Counted(cluster)
        started = time.perf_counter()
        entries = algorithm(groups, target)
        seconds = time.perf_counter() - started
        judgement = Judgement()
        for e in entries:
            judgement.judge(e, truth)
        outcomes.append(Outcome(case, name, judgement, target.bytes, target.requests, target.records, seconds))
    return outcomes


# -- the two parts ----------------------------------------------------------------------------------


def issue_cases(cluster: KafkaCluster) -> list[Outcome]:
    n = 60
    stamps = {s: BASE_MS + s * 100 for s in range(n)}
    header_algorithms = {
        "before: search, unchecked": before_header,
        "windows check (default)": ours(),
        "full read": ours(order_check="full"),
    }
    outcomes: list[Outcome] = []
    for case, layout in layouts(n).items():
        w = write(cluster, f"order-case-{len(outcomes)}", layout, stamps, n)
        outcomes += measure(cluster, case, w, snapshot(w, range(n + 1)), header_algorithms)
    skews = {
        "clock skew: one producer 10 s behind": {s: 10_000 for s in range(21, 30)},
        "clock skew: half the records 5 s behind": {s: 5_000 for s in range(0, n, 2)},
    }
    time_algorithms = {
        "before: first record at the time": before_timestamp,
        "timestamp with skew and margin": ours(strategies=("timestamp",)),
    }
    for case, behind in skews.items():
        skewed = {s: t - behind.get(s, 0) for s, t in stamps.items()}
        w = write(cluster, f"order-skew-{len(outcomes)}", [Slot(s, None) for s in range(n)], skewed, n)
        outcomes += measure(cluster, case, w, snapshot(w, range(n + 1)), time_algorithms)
    return outcomes


def byte_cases(cluster: KafkaCluster, n: int, many: int, rng: random.Random) -> list[Outcome]:
    stamps = {s: BASE_MS + s for s in range(n)}
    algorithms = {
        "before: search, unchecked": before_header,
        "windows check (default)": ours(),
        "full read (one-pass scan)": ours(order_check="full"),
    }
    chunk = n // 50
    lost = set(rng.sample(range(n // 10, n), n // 200))
    cases: dict[str, tuple[list[Slot], Sequence[int]]] = {
        "in order": (copy(range(n)), range(n)),
        "repeated chunk (2% written twice)": (
            [*copy(range(n // 2)), *copy(range(n // 2 - chunk, n // 2)), *copy(range(n // 2, n))],
            range(n),
        ),
        "interleaved workers": (
            [s for pair in zip(copy(range(n // 2)), copy(range(n // 2, n)), strict=False) for s in pair],
            range(n),
        ),
        "records lost before the backup (0.5%)": ([s for s in copy(range(n)) if s.source not in lost], range(n)),
    }
    outcomes: list[Outcome] = []
    for number, (case, (layout, sources)) in enumerate(cases.items()):
        w = write(cluster, f"order-bytes-{number}", layout, stamps, n)
        positions = {"few": sorted(rng.sample(range(n), 3))}
        if case == "in order":
            positions["many"] = sorted(rng.sample(range(n), many))
        elif case.startswith("records lost"):
            positions = {"few": sorted(rng.sample(sorted(lost), 3))}
        for label, cs in positions.items():
            groups = snapshot(w, cs, sources)
            outcomes += measure(cluster, f"{case}, {len(cs):,} positions ({label})", w, groups, algorithms)
    return outcomes


def table(title: str, outcomes: list[Outcome], with_bytes: bool) -> list[str]:
    head = "| case | algorithm | positions | positions skipping | records skipped | called exact, not |"
    head += " bound below truth |"
    rule = "|---|---|---|---|---|---|---|"
    if with_bytes:
        head += " bytes read | fetch requests | records decoded | time |"
        rule += "---|---|---|---|"
    lines = [f"### {title}", "", head, rule]
    for o in outcomes:
        j = o.judgement
        row = (
            f"| {o.case} | {o.algorithm} | {j.positions} | {j.positions_skipping} | {j.skipped:,} | {j.mislabelled} |"
            f" {j.bound_below_truth} |"
        )
        if with_bytes:
            row += f" {o.bytes / 1e6:,.2f} MB | {o.requests:,} | {o.records:,} | {o.seconds:.2f} s |"
        lines.append(row)
    return [*lines, ""]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000, help="records per partition in part 2")
    parser.add_argument("--many", type=int, default=1_000, help="committed positions in the 'many' case")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    broker = LocalBroker("order-bench").start()
    try:
        with KafkaCluster(broker.settings()) as cluster:
            first = issue_cases(cluster)
            second = byte_cases(cluster, args.records, args.many, rng)
    finally:
        broker.stop()
    lines = [
        f"Order benchmark: {platform.machine()}, Python {platform.python_version()}, local broker "
        f"(Tansu); partitions of {args.records:,} records in part 2.",
        "",
        *table("1. Untidy restores (61 committed positions each)", first, with_bytes=False),
        *table(f"2. Bytes on partitions of {args.records:,} records", second, with_bytes=True),
    ]
    report = "\n".join(lines)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "order.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
