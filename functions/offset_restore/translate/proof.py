"""The check every answer passes, whatever strategy made it (docs/translation.md, "One proof").

A strategy's answer says where a group resumes on the target; this module accepts it only on evidence it
checks itself, knowing nothing of how the strategy found it. What it checks:

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

- **Nothing before an answer rests on order the reads contradict.** Where what the plan read of a
  partition falls back before the resume point (a header not above one read before it) and the plan did
  not read every offset before it, the answer is held: a record the group had not processed may lie
  where nothing was read.
- **What an answer reads twice is what the plan read after it.** A record read at or after the resume
  point whose header is below the group's position was processed: an answer claiming fewer read twice
  (or ``exact``) loses the claim, and its bound counts them and the records there that may be such copies
  (``read_headers.Twice``) where the plan read everything after it; otherwise it is not bounded.

A partition whose log is empty (or holds only transaction markers) has nothing before the end to skip.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from offset_restore.kafka.model import TP, LogBounds, Record
from offset_restore.snapshot.fingerprint import record_fingerprint
from offset_restore.snapshot.headers import int_header
from offset_restore.translate.positions import Decision, Evidence, Position, PositionKey
from offset_restore.translate.read_headers import Met, ReadHeaders, Twice

__all__ = ["Seen", "TargetTail", "prove"]

ENDS_WINDOW = 16
"""Offsets read on each side of an exact answer whose ends the plan's reads did not identify: the record at
the resume point and the last one before it (transaction markers between are passed over)."""
CHECKED_RECORDS = 16
"""Records before a resume point that carry a source offset at or past the position, read again and
compared with the evidence per answer; past them, the next one moves the answer (a lie on every record of
a region is not believed)."""


class TargetTail:
    """What the shape check read of each target partition's end: its last record, and the highest
    offset header among the records it read there (None: none carries one). A partition it could not
    read has no entry."""

    def __init__(self) -> None:
        self.last: dict[TP, Record | None] = {}
        self.highest: dict[TP, int | None] = {}

    def add(self, tp: TP, records: Sequence[Record], header: str) -> None:
        self.last[tp] = records[-1] if records else None
        offsets = [o for o in (int_header(r, header) for r in records) if o is not None]
        self.highest[tp] = max(offsets) if offsets else None


Mapped = tuple[PositionKey, Position, Decision, int]
"""An answer the proof checks: its key, position, decision and resume point."""
RecordsAt = Callable[[Mapping[TP, set[int]]], Mapping[tuple[TP, int], Record]]


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
    proving = _Proving(_Answers(decisions, positions), positions, bounds, seen, header, by)
    changed = _skipping(proving) + _order_before(proving) + _past_the_origin_floor(proving)
    changed += _read_twice(proving) + _copies_without_header(proving) + _shown_lies(proving) + _exact_ends(proving)
    for key, pos, decision, resume in proving.mapped():
        target_bounds = bounds.get(pos.target)
        if not _resumes_at_end(pos, resume, target_bounds, seen.tail):
            continue
        why = _unproven_end(pos, resume, target_bounds, seen.tail, header, seen.last_pair)
        if why is None:
            why = _left_on_source(pos, complete.get(pos.source, False))
        if why is not None:
            proving.decisions[key] = _held(decision, why, by.get(key))
            changed += 1
    return changed


class _Answers:
    """The answers being proven, held in the caller's dict and written through to it: every rule writes here,
    and each write marks its target partition, so ``_Proving.mapped_by_target`` builds again the answers still
    mapped of that partition alone. Seven rules read them; rebuilt for each rule, they cost the proof as much
    as its checks."""

    def __init__(self, decisions: dict[PositionKey, Decision], positions: Mapping[PositionKey, Position]) -> None:
        self._decisions, self._positions = decisions, positions
        self.changed: set[TP] = set()

    def __getitem__(self, key: PositionKey) -> Decision:
        return self._decisions[key]

    def __setitem__(self, key: PositionKey, decision: Decision) -> None:
        self._decisions[key] = decision
        pos = self._positions.get(key)
        if pos is not None:
            self.changed.add(pos.target)

    def __iter__(self) -> Iterator[PositionKey]:
        return iter(self._decisions)


@dataclass
class _Proving:
    """What every rule of one proof reads: the answers (held in place), the positions, the target's bounds
    and what the plan read of it, the offset header's name, and which strategy answered each position."""

    decisions: _Answers
    positions: Mapping[PositionKey, Position]
    bounds: Mapping[TP, LogBounds]
    seen: Seen
    header: str
    by: Mapping[PositionKey, str]
    evidence: _Prints = field(init=False)
    """The snapshot's evidence by fingerprint, built once for every rule that compares content."""

    by_target: dict[TP, list[tuple[PositionKey, Position]]] = field(init=False)
    """Every answer's key with its position (an answer without one is not the proof's), by target partition:
    a rule takes what the plan read of a partition once for all the answers on it."""
    _mapped: dict[TP, list[Mapped]] = field(init=False)
    """Each partition's answers still mapped, as ``mapped_by_target`` last built them."""

    def __post_init__(self) -> None:
        self.evidence = _Prints(self.positions)
        self.by_target, self._mapped = {}, {}
        for key in self.decisions:
            pos = self.positions.get(key)
            if pos is not None:
                self.by_target.setdefault(pos.target, []).append((key, pos))

    def mapped(self) -> Iterator[Mapped]:
        """Every answer still mapped (a rule before may have held it), with its position and resume point:
        what each rule checks."""
        for _, answers in self.mapped_by_target():
            yield from answers

    def mapped_by_target(self) -> Iterator[tuple[TP, list[Mapped]]]:
        """``mapped``, a target partition at a time (each partition's answers taken as it comes); built once, and
        again for a partition where a rule wrote an answer since (``_Answers``)."""
        decisions, built = self.decisions, self._mapped
        for tp, members in self.by_target.items():
            answers = built.get(tp)
            if answers is None or tp in decisions.changed:
                decisions.changed.discard(tp)
                answers = built[tp] = []
                for key, pos in members:
                    decision = decisions[key]
                    if decision.status == "mapped" and decision.target_offset is not None:
                        answers.append((key, pos, decision, decision.target_offset))
            if answers:
                yield tp, answers

    def unpacked(self) -> tuple[_Answers, Mapping[PositionKey, Position], Seen, str, Mapping[PositionKey, str]]:
        return self.decisions, self.positions, self.seen, self.header, self.by


