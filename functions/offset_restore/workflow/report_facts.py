"""What a run's report says at a glance, computed from its rows (pure): the cards, the groups safe to
start and those that must wait, and the sizes of the charts.

The numbers are over every partition of the run, never over a subset that flatters it: a group is
restored only when every one of its partitions is where the run put it (committed by an apply,
mapped by a plan) — one unmapped partition and its consumers would start there from their reset
policy; "exact" is out of all partitions; records lost before the backup are counted from what
the target holds at the resume point.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["CARDS", "NOT_WRITTEN_OUTCOMES", "Facts", "Row", "facts_of", "outcome_of"]


class Row(Protocol):
    """The fields of a mapping the facts need (``report_model.PartitionRow``), read only."""

    @property
    def group(self) -> str: ...
    @property
    def exact(self) -> bool: ...
    @property
    def max_duplicates(self) -> int | None: ...
    @property
    def status(self) -> str: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def verified(self) -> bool | None: ...
    @property
    def method(self) -> str | None: ...
    @property
    def held(self) -> str | None: ...
    @property
    def lost(self) -> int: ...
    @property
    def outcome(self) -> str | None: ...
    @property
    def declared_end(self) -> bool: ...
    @property
    def in_doubt(self) -> bool: ...


# Each card: its key, its title, and whether a non-zero count needs someone's attention.
CARDS = (
    ("exact", "exact", False),
    ("bounded", "resume early, duplicates bounded", False),
    ("unbounded", "resume early, duplicates not bounded", True),
    ("end_unsure", "at the end; records a restore still writes would be skipped", True),
    ("lost", "records the groups will not read (lost before the backup, or never restored)", True),
    ("ahead", "ahead on the target (not rewound)", True),
    ("active", "active on the target (not written)", True),
    ("unanswered", "commit unanswered (all or nothing of the group written)", True),
    ("not_written", "not written (other reasons)", True),
    ("rolled_back", "rolled back to the previous offsets", True),
    ("pending", "pending (restore not there yet)", True),
    ("unmapped", "unmapped", True),
    ("reshaped", "topic re-partitioned by the restore, not mapped (group held)", True),
    ("application", "a Kafka Streams application's repartition topic not on the target (group held)", True),
    ("failed", "refused by the broker", True),
    ("unverified", "did not verify", True),
)


NOT_WRITTEN_OUTCOMES = frozenset({"active", "moved_on", "target_changed", "not_written"})
"""Apply's outcomes of a group it left unwritten (``PlanEntry.outcome``; ``unanswered`` is its own card)."""


def outcome_of(row: Row, done: str) -> str:
    """The one outcome a partition is counted under (the charts' and the cards' categories): from
    its status and the outcome apply or rollback recorded, never from the words of its reason."""
    if row.outcome in ("rolled_back", "rollback_started"):
        return "rolled_back"
    if row.status == "skipped":
        return "ahead" if row.outcome == "ahead" else "not_written"
    if row.status == "mapped" and done == "committed":  # a commit sent and never recorded may be written
        return "unanswered" if row.in_doubt else _unwritten(row.outcome)
    if row.status == "unmapped" and row.held:
        return row.held
    if row.status in ("pending", "unmapped", "failed"):
        return row.status
    if row.verified is False:
        return "unverified"
    if row.exact:
        return "exact"
    if row.method == "end" and not row.declared_end:  # at the end without proof: what a restore still writes is
        return "end_unsure"  # skipped (a restore declared complete writes nothing more: its end is a bound)
    return "bounded" if row.max_duplicates is not None else "unbounded"


def _unwritten(outcome: str | None) -> str:
    """A mapped partition an apply run left: no answer, live consumers, or another reason."""
    if outcome == "unanswered":
        return "unanswered"
    return "active" if outcome == "active" else "not_written"


@dataclass
class Facts:
    partitions: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    """Partitions per outcome (``outcome_of``)."""
    lost_records: int = 0
    """Source records between a group's position and the first record the target holds after it."""
    lost_partitions: int = 0
    duplicates: int = 0
    """Records at most read twice, over the partitions that resume early with a bound."""
    verified: int = 0
    groups: int = 0
    safe: list[str] = field(default_factory=list)
    """Groups whose every partition is where the run put it (and verified where it could be)."""
    wait: dict[str, str] = field(default_factory=dict)
    """Groups that must not start yet, with the first outcome that holds them."""

    def card(self, key: str) -> int:
        return self.lost_records if key == "lost" else self.outcomes[key]


_HOLDS = (
    "failed",
    "unverified",
    "unanswered",
    "rolled_back",
    "pending",
    "reshaped",
    "application",
    "unmapped",
    "end_unsure",
    "active",
    "not_written",
    "ahead",
)
"""What keeps a group from starting, the most serious first."""


def facts_of(by_group: Mapping[str, Iterable[Row]], done: str) -> Facts:
    """``done``: the status a partition has when the run did its part (``committed`` for an apply,
    ``mapped`` for a plan)."""
    facts = Facts()
    for group, rows in sorted(by_group.items()):
        facts.groups += 1
        outcomes = set()
        for row in rows:
            outcome = outcome_of(row, done)
            outcomes.add(outcome)
            facts.partitions += 1
            facts.outcomes[outcome] += 1
            facts.verified += row.verified is True
            facts.duplicates += (row.max_duplicates or 0) if outcome == "bounded" else 0
            if row.lost > 0:
                facts.lost_records += row.lost
                facts.lost_partitions += 1
        held = next((hold for hold in _HOLDS if hold in outcomes), None)
        if held is None:
            facts.safe.append(group)
        else:
            facts.wait[group] = held
    return facts
