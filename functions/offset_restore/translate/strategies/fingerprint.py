"""The fingerprint strategy: the snapshot's evidence (the records before a position, then the next
one) found among the target's records of the same time; what the windows of one partition together
doubt (``fingerprint_counts``) is not exact, or resumes earlier."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import cast

from offset_restore.kafka.model import TP, PartitionFetch, Record
from offset_restore.reading.held import Held
from offset_restore.reading.rounds import AtEnd, Failed, Served, read_forward
from offset_restore.snapshot.fingerprint import record_fingerprint
from offset_restore.translate.context import Context
from offset_restore.translate.fingerprint_counts import Found, doubts
from offset_restore.translate.header_reads import evidence_prints
from offset_restore.translate.positions import Decision, Position, PositionKey
from offset_restore.translate.strategies.time_search import search_time

__all__ = ["by_fingerprint"]

FINGERPRINT_SCAN_LIMIT = 5_000
FINGERPRINT_FOLLOW_RECORDS = 100
"""Records read past the first one newer than a position's evidence: a region copied twice close
after the match (a replication task restarted) shows there (docs/translation.md)."""


def _cut_by_log_start(
    sequence: list[str], prints: list[str], window: list[Record], log_start: int, pos: Position
) -> list[str]:
    """The evidence the target can hold when its log begins inside it: the records before the
    committed one were lost before the copy (or deleted since), so the target's first records are the
    sequence's end, down to the next record itself. Empty when they are not."""
    if pos.next is None or not window or window[0].offset != log_start:
        return []
    for cut in range(1, len(sequence)):
        if prints[: len(sequence) - cut] == sequence[cut:]:
            return sequence[cut:]
    return []


def by_fingerprint(undecided: dict[PositionKey, Position], ctx: Context) -> dict[PositionKey, Decision | str]:
    """Find the evidence sequence (records before, then the next one) among target records of the
    same time, read from the first record as old as the oldest piece of evidence."""
    outcome: dict[PositionKey, Decision | str] = {}
    wanted = {}
    for key, pos in undecided.items():
        evidence = [*pos.before, *([pos.next] if pos.next else [])]
        if not evidence:
            outcome[key] = "the snapshot has no evidence for this position"
        else:
            wanted[key] = (pos.target, min(e.timestamp for e in evidence), None)
    # Read from before the oldest evidence by the skew seen: copies of the evidence that a disordered
    # region put earlier are then in the window, and the match is not called exact.
    results, skews = search_time(
        {key: (tp, stamp) for key, (tp, stamp, _) in wanted.items()}, ctx, "fingerprint", 0, partial(_hold, ctx)
    )
    scans = {}
    for key, result in results.items():
        if not result.complete:
            outcome[key] = result.reason or "search did not finish"
        elif result.found is None:
            outcome[key] = "no target record is as recent as the evidence"
        else:
            scans[key] = result.found.offset
    windows = _scan_windows(scans, undecided, ctx)
    printed: dict[TP, dict[int, str]] = defaultdict(dict)  # windows of one partition overlap
    for key, window in windows.items():
        pos = undecided[key]
        if not isinstance(window, str):
            cache = printed[pos.target]
            for r in window:
                if r.offset not in cache:
                    cache[r.offset] = record_fingerprint(r, ctx.options.offset_header)
        prints = window if isinstance(window, str) else [printed[pos.target][r.offset] for r in window]
        outcome[key] = _match(pos, window, prints, ctx.bounds[pos.target].start)
    moved = _doubted(outcome, undecided, printed)
    since = {key: (scans[key], wanted[key][1] - skews.get(wanted[key][0], 0)) for key in moved}
    return _read_back(outcome, moved, since, undecided, ctx)


