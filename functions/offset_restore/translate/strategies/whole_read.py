"""The header strategy's whole read: a partition whose windows or evidence contradict a restore in
order, or where reading it all costs less than searching, is read once from its log start and
answered from the running maximum of its headers (``resume_points``), whatever its order."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

from offset_restore.formats.plan import Method
from offset_restore.kafka.model import RECORD_OFFSET, RECORD_TIMESTAMP, TP, PartitionFetch, Record
from offset_restore.packing import packed
from offset_restore.reading.held import HeldChain
from offset_restore.reading.rounds import AtEnd, FetchRounds, Served, read_forward
from offset_restore.translate.context import Context
from offset_restore.translate.evidence_placement import Placement, place_by_evidence
from offset_restore.translate.header_reads import MAX_HELD_RECORDS, HeaderReads
from offset_restore.translate.positions import Decision, Position, PositionKey
from offset_restore.translate.restore_order import disorder_in
from offset_restore.translate.resume_points import NO_KEY, PartitionLog, Resume, resume_points
from offset_restore.translate.search import PartitionIndex, widened
from offset_restore.translate.strategies.outcomes import beyond, expected_print

__all__ = [
    "WHOLE_READ_BYTES",
    "Begun",
    "cheaper_whole",
    "distinct_offsets",
    "probe_starts",
    "read_whole_and_decide",
]

WHOLE_READ_BYTES = 1024 * 1024
"""Bytes per partition per fetch when a partition is read whole."""

MIN_RECORD_BYTES = 16
"""No record takes fewer bytes on the wire (its length, attributes, deltas and empty key and value):
a partition whose every record at this size outweighs a window per position is not worth probing."""
MAX_WHOLE_READ_BYTES = 256 * 1024 * 1024
"""The largest partition read whole to save searches: the probe measures one batch, and a log whose
older records are larger than that batch would cost more than estimated."""


Begun = tuple[PartitionLog, int]
"""A partition's whole read already begun: its first records, and the offset to read on from."""


def cheaper_whole(
    undecided: Mapping[PositionKey, Position], ctx: Context, reads: HeaderReads
) -> tuple[dict[TP, str], dict[TP, Begun], dict[TP, PartitionFetch]]:
    """Partitions where reading every record once costs fewer bytes than a window per position: the
    dense ones (hundreds of groups on a partition), with the whole read begun. One point read from
    the log start per candidate measures its bytes per offset and is the whole read's first window;
    the whole read then also answers order-independently (``read_whole_and_decide``). Returns, too,
    the probes of the partitions to be searched: the search's first windows."""
    distinct = distinct_offsets(undecided.values())
    probes = probe_starts(distinct, ctx)
    rounds = ctx.rounds()
    rounds.fit = False  # a 16 KB probe over small batches measures several, and a whole read begins with them
    answers = _probed(rounds, probes)
    ctx.learned.uncut.update(rounds.uncut)
    ctx.record("header (probes)", rounds.rounds, rounds.fetches, rounds.records, {})
    cheaper: dict[TP, str] = {}
    begun: dict[TP, Begun] = {}
    searched_from: dict[TP, PartitionFetch] = {}
    for tp, answer in answers.items():
        b = ctx.bounds[tp]
        whole = (b.end - b.start) * _bytes_per_offset(answer, probes[tp])
        searched = len(distinct[tp]) * ctx.learned.point_bytes(tp)  # a batch a position: 1 MB batches cost 1 MB each
        if whole <= min(searched, MAX_WHOLE_READ_BYTES):
            cheaper[tp] = (
                f"read whole: about {whole / 1e6:,.1f} MB, less than a window for each of its "
                f"{len(distinct[tp]):,} positions ({searched / 1e6:,.1f} MB)"
            )
            begun[tp] = (PartitionLog(), answer.read_to)
            _extend(begun[tp][0], answer, reads.whole(tp, answer))
        else:
            searched_from[tp] = answer
    return cheaper, begun, searched_from


def distinct_offsets(positions: Iterable[Position]) -> dict[TP, set[int]]:
    """The committed offsets the positions ask of each target partition."""
    distinct: dict[TP, set[int]] = defaultdict(set)
    for pos in positions:
        distinct[pos.target].add(pos.committed)
    return distinct


