"""The check every answer passes, whatever strategy made it (docs/translation.md, "One proof").

A strategy's answer says where a group resumes on the target; this module accepts it only on evidence it
checks itself, knowing nothing of how the strategy found it. What it checks today:

- **An end needs positive evidence.** A resume point past the target's last record says the group
  processed every record the target holds. It is accepted only where the target's last records are
  proven processed by their identity: the offset header of each record the shape check read at the
  partition's end names a source offset below the group's, the restore's last progress pair (its
  checkpoint) puts a source offset below the group's at the last record, or the last record is the copy
  of one the snapshot read before the group's position (same content and timestamp, and not the group's
  next record). "No record as recent" or "nothing found" proves nothing: a restore still writing, or copies
  given new timestamps (a failback's), would be skipped. Unproven, the answer waits (``pending``) with
  what would end the wait named.
- **An end leaves nothing the source still had.** Where the source held records at or after the group's
  position and the group resumes at the target's end, those records are not on the target: the answer
  waits until the restore is declared complete, as a strategy's own ``beyond`` does — unless the group's
  next record was produced on the source after a restore the source itself holds (a failback's DR: its
  processed records carry origin offsets, its next one none), which the target never had.
- **Nothing the plan read is skipped.** Whatever the answer, no record the plan's reads met before the
  resume point may carry a source offset at or past the group's position (``translate/read_headers.py``
  keeps every offset header read). Such a record is read again and compared with the snapshot's evidence,
  as the header strategy does: the copy of a record the group processed (its header lies) is passed over;
  any other holds the answer (``pending``): it would skip that record, and records the plan did not read
  before it may be skipped too, so no earlier point is proven.

A partition whose log is empty (or holds only transaction markers) has nothing before the end to skip.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from offset_restore.kafka.model import TP, FetchedRecord, LogBounds
from offset_restore.snapshot.fingerprint import fingerprint
from offset_restore.snapshot.headers import int_header
from offset_restore.translate.positions import Decision, Position, PositionKey
from offset_restore.translate.read_headers import ReadHeaders

__all__ = ["Seen", "TargetTail", "prove"]

CHECKED_RECORDS = 16
"""Records before a resume point that carry a source offset at or past the position, read again and
compared with the evidence per answer; past them, the next one moves the answer (a lie on every record of
a region is not believed)."""


class TargetTail:
    """What the shape check read of each target partition's end: its last record, and the highest
    offset header among the records it read there (None: none carries one). A partition it could not
    read has no entry."""

    def __init__(self) -> None:
        self.last: dict[TP, FetchedRecord | None] = {}
        self.highest: dict[TP, int | None] = {}

    def add(self, tp: TP, records: list[FetchedRecord], header: str) -> None:
        self.last[tp] = records[-1] if records else None
        offsets = [o for o in (int_header(r, header) for r in records) if o is not None]
        self.highest[tp] = max(offsets) if offsets else None


RecordsAt = Callable[[Mapping[TP, set[int]]], Mapping[tuple[TP, int], FetchedRecord]]


@dataclass
class Seen:
    """What the plan read of the target, for the proof."""

    tail: TargetTail
    headers: ReadHeaders
    records_at: RecordsAt
    """Reads the target's records at the offsets given (the proof's own reads, few)."""
    last_pair: Callable[[TP], tuple[int, int] | None] = lambda tp: None
    """The restore's last progress pair (source offset, target offset) of a target partition."""


def prove(
    decisions: dict[PositionKey, Decision],
    positions: Mapping[PositionKey, Position],
    bounds: Mapping[TP, LogBounds],
    seen: Seen,
    *,
    header: str,
    complete: Mapping[TP, bool],
    answered_by: Mapping[PositionKey, str] | None = None,
) -> int:
    """Hold every answer in ``decisions`` the proof does not accept (``pending``, with why); returns how many
    it held. ``complete``: per source partition, whether its restore was declared finished;
    ``answered_by``: the strategy that answered each position, for the reason."""
    by = answered_by or {}
    changed = _skipping(decisions, positions, seen, header, by)
    for key, decision in decisions.items():
        pos = positions.get(key)
        if pos is None or decision.status != "mapped" or decision.target_offset is None:
            continue
        target_bounds = bounds.get(pos.target)
        why = _unproven_end(pos, decision.target_offset, target_bounds, seen.tail, header, seen.last_pair)
        if why is None and _resumes_at_end(pos, decision.target_offset, target_bounds, seen.tail):
            why = _left_on_source(pos, complete.get(pos.source, False))
        if why is not None:
            decisions[key] = _held(decision, why, by.get(key))
            changed += 1
    return changed