def _doubted(
    outcome: dict[PositionKey, Decision | str],
    positions: Mapping[PositionKey, Position],
    printed: Mapping[TP, Mapping[int, str]],
) -> dict[PositionKey, tuple[int, str]]:
    """Mark what ``fingerprint_counts`` doubts, from every window of each partition together
    (``printed``: the fingerprint of every record read, by partition and offset), not exact; returns
    the positions it would resume earlier, with where (``_read_back`` decides)."""
    found: dict[TP, list[Found]] = defaultdict(list)
    for key, decision in outcome.items():
        pos = positions[key]
        if isinstance(decision, Decision) and decision.target_offset is not None:
            placed = pos.next is not None and decision.expected_fingerprint == pos.next.fingerprint
            source = pos.next.offset if pos.next is not None and placed else pos.committed
            found[pos.target].append(Found(key, pos.committed, source, decision.target_offset, placed, decision.exact))
    on: dict[TP, list[Position]] = defaultdict(list)
    for pos in positions.values():
        on[pos.target].append(pos)
    moved: dict[PositionKey, tuple[int, str]] = {}
    for tp, decided in found.items():
        evidence = evidence_prints(on[tp])
        records = [(evidence[p][0], evidence[p][-1], o) for o, p in printed.get(tp, {}).items() if p in evidence]
        may_skip, may_repeat = doubts(decided, records)
        for doubted, doubt in may_repeat.items():
            key = cast(PositionKey, doubted)
            repeated = outcome[key]
            assert isinstance(repeated, Decision)
            outcome[key] = _not_exact(repeated, doubt.why)
        for doubted, doubt in may_skip.items():
            key = cast(PositionKey, doubted)
            decision = outcome[key]
            assert isinstance(decision, Decision)
            offset = decision.target_offset
            if doubt.counted and doubt.offset is not None:
                moved[key] = (doubt.offset, doubt.why)  # decided by reading back
            elif doubt.offset is not None and offset is not None and doubt.offset < offset:
                outcome[key] = _resumed_at(decision, doubt.offset, doubt.why)
            else:
                outcome[key] = _not_exact(decision, doubt.why)
    return moved


def _not_exact(decision: Decision, why: str) -> Decision:
    """The decision where it is, claiming nothing: not exact, no bound."""
    return decision._replace(exact=False, max_duplicates=None, reason=f"{why}; {_twice(None)}")


def _resumed_at(decision: Decision, offset: int, why: str) -> Decision:
    """The decision resuming earlier, at a record the plan did not place: it reads again at most the records
    between there and where it was, besides what it claimed there (nothing claimed: no bound)."""
    claimed = 0 if decision.exact else decision.max_duplicates
    moved = None if decision.target_offset is None else decision.target_offset - offset
    bound = None if claimed is None or moved is None else claimed + moved
    return decision._replace(
        exact=False,
        max_duplicates=bound,
        reason=f"{why}; {_twice(bound)}",
        target_offset=offset,
        expected_fingerprint=None,
        anchor=None,
    )


FINGERPRINT_READ_BACK_LIMIT = 50_000
"""Records read back before a window whose counts show records moved there (per partition)."""


def _read_back(
    outcome: dict[PositionKey, Decision | str],
    doubted: Mapping[PositionKey, tuple[int, str]],
    since: Mapping[PositionKey, tuple[int, int]],
    positions: Mapping[PositionKey, Position],
    ctx: Context,
) -> dict[PositionKey, Decision | str]:
    """For the positions with more records before them than the source had (``doubted``: key -> the
    offset just after the last match before them, and why), read what their window did not — from there to
    where the window began (``since``: key -> (window start, the time it searched from)) — and
    resume at the first record as recent as the window's time: older ones are not records at or past
    the group's position (the assumption the window itself rests on). Nothing new enough there: the
    match stands, not exact. Past the read-back limit, the earlier offset stands."""
    moved = {key: low for key, (low, _) in doubted.items()}
    reasons = {key: why for key, (_, why) in doubted.items()}
    region: dict[TP, tuple[int, int]] = {}
    for key, low in moved.items():
        tp, start = positions[key].target, since[key][0]
        lo, hi = region.get(tp, (low, start))
        region[tp] = (min(lo, low), max(hi, start))
    stamps: dict[TP, list[tuple[int, int]]] = defaultdict(list)  # (offset, timestamp) read
    reached = {tp: lo for tp, (lo, _) in region.items()}
    rounds = ctx.rounds()

    def take(tp: TP, fetched: Served | AtEnd) -> int | None:
        if isinstance(fetched, AtEnd):
            reached[tp] = region[tp][1]
            return None
        stamps[tp].extend((r.offset, r.timestamp) for r in fetched.answer.records)
        reached[tp] = fetched.answer.read_to
        done = fetched.answer.read_to >= region[tp][1] or len(stamps[tp]) > FINGERPRINT_READ_BACK_LIMIT
        return None if done else fetched.answer.read_to

    failed = read_forward(rounds, {tp: lo for tp, (lo, hi) in region.items() if lo < hi}, take)
    ctx.record("fingerprint (read back)", rounds.rounds, rounds.fetches, rounds.records, {})
    for key, low in moved.items():
        tp, (start, stamp) = positions[key].target, since[key]
        decision = outcome[key]
        assert isinstance(decision, Decision) and decision.target_offset is not None
        covered = tp not in failed and reached.get(tp, low) >= start
        read = (o for o, t in stamps.get(tp, []) if low <= o < start and t >= stamp)
        first = next(read, None) if covered else low
        if first is not None and first < decision.target_offset:
            why = reasons[key] + (f": {first} is as recent as the evidence" if covered else " (not read back)")
            outcome[key] = _resumed_at(decision, first, why)
    return outcome