def probe_starts(distinct: Mapping[TP, set[int]], ctx: Context) -> dict[TP, int]:
    """The partitions worth a probe from their log start (``cheaper_whole``): so many positions that
    a window each may outweigh the whole log, even at the fewest bytes a record can take."""
    probes: dict[TP, int] = {}
    for tp, offsets in distinct.items():
        b = ctx.bounds.get(tp)  # None: the partition is not on the target
        if b and b.end > b.start and len(offsets) * ctx.learned.point_bytes(tp) >= (b.end - b.start) * MIN_RECORD_BYTES:
            probes[tp] = b.start  # a batch boundary: the answer's bytes are those of the offsets it covers
    return probes


def _probed(rounds: FetchRounds, probes: Mapping[TP, int]) -> dict[TP, PartitionFetch]:
    """Each probe's answer, a probe the broker left unserved asked again (the local broker, busy,
    left 24 of 200 empty: each of those partitions was then searched, 48 windows of 16 KB, instead
    of read whole). One that fails is left out: the search will meet the same answer and say so."""
    served: dict[TP, PartitionFetch] = {}

    def take(tp: TP, outcome: Served | AtEnd) -> None:
        if isinstance(outcome, Served):
            served[tp] = outcome.answer

    read_forward(rounds, probes, take)
    return served


def _bytes_per_offset(answer: PartitionFetch, start: int) -> float:
    """What an offset costs on the wire, from a probe's answer: its bytes over the offsets it covers, or
    its records' own sizes where that is less — an answer is a whole batch and the start of the next,
    cut at the limit, so a first batch of one record would price every offset at the whole limit (a
    dense partition then searched, one window per position, at many times the cost of reading it)."""
    by_answer = answer.size / max(1, answer.read_to - start)
    if not answer.records:
        return by_answer
    sizes = sum(_record_bytes(r) for r in answer.records) / len(answer.records)
    return min(by_answer, sizes)


def _record_bytes(record: Record) -> int:
    """A record's bytes as a batch holds it uncompressed (a compressed batch holds fewer)."""
    headers = sum(len(name) + len(value or b"") for name, value in record.headers)
    return MIN_RECORD_BYTES + len(record.key or b"") + len(record.value or b"") + headers


WHOLE_READ_SHARE_RECORDS = 4_000_000
WHOLE_READ_SHARE_PARTITIONS = 64
"""Partitions read whole are read and decided in shares of at most 64 partitions and about 4 million
records: memory holds one share's logs (24 bytes a record) and one round's answers (1 MiB a
partition), where a round over every dense partition could bring a whole topic at once."""


def read_whole_and_decide(
    undecided: dict[PositionKey, Position],
    suspect: dict[TP, str],
    reads: HeaderReads,
    ctx: Context,
    begun: dict[TP, Begun],
) -> dict[PositionKey, Decision | str]:
    """Read every suspect partition once, in shared fetch rounds, and answer its positions from the
    running maximum of the headers (``resume_points``); a share of partitions at a time."""
    outcome: dict[PositionKey, Decision | str] = {}
    by_tp: dict[TP, list[PositionKey]] = defaultdict(list)
    for key, pos in undecided.items():
        if pos.target in suspect:
            by_tp[pos.target].append(key)
    least = WHOLE_READ_SHARE_RECORDS // WHOLE_READ_SHARE_PARTITIONS
    weight = {tp: max(least, ctx.bounds[tp].end - ctx.bounds[tp].start) for tp in suspect}
    for share in packed(sorted(suspect), weight.__getitem__, WHOLE_READ_SHARE_RECORDS):
        for tp, log in _read_partitions(share, ctx, reads, begun).items():
            keys = by_tp.get(tp, [])
            if isinstance(log, str):
                outcome.update(dict.fromkeys(keys, log))
            else:
                outcome.update(_decide_read_whole(tp, log, keys, undecided, suspect[tp], reads, ctx))
        reads.forget(share)
    return outcome


