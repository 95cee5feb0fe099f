"""The records a plan read next to each mapped offset, read again on the target (docs/design.md §6): just
before the commit (a group whose target changed is not written) and after it (the verification). Both
ask the same questions of the same records, in shared fetch rounds; the verification reuses what the
check before the commit read, and the answers it found, wherever the partition is still the same log
(``ReadRecords``), so a dense or compressed topic is not read, nor its records checked, twice in one apply."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from offset_restore.apply.model import ApplyTarget
from offset_restore.formats.plan import PlanEntry
from offset_restore.kafka.model import TP, PartitionIdentity, Record
from offset_restore.reading.rounds import FetchRounds, Served, Unserved
from offset_restore.snapshot.fingerprint import DEFAULT_OFFSET_HEADER, record_fingerprint
from offset_restore.snapshot.headers import parse_offset_header

__all__ = ["ReadRecords", "changed_since_plan", "checked", "checked_offsets", "records_at", "verify_problem"]


@dataclass
class ReadRecords:
    """Records read on the target, with which log each partition was before they were read: while a
    partition keeps its topic id and leader epoch (no re-creation, no leader change, so no truncation)
    and its log start is not past an offset, the record read there is still the record there."""

    records: dict[tuple[TP, int], Record] = field(default_factory=dict)
    asked: dict[TP, set[int]] = field(default_factory=dict)
    identities: dict[TP, PartitionIdentity] = field(default_factory=dict)
    held: set[tuple[TP, Checked]] = field(default_factory=set)
    """The checks these records passed (``verify_problem`` found nothing): the same check of the same records
    gives the same answer, so the verification does not ask it again of a partition still the same log."""

    def still_there(self, target: ApplyTarget, wanted: Mapping[TP, set[int]]) -> set[TP]:
        """The partitions of ``wanted`` whose every offset was read here and is still what was read
        (one Metadata and one ListOffsets request; nothing when none was read here)."""
        candidates = [tp for tp, offsets in wanted.items() if offsets and offsets <= self.asked.get(tp, set())]
        if not candidates:
            return set()
        now = target.partition_identities(candidates)
        bounds = target.log_bounds(candidates)
        return {
            tp
            for tp in candidates
            if tp in self.identities
            and now.get(tp) == self.identities[tp]
            and tp in bounds
            and bounds[tp].start <= min(wanted[tp])
        }

    def problems(
        self, target: ApplyTarget, checks: Mapping[TP, Sequence[PlanEntry]], header: str | None
    ) -> Iterator[tuple[PlanEntry, str | None]]:
        """Each entry of ``checks`` with ``verify_problem``'s answer: a check these records passed is not asked
        again where the partition is still the same log; elsewhere the records are read again."""
        wanted = {tp: {o for e in entries for o in checked_offsets(e)} for tp, entries in checks.items()}
        same = self.still_there(target, wanted)
        fresh = records_at(target, {tp: offsets for tp, offsets in wanted.items() if tp not in same})
        for tp, entries in checks.items():
            records = self.records if tp in same else fresh
            for entry in entries:
                if tp in same and (tp, checked(entry)) in self.held:
                    yield entry, None
                else:
                    yield entry, verify_problem(entry, records, tp, header)


def read_records(target: ApplyTarget, wanted: Mapping[TP, set[int]]) -> ReadRecords:
    """``records_at``, with each partition's identity taken first (a change after it shows later)."""
    identities = target.partition_identities([tp for tp, offsets in wanted.items() if offsets])
    return ReadRecords(records_at(target, wanted), {tp: set(o) for tp, o in wanted.items()}, identities)


Checked = tuple[int | None, str | None, int | None, int | None, int | None]
"""What ``verify_problem`` asks of an entry: its target offset, fingerprint and anchor (offset, timestamp,
source offset)."""


def checked(entry: PlanEntry) -> Checked:
    """Everything of ``entry`` that ``verify_problem``'s answer depends on, besides the records and the header."""
    return (
        entry.target_offset,
        entry.expected_fingerprint,
        entry.anchor_offset,
        entry.anchor_timestamp,
        entry.anchor_source_offset,
    )


def checked_offsets(entry: PlanEntry) -> set[int]:
    """The target offsets whose records the checks before and after a commit read: the mapped one
    (when the plan found the snapshot's record there) and the anchor."""
    at = entry.target_offset if entry.expected_fingerprint else None
    return {o for o in (at, entry.anchor_offset) if o is not None}