def _skipping(proving: _Proving) -> int:
    """Hold every answer past a record the plan read that the group has not processed; returns how many."""
    decisions, positions, seen, header, by = proving.unpacked()
    found: dict[PositionKey, list[tuple[int, int]]] = {}
    for tp, answers in proving.mapped_by_target():
        part = seen.headers.partition(tp)
        if part is None:
            continue
        for key, pos, _, resume in answers:
            past = part.past(pos.committed, resume, CHECKED_RECORDS + 1)
            if past:
                found[key] = past
    if not found:
        return 0
    wanted: dict[TP, set[int]] = {}
    for key, past in found.items():
        wanted.setdefault(positions[key].target, set()).update(o for o, _ in past[:CHECKED_RECORDS])
    records = seen.records_at(wanted)
    evidence = proving.evidence
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


def _order_before(proving: _Proving) -> int:
    """Hold every answer before which the plan's reads of its partition fall back (a header not above one
    read before it), unless the plan read every offset before it: a restore not written in order there may
    have put a record the group had not processed anywhere the plan did not read, so the records before
    the answer are not proven processed. Returns how many it held."""
    decisions, _, seen, header, by = proving.unpacked()
    falls = {tp: fall for tp in proving.bounds if (fall := seen.headers.fall(tp)) is not None}
    held = 0
    for key, pos, decision, resume in proving.mapped() if falls else ():
        if pos.target not in falls:
            continue
        fall, log = falls[pos.target], proving.bounds[pos.target]
        if fall.offset >= resume:
            continue
        if seen.headers.covered(pos.target, log.start, resume):
            continue  # read whole up to it: nothing before it the plan did not see (``_skipping``)
        why = (
            f"the records the plan read of {pos.target} before this answer are not in order (target record "
            f"{fall.offset} carries {header} = {fall.source}, after one carrying {fall.above}), and it did not read "
            "every record before it: one the group had not processed may lie where it did not read. Plan again with "
            "--order-check full (the partition read whole)"
        )
        decisions[key] = _held(decision, why, by.get(key))
        held += 1
    return held