def _decide_read_whole(
    tp: TP,
    log: PartitionLog,
    keys: list[PositionKey],
    undecided: dict[PositionKey, Position],
    why: str,
    reads: HeaderReads,
    ctx: Context,
) -> dict[PositionKey, Decision | str]:
    bounds = ctx.bounds[tp]
    disorder = disorder_in(log, [(bounds.start, bounds.end)])
    if disorder:
        ctx.stats.out_of_order[tp] = disorder
        note = f" [{tp} is out of order: {disorder}; answered from all {len(log):,} of its records]"
    else:
        note = f" [checked by reading all {len(log):,} records of {tp}, which are in order: {why}]"
    placement = place_by_evidence(
        log,
        reads.sightings.get(tp, {}),
        assume_order=ctx.options.order_check == "windows",
        disproven=reads.disproven.get(tp, set()),
    )
    answers = resume_points(log, {k[2] for k in keys})  # a key is (topic, partition, committed)
    restored, header = log.restored_range(), ctx.options.offset_header
    decisions = {
        key: _ordered_decision(
            undecided[key],
            answers,
            log,
            restored,
            note,
            reads,
            header,
            placement,
            in_order=not disorder,
            completes=ctx.completes,
        )
        for key in keys
    }
    if tp in reads.unchecked and restored is not None:
        decisions.update(_from_the_start(log, restored[2], {k: undecided[k] for k in keys}, note))
    return decisions


def _from_the_start(
    log: PartitionLog, lowest: int, positions: Mapping[PositionKey, Position], note: str
) -> dict[PositionKey, Decision | str]:
    """More records without the header before the first restored one than a whole read holds to
    compare with the evidence: a group whose next record the restore does not carry may have it
    among them, and resumes at the log's start (nothing skipped, duplicates not bounded)."""
    out: dict[PositionKey, Decision | str] = {}
    for key, pos in positions.items():
        if pos.next is not None and pos.next.offset < lowest and len(log):
            out[key] = Decision(
                "mapped",
                log.offsets[0],
                "earliest",
                False,
                None,
                f"more than {MAX_HELD_RECORDS:,} records without the offset header lie before the first restored one "
                f"and were not compared with the snapshot's evidence; its record {pos.next.offset} may be among them: "
                f"resume at the log's start, duplicates not bounded{note}",
                anchor=(log.offsets[0], None if log.keys[0] == NO_KEY else log.keys[0], log.timestamps[0]),
            )
    return out


def _read_partitions(
    tps: Sequence[TP], ctx: Context, reads: HeaderReads, begun: dict[TP, Begun]
) -> dict[TP, PartitionLog | str]:
    """Every record of each partition from its log start to its end when the plan began (on from
    where ``begun`` left off, taking it). What the plan holds already (``HeldChain``: the sample's last
    records, the search's windows) is taken from there, and a read stops short
    of it where the broker sends whole batches (``FetchRounds``' ``stops``)."""
    first = {tp: begun.pop(tp, (PartitionLog(), ctx.bounds[tp].start)) for tp in tps}
    logs: dict[TP, PartitionLog | str] = {tp: log for tp, (log, _) in first.items()}
    rounds = ctx.rounds(WHOLE_READ_BYTES)
    chains: dict[TP, HeldChain] = {}
    for tp, (_, start) in first.items():
        held = [*reads.kept_windows(tp), *_tail(tp, ctx)]
        for answer in held:
            rounds.measured(tp, answer)  # what the offsets before the first held answer cost, from the first round
        chains[tp] = HeldChain(start, held)
    stops: dict[TP, int] = {}
    taken = [0]  # records taken from held answers

    def replay(tp: TP, position: int) -> int | None:
        """Take the held answers on from ``position``; where to read on (None: at the end)."""
        log = logs[tp]
        assert isinstance(log, PartitionLog)
        segments, position = chains[tp].take(position)
        for segment in segments:
            _extend(log, segment, reads.whole(tp, segment))
            taken[0] += len(segment.records)
        stop = chains[tp].stop
        if stop is None:
            stops.pop(tp, None)
        else:
            stops[tp] = stop
        return position if position < ctx.bounds[tp].end else None

    def take(tp: TP, outcome: Served | AtEnd) -> int | None:
        if isinstance(outcome, AtEnd):
            return None
        log, answer = logs[tp], outcome.answer
        assert isinstance(log, PartitionLog)
        _extend(log, answer, reads.whole(tp, answer))  # all of it: one that ran past held records holds them too
        return answer.read_to if answer.read_to < stops.get(tp, ctx.bounds[tp].end) else replay(tp, answer.read_to)

    starts = {tp: position for tp, (_, start) in first.items() if (position := replay(tp, start)) is not None}
    for tp, failure in read_forward(rounds, starts, take, stops=stops).items():
        logs[tp] = f"reading {tp} whole failed: {failure.reason}"
    ctx.record("header (whole partitions)", rounds.rounds, rounds.fetches, rounds.records, {})
    ctx.record("header (whole partitions, held)", 0, 0, taken[0], {})
    return logs


