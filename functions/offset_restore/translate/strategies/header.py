"""The header strategy: the restore's offset header searched, checked by the order of the windows
read and by the snapshot's evidence; a partition either contradicts is read whole
(``strategies/whole_read.py``)."""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Mapping
from functools import partial

from offset_restore.errors import BadInputError, OffsetRestoreError
from offset_restore.kafka.model import TP, LogBounds, PartitionFetch, Record
from offset_restore.reading.held import replaying
from offset_restore.snapshot.headers import parse_offset_header
from offset_restore.translate.context import Context
from offset_restore.translate.header_reads import HeaderReads
from offset_restore.translate.positions import Decision, Position, PositionKey
from offset_restore.translate.restore_order import disorder_in
from offset_restore.translate.resume_points import PartitionLog
from offset_restore.translate.search import KeyOf, PartitionIndex, SearchResult, index_window, search_first_at_least
from offset_restore.translate.strategies.outcomes import beyond, expected_print
from offset_restore.translate.strategies.overcount import read_overcounted_gaps
from offset_restore.translate.strategies.whole_read import Begun, cheaper_whole, read_whole_and_decide

__all__ = ["MalformedHeaderError", "by_header"]


class MalformedHeaderError(BadInputError):
    """A restored record carries the offset header with a value that is not an offset."""


def _guess(pos: Position, bounds: LogBounds) -> int | None:
    """Where the record would be if the restore kept the source's density of records."""
    if pos.log_start is None or pos.log_end is None or pos.log_end <= pos.log_start:
        return None
    density = (bounds.end - bounds.start) / (pos.log_end - pos.log_start)
    return bounds.start + int((pos.committed - pos.log_start) * min(1.0, density))


def _header_key(name: str) -> KeyOf:
    def key_of(tp: TP, record: Record) -> int | None:
        for header, value in record.headers:
            if header == name:
                try:
                    return parse_offset_header(value)
                except ValueError:
                    shown = (value or b"")[:24].hex()
                    raise MalformedHeaderError(
                        f"record {record.offset} of {tp} has header {name} = 0x{shown}, which is neither "
                        "an 8-byte big-endian offset nor a decimal number; fix the restore or choose "
                        "--strategies without header"
                    ) from None
        return None

    return key_of


def by_header(undecided: dict[PositionKey, Position], ctx: Context) -> dict[PositionKey, Decision | str]:
    """The header search, checked: a partition whose windows contradict a restore in order, or whose
    answer the snapshot's evidence contradicts, is read whole and answered order-independently."""
    name = ctx.options.offset_header
    key_of = _header_key(name)
    prints: dict[TP, set[int]] = defaultdict(set)
    for pos in undecided.values():
        prints[pos.target].add(pos.committed)
        if pos.next is not None:
            prints[pos.target].add(pos.next.offset)
    parsed = ctx.read_headers.sources if ctx.read_headers is not None and ctx.read_headers.header == name else None
    reads = HeaderReads(key_of, name, prints, undecided.values(), ctx.held, parsed)
    outcome: dict[PositionKey, Decision | str] = {}
    suspect: dict[TP, str] = {}
    begun: dict[TP, Begun] = {}
    probed: dict[TP, PartitionFetch] = {}
    if ctx.options.order_check == "full":
        suspect = dict.fromkeys((pos.target for pos in undecided.values()), "a full read was asked for")
    else:
        if ctx.options.whole_when_cheaper:
            suspect, begun, probed = cheaper_whole(undecided, ctx, reads)
        wanted = {
            k: (pos.target, pos.committed, _guess(pos, ctx.bounds[pos.target]))
            for k, pos in undecided.items()
            if pos.target not in suspect
        }
        windows: dict[TP, list[PartitionFetch]] = defaultdict(list)

        def observe(tp: TP, position: int, answer: PartitionFetch, keys: list[int | None]) -> None:
            reads.observe(tp, position, answer, keys)
            if tp not in reads.keyed:
                windows[tp].append(answer)

        indexes = {tp: PartitionIndex(ctx.bounds[tp]) for tp in probed}
        for tp, answer in probed.items():  # the probe from the log start: the search's first window
            index_window(tp, answer, indexes[tp], key_of, observe)
        fetch = replaying(ctx.fetch(), ctx.held.of("sample"))  # the samples' last records, not read again
        results, stats = search_first_at_least(
            wanted, ctx.bounds, key_of, fetch, indexes=indexes, observe=observe, limits=ctx.learned.limits,
            batches=ctx.learned.largest_batch,
            barren=ctx.tail_sampled - ctx.tail_tops.keys(),  # no header among their last records either
            abandon=reads.fallen,  # headers already out of order: read whole below, searched no further
        )  # fmt: skip
        ctx.record("header", stats.rounds, stats.fetches, stats.records_read, stats.rounds_per_partition)
        for tp in windows.keys() - reads.keyed:
            ctx.keep_unkeyed(tp, windows[tp])
        ctx.learned.learn(stats.limits, stats.batch_bytes, stats.largest_batch)
        merged = {tp: observed.merged() for tp, observed in reads.observed.items()}
        disordered = {tp: problem for tp, read in merged.items() if (problem := disorder_in(*read))}
        suspect.update(read_overcounted_gaps(disordered, reads, ctx))  # aborted transactions read, not the whole
        logs = {tp: (reads.observed[tp].merged() if tp in disordered else read)[0] for tp, read in merged.items()}
        outcome.update(_judged(undecided, results, reads, logs, ctx, suspect))
    if suspect:
        outcome.update(read_whole_and_decide(undecided, suspect, reads, ctx, begun))
    ctx.stats.bytes_read["header"] = ctx.stats.bytes_read.get("header", 0) + reads.bytes
    return outcome