def _read_twice(proving: _Proving) -> int:
    """Take ``exact`` from every answer, and raise its bound of records read twice, where the plan read at or
    after its resume point records the group processed (headers below its position) beyond what it claims.
    The bound counts, besides those, the records there that may be such copies (``read_headers.Twice``) and
    stands only where the plan read every record after the resume point; otherwise it is not bounded. A
    record whose content is the snapshot's record of the group's position or past it is not counted: its
    header lies (read again, up to 16 an answer); where every one is such a record, nothing processed was
    read there. Returns how many answers changed."""
    decisions, positions, seen, _, _ = proving.unpacked()
    found: dict[PositionKey, Twice] = {}
    for tp, answers in proving.mapped_by_target():
        part = seen.headers.partition(tp)
        if part is None:
            continue
        for key, pos, decision, resume in answers:
            claimed = 0 if decision.exact else decision.max_duplicates
            twice = None if claimed is None else part.twice(resume, pos.committed)
            if twice is not None and claimed is not None and claimed < twice.possible:
                found[key] = twice
    if not found:
        return 0
    wanted: dict[TP, set[int]] = {}
    for key, twice in found.items():
        wanted.setdefault(positions[key].target, set()).update(o for o, _ in (*twice.below, *twice.lone))
    records, evidence = seen.records_at(wanted), proving.evidence
    changed = 0
    for key, twice in found.items():
        decision, pos = decisions[key], positions[key]
        lying_below = _unprocessed_copies(pos, twice.below, records, evidence, proving.header)
        if lying_below >= twice.seen:
            continue  # every record read below the position is a later one's copy: nothing processed was read
        possible = (
            twice.possible - lying_below - _unprocessed_copies(pos, twice.lone, records, evidence, proving.header)
        )
        if (0 if decision.exact else decision.max_duplicates or 0) < possible:
            decisions[key] = _more_twice(
                decision, pos, replace(twice, seen=twice.seen - lying_below, possible=possible), proving
            )
            changed += 1
    return changed


def _copies_without_header(proving: _Proving) -> int:
    """Take ``exact`` from every answer, and raise its bound, where a record the plan read at or after its
    resume point without the offset header, in a partition whose records carry it, is by content the copy
    of a record the group processed (every record the snapshot read with that content lies before its
    position): a restore that wrote it again without the header, after its end, where ``_read_twice``'s
    headers do not reach. The bound adds them and stands only where the plan read every record after the
    resume point. Returns how many answers changed."""
    decisions, _, seen, _, _ = proving.unpacked()
    ordered: dict[TP, tuple[list[int], list[str]]] = {}  # each keyed partition's header-less records, by offset
    changed = 0
    for key, pos, decision, resume in proving.mapped():
        claimed = 0 if decision.exact else decision.max_duplicates
        if claimed is None:
            continue
        if pos.target not in ordered:
            prints = sorted(seen.headers.prints(pos.target).items()) if seen.headers.keyed(pos.target) else []
            ordered[pos.target] = ([o for o, _ in prints], [p for _, p in prints])
        offsets, prints_at = ordered[pos.target]
        start = bisect.bisect_left(offsets, resume)
        if start == len(offsets):
            continue  # no header-less record at or after it (a restore that wrote the header on every one)
        back = proving.evidence.back(pos.source)
        copies = [
            o
            for o, p in zip(offsets[start:], prints_at[start:], strict=True)
            if (span := back.get(p)) is not None and span[1] < pos.committed
        ]
        if claimed < len(copies):
            said = (
                f"not exact: target record {copies[0]}, read by the plan without the offset header, is the copy of a "
                "record the group processed (its content), read again"
            )
            decisions[key] = _counted_twice(decision, pos, claimed + len(copies), said, proving)
            changed += 1
    return changed


def _unprocessed_copies(
    pos: Position,
    read: tuple[tuple[int, int], ...],
    records: Mapping[tuple[TP, int], Record],
    evidence: _Prints,
    header: str,
) -> int:
    """How many of the records ``read`` (offset, header) are, by content, copies of records the group had not
    processed: their headers lie."""
    back = evidence.back(pos.source)
    lying = 0
    for offset, _ in read:
        record = records.get((pos.target, offset))
        printed = None if record is None else record_fingerprint(record, header)
        span = None if printed is None else back.get(printed)
        lying += span is not None and span[0] >= pos.committed
    return lying


