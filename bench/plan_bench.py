"""Translation benchmark: this project's header search against the published alternatives.

    python -m bench.plan_bench                    # 1,008 partitions x 1,000 records, 10,000 groups x 12
    python -m bench.plan_bench --topics 10 --groups 500 --sample 300   # a quick look

Setup (one fresh local target broker): 84 topics x 12 partitions; each partition holds 1,000 restored
records whose source offsets start at a random shift (retention) and skip 1-3 offsets at random 5%
of the time (gaps), with the source offset in an 8-byte ``x-source-offset`` header and a timestamp of
``source offset // 4`` ms (four records per millisecond). 10,000 groups each commit on the 12
partitions of one topic at random offsets, from before the restored range to past its end. The
snapshot is built in memory from the same numbers (no source broker is needed).

Measured in the same run, on the same data:
- this project (header strategy): all 120,000 group-partitions;
- linear header scan, and kbridge's binary search with 1,000-record scan windows: per search, on a
  random sample of distinct positions (they share nothing between searches, so per-search figures
  scale);
- MirrorMaker 2's offset-sync translation (a sync every ``offset.lag.max`` = 100 records, 64 kept per
  partition; translation to the sync's downstream offset, plus one past an exact hit): no fetches,
  precision only;
- timestamp seek (the first record with timestamp >= the committed record's, as offsetsForTimes
  defines it, found by fetching): the whole set.
Skipped and duplicated records are counted against the true answer from the restore's own mapping.
"""

from __future__ import annotations

import argparse
import bisect
import platform
import random
import statistics
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offset_restore.devtools.local_broker import LocalBroker
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP, PartitionFetch, Record
from offset_restore.snapshot.fingerprint import fingerprint
from offset_restore.snapshot.headers import parse_offset_header
from offset_restore.snapshot.model import GroupSnapshot, PartitionSnapshot, RecordEvidence
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.translation import translate

RESULTS = Path(__file__).parent / "results"
BASE_MS = 1_700_000_000_000
HEADER = "x-source-offset"
VALUE = b"v" * 40


@dataclass
class PartitionData:
    sources: list[int]  # source offset of target record i
    log_start: int
    log_end: int

    def truth(self, c: int) -> int:
        """Target offset of the first restored record with source offset >= c (the end if none)."""
        return bisect.bisect_left(self.sources, c)


def stamp(source_offset: int) -> int:
    return BASE_MS + source_offset // 4


def build_target(
    cluster: KafkaCluster, topics: int, partitions: int, records: int, rng: random.Random
) -> dict[TP, PartitionData]:
    names = [f"bench-plan-{t:03d}" for t in range(topics)]
    cluster.create_topics(dict.fromkeys(names, partitions))
    data: dict[TP, PartitionData] = {}
    for name in names:
        for p in range(partitions):
            shift = rng.randint(0, 500)
            source, sources = shift, []
            for _ in range(records):
                sources.append(source)
                source += 1 + (rng.randint(1, 3) if rng.random() < 0.05 else 0)
            data[TP(name, p)] = PartitionData(sources, log_start=shift, log_end=sources[-1] + 1)
            cluster.produce(
                name, p, ((f"k{s}".encode(), VALUE, [(HEADER, s.to_bytes(8, "big"))], stamp(s)) for s in sources)
            )
    return data


def build_groups(
    data: dict[TP, PartitionData], groups: int, partitions: int, rng: random.Random
) -> list[GroupSnapshot]:
    topics = sorted({tp.topic for tp in data})
    result = []
    for g in range(groups):
        topic = topics[g % len(topics)]
        entries = []
        for p in range(partitions):
            d = data[TP(topic, p)]
            c = rng.randint(max(0, d.log_start - 20), d.log_end + 2)
            entries.append(
                PartitionSnapshot(
                    topic=topic,
                    partition=p,
                    committed_offset=c,
                    log_start=d.log_start,
                    log_end=d.log_end,
                    lag=max(0, d.log_end - c),
                    next=next_record(d, c),
                )
            )
        result.append(GroupSnapshot(group=f"bench-group-{g:05d}", state="Empty", partitions=entries))
    return result


def next_record(data: PartitionData, c: int) -> RecordEvidence | None:
    """What a snapshot records as the group's next record: the first source record at or after ``c``.
    The gaps between source offsets are the source's own (compaction, transaction markers), so the
    next record of a position in a gap is the one after it."""
    at = bisect.bisect_left(data.sources, c)
    if at >= len(data.sources):
        return None
    s = data.sources[at]
    return RecordEvidence(offset=s, timestamp=stamp(s), fingerprint=fingerprint(f"k{s}".encode(), VALUE))


