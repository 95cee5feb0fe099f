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

A partition whose log is empty (or holds only transaction markers) has nothing before the end to skip.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from offset_restore.kafka.model import TP, FetchedRecord, LogBounds
from offset_restore.snapshot.fingerprint import fingerprint
from offset_restore.snapshot.headers import int_header
from offset_restore.translate.positions import Decision, Position, PositionKey

__all__ = ["TargetTail", "prove"]


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


def prove(
    decisions: dict[PositionKey, Decision],
    positions: Mapping[PositionKey, Position],
    bounds: Mapping[TP, LogBounds],
    tail: TargetTail,
    *,
    header: str,
    complete: Mapping[TP, bool],
    last_pair: Callable[[TP], tuple[int, int] | None] = lambda tp: None,
    answered_by: Mapping[PositionKey, str] | None = None,
) -> int:
    """Hold every answer in ``decisions`` the proof does not accept (``pending``, with why); returns how
    many were held. ``complete``: per source partition, whether its restore was declared finished;
    ``last_pair``: the restore's last progress pair (source offset, target offset) of a target partition;
    ``answered_by``: the strategy that answered each position, for the reason."""
    held = 0
    for key, decision in decisions.items():
        pos = positions.get(key)
        if pos is None or decision.status != "mapped" or decision.target_offset is None:
            continue
        why = _unproven_end(pos, decision.target_offset, bounds.get(pos.target), tail, header, last_pair)
        if why is None and _resumes_at_end(pos, decision.target_offset, bounds.get(pos.target), tail):
            why = _left_on_source(pos, complete.get(pos.source, False))
        if why is not None:
            decisions[key] = _held(decision, why, (answered_by or {}).get(key))
            held += 1
    return held


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
