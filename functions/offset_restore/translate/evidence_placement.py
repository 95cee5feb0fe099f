"""Evidence before assumptions: where the snapshot's fingerprints place records their headers do not.

A partition read whole is answered from the source offsets its records carry (``resume_points``).
Two kinds of record mislead that answer, and the snapshot's evidence (the fingerprints of each
group's committed record and the records before it) shows both:

- **Records without the header before the first restored one** (or after the last). A restore
  whose first batch or first worker did not add the header writes them; so does a topic that held
  data before. Counted as "not part of the restore", a group committed among them resumes at the
  first record with the header and never reads the ones between. A record whose fingerprint is the
  snapshot's record ``s`` is restored record ``s``. Those between two placed records (the evidence
  names only a few) lie, if the restore kept its order there, between their neighbours' source
  offsets; with ``assume_order`` off (``--order-check full``), or where the placed records are not
  in order, they may carry anything and count as records without the header inside the restore
  (the resume point is never after the first of them). Records without the header between restored
  ones are left as they were (they may carry anything): a fingerprint alone does not tell a record
  from another with the same key, value and headers that the snapshot did not read.
- **A header that contradicts the content.** A record whose header says ``x`` while its
  fingerprint is the snapshot's record ``s`` may carry either: the span ``[min, max]`` makes the
  resume point no later than the earlier candidate and counts it as a possible duplicate. When the
  snapshot also read source record ``x`` and it is another record, the header is wrong: ``s``.

Only records the caller fingerprinted are looked at (``Sightings``): the records before the first
header, and the records that break the headers' order (and the record whose header they fall
below). A restore in order has none, and costs nothing here. Pure logic.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from offset_restore.translate.resume_points import NO_KEY, PartitionLog

__all__ = ["Placement", "place_by_evidence"]


@dataclass(frozen=True, slots=True)
class Placement:
    """What the evidence changed: per record index, why (for the entries' reasons)."""

    notes: dict[int, str]
    contradicted: frozenset[int]
    """Indexes of records whose header the evidence contradicts."""


def place_by_evidence(
    log: PartitionLog,
    sightings: Mapping[int, tuple[int, ...]],
    *,
    assume_order: bool,
    disproven: Collection[int] = (),
) -> Placement:
    """Set ``log.spans`` from ``sightings`` (target offset -> the source offsets whose evidence has
    that record's fingerprint, ascending). ``disproven``: offsets of sighted records whose header
    names a source record the snapshot read with other content — the header is wrong, the content
    decides."""
    notes: dict[int, str] = {}
    contradicted: set[int] = set()
    if not sightings:
        return Placement(notes, frozenset())  # a restore in order: nothing was looked at
    keyed = [i for i in range(len(log)) if log.keys[i] != NO_KEY]
    if not keyed:
        return Placement(notes, frozenset())
    first, last = keyed[0], keyed[-1]
    outside: dict[int, tuple[int, int]] = {}
    for i, offset in enumerate(log.offsets):
        sources = sightings.get(offset)
        if sources is None:
            continue
        key = log.keys[i]
        if key == NO_KEY and not first < i < last:
            outside[i] = (sources[0], sources[-1])
            notes[i] = (
                f"target offset {offset} has no offset header; its content is the snapshot's record {_named(sources)}"
            )
        elif key != NO_KEY and key not in sources:
            wrong = offset in disproven
            log.spans[i] = (sources[0], sources[-1]) if wrong else (min(sources[0], key), max(sources[-1], key))
            contradicted.add(i)
            notes[i] = (
                f"target offset {offset} carries source offset {key} in its header, but its content is the "
                f"snapshot's record {_named(sources)}"
                + (f" (the snapshot's record {key} is another record: the header is wrong)" if wrong else "")
            )
    log.spans.update(outside)
    if assume_order and outside:
        before = [i for i in outside if i < first]
        after = [i for i in outside if i > last]
        if before:
            _between_neighbours(log, [*sorted(before), first])
        if after:
            _between_neighbours(log, [last, *sorted(after)])
    return Placement(notes, frozenset(contradicted))


def _named(sources: tuple[int, ...]) -> str:
    return str(sources[0]) if len(sources) == 1 else " or ".join(map(str, sources))


def _between_neighbours(log: PartitionLog, anchors: list[int]) -> None:
    """The unplaced records between placed ones (``anchors``, ascending indexes), outside the headers'
    range: if the anchors are in order, each record between two lies strictly between their source
    offsets (the restore's order, assumed as the windows check assumes it where it did not read).
    Where there is no room, or the anchors are not in order, nothing is assumed: they stay unplaced
    (a record without the header among restored ones, which may carry anything)."""
    low, high = log.carried()
    bounds = [(low[i], high[i]) for i in anchors]
    assumed: dict[int, tuple[int, int]] = {}
    for j in range(len(anchors) - 1):
        gap = range(anchors[j] + 1, anchors[j + 1])
        lo, hi = bounds[j][1] + 1, bounds[j + 1][0] - 1
        if len(gap) > hi - lo + 1:
            return  # not in order, or more records than source offsets between them: extra copies
        assumed.update(dict.fromkeys(gap, (lo, hi)))
    log.spans.update(assumed)