def _skipping(
    decisions: dict[PositionKey, Decision],
    positions: Mapping[PositionKey, Position],
    seen: Seen,
    header: str,
    by: Mapping[PositionKey, str],
) -> int:
    """Hold every answer past a record the plan read that the group has not processed; returns how many."""
    found: dict[PositionKey, list[tuple[int, int]]] = {}
    for key, decision in decisions.items():
        pos = positions.get(key)
        if pos is None or decision.status != "mapped" or decision.target_offset is None:
            continue
        past = seen.headers.past(pos.target, pos.committed, decision.target_offset, CHECKED_RECORDS + 1)
        if past:
            found[key] = past
    if not found:
        return 0
    wanted: dict[TP, set[int]] = {}
    for key, past in found.items():
        wanted.setdefault(positions[key].target, set()).update(o for o, _ in past[:CHECKED_RECORDS])
    records = seen.records_at(wanted)
    evidence = _Prints(positions)
    held = 0
    for key, past in found.items():
        pos = positions[key]
        skipped = _first_unprocessed(pos, past, records, evidence, header)
        if skipped is not None:
            offset, value = skipped
            why = (
                f"target record {offset}, read by the plan, carries {header} = {value}, at or past the group's "
                f"position {pos.committed}, and lies before that answer: resuming there would skip it, and where "
                "the group should resume instead is not proven. Plan again (the restore may still be writing), or "
                "with --order-check full"
            )
            decisions[key] = _held(decisions[key], why, by.get(key))
            held += 1
    return held


class _Prints:
    """The snapshot's evidence of each source partition, from a record's fingerprint back to its source offset:
    what tells a record whose header lies from one the group never processed (positions grouped by source
    partition in one pass, the first time one is asked for)."""

    def __init__(self, positions: Mapping[PositionKey, Position]) -> None:
        self._positions = positions
        self._by_source: dict[TP, list[Position]] | None = None
        self._of: dict[TP, dict[str, int | None]] = {}

    def back(self, source: TP) -> dict[str, int | None]:
        """Fingerprint -> the source offset of the one record of ``source`` with it (None: two alike)."""
        if self._by_source is None:
            self._by_source = {}
            for pos in self._positions.values():
                self._by_source.setdefault(pos.source, []).append(pos)
        if source not in self._of:
            back: dict[str, int | None] = {}
            for pos in self._by_source.get(source, []):
                for e in (*pos.before, *([pos.next] if pos.next else [])):
                    seen = back.get(e.fingerprint, e.offset)
                    back[e.fingerprint] = e.offset if seen == e.offset else None
            self._of[source] = back
        return self._of[source]


def _first_unprocessed(
    pos: Position,
    past: list[tuple[int, int]],
    records: Mapping[tuple[TP, int], FetchedRecord],
    evidence: _Prints,
    header: str,
) -> tuple[int, int] | None:
    """The first of ``past`` (records read before the answer carrying a source offset at or past the
    position) the group has not processed; None when each checked is the copy of a record it processed."""
    back = evidence.back(pos.source)
    for offset, value in past[:CHECKED_RECORDS]:
        record = records.get((pos.target, offset))
        if record is None:
            return offset, value  # not read again: not proven a copy of a processed record
        source = back.get(fingerprint(record.key, record.value, record.headers, exclude_header=header))
        if source is None or source >= pos.committed:
            return offset, value
    return past[CHECKED_RECORDS] if len(past) > CHECKED_RECORDS else None


def _resumes_at_end(pos: Position, offset: int, bounds: LogBounds | None, tail: TargetTail) -> bool:
    """Whether ``offset`` is past every record the target holds (only markers, or nothing, after it)."""
    if bounds is None:
        return False
    last = tail.last.get(pos.target)
    return offset >= bounds.end or (last is not None and offset > last.offset)


