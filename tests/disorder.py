"""Restores that are not in order, written to a real broker, and an independent judge of a plan.

A layout is the target partition's content in target order: which source record each target record
copies and which offset header it carries (a restore worker may omit it, a stray record may carry a
wrong one). The judge reads the target partition with kafka-python's own consumer — not the code
under test — and counts, for every plan entry, the records it would skip (a record carrying a
source offset >= c before the resume point) and the records it would read twice (carrying < c at or
after it). The bench uses the same layouts at a larger size.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kafka import KafkaConsumer, TopicPartition
from offset_restore.formats.plan import PlanEntry
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.snapshot.headers import parse_offset_header

HEADER = "x-source-offset"


@dataclass(frozen=True)
class Slot:
    """One target record: a copy of source record ``source`` (None: a record not from the source)
    carrying ``header`` as its offset header (None: no header)."""

    source: int | None
    header: int | None


def copy(sources: Iterable[int]) -> list[Slot]:
    return [Slot(s, s) for s in sources]


def layouts(n: int = 60) -> dict[str, list[Slot]]:
    """The untidy restores of issue 13, over source records 0..n-1."""
    third, half = n // 3, n // 2
    return {
        "one stray header": [*copy(range(3)), Slot(None, half), *copy(range(3, n))],
        "repeated chunk": [*copy(range(2 * third)), *copy(range(half, 2 * third)), *copy(range(2 * third, n))],
        "reordered and repeated batch": [
            *copy(range(40 * n // 60)),
            *copy(range(45 * n // 60, 50 * n // 60)),
            *copy(range(40 * n // 60, 45 * n // 60)),
            *copy(range(40 * n // 60, 50 * n // 60)),
            *copy(range(50 * n // 60, n)),
        ],
        "interleaved workers": [
            slot for pair in zip(copy(range(half)), copy(range(half, n)), strict=False) for slot in pair
        ]
        + copy(range(2 * half, n)),
        "records without the header": [
            *copy(range(third)),
            *(Slot(s, None) for s in range(third, third + 5)),
            *copy(range(third + 5, n)),
        ],
        "workers in the wrong order": [*copy(range(half, n)), *copy(range(half))],
    }


def random_layout(rng: random.Random, n: int) -> list[Slot]:
    """A sorted restore damaged by one to three random accidents of the kinds above, and three more:
    the first records written without the header, one record with a wrong header, and a record lost
    with the next one numbered as it (its header names the lost record)."""
    slots = copy(range(n))
    for _ in range(rng.randint(1, 3)):
        a = rng.randrange(len(slots))
        b = min(len(slots), a + rng.randint(1, max(1, n // 4)))
        kinds = ["repeat", "swap", "no-header", "first-without-header", "wrong-header", "stray", "move", "renumbered"]
        kind = rng.choice(kinds)
        if kind == "renumbered" and 0 < a < len(slots):  # a record lost, and the next one numbered as it
            slots[a - 1 : a + 1] = [Slot(slots[a].source, slots[a - 1].header)]
        elif kind == "first-without-header":  # the restore's first batch or worker did not add it
            slots[:b] = [Slot(s.source, None) for s in slots[:b]]
        elif kind == "wrong-header":  # a restore worker's bug: one record says another source offset
            slots[a] = Slot(slots[a].source, rng.randrange(n))
        elif kind == "repeat":
            slots[b:b] = slots[a:b]
        elif kind == "swap":
            slots[a:b] = list(reversed(slots[a:b]))
        elif kind == "no-header":
            slots[a:b] = [Slot(s.source, None) for s in slots[a:b]]
        elif kind == "stray":
            slots.insert(a, Slot(None, rng.randrange(2 * n)))
        else:
            chunk = slots[a:b]
            del slots[a:b]
            at = rng.randrange(len(slots) + 1)
            slots[at:at] = chunk
    return slots


def record_key(partition: int, source: int) -> bytes:
    return f"k{partition}-{source}".encode()


def write_layout(
    cluster: KafkaCluster,
    topic: str,
    partition: int,
    layout: Sequence[Slot],
    timestamp_of: dict[int, int],
    *,
    values: dict[int, bytes] | None = None,
    extra_headers: dict[int, tuple[tuple[str, bytes], ...]] | None = None,
) -> None:
    """Produce the layout. A copy keeps its source record's key, value, headers and timestamp (what
    a restore keeps); a stray record gets a key of its own."""

    def record(i: int, slot: Slot) -> tuple[bytes, bytes, list[tuple[str, bytes]], int]:
        headers = list((extra_headers or {}).get(slot.source, ())) if slot.source is not None else []
        if slot.header is not None:
            headers.append((HEADER, slot.header.to_bytes(8, "big")))
        if slot.source is None:
            return f"stray-{i}".encode(), b"not from the source", headers, max(timestamp_of.values())
        value = (values or {}).get(slot.source, f"value {slot.source}".encode())
        return record_key(partition, slot.source), value, headers, timestamp_of[slot.source]

    cluster.produce(topic, partition, (record(i, slot) for i, slot in enumerate(layout)))


@dataclass(frozen=True)
class TargetRecord:
    offset: int
    carried: int | None
    """The source record the target record holds, as the judge knows it: for a copy, the source
    record it copies (whatever its header says, or without one); for a stray record, the header it
    carries (None without one: not part of the restore)."""
    has_header: bool = True


def restored_part(log: Sequence[TargetRecord]) -> list[TargetRecord]:
    """The log as the judge sees it: every copy of a source record counts, wherever it lies and
    whatever header it carries — a consumer that resumes before it reads it. (Issue 13's judge left
    out copies without the header before the first record with one; a restore whose first batch
    lacked the header then skipped records unseen.)"""
    return list(log)


def read_target(
    bootstrap_servers: str, topic: str, partition: int, sources_by_key: dict[bytes, int]
) -> list[TargetRecord]:
    """Every record of the partition, read by kafka-python's consumer (independent of the adapter)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False, group_id=None)
    tp = TopicPartition(topic, partition)
    try:
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        consumer.seek_to_beginning(tp)
        found: list[TargetRecord] = []
        while consumer.position(tp) < end:
            for record in consumer.poll(timeout_ms=1000).get(tp, []):
                header = next((v for k, v in record.headers if k == HEADER), None)
                copied = sources_by_key.get(record.key)
                carried = copied if copied is not None else parse_offset_header(header) if header is not None else None
                found.append(TargetRecord(record.offset, carried, header is not None))
        return found
    finally:
        consumer.close()