_SCANNED: tuple[Held, ...] = ("unkeyed", "scan")
"""Where a fingerprint scan finds the windows it starts in: the header search's of a replica, then the
time search's (a header-less replica's plan read each such batch twice: 800 reads for 400 positions)."""


def _hold(ctx: Context, tp: TP, position: int, answer: PartitionFetch, keys: list[int | None]) -> None:
    """Hold a window the time search read (whole) for the scans that start in it."""
    if answer.records:
        ctx.held.keep("scan", tp, [answer])


def _scan_windows(
    starts: dict[PositionKey, int], positions: dict[PositionKey, Position], ctx: Context
) -> dict[PositionKey, list[Record] | str]:
    """Records from each start until ``FINGERPRINT_FOLLOW_RECORDS`` past the first one newer than the
    evidence (bounded), taken from the windows already read where they hold them. Positions on one
    partition take turns: a round reads one window per partition."""
    windows: dict[PositionKey, list[Record] | str] = {}
    collected: dict[PositionKey, list[Record]] = {key: [] for key in starts}
    past: dict[PositionKey, int] = dict.fromkeys(starts, -1)
    cursor = dict(starts)
    rounds = ctx.rounds()

    def extend(key: PositionKey, answer: PartitionFetch) -> None:
        cursor[key], past[key] = _extend_window(collected[key], positions[key], answer, past[key])
        if len(collected[key]) > FINGERPRINT_SCAN_LIMIT + FINGERPRINT_FOLLOW_RECORDS:
            windows[key] = f"more than {FINGERPRINT_SCAN_LIMIT} target records before the evidence's time"
        elif cursor[key] < 0 or cursor[key] >= max(answer.high_watermark, 0):
            windows[key] = collected[key]

    while len(windows) < len(starts):
        for key in sorted(set(starts) - set(windows)):
            tp = positions[key].target
            while key not in windows and (held := ctx.held.holding(_SCANNED, tp, cursor[key])) is not None:
                extend(key, held)
        asked: dict[TP, PositionKey] = {}
        for key in sorted(set(starts) - set(windows)):
            asked.setdefault(positions[key].target, key)
        needed = {tp: _still_needed(positions[key], len(collected[key]), past[key]) for tp, key in asked.items()}
        reach = {tp: cursor[key] + needed[tp] for tp, key in asked.items()}
        outcomes = rounds.round({tp: cursor[key] for tp, key in asked.items()}, reach=reach)
        for tp, key in asked.items():
            outcome = outcomes[tp]
            if isinstance(outcome, Failed):
                windows[key] = outcome.reason
            elif isinstance(outcome, AtEnd):
                windows[key] = collected[key]
            elif isinstance(outcome, Served):
                _hold(ctx, tp, cursor[key], outcome.answer, [])  # another scan of the partition may need it
                ctx.index_times(tp, outcome.answer)  # and the timestamp strategy's count
                extend(key, outcome.answer)
    ctx.record("fingerprint", rounds.rounds, rounds.fetches, rounds.records, {})
    return windows