def _more_twice(decision: Decision, pos: Position, twice: Twice, proving: _Proving) -> Decision:
    """``decision`` not exact, bounded by what the plan read after it where it read everything there."""
    offset, value = twice.first
    said = (
        f"not exact: the plan read {twice.seen:,} record(s) at or after it the group processed (target "
        f"record {offset} carries {proving.header} = {value})"
    )
    return _counted_twice(decision, pos, twice.possible, said, proving)


def _counted_twice(decision: Decision, pos: Position, possible: int, said: str, proving: _Proving) -> Decision:
    """``decision`` not exact, ``said`` why: at most ``possible`` records read twice where the plan read every
    record after its resume point, else not bounded."""
    log = proving.bounds.get(pos.target)
    assert decision.target_offset is not None
    whole = log is not None and proving.seen.headers.covered(pos.target, decision.target_offset, log.end)
    said += f"; at most {possible:,} read twice" if whole else "; how many are read twice is not bounded"
    reason = f"{decision.reason}; {said}" if decision.reason else said
    return decision._replace(exact=False, max_duplicates=possible if whole else None, reason=reason)


def _past_the_origin_floor(proving: _Proving) -> int:
    """Hold every answer past the first origin record the group may not have processed (and count what an
    "exact" one before it reads again), where the snapshot
    read a failback's source whole (``Position.origin_floor``) and the target is the cluster those origin
    offsets are of: the target's record at the origin offset of a record the group processed is that record
    (its content). The source's restore may have been written out of order: the records around the group's
    position then say nothing of those before them, and only the whole read does. Returns how many."""
    decisions, positions, seen, header, by = proving.unpacked()
    wanted: dict[TP, set[int]] = {}
    past: dict[PositionKey, tuple[int, int, int, Evidence]] = {}
    for key, pos, decision, resume in proving.mapped():
        if pos.origin_floor is None:
            continue
        mark, floor = _origin_mark(pos), pos.origin_floor
        if mark is not None and (resume > floor or (decision.exact and (resume < floor or pos.origin_twice))):
            past[key] = (resume, floor, *mark)
            if mark[0] not in seen.headers.prints(pos.target):
                wanted.setdefault(pos.target, set()).add(mark[0])
    records = seen.records_at(wanted) if wanted else {}
    held = 0
    for key, (resume, floor, at, evidence) in past.items():
        pos = positions[key]
        printed = seen.headers.prints(pos.target).get(at)
        record = records.get((pos.target, at))
        if printed is None and record is not None:
            printed = record_fingerprint(record, header)
        if printed != evidence.fingerprint:
            continue  # the target is not the cluster the origin offsets are of (or nothing shows it is)
        if resume <= floor:  # not past it: read again, counted
            decisions[key] = _read_again(decisions[key], floor - resume + pos.origin_twice, floor)
        else:
            why = (
                f"the snapshot read the source whole: origin record {floor} is the first the group may not have "
                f"processed (the restore there was written out of order or twice), and this answer lies past it: "
                f"resuming at {resume} would skip records {floor}..{resume - 1}"
            )
            decisions[key] = _held(decisions[key], why, by.get(key))
        held += 1
    return held


def _read_again(decision: Decision, again: int, floor: int) -> Decision:
    said = (
        f"not exact: the snapshot read the source whole, and the group processed {again:,} records from here on "
        f"(the first it may not have processed is origin record {floor}): read again"
    )
    reason = f"{decision.reason}; {said}" if decision.reason else said
    return decision._replace(exact=False, max_duplicates=max(decision.max_duplicates or 0, again), reason=reason)


def _origin_mark(pos: Position) -> tuple[int, Evidence] | None:
    """A record the group processed and its origin offset: where the target, if it is the origin cluster,
    holds that record."""
    last = pos.last_before
    if pos.last_origin is not None and last is not None:
        return pos.last_origin, last
    if pos.top_origin is not None and pos.top is not None:
        return pos.top_origin, pos.top
    return None


