"""The search by time the timestamp and fingerprint strategies share: the first target record as
recent as a position's evidence, less the clock skew the windows read show."""

from __future__ import annotations

from collections.abc import Mapping

from offset_restore.kafka.model import TP, Record
from offset_restore.translate.context import Context
from offset_restore.translate.positions import PositionKey
from offset_restore.translate.search import Observer, PartitionIndex, SearchResult, search_first_at_least

__all__ = ["search_time"]

MAX_TIMESTAMP_PASSES = 3


def _timestamp_key(tp: TP, record: Record) -> int:
    return record.timestamp


def _skew(index: PartitionIndex) -> int:
    """How far the timestamps read fall below the newest one before them (0: never backwards)."""
    worst = 0
    newest = index.keys[0] if index.keys else 0
    for stamp in index.keys:
        if stamp < newest:
            worst = max(worst, newest - stamp)
        else:
            newest = stamp
    return worst


def search_time(
    stamps: Mapping[PositionKey, tuple[TP, int]],
    ctx: Context,
    strategy: str,
    margin: int,
    observe: Observer | None = None,
) -> tuple[dict[PositionKey, SearchResult], dict[TP, int]]:
    """The first record with a timestamp >= each stamp less the skew seen on its partition and
    ``margin``. Timestamps are not in order when producer clocks differ: each pass may read windows
    that show more skew, and then searches again (the windows read are kept). ``observe`` is told of
    every window read (the fingerprint strategy keeps their records for its scan)."""
    skews: dict[TP, int] = {}
    results: dict[PositionKey, SearchResult] = {}
    for _ in range(MAX_TIMESTAMP_PASSES):
        wanted = {key: (tp, stamp - skews.get(tp, 0) - margin, None) for key, (tp, stamp) in stamps.items()}
        results, stats = search_first_at_least(
            wanted,
            ctx.bounds,
            _timestamp_key,
            ctx.fetch(),
            indexes=ctx.timestamp_indexes,
            observe=observe,
            limits=ctx.learned.limits,
            batches=ctx.learned.largest_batch,
        )
        ctx.learned.learn(stats.limits, stats.batch_bytes, stats.largest_batch)
        ctx.record(strategy, stats.rounds, stats.fetches, stats.records_read, stats.rounds_per_partition)
        seen = {tp: _skew(ctx.timestamp_indexes[tp]) for tp in {tp for tp, _ in stamps.values()}}
        if all(seen[tp] <= skews.get(tp, 0) for tp in seen):
            break
        skews = seen
    return results, skews