def _still_needed(pos: Position, collected: int, past: int) -> int:
    """The fewest records a scan window must still read (``_extend_window``): the evidence's records
    not yet in it, one newer than all of them, and ``FINGERPRINT_FOLLOW_RECORDS`` after that. Asked for
    at once (a run, ``FetchRounds.round``'s ``reach``): over batches of 58 records the follow took two
    or three point reads, each cutting a batch at its limit (Apache Kafka fills a limit to its last
    byte), 20% of the plan's bytes on a header-less replica. Fewer when the newer record comes sooner
    (records moved earlier): then the run reads up to the evidence's length too many."""
    if past >= 0:
        return max(1, FINGERPRINT_FOLLOW_RECORDS - past)
    evidence = len(pos.before) + (1 if pos.next is not None else 0)
    return max(0, evidence - collected) + 1 + FINGERPRINT_FOLLOW_RECORDS


def _extend_window(window: list[Record], pos: Position, answer: PartitionFetch, past: int) -> tuple[int, int]:
    """Add an answer's records to a scan window; where to read next (-1: done) and how many records
    were read since the first one newer than every piece of evidence (-1: none yet). The evidence's
    sequence cannot start after that record; the ``FINGERPRINT_FOLLOW_RECORDS`` after it are read
    too, for copies of the evidence or older records that a region copied twice puts there."""
    newest = max(e.timestamp for e in [*pos.before, *([pos.next] if pos.next else [])])
    for record in answer.records:
        window.append(record)
        if past >= 0:
            past += 1
        elif record.timestamp > newest and pos.next is not None:
            past = 0
        if past >= FINGERPRINT_FOLLOW_RECORDS:
            return -1, past
    return answer.read_to, past


def _match(pos: Position, window: list[Record] | str, prints: list[str] | str, log_start: int) -> Decision | str:
    """The decision from one position's window (``prints``: its records' fingerprints)."""
    if isinstance(window, str):
        return window
    assert not isinstance(prints, str)
    place = _place(pos, window, prints, log_start)
    return place if isinstance(place, str) else _decide_at(pos, window, prints, place)


@dataclass(frozen=True)
class _Place:
    """Where the snapshot's evidence sequence (``n`` records) lies in the window: indexes ``first..last``, the
    earliest of its matches; ``latest``: the last index of the latest one (``last`` when it matches once)."""

    first: int
    last: int
    n: int
    latest: int


def _place(pos: Position, window: list[Record], prints: list[str], log_start: int) -> _Place | str:
    """Where the evidence matches (the earliest place, and the end of the latest), or why nowhere. Several
    places (identical records) are the earliest one with copies of the evidence after it: the group resumes
    no later than the earliest, and reads again at most what lies up to the latest."""
    sequence = [e.fingerprint for e in pos.before] + ([pos.next.fingerprint] if pos.next else [])
    length = len(sequence)
    # Compared where the first record matches only: a window reaching back through a busy millisecond
    # holds up to ``RUN_EVIDENCE_RECORDS``, in a scan of thousands.
    head = sequence[0] if sequence else None
    matches = [
        i
        for i in range(len(prints) - length + 1)
        if (head is None or prints[i] == head) and prints[i : i + length] == sequence
    ]
    if not matches:
        sequence = _cut_by_log_start(sequence, prints, window, log_start, pos)
        matches = [0] if sequence else []
    if not matches:
        return "the evidence records were not found on the target"
    n = len(sequence)
    return _Place(matches[0], matches[0] + n - 1, n, matches[-1] + n - 1)


def _resume_after(pos: Position, window: list[Record], last: int) -> int:
    """Where a group resumes when its evidence ends at index ``last``: its next record, or past the last."""
    if pos.next is not None:
        return window[last].offset
    return window[last + 1].offset if last + 1 < len(window) else window[last].offset + 1