def _extend(log: PartitionLog, answer: PartitionFetch, keys: list[int | None]) -> None:
    """Append an answer's records to a partition's log, with their source offsets (``HeaderReads.whole``)."""
    log.extend(list(map(RECORD_OFFSET, answer.records)), keys, list(map(RECORD_TIMESTAMP, answer.records)))


def _tail(tp: TP, ctx: Context) -> list[PartitionFetch]:
    """The sample's answers of ``tp`` (taken from what the plan holds), the first from where its first batch
    starts (the broker sent that batch whole): what a whole read need not read again."""
    tail = ctx.held.take("sample", tp)
    if tail:
        tail[0] = widened(tail[0], tail[0].fetch_offset, PartitionIndex(ctx.bounds[tp]))
    return tail


def _ordered_decision(
    pos: Position,
    answers: Mapping[int, Resume],
    log: PartitionLog,
    restored: tuple[int, int, int, int] | None,
    note: str,
    reads: HeaderReads,
    header: str,
    placement: Placement,
    *,
    in_order: bool,
    completes: Callable[[Position, int], bool],
) -> Decision | str:
    """A decision from the resume point of a partition read whole (docs/translation.md);
    ``restored``: the log's ``restored_range()``; ``placement``: what the snapshot's evidence placed
    where the headers did not (``evidence_placement``); ``in_order``: its headers only grow."""
    c = pos.committed
    answer = answers.get(c)
    if answer is None or restored is None:
        return f"no record of {pos.target} carries header {header}"
    _, last, lowest, highest = restored
    if answer.beyond and not answer.pulled_back:
        decision = beyond(pos, highest, answer.offset, answer.duplicates, note, complete=completes(pos, highest))
        return decision._replace(anchor=(log.offsets[last], log.keys[last], log.timestamps[last]))
    header_key = log.keys[answer.at]
    # The anchor names the source offset the record carries only where that says what is missing before
    # it: the report counts the records between as lost before the backup. Not for a header the content
    # contradicts, nor past the committed offset in a partition out of order (those records may lie
    # after the resume point).
    doubtful = answer.at in placement.contradicted or (not in_order and header_key > pos.committed)
    named = None if header_key == NO_KEY or doubtful else header_key
    anchor = (answer.offset, named, log.timestamps[answer.at])
    if answer.pulled_back:
        return Decision(
            "mapped",
            answer.offset,
            "header",
            False,
            answer.duplicates,
            f"target offset {answer.offset} has no offset header inside the restored range and may carry "
            f"any source offset: resume there, {answer.duplicates} records may be read twice{note}",
            anchor=anchor,
        )
    key = answer.carried if answer.carried is not None else header_key
    parts = [placement.notes[answer.at]] if answer.at in placement.notes else []
    if key > c and answer.at not in log.spans:
        parts.append(f"source records {c}..{key - 1} are not in the restore before target offset {answer.offset}")
    if answer.duplicates:
        parts.append(f"{answer.duplicates} records at or after it carry an earlier source offset (read twice)")
    expected, differs = _content_check(pos, key, reads.print_at(pos.target, answer.offset))
    if differs:
        parts.append(f"its content differs from the snapshot's record {key}")
    exact = answer.exact and not differs and answer.at not in placement.contradicted
    if answer.at in placement.contradicted:
        parts.append("its header and its content disagree: not exact")
    method: Method = "fingerprint" if header_key == NO_KEY else "earliest" if lowest > c else "header"
    reason = "; ".join(parts) + note
    return Decision("mapped", answer.offset, method, exact, answer.duplicates, reason, expected, anchor)


def _content_check(pos: Position, key: int, seen: str | None) -> tuple[str | None, bool]:
    """The fingerprint apply must find at the resume point, and whether the record read there
    contradicts the snapshot's (it carries the next record's source offset, not its content). A
    record whose content is the snapshot's next record is that record, whatever its header says."""
    expected = expected_print(pos, key)
    if pos.next is not None and seen == pos.next.fingerprint:
        return seen, False
    if expected is not None and seen is not None and seen != expected:
        return None, True
    return expected, False