def _shown_lies(proving: _Proving) -> int:
    """Hold every answer whose end records' content shows the offset header there lies, where the plan kept
    that content (the records next to a gap in the headers, ``ReadHeaders``): the last record before the
    resume point is the group's next record though its header says a processed one (a record lost in the
    restore, and the next one numbered as it), or the record at the resume point a processed one though its
    header says otherwise. A content two records share is no proof either way. Returns how many it held."""
    decisions, _, seen, _, by = proving.unpacked()
    changed = 0
    for tp, answers in proving.mapped_by_target():
        part, log = seen.headers.partition(tp), proving.bounds.get(tp)
        if part is None or log is None:
            continue
        for key, pos, decision, resume in answers:
            if not part.printed_near(resume):
                continue
            found = seen.headers.ends(tp, resume, log.start)
            why = _lie_shown(found.before, pos, proving.evidence, at=False) or _lie_shown(
                found.at, pos, proving.evidence, at=True
            )
            if why is not None:
                decisions[key] = _held(decision, why, by.get(key))
                changed += 1
    return changed


def _lie_shown(met: Met | None, pos: Position, evidence: _Prints, *, at: bool) -> str | None:
    """Why the content of an end record contradicts its offset header, which proves that end (None: it does
    not, or its content was not kept, or the evidence names it on both sides of the position). The evidence
    holds the group's own next record, so its copy falls on the unprocessed side by the span alone."""
    if met is None or met.printed is None or met.source is None or not _by_header(met.source, pos.committed, at=at)[0]:
        return None
    c, span = pos.committed, evidence.back(pos.source).get(met.printed)
    if span is None:
        return None
    if at and span[1] < c:
        return f"{_processed_at(span[1], c)}, though its offset header says {met.source}"
    if not at and span[0] >= c:
        return f"{_unprocessed_before(span[0], c)}, though its offset header says {met.source}"
    return None


def _exact_ends(proving: _Proving) -> int:
    """Check both ends of every ``exact`` answer inside the target's log by identity: the last record before
    the resume point is one the group processed, the record at it one the group had not. Each end is taken
    from what the plan read (``ReadHeaders.ends``), else read here, a few records each side (as is one
    whose header contradicts: its content may show the header lies). An end that contradicts holds the
    answer (``pending``); one that cannot be identified leaves it mapped, not exact. Returns how many
    answers changed."""
    decisions, positions, seen, header, by = proving.unpacked()
    bounds = proving.bounds
    evidence = proving.evidence
    verdicts: dict[PositionKey, tuple[Side, Side]] = {}
    wanted: dict[TP, set[int]] = {}
    for tp, answers in proving.mapped_by_target():
        part, log = seen.headers.partition(tp), bounds.get(tp)
        if log is None:
            continue
        for key, pos, decision, resume in answers:
            if not decision.exact or _resumes_at_end(pos, resume, log, seen.tail):
                continue  # not exact, or an end: proven by the end rules
            around = part.headers_around(resume) if part is not None and resume > log.start else None
            if around is not None and around[0] >= pos.committed > around[1]:
                continue  # both ends proven by their offset headers (``_by_header``): the common case, at its speed
            found = seen.headers.ends(tp, resume, log.start)
            before = (True, "") if found.nothing_before else _judged(found.before, pos, evidence, at=False)
            verdicts[key] = (_judged(found.at, pos, evidence, at=True), before)
            if not (verdicts[key][0][0] and verdicts[key][1][0]):
                wanted.setdefault(tp, set()).update(
                    range(max(log.start, resume - ENDS_WINDOW), min(log.end, resume + ENDS_WINDOW))
                )
    records = seen.records_at(wanted) if wanted else {}
    changed = 0
    for key, (at, before) in verdicts.items():
        pos, decision = positions[key], decisions[key]
        if not (at[0] and before[0]):
            assert decision.target_offset is not None
            keyed = seen.headers.keyed(pos.target)
            read = _ReadAround(pos, decision.target_offset, bounds[pos.target].start, records, header, keyed)
            at = at if at[0] else _judged(read.at(), pos, evidence, at=True)
            before = before if before[0] else read.before(evidence)
            if _placed_by_evidence(pos, decision.target_offset):
                at, before = (_unless_contradicted(side) for side in (at, before))
        changed += _settled(decisions, key, (at, before), by)
    return changed