def _twice(bound: int | None) -> str:
    return "duplicates not bounded" if bound is None else f"at most {bound:,} read twice"


def _decide_at(pos: Position, window: list[Record], prints: list[str], place: _Place) -> Decision:
    """Exact at the match unless the window says the region around it cannot be placed: copies of the
    evidence elsewhere, records as recent as the next one before it, or older ones after it. Resuming
    earlier than the match reads again at most the records between, unless older records after it say a
    region was copied twice (then nothing bounds it)."""
    first, last = place.first, place.last
    evidence = [*pos.before, *([pos.next] if pos.next else [])]
    newest = max(e.timestamp for e in evidence)
    recent = pos.next.timestamp if pos.next is not None else newest + 1  # as recent as the next record
    newer = [r.offset for r in window[:first] if r.timestamp >= min(recent, newest + 1)]
    every = {e.fingerprint for e in evidence}  # with a sequence cut by the log start, its lost part too
    strays = [i for i, p in enumerate(prints) if p in every and not first <= i <= last]
    oldest = min(e.timestamp for e in evidence[len(evidence) - place.n :])
    older = [r.offset for r in window[last + 1 :] if r.timestamp < oldest]
    if strays:
        return _around_strays(pos, window, prints, strays, place, newer, bounded=not older)
    match = _resume_after(pos, window, last)
    if newer:
        # Records newer than the evidence before it: records past the position, moved earlier (the
        # window goes on past the first newer record, to see what follows the match).
        bound = None if older else match - newer[0]
        return Decision(
            "mapped",
            newer[0],
            "fingerprint",
            False,
            bound,
            f"target offsets {', '.join(map(str, newer[:5]))} before the match hold records as recent as the "
            "snapshot's next record (records past the position, moved earlier?): resume at the first of them, "
            + _twice(bound),
            unprovable=True,
        )
    anchor = (window[last].offset, None, window[last].timestamp)
    if older:
        return Decision(
            "mapped",
            match,
            "fingerprint",
            False,
            None,
            f"target offsets {', '.join(map(str, older[:5]))} after the match hold records older than the snapshot's "
            "evidence: a region copied twice or reordered may follow; resume at the match, duplicates not bounded",
            pos.next.fingerprint if pos.next is not None else None,
            anchor,
            unprovable=True,
        )
    if pos.next is not None:
        return Decision("mapped", match, "fingerprint", True, 0, None, pos.next.fingerprint, anchor)
    return Decision(
        "mapped", match, "fingerprint", True, 0, "group was caught up: resume after its last record", None, anchor
    )


def _around_strays(
    pos: Position,
    window: list[Record],
    prints: list[str],
    strays: list[int],
    place: _Place,
    newer: list[int],
    *,
    bounded: bool,
) -> Decision:
    """A copy of an evidence record outside the match (the region is repeated or out of order, or holds
    identical records), so the records around the match cannot be placed. Resume at the earliest copy of
    the next record (nothing at or after it is skipped). The group's place is one of the evidence's
    matches: it reads again at most the records up to the latest, and the copies of the evidence after it
    (``bounded``: no record older than the evidence follows the match, the same ground an exact answer
    stands on)."""
    nexts = [i for i in strays if pos.next is not None and prints[i] == pos.next.fingerprint]
    at = min([*nexts, place.last]) if pos.next is not None else None
    offset = window[at].offset if at is not None else _resume_after(pos, window, place.last)
    resume = min([offset, *newer[:1]])
    shown = ", ".join(str(window[i].offset) for i in strays[:5])
    bound = None
    if bounded:
        bound = _resume_after(pos, window, place.latest) - resume + sum(i > place.latest for i in strays)
    return Decision(
        "mapped",
        resume,
        "fingerprint",
        False,
        bound,
        f"copies of the evidence records also lie at target offsets {shown}: the region is repeated or "
        "out of order, or holds identical records; resume at "
        + ("the earliest copy of the next record, " if pos.next is not None else "the end of the earliest match, ")
        + _twice(bound),
        pos.next.fingerprint if at is not None and pos.next is not None and not newer else None,
        unprovable=True,
    )
