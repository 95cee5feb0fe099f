"""The origin strategy, for a failback: the snapshot was taken of a cluster a restore wrote (the DR
cluster after a failover), whose restored records carry the restore's offset header — their offsets on
the cluster the restore came from, which is this plan's target (the primary, back). A group that
processed the source's record L, the copy of the target's record ``h``, resumes at ``h + 1``: proven by
reading the target's record at ``h`` and finding L there (its fingerprint and timestamp). A group at the
source's log start resumes at the target's copy of its next record, proven the same way.

The positions of one plan are read together: each target partition from its lowest offset wanted, on
to the next, in shared fetch rounds (a position costs no round trip of its own), and a position whose
snapshot records carry no origin offset (an ordinary restore's) costs no read at all."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from offset_restore.kafka.model import TP, LogBounds, Record
from offset_restore.snapshot.fingerprint import record_fingerprint
from offset_restore.translate.context import Context
from offset_restore.translate.positions import Decision, Evidence, Position, PositionKey

__all__ = ["by_origin"]


@dataclass(frozen=True, slots=True)
class _Claim:
    """What one position asks of the target: the records that must be the snapshot's, and where the
    group resumes when they are."""

    resume: int
    checks: tuple[tuple[int, Evidence], ...]
    """(target offset, the snapshot's record the target must hold there)."""
    anchor: int
    """The target offset whose record apply checks is still there (the one at ``resume`` when checked)."""
    expected: str | None
    """The fingerprint of the record at ``resume``, when the plan checked it (the snapshot's next record)."""
    said: str
    """Why, in words (without the check's result)."""
    exact: bool = True
    duplicates: int = 0
    older_than: int | None = None
    """The target's record at ``resume``, if it has one, must be older than this (the earliest record the
    group processed that was produced on the source after the restore): a newer one may be a copy of such a
    record brought back (MirrorMaker 2 from the DR), which the group would read twice."""


def by_origin(undecided: dict[PositionKey, Position], ctx: Context) -> dict[PositionKey, Decision | str]:
    """Each position whose last processed record (or, at the source's log start, next record) carries
    its origin offset, mapped exactly after (at) that offset on the target once the target's record
    there is proven the same; every other position declined, with why."""
    header = ctx.options.offset_header
    outcome: dict[PositionKey, Decision | str] = {}
    claims: dict[PositionKey, _Claim] = {}
    for key, pos in undecided.items():
        bounds = ctx.bounds.get(pos.target)
        claim = _claim(pos, bounds, header) if bounds is not None else f"no log bounds of {pos.target}"
        if isinstance(claim, str):
            outcome[key] = claim
        else:
            claims[key] = claim
    if not claims:
        return outcome  # nothing to prove: no read
    wanted: dict[TP, set[int]] = defaultdict(set)
    for key, claim in claims.items():
        wanted[undecided[key].target].update([*(offset for offset, _ in claim.checks), claim.anchor])
        end = ctx.bounds[undecided[key].target].end
        if claim.older_than is not None and claim.resume < end:
            wanted[undecided[key].target].add(end - 1)
    records, failed = ctx.records_at(wanted, "origin")
    for key, claim in claims.items():
        tp = undecided[key].target
        end = ctx.bounds[tp].end
        problem = failed.get(tp) or _mismatch(tp, claim, records, header) or _brought_back(tp, end, claim, records)
        outcome[key] = problem or _mapped(tp, claim, records)
    return outcome


def _claim(pos: Position, bounds: LogBounds, header: str) -> _Claim | str:
    """What proves the position's resume point on the target, or why the strategy cannot (then no read)."""
    if pos.packed_before:
        return _after_last(pos, bounds, header)
    return _at_next(pos, bounds, header)


def _after_last(pos: Position, bounds: LogBounds, header: str) -> _Claim | str:
    """The group processed the last record before its position: it resumes after that record's copy."""
    h, c = pos.last_origin, pos.committed
    if h is None and pos.top is not None and pos.top_origin is not None and pos.top.offset < c:
        return _after_top(pos, pos.top, pos.top_origin, bounds, header)
    if h is None and pos.next_origin is None:
        return (
            f"neither the last record the group processed nor its next one (around source offset {c}) carries "
            f"{header}: the source is not a restore's copy of the target there, or the group processed records "
            "produced on the source itself, not restored (which the target does not have)"
        )
    if h is None:
        return (
            f"the last record the group processed (before source offset {c}) carries no {header}: it was produced "
            "on the source itself, not restored, and the target does not have it"
        )
    last = pos.before[-1]
    floored = _floored(pos, h, bounds, header, ((h, last),))
    if floored is not None:
        return floored
    if pos.next is not None and pos.next_origin is not None and pos.next_origin <= h:
        return (
            f"the source's record {last.offset} carries {header} = {h} but the next one, {pos.next.offset}, carries "
            f"{pos.next_origin}: the restore is out of order here, and resuming after {h} could skip a record"
        )
    unreadable = _outside(h, bounds, f"the copy of the last record the group processed (source offset {last.offset})")
    if unreadable:
        return unreadable
    said = (
        f"the last record the group processed, source offset {last.offset}, carries {header} = {h}, and target "
        f"offset {h} holds it (same content and timestamp): resume after it"
    )
    checks: tuple[tuple[int, Evidence], ...] = ((h, last),)
    nxt, n = pos.next, pos.next_origin
    if h + 1 >= bounds.end:
        said += f", at the target's log end {bounds.end}"
    elif nxt is not None and n == h + 1:
        checks = ((h, last), (h + 1, nxt))
        said += f"; target offset {h + 1} holds the group's next record (source offset {nxt.offset}) too"
        return _Claim(h + 1, checks, h + 1, nxt.fingerprint, said)
    if nxt is not None and n is None:
        said += (
            f"; the group's next record, source offset {nxt.offset}, carries no {header}: produced on the source "
            "itself, not restored, it is not on the target"
        )
    elif nxt is not None and n is not None:
        said += (
            f"; its next record carries {header} = {n}: the target's records from {h + 1} before that one were never "
            "on the source, and the group reads them"
        )
    return _Claim(h + 1, checks, h, None, said)


def _after_top(pos: Position, top: Evidence, h: int, bounds: LogBounds, header: str) -> _Claim | str:
    """The group processed every restored record and then records produced on the source after the
    restore (the target never had those): it resumes after the copy of the last restored record. No
    record of the target after it was ever on the source, so it reads none twice and skips none."""
    c = pos.committed
    unreadable = _outside(h, bounds, f"the copy of the source's last restored record (source offset {top.offset})")
    if unreadable:
        return unreadable
    said = (
        f"the group processed the source's records up to {c - 1}; those after source offset {top.offset} were "
        f"produced on the source itself, not restored, and are not on the target ({c - 1 - top.offset:,} records "
        f"processed that the target lacks); the last restored record, source offset {top.offset}, carries {header} "
        f"= {h}, and target offset {h} holds it (same content and timestamp): resume after it"
    )
    if h + 1 >= bounds.end:
        said += f", at the target's log end {bounds.end}"
    floored = _floored(pos, h, bounds, header, ((h, top),))
    if floored is not None:
        return floored
    if pos.own_since is None:
        return (
            f"the snapshot did not see the first record the source produced after its last restored one (source "
            f"offset {top.offset}): whether the target holds copies of records the group processed is not known"
        )
    return _Claim(h + 1, ((h, top),), h, None, said, older_than=pos.own_since)


def _floored(
    pos: Position, h: int, bounds: LogBounds, header: str, checks: tuple[tuple[int, Evidence], ...]
) -> _Claim | str | None:
    """Where the group resumes when the source, read whole, says its restore was not in order before the
    position (``Position.origin_floor``): at the first origin record the group may not have processed, the
    records it processed from there counted. None: the source was not read whole, or its restore is in order
    there (the group resumes after ``h``, as the records around it say)."""
    floor, twice = pos.origin_floor, pos.origin_twice
    if floor is None or (floor == h + 1 and twice == 0):
        return None
    unreadable = _outside(h, bounds, "the copy of a record the group processed") or (
        _outside(floor, bounds, "where the group resumes") if floor < bounds.end else None
    )
    if unreadable:
        return unreadable
    said = (
        f"the source, read whole, holds the restore's records out of order or twice before the group's position "
        f"(its last processed record carries {header} = {h}): the first record of the target the group may not "
        f"have processed is {floor}"
    )
    said += (
        f"; it processed {twice:,} records at or after it, read again"
        if twice
        else "; it processed every one before it"
    )
    if floor >= bounds.end:
        said += f", at the target's log end {bounds.end}"
    # Apply re-reads the record before the resume point (the anchor must sit at it or just before it), not h.
    anchor = min(floor, bounds.end) - 1 if min(floor, bounds.end) > bounds.start else floor
    return _Claim(floor, checks, anchor, None, said, exact=twice == 0, duplicates=twice)


def _at_next(pos: Position, bounds: LogBounds, header: str) -> _Claim | str:
    """No record before the position: the group is at the source's log start and resumes at its next
    record's copy on the target."""
    nxt, n, c = pos.next, pos.next_origin, pos.committed
    if nxt is None or n is None:
        which = "none at or after it" if nxt is None else f"the next one, {nxt.offset}, carries no {header}"
        return f"the snapshot read no record before source offset {c}, and {which}: no origin offset to map by"
    if pos.log_start is not None and c > pos.log_start:
        return (
            f"the snapshot read no record before committed offset {c}, which is not the source's log "
            f"start {pos.log_start}: what the group processed last is not known"
        )
    unreadable = _outside(n, bounds, f"the copy of the group's next record (source offset {nxt.offset})")
    if unreadable:
        return unreadable
    said = (
        f"the group is at the source's log start; its next record, source offset {nxt.offset}, carries {header} "
        f"= {n}, and target offset {n} holds it (same content and timestamp): resume there"
    )
    return _Claim(n, ((n, nxt),), n, nxt.fingerprint, said)


def _outside(offset: int, bounds: LogBounds, what: str) -> str | None:
    """Why the target cannot hold ``offset`` (None: it may)."""
    if offset < bounds.start:
        return f"target offset {offset}, {what}, is below the target's log start {bounds.start}: it cannot be checked"
    if offset >= bounds.end:
        return f"the target's log ends at {bounds.end}: it has no offset {offset}, {what}"
    return None


def _mismatch(tp: TP, claim: _Claim, records: Mapping[tuple[TP, int], Record], header: str) -> str | None:
    """Why the target does not hold the snapshot's records where their origin offsets say (None: it does)."""
    for offset, evidence in claim.checks:
        record = records.get((tp, offset))
        if record is None:
            return (
                f"target offset {offset} holds no record (compacted away, or a transaction marker): the source's "
                f"record {evidence.offset}, which carries {header} = {offset}, cannot be checked"
            )
        if record_fingerprint(record, header) != evidence.fingerprint:
            return (
                f"the source's record {evidence.offset} carries {header} = {offset}, but target offset {offset} holds "
                "another record (its content differs): the header does not describe this target"
            )
        if record.timestamp != evidence.timestamp:
            return (
                f"the source's record {evidence.offset} carries {header} = {offset} and target offset {offset} has its "
                f"content, but timestamp {record.timestamp}, not {evidence.timestamp}: not proven the same record"
            )
    return None


def _brought_back(tp: TP, end: int, claim: _Claim, records: Mapping[tuple[TP, int], Record]) -> str | None:
    """Why the target may hold copies of records the group processed on the source after the restore
    (None: its last record is older than the first of those, so it holds none)."""
    if claim.older_than is None or claim.resume >= end:
        return None
    last = records.get((tp, end - 1))
    if last is not None and last.timestamp < claim.older_than:
        return None
    seen = f"its last record is as recent ({last.timestamp})" if last else f"its last offset {end - 1} holds no record"
    return (
        f"the target's log goes on after the copy of the last restored record and {seen} as the records the source "
        f"produced after the restore (from {claim.older_than}): it may hold copies of those the group processed "
        "(MirrorMaker 2 from the source), which resuming there would read twice; the fingerprint strategy looks "
        "for them"
    )


def _mapped(tp: TP, claim: _Claim, records: Mapping[tuple[TP, int], Record]) -> Decision:
    anchor = records.get((tp, claim.anchor))  # none there (a transaction marker, compacted): apply checks none
    return Decision(
        "mapped",
        claim.resume,
        "origin",
        claim.exact,
        claim.duplicates,
        claim.said,
        expected_fingerprint=claim.expected,
        anchor=(anchor.offset, None, anchor.timestamp) if anchor is not None else None,
    )