def verify_problem(
    entry: PlanEntry, records: Mapping[tuple[TP, int], Record], tp: TP, header: str | None
) -> str | None:
    """Why the target does not hold what the plan says at this entry's offset (None: it does)."""
    if entry.expected_fingerprint and entry.target_offset is not None:
        record = records.get((tp, entry.target_offset))
        if record is None:
            return "no record is there"
        # The restore's offset header is not part of the source record the fingerprint was taken of.
        printed = record_fingerprint(record, header or DEFAULT_OFFSET_HEADER)
        if printed != entry.expected_fingerprint:
            return f"another record is there (record {entry.target_offset} is not the snapshot's record the plan found)"
    if entry.anchor_offset is not None:
        return _anchor_problem(entry, records.get((tp, entry.anchor_offset)), header)
    return None


def records_at(target: ApplyTarget, wanted: Mapping[TP, set[int]]) -> dict[tuple[TP, int], Record]:
    """The record at each wanted offset that is on the target (absent: no record there), in shared
    fetch rounds: a window often holds several offsets asked for. A partition that cannot be read
    (an error, or unserved round after round) counts as holding none of them: the check that asked
    then fails, which never lets a commit through. Offsets close enough that point reads would cover
    them back to back (a dense partition's hundreds of anchors) are read as one run."""
    pending = {tp: set(offsets) for tp, offsets in wanted.items() if offsets}
    found: dict[tuple[TP, int], Record] = {}
    # Only the wanted records are built: a dense partition's run holds a dozen others for each.
    rounds = FetchRounds(
        lambda positions, until, limits, wait_ms: target.fetch(
            positions, until=until, partition_max_bytes=limits, max_wait_ms=wait_ms, keep=pending
        )
    )
    while any(pending.values()):
        positions = {tp: min(offsets) for tp, offsets in pending.items() if offsets}
        reach = {
            tp: end
            for tp in positions
            if (end := rounds.run_end(tp, ((offset, offset + 1) for offset in sorted(pending[tp])))) is not None
        }
        for tp, outcome in rounds.round(positions, reach=reach).items():
            offsets = pending[tp]
            if isinstance(outcome, Served):
                for r in outcome.answer.records:
                    if r.offset in offsets:
                        found[(tp, r.offset)] = r
                # Every offset the answer read past is settled, found or not (compacted away).
                pending[tp] = {offset for offset in offsets if offset >= outcome.answer.read_to}
            elif not isinstance(outcome, Unserved):
                pending[tp] = set()  # past the log's end, or unreadable: not there
    return found


def changed_since_plan(
    entries: Sequence[PlanEntry], target: ApplyTarget, header: str | None
) -> tuple[dict[str, str], ReadRecords]:
    """Groups whose target no longer holds, next to a mapped offset, the record the plan read there
    (a restore run again, a topic refilled), or whose mapped offset no longer holds the snapshot's
    record the plan found there: group -> which partition and why. Checked just before the commit
    (the same checks as the verification after it); such a group is not written. Also what it read,
    for the verification to reuse."""
    checks = [(e, e.target) for e in entries if e.anchor_offset is not None or e.expected_fingerprint]
    wanted: dict[TP, set[int]] = defaultdict(set)
    for e, tp in checks:
        wanted[tp].update(checked_offsets(e))
    read = read_records(target, wanted)
    records = read.records
    changed: dict[str, str] = {}
    for e, tp in checks:
        problem = verify_problem(e, records, tp, header)
        if problem is None:
            read.held.add((tp, checked(e)))
        elif e.group not in changed:
            changed[e.group] = (
                f"the target changed since the plan: {tp} {problem}; nothing written to the group, plan again"
            )
    return changed, read


def _anchor_problem(entry: PlanEntry, record: Record | None, header: str | None) -> str | None:
    if record is None:
        return f"has no record at {entry.anchor_offset} any more"
    if entry.anchor_timestamp is not None and record.timestamp != entry.anchor_timestamp:
        return f"record {entry.anchor_offset} has timestamp {record.timestamp}, the plan read {entry.anchor_timestamp}"
    if entry.anchor_source_offset is not None and header:
        carried = next((v for name, v in record.headers if name == header), None)
        try:
            source = parse_offset_header(carried)
        except ValueError:
            source = None
        if source != entry.anchor_source_offset:
            planned = entry.anchor_source_offset
            return f"record {entry.anchor_offset} carries source offset {source}, the plan read {planned}"
    return None