def _settled(decisions: _Answers, key: PositionKey, sides: tuple[Side, Side], by: Mapping[PositionKey, str]) -> int:
    """Hold the answer at ``key`` where an end contradicts it or neither is identified; take "exact" from it
    where one end is not identified (the other bounds it); returns 1 when it changed."""
    decision = decisions[key]
    wrong = [why for proven, why in sides if proven is False]
    unknown = [why for proven, why in sides if proven is None]
    if len(unknown) == len(sides):  # nothing bounds where the answer lies: it may skip as well
        wrong = [f"neither end of the answer is identified: {'; '.join(unknown)}"]
    if wrong:
        decisions[key] = _held(decision, "; ".join(wrong), by.get(key))
    elif unknown:
        said = f"not proven exact: {'; '.join(unknown)}"
        reason = f"{decision.reason}; {said}" if decision.reason else said
        decisions[key] = decision._replace(exact=False, max_duplicates=None, reason=reason)
    return int(bool(wrong or unknown))


def _placed_by_evidence(pos: Position, resume: int) -> bool:
    """Whether the snapshot itself places the group at ``resume`` with nothing read twice: a failback's
    source read whole gives the first origin record the group may not have processed (``origin_floor``),
    and every one before it processed. On the origin cluster that is the resume point, both ends."""
    return pos.origin_floor == resume and pos.origin_twice == 0


def _unless_contradicted(side: Side) -> Side:
    return side if side[0] is False else (True, "")


Side = tuple[bool | None, str]
"""An end's verdict: proven (True), contradicted (False) or not identified (None), and why."""


def _judged(met: Met | None, pos: Position, evidence: _Prints, *, at: bool) -> Side:
    """An end's verdict from the record there: its offset header when that proves the end, else its content
    against the snapshot's evidence (a header that contradicts may lie: the copy of a record the group
    processed, or of its next one, tells), else what the header says."""
    where = "at" if at else "before"
    if met is None:
        return None, f"the record {where} the resume point was not read"
    by_header = None if met.source is None else _by_header(met.source, pos.committed, at=at)
    if by_header is not None and by_header[0]:
        return by_header
    by_content = None if met.printed is None else _by_content(met, pos, evidence, at=at, told=by_header is None)
    if by_content is not None and by_content[0] is not None:
        return by_content
    return by_header or by_content or (None, f"the record {where} the resume point was not read")


def _by_header(source: int, c: int, *, at: bool) -> Side:
    if at:
        return (True, "") if source >= c else (False, _processed_at(source, c))
    return (True, "") if source < c else (False, _unprocessed_before(source, c))


def _by_content(met: Met, pos: Position, evidence: _Prints, *, at: bool, told: bool) -> Side:
    """An end's verdict from the record's content. ``told``: no offset header says otherwise, so what the
    evidence leaves possible counts too (not only a record it names)."""
    c, printed = pos.committed, met.printed
    is_next = pos.next is not None and pos.next.fingerprint == printed
    span = evidence.back(pos.source).get(printed) if printed is not None else None
    if at:
        if span is not None and span[1] < c and not is_next:
            return False, _processed_at(span[1], c)
        if is_next or (told and (pos.next is None or _born_on_source(pos))):
            return True, ""  # its next record; or the target holds none (caught up, or born on the source)
    else:
        if is_next or (span is not None and span[0] >= c):
            return False, _unprocessed_before(span[0] if span is not None else c, c)
        if (span is not None and span[1] < c) or (told and pos.log_start is not None and c <= pos.log_start):
            return True, ""  # a record the group processed; or it processed all the source holds before c: none
    role = "the group's next record" if at else "a record the group processed"
    return None, (
        f"the target record {met.offset} {'at' if at else 'before'} the resume point is not proven the copy of "
        f"{role} (by its offset header or its content, as the snapshot read it)"
    )


def _processed_at(source: int, c: int) -> str:
    return (
        f"the record at the resume point is the copy of source record {source}, one the group processed (position {c})"
    )


def _unprocessed_before(source: int, c: int) -> str:
    return (
        f"the last record before the resume point is the copy of source record {source}, at or past the group's "
        f"position {c}: resuming there would skip it"
    )