def _unproven_end(
    pos: Position,
    offset: int,
    bounds: LogBounds | None,
    tail: TargetTail,
    header: str,
    last_pair: Callable[[TP], tuple[int, int] | None],
) -> str | None:
    """Why an answer at the target's end is not proven (None: proven, or not an end)."""
    if not _resumes_at_end(pos, offset, bounds, tail):
        return None
    assert bounds is not None
    if pos.target not in tail.last:
        if bounds.end <= bounds.start:
            return None  # an empty log: nothing before the end to skip
        return (
            f"the target's last records of {pos.target.topic}/{pos.target.partition} could not be read, so "
            "nothing proves the group processed them"
        )
    last = tail.last[pos.target]
    if last is None:
        return None  # only transaction markers or aborted records: nothing a consumer reads
    return _unprocessed(pos, last, tail.highest.get(pos.target), header, last_pair(pos.target))


def _unprocessed(
    pos: Position, last: FetchedRecord, highest: int | None, header: str, pair: tuple[int, int] | None
) -> str | None:
    """Why the target's last record ``last`` is not proven processed by the group at ``pos`` (None: it is)."""
    c = pos.committed
    own = int_header(last, header)
    if highest is not None and highest >= c:
        return (
            f"a record among the target's last ones carries {header} = {highest}, at or after the group's "
            f"position {c}: the group has not processed it"
        )
    if own is not None:
        return None  # every record read at the end carries a source offset below c
    if pair is not None and pair[1] == last.offset and pair[0] < c:
        return None  # the restore recorded the last record as a source record the group processed
    if _copy_of_processed(pos, last, header):
        return None
    return (
        f"nothing proves the group processed the target's last record (offset {last.offset}): it carries no "
        f"{header} below {c}, no restore checkpoint names it, and it is not the copy of a record the snapshot "
        "read before the group's position. "
        "Finding no later record is not evidence: a restore still writing, or one that gave the records new "
        "timestamps (a failback's copies), would be skipped. Plan with a strategy that identifies records "
        "(header, origin, fingerprint), or wait for the restore"
    )


def _copy_of_processed(pos: Position, record: FetchedRecord, header: str) -> bool:
    """Whether ``record`` is the copy of a record the group processed: a record the snapshot read before
    its position (or the source's last restored one below it), and not its next record."""
    printed = fingerprint(record.key, record.value, record.headers, exclude_header=header)
    same = (printed, record.timestamp)
    if pos.next is not None and (pos.next.fingerprint, pos.next.timestamp) == same:
        return False  # the group's next record, or one it cannot be told from
    processed = [*pos.before, *([pos.top] if pos.top is not None else [])]
    return any((e.fingerprint, e.timestamp) == same for e in processed)


def _left_on_source(pos: Position, complete: bool) -> str | None:
    """Why resuming at the end would leave records the source still had (None: it leaves none, or the
    restore was declared complete: they are counted as never restored)."""
    last_source = pos.last_source_record
    if complete or last_source is None or last_source < pos.committed or _born_on_source(pos):
        return None
    scope = f"{pos.source.topic}/{pos.source.partition}"
    return (
        f"the source had records {pos.committed}..{last_source} the group had not processed, and none of them is "
        "after the records the target holds: they were not restored (yet). If the restore is finished, declare it "
        f'complete (plan --restore-complete {scope}, or "restore_complete" in the execution input): the group then '
        "resumes at the end and those records are counted as never restored"
    )


def _born_on_source(pos: Position) -> bool:
    """Whether the group's next record was produced on the source itself, after a restore the source
    holds (a failback's DR): records the group processed carry the restore's origin offsets, its next
    one none. The target never had such a record, so resuming at its end leaves none behind."""
    restored = pos.last_origin is not None or pos.top_origin is not None
    return restored and pos.next is not None and pos.next_origin is None


def _held(decision: Decision, why: str, strategy: str | None) -> Decision:
    said = f"the {strategy} strategy" if strategy else "a strategy"
    said += f" answered {decision.target_offset} ({decision.method}"
    said += f": {decision.reason})" if decision.reason else ")"
    return Decision("pending", reason=f"{said}; held by the proof every answer passes: {why}")
