"""Offsets proven to hold one aborted transaction and nothing else, from two of its batches' headers.

An idempotent (so every transactional) producer numbers its records per partition: each batch's
header carries the sequence of its first record, and the broker appends a producer's batch only when
that sequence follows the producer's last one under the same producer id and epoch (a gap or a
repeat is refused, ``OutOfOrderSequenceException`` or a duplicate). So between the first batch of
an aborted transaction (at the transaction's first offset, which the broker's answer lists) and a
later batch of the same producer and epoch, the producer wrote exactly as many records as their
sequences differ. Where that equals the offsets between the two batches, every offset between is one
of that producer's records: no other producer's and no transaction marker (a marker takes an offset
and no sequence). The transaction cannot have ended between them, so every offset from its first to
the end of the later batch belongs to the aborted transaction: covered, holding no record a
read_committed reader sees. The header search's order check counts such a span as read without
reading the batches between (``strategies/overcount.py``): a transaction of 1,000 records costs two
batches instead of nine.

Anything else proves nothing: another producer or epoch, a sequence that wrapped or went back, or
offsets outnumbering the sequences between (a marker or a foreign record inside). Then the batches
between are read, as before. Pure logic over what the answers held (``PartitionFetch.aborted``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from offset_restore.kafka.model import AbortedBatch

__all__ = ["outside", "proven_spans", "unread_starts"]

_Transaction = tuple[int, int, int]
"""(producer id, producer epoch, the transaction's first offset)."""


def _key(batch: AbortedBatch) -> _Transaction:
    return batch.producer_id, batch.producer_epoch, batch.transaction_start


def proven_spans(batches: Iterable[AbortedBatch]) -> list[tuple[int, int]]:
    """The [start, end) spans proven to hold only an aborted transaction, one per transaction whose
    first batch was read: from its first offset to the end of the furthest batch of it whose
    sequence counts every offset between (at least the first batch itself), in offset order."""
    firsts: dict[_Transaction, AbortedBatch] = {}
    by_transaction: dict[_Transaction, list[AbortedBatch]] = defaultdict(list)
    for batch in batches:
        by_transaction[_key(batch)].append(batch)
        if batch.base_offset == batch.transaction_start and batch.base_sequence >= 0:
            firsts[_key(batch)] = batch
    spans = []
    for key, first in firsts.items():
        end = first.next_offset
        for batch in by_transaction[key]:
            written = batch.base_sequence - first.base_sequence
            if written >= 0 and written == batch.base_offset - first.base_offset:
                end = max(end, batch.next_offset)
        spans.append((first.base_offset, end))
    return sorted(spans)


def unread_starts(batches: Iterable[AbortedBatch]) -> list[int]:
    """The first offsets of the aborted transactions seen whose first batch was not read (a read
    there proves the span up to the batches seen), in offset order."""
    seen = list(batches)
    read = {b.transaction_start for b in seen if b.base_offset == b.transaction_start}
    return sorted({b.transaction_start for b in seen} - read)


def outside(ranges: list[tuple[int, int]], spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The [start, end) ``ranges`` (ascending, apart) less every offset of ``spans``: what was read of a
    partition outside its aborted transactions, where its transaction markers are (a share of holes
    measured over both would be diluted by the thousands of offsets an aborted transaction covers)."""
    cuts = sorted(spans)
    kept: list[tuple[int, int]] = []
    for start, end in ranges:
        at = start
        for low, high in cuts:
            if high <= at or low >= end:
                continue
            if low > at:
                kept.append((at, low))
            at = max(at, high)
        if at < end:
            kept.append((at, end))
    return kept