class _ReadAround:
    """The records the proof read at either side of one resume point."""

    def __init__(
        self,
        pos: Position,
        resume: int,
        log_start: int,
        records: Mapping[tuple[TP, int], Record],
        header: str,
        keyed: bool,
    ) -> None:
        self._pos, self._resume, self._log_start, self._header = pos, resume, log_start, header
        self._records, self._keyed = records, keyed

    def _first(self, offsets: range) -> Met | None:
        """The first record read at ``offsets``; in a partition whose records carry the header, the first
        that carries it (the others are no source record's copy)."""
        tp = self._pos.target
        for offset in offsets:
            record = self._records.get((tp, offset))
            if record is None:
                continue
            source = int_header(record, self._header)
            if source is not None or not self._keyed:
                printed = record_fingerprint(record, self._header)
                return Met(offset, source, printed)
        return None

    def at(self) -> Met | None:
        """The record a consumer reads first from the resume point."""
        return self._first(range(self._resume, self._resume + ENDS_WINDOW))

    def before(self, evidence: _Prints) -> Side:
        """The verdict on the last record a consumer reads before the resume point."""
        resume = self._resume
        first = max(self._log_start, resume - ENDS_WINDOW)
        met = self._first(range(resume - 1, first - 1, -1))
        if met is None and first == self._log_start:
            return True, ""  # nothing a consumer reads before it
        return _judged(met, self._pos, evidence, at=False)


class _Prints:
    """The snapshot's evidence of each source partition, from a record's fingerprint back to its source offset:
    what tells a record whose header lies from one the group never processed (positions grouped by source
    partition in one pass, the first time one is asked for)."""

    def __init__(self, positions: Mapping[PositionKey, Position]) -> None:
        self._positions = positions
        self._by_source: dict[TP, list[Position]] | None = None
        self._of: dict[TP, dict[str, tuple[int, int]]] = {}

    def back(self, source: TP) -> dict[str, tuple[int, int]]:
        """Fingerprint -> the lowest and highest source offset of the records of ``source`` with it: identical
        records (heartbeats, retries) all on one side of a group's position tell that side."""
        if self._by_source is None:
            self._by_source = {}
            for pos in self._positions.values():
                self._by_source.setdefault(pos.source, []).append(pos)
        if source not in self._of:
            back: dict[str, tuple[int, int]] = {}
            for pos in self._by_source.get(source, []):
                for e in (*pos.before, *([pos.next] if pos.next else []), *([pos.top] if pos.top else [])):
                    lo, hi = back.get(e.fingerprint, (e.offset, e.offset))
                    back[e.fingerprint] = (min(lo, e.offset), max(hi, e.offset))
            self._of[source] = back
        return self._of[source]


def _first_unprocessed(
    pos: Position,
    past: list[tuple[int, int]],
    records: Mapping[tuple[TP, int], Record],
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
        span = back.get(record_fingerprint(record, header))
        if span is None or span[1] >= pos.committed:
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
    return _unprocessed(pos, last, tail.highest.get(pos.target), header, partial(last_pair, pos.target))


def _unprocessed(
    pos: Position,
    last: Record,
    highest: int | None,
    header: str,
    last_pair: Callable[[], tuple[int, int] | None],
) -> str | None:
    """Why the target's last record ``last`` is not proven processed by the group at ``pos`` (None: it is).
    The restore's last progress pair is asked only of a last record without the header (one DynamoDB Query
    a partition, at ten milliseconds each, where the headers already answer)."""
    c = pos.committed
    own = int_header(last, header)
    if highest is not None and highest >= c:
        return (
            f"a record among the target's last ones carries {header} = {highest}, at or after the group's "
            f"position {c}: the group has not processed it"
        )
    if own is not None:
        return None  # every record read at the end carries a source offset below c
    if _copy_of_processed(pos, last, header):
        return None
    pair = last_pair()
    if pair is not None and pair[1] == last.offset and pair[0] < c:
        return None  # the restore recorded the last record as a source record the group processed
    return (
        f"nothing proves the group processed the target's last record (offset {last.offset}): it carries no "
        f"{header} below {c}, no restore checkpoint names it, and it is not the copy of a record the snapshot "
        "read before the group's position. "
        "Finding no later record is not evidence: a restore still writing, or one that gave the records new "
        "timestamps (a failback's copies), would be skipped. Plan with a strategy that identifies records "
        "(header, origin, fingerprint), or wait for the restore"
    )


def _copy_of_processed(pos: Position, record: Record, header: str) -> bool:
    """Whether ``record`` is the copy of a record the group processed: a record the snapshot read before
    its position (or the source's last restored one below it), and not its next record."""
    printed = record_fingerprint(record, header)
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