def _judged(
    undecided: Mapping[PositionKey, Position],
    results: Mapping[PositionKey, SearchResult],
    reads: HeaderReads,
    logs: Mapping[TP, PartitionLog],
    ctx: Context,
    suspect: dict[TP, str],
) -> dict[PositionKey, Decision | str]:
    """Each search's answer checked against the snapshot's evidence: decided, or its partition made
    suspect (``suspect`` gains it, with why), or — a hole where the snapshot had a record — decided
    only when the broker's time index shows no copy of that record before it (``_holes_believed``)."""
    outcome: dict[PositionKey, Decision | str] = {}

    def decide(key: PositionKey) -> None:
        pos = undecided[key]
        decision = _header_decision(pos, results[key], ctx.options.offset_header, complete=partial(ctx.completes, pos))
        outcome[key] = _with_anchor(decision, logs.get(pos.target), results[key])

    holes: dict[PositionKey, str] = {}
    for key, pos in undecided.items():
        if pos.target in suspect or key not in results:
            continue
        problem = _contradiction(pos, results[key], reads, ctx.bounds[pos.target])
        if problem and _missing_next(pos, results[key]):
            holes[key] = problem  # a hole in the restore, or the record placed elsewhere: asked below
        elif problem:
            suspect[pos.target] = problem
        else:
            decide(key)
    believed = _holes_believed({k: results[k] for k in holes}, undecided, ctx)
    for key, problem in holes.items():
        if key not in believed:
            suspect.setdefault(undecided[key].target, f"{problem}{NOT_A_HOLE}")
        elif undecided[key].target not in suspect:
            decide(key)
    return outcome


NOT_A_HOLE = ", and a target record as recent as the snapshot's lies before it (the record may be there)"
MAX_HOLE_ROUNDS = 16
"""Holes asked about per partition (one ListOffsets round each); a partition with more is read whole."""


def _missing_next(pos: Position, result: SearchResult) -> bool:
    """The snapshot's next record is not where the search looked: the record found, right after one
    below the committed offset, carries a later source offset — a hole in the restore (compaction, a
    filter, a backup that lost it), or the record written elsewhere."""
    found = result.found
    return (
        result.complete
        and found is not None
        and pos.next is not None
        and result.below is not None
        and (found.key > pos.next.offset)
    )


