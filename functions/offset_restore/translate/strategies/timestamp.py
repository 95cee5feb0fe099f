"""The timestamp strategy: the first target record as recent as the committed record, less the
clock skew seen and a margin. Never exact; the duplicates it counts are a bound only while no
producer's clock was further off."""

from __future__ import annotations

from offset_restore.kafka.model import TP
from offset_restore.reading.rounds import AtEnd, Failed, Served
from offset_restore.translate.context import Context
from offset_restore.translate.positions import Decision, Position, PositionKey
from offset_restore.translate.search import SearchResult
from offset_restore.translate.strategies.time_search import search_time

__all__ = ["by_timestamp"]

MAX_COUNT_ROUNDS = 50


def _wanted_timestamp(pos: Position) -> int | None:
    if pos.next is not None:
        return pos.next.timestamp
    last = pos.last_before
    return last.timestamp if last is not None else None


def by_timestamp(undecided: dict[PositionKey, Position], ctx: Context) -> dict[PositionKey, Decision | str]:
    """The first record at or after the committed record's time, less the clock skew seen on the
    target and a margin: never exact, and the bound on duplicates holds while no producer's clock was
    further off than that."""
    outcome: dict[PositionKey, Decision | str] = {}
    stamps: dict[PositionKey, tuple[TP, int]] = {}
    for key, pos in undecided.items():
        stamp = _wanted_timestamp(pos)
        if stamp is None:
            outcome[key] = "the snapshot has no timestamp for this position (no evidence)"
        else:
            stamps[key] = (pos.target, stamp)
    margin = ctx.options.timestamp_margin_ms
    results, skews = search_time(stamps, ctx, "timestamp", margin)
    found = {key: r.found.offset for key, r in results.items() if r.complete and r.found is not None}
    limits = {
        key: (stamps[key][0], offset, stamps[key][1] + skews.get(stamps[key][0], 0) + margin)
        for key, offset in found.items()
    }
    counts = _count_until(limits, ctx)
    for key, result in results.items():
        outcome[key] = _timestamp_decision(
            undecided[key], result, stamps[key][1], skews.get(stamps[key][0], 0), margin, counts.get(key), ctx
        )
    return outcome


def _timestamp_decision(
    pos: Position, result: SearchResult, stamp: int, skew: int, margin: int, count: int | None, ctx: Context
) -> Decision | str:
    allowance = skew + margin
    if not result.complete:
        return result.reason or "timestamp search did not finish"
    if result.found is None:
        end = ctx.timestamp_indexes[pos.target].bounds.end
        return Decision(
            "mapped",
            end,
            "end",
            False,
            0,
            f"no target record is as recent as the snapshot's ({stamp} ms, less {allowance} ms): resume at the "
            "end; records a restore still writes would be skipped",
        )
    duplicates = None if count is None else max(0, count - (1 if pos.next is not None else 0))
    seen = f"the skew seen on the target ({skew} ms) and " if skew else ""
    return Decision(
        "mapped",
        result.found.offset,
        "timestamp",
        False,
        duplicates,
        f"first record with timestamp >= {stamp - allowance} ms: the committed record's time {stamp} ms less "
        f"{seen}a margin of {margin} ms; "
        + (f"at most {duplicates} records read twice" if duplicates is not None else "duplicates not counted")
        + f" if no producer's clock was more than {allowance} ms off (more could skip records)",
        anchor=(result.found.offset, None, result.found.key),
    )


def _count_until(starts: dict[PositionKey, tuple[TP, int, int]], ctx: Context) -> dict[PositionKey, int | None]:
    """How many records from each start offset on come before the first with a timestamp past the
    limit: from what the searches read, reading on only where that is not enough. None: not counted
    (the partition stopped answering, or the run is longer than the rounds allowed)."""
    counts: dict[PositionKey, int | None] = {}
    open_keys = dict(starts)
    rounds = ctx.rounds()
    while open_keys:
        positions: dict[TP, int] = {}
        for key, (tp, offset, limit) in list(open_keys.items()):
            count, unread = ctx.timestamp_indexes[tp].count_at_most(offset, limit)
            counts[key] = count
            if unread is None:
                del open_keys[key]
            elif rounds.rounds >= MAX_COUNT_ROUNDS:
                counts[key] = None
                del open_keys[key]
            else:
                positions.setdefault(tp, unread)
        for tp, outcome in rounds.round(positions).items():
            if isinstance(outcome, Failed):
                for key in [k for k, v in open_keys.items() if v[0] == tp]:
                    counts[key] = None
                    del open_keys[key]
            elif isinstance(outcome, Served):
                ctx.index_times(tp, outcome.answer)
            elif isinstance(outcome, AtEnd):
                ctx.timestamp_indexes[tp].add_window(positions[tp], positions[tp] + 1, [])
    ctx.record("timestamp", rounds.rounds, rounds.fetches, rounds.records, {})
    return counts
