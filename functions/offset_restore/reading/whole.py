"""Partitions read whole, start to end: small topics (MirrorMaker 2's checkpoints) and the demo's and the
tests' proofs. A restore reads what a position needs, never this."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from offset_restore.errors import ClusterError
from offset_restore.kafka.mirror_checkpoints import MirrorCheckpoint, latest_checkpoints
from offset_restore.kafka.model import TP, LogBounds, Record
from offset_restore.reading.rounds import AtEnd, Failed, FetchRounds, Served, Source, fetch_from, read_forward

__all__ = ["read_checkpoints", "read_partition", "read_whole"]


def read_whole(source: Source, start: Mapping[TP, int]) -> tuple[dict[TP, list[Record]], dict[TP, Failed]]:
    """Every record of each partition from ``start`` to its high watermark, in shared rounds of 1 MB
    a partition (a fetch reads one segment at a time: a round per segment), and the partitions that
    failed. For small topics read whole (MirrorMaker 2's checkpoints) and the demo's proof; a restore
    reads what a position needs, never this."""
    records: dict[TP, list[Record]] = {tp: [] for tp in start}

    def take(tp: TP, outcome: Served | AtEnd) -> int | None:
        if isinstance(outcome, AtEnd):
            return None
        records[tp].extend(outcome.answer.records)
        return outcome.answer.read_to

    failed = read_forward(FetchRounds(fetch_from(source), partition_bytes=1 << 20), start, take)
    return records, failed


class _Readable(Source, Protocol):
    def topic_partitions(self) -> dict[str, int]: ...
    def log_bounds(self, partitions: Iterable[TP]) -> dict[TP, LogBounds]: ...


def read_partition(cluster: _Readable, tp: TP) -> list[Record]:
    """Every record of one partition, from its log start to its high watermark; a failed fetch is an error."""
    records, failed = read_whole(cluster, {tp: cluster.log_bounds([tp])[tp].start})
    if failed:
        raise ClusterError(f"reading {tp.topic}/{tp.partition} failed: {failed[tp].reason}")
    return records[tp]


def read_checkpoints(cluster: _Readable, topic: str) -> list[MirrorCheckpoint]:
    """Every group-partition's last checkpoint in ``topic``, read whole (one record per group-partition
    and move: small beside the data MM2 replicates); a failed read is an error."""
    partitions = [TP(topic, p) for p in range(cluster.topic_partitions().get(topic, 0))]
    starts = {tp: bounds.start for tp, bounds in cluster.log_bounds(partitions).items()}
    records, failed = read_whole(cluster, starts)
    if failed:
        raise ClusterError(
            "; ".join(f"reading {tp.topic}/{tp.partition} failed: {f.reason}" for tp, f in failed.items())
        )
    return list(latest_checkpoints((r for tp in partitions for r in records[tp]), topic))