def score(results: Mapping[tuple[TP, int], int], data: dict[TP, PartitionData]) -> dict[str, Any]:
    """Skipped and duplicated records per search against the truth."""
    skipped = duplicated = wrong = 0
    per_partition: dict[TP, int] = {}
    for (tp, c), offset in results.items():
        truth = data[tp].truth(c)
        if offset > truth:
            skipped += offset - truth
        elif offset < truth:
            duplicated += truth - offset
            per_partition[tp] = max(per_partition.get(tp, 0), truth - offset)
        wrong += offset != truth
    return {
        "skipped": skipped,
        "duplicated": duplicated,
        "wrong_positions": wrong,
        "max_duplicates_in_a_partition": max(per_partition.values(), default=0),
    }


class Counting:
    """Wraps the adapter's fetch for the baselines: counts requests and records read."""

    def __init__(self, cluster: KafkaCluster) -> None:
        self.cluster, self.requests, self.records = cluster, 0, 0

    def fetch(self, positions: Mapping[TP, int], max_bytes: int = 64 * 1024) -> dict[TP, PartitionFetch]:
        self.requests += 1
        answer = self.cluster.fetch(positions, partition_max_bytes=max_bytes)
        self.records += sum(len(a.records) for a in answer.values())
        return answer


def header_of(record: Record) -> int:
    value = dict(record.headers)[HEADER]
    number = parse_offset_header(value)
    assert number is not None
    return number


def linear_scan(counting: Counting, tp: TP, c: int, end: int) -> int:
    return linear_from(counting, tp, c, 0, end)


def kbridge(counting: Counting, tp: TP, c: int, end: int, window: int = 1000) -> int:
    low, high = 0, end
    while high - low > window:
        middle = (low + high) // 2
        first = counting.fetch({tp: middle}, max_bytes=1)[tp].records[0]
        if header_of(first) >= c:
            high = middle + 1 if first.offset == middle else first.offset
        else:
            low = first.offset + 1
    return linear_from(counting, tp, c, low, end)


def linear_from(counting: Counting, tp: TP, c: int, position: int, end: int) -> int:
    empty = 0
    while position < end:
        records = counting.fetch({tp: position})[tp].records
        for record in records:
            if header_of(record) >= c:
                return record.offset
        if not records:  # a round the broker left unserved: ask again, as every reader here does
            empty += 1
            if empty > 10:
                raise RuntimeError(f"{tp} answered nothing at {position} below its end {end}")
            continue
        position = records[-1].offset + 1
    return end


@dataclass
class SampledRun:
    name: str
    seconds: float
    requests: int
    records: int
    result: dict[str, Any]


def per_search_baselines(
    cluster: KafkaCluster, sample: list[tuple[TP, int]], data: dict[TP, PartitionData]
) -> list[SampledRun]:
    """The linear scan and kbridge's windowed binary search, each search on its own, on ``sample``."""
    runs = []
    for name, algorithm in (
        ("linear header scan", linear_scan),
        ("kbridge: binary search + 1,000-record scan windows", kbridge),
    ):
        counting = Counting(cluster)
        started = time.perf_counter()
        found = {(tp, c): algorithm(counting, tp, c, len(data[tp].sources)) for tp, c in sample}
        runs.append(
            SampledRun(name, time.perf_counter() - started, counting.requests, counting.records, score(found, data))
        )
    return runs