@dataclass
class Judgement:
    """Over the entries judged: positions, records skipped, entries called exact that are not,
    bounds below the truth."""

    positions: int = 0
    skipped: int = 0
    positions_skipping: int = 0
    mislabelled: int = 0
    bound_below_truth: int = 0
    duplicates: int = 0
    problems: list[str] = field(default_factory=list)

    def judge(self, entry: PlanEntry, log: Sequence[TargetRecord]) -> None:
        """``log``: the target partition after ``restored_part``."""
        if entry.status != "mapped" or entry.target_offset is None:
            return
        c, at = entry.source_offset, entry.target_offset
        skipped = sum(1 for r in log if r.offset < at and r.carried is not None and r.carried >= c)
        twice = sum(1 for r in log if r.offset >= at and r.carried is not None and r.carried < c)
        self.positions += 1
        self.skipped += skipped
        self.duplicates += twice
        what = f"c={c} -> {at} ({entry.method}, exact={entry.exact}, bound={entry.max_duplicates})"
        if skipped:
            self.positions_skipping += 1
            self.problems.append(f"{what}: skips {skipped}")
        if entry.exact and twice:
            self.mislabelled += 1
            self.problems.append(f"{what}: called exact, {twice} read twice")
        if entry.max_duplicates is not None and entry.max_duplicates < twice:
            self.bound_below_truth += 1
            self.problems.append(f"{what}: bound below the {twice} read twice")

    @property
    def holds(self) -> bool:
        return not (self.skipped or self.mislabelled or self.bound_below_truth)