def _holes_believed(
    holes: Mapping[PositionKey, SearchResult], undecided: Mapping[PositionKey, Position], ctx: Context
) -> set[PositionKey]:
    """The holes that are holes: no target record before the one found is as recent as the snapshot's
    next record (ListOffsets by its timestamp, one partition's hole per round). A restore keeps a record's
    timestamp or gives it a later one, so a copy of that record cannot lie before the one found, and the
    group, resumed there, skips nothing the target holds. Otherwise — a record as recent lies before it,
    a broker that does not look timestamps up, an error — it is not believed, and the partition is read
    whole (``NOT_A_HOLE``), as before: never a search turned scan where the restore only has holes."""
    by_partition: dict[TP, list[PositionKey]] = defaultdict(list)
    for key in holes:
        by_partition[undecided[key].target].append(key)
    asked = {tp: keys for tp, keys in by_partition.items() if len(keys) <= MAX_HOLE_ROUNDS}
    believed: set[PositionKey] = set()
    for turn in range(max(map(len, asked.values()), default=0)):
        batch = {tp: keys[turn] for tp, keys in asked.items() if turn < len(keys)}
        try:
            earliest = ctx.target.offsets_at_times({tp: _next_time(undecided[k]) for tp, k in batch.items()})
        except OffsetRestoreError:
            return believed
        for tp, key in batch.items():
            found = holes[key].found
            assert found is not None
            at = earliest.get(tp, -1)  # -1: the broker did not answer for it
            if at is None or at >= found.offset:
                believed.add(key)
    return believed


def _next_time(pos: Position) -> int:
    assert pos.next is not None
    return pos.next.timestamp


def _contradiction(pos: Position, result: SearchResult, reads: HeaderReads, bounds: LogBounds) -> str | None:
    """Why the snapshot's evidence contradicts the search's answer (None: it does not, or cannot).

    The record found must be the snapshot's next record when it carries that record's source offset;
    a gap inside the restored range is believed only when the source itself had no record there; and
    records without the header before the first restored one (which the search read) are part of the
    restore when the snapshot's evidence is among them.
    """
    found, c = result.found, pos.committed
    if not result.complete or found is None:
        return None
    if result.below is None and found.offset > bounds.start and pos.next is not None and pos.next.offset < found.key:
        sighted = sorted(o for o in reads.sightings.get(pos.target, {}) if o < found.offset)
        if sighted:
            return (
                f"target offsets {sighted[0]}..{sighted[-1]} carry no offset header but hold records of the snapshot's "
                f"evidence, before the first restored record found (target offset {found.offset})"
            )
        if pos.target in reads.unchecked:
            return (
                f"records without the offset header lie before the first restored record found (target offset "
                f"{found.offset}), and the snapshot's record {pos.next.offset} may be among them"
            )
    if pos.next is None:
        if found.key > c and result.below is not None and pos.log_end is not None and c < pos.log_end:
            return (
                f"the restore has no record for source offsets {c}..{found.key - 1}, and without the "
                "snapshot's evidence that gap cannot be checked"
            )
        return None
    if found.key == pos.next.offset:
        seen = reads.print_at(pos.target, found.offset)
        if seen is not None and seen != pos.next.fingerprint:
            return (
                f"target offset {found.offset} carries source offset {found.key}, but its content differs "
                f"from the snapshot's record {found.key}"
            )
    elif _missing_next(pos, result):
        return (
            f"the source had record {pos.next.offset} when the snapshot was taken, but the first record "
            f"carrying a source offset >= {c} found by the search carries {found.key}"
        )
    return None


def _header_decision(
    pos: Position, result: SearchResult, header: str, *, complete: Callable[[int], bool]
) -> Decision | str:
    c = pos.committed
    if not result.complete:
        return result.reason or "search did not finish"
    if result.found is None and result.below is None:
        return f"no record of {pos.target} carries header {header}"
    if result.found is not None:
        expected = expected_print(pos, result.found.key)
        if result.below is None and result.found.key > c:
            return Decision(
                "mapped",
                result.found.offset,
                "earliest",
                True,
                0,
                f"committed offset {c} is before the restored range (first restored source offset "
                f"{result.found.key}): resume at the earliest restored record",
                expected_fingerprint=expected,
            )
        gap = f"source records {c}..{result.found.key - 1} are not in the restore" if result.found.key > c else None
        return Decision("mapped", result.found.offset, "header", True, 0, gap, expected_fingerprint=expected)
    last = result.below
    assert last is not None
    return beyond(pos, last.key, last.offset + 1, 0, "", complete=complete(last.key))


def _with_anchor(decision: Decision | str, log: PartitionLog | None, result: SearchResult) -> Decision | str:
    """The decision with the record next to its resume point that apply checks is still there."""
    if isinstance(decision, str) or decision.status != "mapped" or log is None:
        return decision
    record = result.found or result.below
    if record is None:
        return decision
    at = bisect.bisect_left(log.offsets, record.offset)
    stamp = log.timestamps[at] if at < len(log) and log.offsets[at] == record.offset else None
    return decision._replace(anchor=(record.offset, record.key, stamp))