def mm2(d: PartitionData, c: int, lag_max: int = 100, kept: int = 64) -> int:
    """MirrorMaker 2: syncs every ``lag_max`` records, the newest ``kept`` retained; translate to the
    downstream offset of the newest sync at or below c, plus one unless it is exactly c."""
    syncs = [(d.sources[i], i) for i in range(0, len(d.sources), lag_max)][-kept:]
    below = [s for s in syncs if s[0] <= c]
    if not below:
        return 0  # MM2 gives no translation; consumers fall back to their reset policy (earliest)
    upstream, downstream = below[-1]
    return downstream if upstream == c else downstream + 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=84)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=1_000, help="positions per per-search baseline")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    rows: list[dict[str, Any]] = []
    with LocalBroker("bench-target") as broker:
        settings = broker.settings()
        with KafkaCluster(settings) as cluster:
            started = time.perf_counter()
            data = build_target(cluster, args.topics, args.partitions, args.records, rng)
            groups = build_groups(data, args.groups, args.partitions, rng)
            print(
                f"setup: {len(data):,} partitions, {len(data) * args.records:,} records, "
                f"{args.groups * args.partitions:,} group-partitions in {time.perf_counter() - started:.1f} s",
                file=sys.stderr,
            )
            positions = {(TP(p.topic, p.partition), p.committed_offset) for g in groups for p in g.partitions}

            def ours(strategy: str) -> dict[str, Any]:
                before = dict(cluster.requests_sent)
                started = time.perf_counter()
                # The timestamp row is the seek as offsetsForTimes defines it: no margin for clock skew.
                options = PlanOptions(strategies=(strategy,), timestamp_margin_ms=0)  # type: ignore[arg-type]
                entries, stats = translate(groups, cluster, options)
                wall = time.perf_counter() - started
                found = {
                    (TP(e.target_topic, e.partition), e.source_offset): e.target_offset
                    for e in entries
                    if e.target_offset is not None
                }
                per_partition = stats.rounds_per_partition.get(strategy, {})
                records = stats.records_read.get(strategy, 0)
                return {
                    "wall_s": wall,
                    "searches": len(positions),
                    "records_per_search": records / len(positions),
                    "fetch_requests": cluster.requests_sent["Fetch"] - before.get("Fetch", 0),
                    "fetch_rounds": stats.fetch_rounds.get(strategy, 0),
                    "median_rounds_per_partition": statistics.median(per_partition.values()) if per_partition else 0,
                    "records_per_partition": records / max(1, len(per_partition)),
                    "unmapped": sum(1 for e in entries if e.status != "mapped"),
                    **score(found, data),
                }

            rows.append({"name": "offset-restore header search (all group-partitions)", **ours("header")})
            rows.append({"name": "timestamp seek (first record with timestamp >= T)", **ours("timestamp")})
            sample = rng.sample(sorted(positions), min(args.sample, len(positions)))
            for run in per_search_baselines(cluster, sample, data):
                rows.append(
                    {
                        "name": f"{run.name} (sample of {len(sample):,} searches)",
                        "wall_s": run.seconds,
                        "searches": len(sample),
                        "fetch_requests": run.requests,
                        "fetch_rounds": run.requests,
                        "median_rounds_per_partition": None,
                        "records_per_partition": None,
                        "records_per_search": run.records / len(sample),
                        "unmapped": 0,
                        **run.result,
                    }
                )
            found = {(tp, c): mm2(data[tp], c) for tp, c in positions}
            rows.append(
                {
                    "name": "MirrorMaker 2 offset syncs (offset.lag.max=100)",
                    "wall_s": 0.0,
                    "searches": len(positions),
                    "fetch_requests": 0,
                    "fetch_rounds": 0,
                    "median_rounds_per_partition": None,
                    "records_per_partition": None,
                    "unmapped": 0,
                    **score(found, data),
                }
            )
    report = table(args, rows, len(data))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "plan.md").write_text(report)
    print(report)
    return 0


def table(args: argparse.Namespace, rows: list[dict[str, Any]], partitions: int) -> str:
    ours = rows[0]
    lines = [
        f"Plan benchmark: {partitions:,} target partitions x {args.records:,} restored records (shifted, with "
        f"gaps); {args.groups:,} groups x {args.partitions} partitions; {platform.machine()}, "
        f"Python {platform.python_version()}.",
        "",
        "| algorithm | searches | wall time | fetch requests | requests per search | fetch rounds | median rounds "
        "per partition | records read per search | skipped records | duplicated records | worst partition |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        per_search = row["fetch_requests"] / max(1, row["searches"])
        median = row["median_rounds_per_partition"]
        per_partition = row.get("records_per_search")
        lines.append(
            f"| {row['name']} | {row['searches']:,} | {row['wall_s']:.2f} s | {row['fetch_requests']:,} | "
            f"{per_search:.3f} | {row['fetch_rounds']:,} | {median if median is not None else '-'} | "
            f"{f'{per_partition:,.2f}' if per_partition is not None else '-'} | {row['skipped']:,} | "
            f"{row['duplicated']:,} | {row['max_duplicates_in_a_partition']:,} |"
        )
    kb = next(r for r in rows if r["name"].startswith("kbridge"))
    ratio = (kb["fetch_requests"] / kb["searches"]) / max(1e-9, ours["fetch_requests"] / ours["searches"])
    lines += [
        "",
        f"Fetch requests per search: kbridge needs {ratio:,.0f}x as many as this project "
        f"(this project sends one request per broker per round for all partitions).",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
