"""What an apply works with and returns: the target it writes (a protocol the Kafka adapter meets), the
options the CLI and the workflow give it, and the report it fills — shared by apply, rollback and the
workflow's commit steps."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from offset_restore.errors import BadInputError
from offset_restore.formats.plan import Outcome
from offset_restore.kafka.model import TP, CommittedOffset, GroupInfo, LogBounds, PartitionFetch, PartitionIdentity
from offset_restore.reading.rounds import Source
from offset_restore.snapshot.filters import NameFilter, compile_pattern

__all__ = [
    "WAIT_TIMEOUT_S",
    "ApplyOptions",
    "ApplyReport",
    "ApplyTarget",
    "OffsetChange",
    "Progress",
    "RewindScope",
    "rewind_filter",
    "rewind_options",
]


WriteCheck = Callable[[], float | None]
"""This run's right to write, asked before each write and each retry of it: raises when the run may no longer
write (its lock lost, its lease too short), else the seconds a write sent now may take (None: unbounded).
Made once by whoever holds the lock (the CLI's ``still_ours``, the workflow's lease) and passed down
unchanged, to the cluster's ``before_attempt`` too: every write of every path asks the same check."""


class ApplyTarget(Source, Protocol):
    def fetch(
        self,
        positions: Mapping[TP, int],
        *,
        partition_max_bytes: int | Mapping[TP, int] = ...,
        until: Mapping[TP, int] | None = None,
        max_wait_ms: int | None = None,
        keep: Mapping[TP, Container[int]] | None = None,
    ) -> Mapping[TP, PartitionFetch]:
        """``Source.fetch``, and ``keep``: only a partition's records at these offsets are returned (the anchors).
        Widened here, not on ``Source``: only apply asks for it, so the plan's readers and their doubles need not."""
        ...

    @property
    def cluster_id(self) -> str: ...
    def topic_partitions(self) -> dict[str, int]: ...
    def describe_groups(self, group_ids: Sequence[str]) -> dict[str, GroupInfo]: ...
    def committed_offsets(self, group_ids: Sequence[str]) -> dict[str, dict[TP, CommittedOffset]]: ...
    def alter_offsets_many(
        self,
        offsets_by_group: Mapping[str, Mapping[TP, CommittedOffset]],
        *,
        before_attempt: WriteCheck | None = None,
    ) -> dict[str, dict[TP, str | None]]: ...
    def delete_groups(self, held: Mapping[str, Collection[TP]]) -> dict[str, str | None]: ...
    def treat_as_share_groups(self, group_ids: Iterable[str]) -> None:
        """Read and write these groups' positions as share groups' start offsets (the plan says they are)."""
        ...

    def remove_static_members(
        self, group_id: str, instance_ids: Sequence[str], reason: str
    ) -> dict[str, str | None]: ...
    def log_bounds(self, partitions: Iterable[TP]) -> dict[TP, LogBounds]: ...
    def partition_identities(self, partitions: Iterable[TP]) -> dict[TP, PartitionIdentity]: ...


WAIT_TIMEOUT_S = 900
"""How long apply waits for active groups by default, the CLI and the workflow alike: long enough for
consumers to be stopped by hand in an incident, short enough that a forgotten one is named soon."""


RewindScope = bool | str
"""The workflow's ``allow_rewind``: every group (true), none (false), or the groups a regex matches
whole (as the CLI's ``--allow-rewind GROUP_REGEX``)."""


def rewind_filter(scope: RewindScope) -> Callable[[str], bool]:
    """Whether a scope lets a group be moved back; a bad regex is refused by name (``BadInputError``)."""
    if isinstance(scope, str):
        return NameFilter(compile_pattern(scope, "allow_rewind"))
    return lambda group: scope


def rewind_options(scope: RewindScope) -> dict[str, Any]:
    """``ApplyOptions``' rewind fields for a scope."""
    if isinstance(scope, str):
        return {"rewind_groups": NameFilter(compile_pattern(scope, "allow_rewind"))}
    return {"allow_rewind": scope}


@dataclass(frozen=True)
class ApplyOptions:
    wait_timeout_s: float = WAIT_TIMEOUT_S
    poll_interval_s: float = 5.0
    on_wait_timeout: Literal["fail", "commit_empty"] = "fail"
    allow_rewind: bool = False
    """Every group may be moved back (the workflow's ``allow_rewind``)."""
    rewind_groups: NameFilter | None = None
    """Only these may (``--allow-rewind GROUP_REGEX``): a decision the operator makes per group."""
    dry_run: bool = False
    remove_static_members: bool = False
    """``--remove-static-members``: a waited-for group's static members are removed (each once, recorded),
    instead of waiting until the session timeout they joined with ends after their consumers stop."""
    exact_only: bool = False
    """A migration's: a group with an entry not proven exact is not written (named), the others are."""
    groups: NameFilter | None = None
    """Only these groups of the plan (``--group``, ``--groups``); the others are neither waited for nor
    written, and their entries stay as they are for a later run."""

    def chosen(self, group: str) -> bool:
        return self.groups is None or self.groups(group)

    def not_chosen(self, groups: Iterable[str]) -> int:
        """How many of the plan's ``groups`` the choice leaves out. A choice that names none of them is a
        typo, not a run that writes nothing: refused."""
        if self.groups is None:
            return 0
        every = set(groups)
        left = [g for g in every if not self.groups(g)]
        if len(left) == len(every):
            raise BadInputError("--group/--groups names no group of the plan: nothing written")
        return len(left)

    def rewinds(self, group: str) -> bool:
        """Whether ``group`` may be moved back past where it is on the target."""
        return self.allow_rewind or (self.rewind_groups is not None and self.rewind_groups(group))

    def __post_init__(self) -> None:
        # A nan wait would poll without pause; an infinite one never ends. Refused from any caller.
        for name, value, low in (
            ("wait_timeout_s", self.wait_timeout_s, 0.0),
            ("poll_interval_s", self.poll_interval_s, 0.0),
        ):
            if not math.isfinite(value) or value < low:
                raise BadInputError(f"{name} must be a finite number of seconds >= {low:g}, not {value}")


@dataclass(frozen=True, slots=True)
class OffsetChange:
    """One offset a preview would change or a run changed, in the columns of kafka-consumer-groups'
    table (GROUP, TOPIC, PARTITION, CURRENT-OFFSET, NEW-OFFSET) and ours (METHOD, EXACT): what an
    operator pastes into a ticket. ``current``/``new`` None: the group has no offset there."""

    group: str
    topic: str
    partition: int
    current: int | None
    new: int | None
    method: str
    exact: str


@dataclass
class ApplyReport:
    groups_planned: int = 0
    groups_committed: list[str] = field(default_factory=list)
    groups_unchanged: list[str] = field(default_factory=list)
    groups_skipped: dict[str, str] = field(default_factory=dict)
    groups_failed: dict[str, str] = field(default_factory=dict)
    offsets_committed: int = 0
    rewinds_skipped: int = 0
    ahead: dict[str, int] = field(default_factory=dict)
    """Groups not rewound, with the offsets they skip on the target past the mapped position."""
    verified: int = 0
    verify_failed: list[str] = field(default_factory=list)
    dry_run_lines: list[str] = field(default_factory=list)
    """A preview's changes, one line each (``_describe``): the JSON document's ``changes``."""
    changes: list[OffsetChange] = field(default_factory=list)
    """The same changes as rows of the printed table (a run's: what it wrote)."""
    groups_to_delete: list[str] = field(default_factory=list)
    """A rollback's preview: the groups it would delete whole (apply created every offset they hold)."""
    groups_not_chosen: int = 0
    """Groups of the plan left out by ``ApplyOptions.groups``: neither waited for nor written."""
    would_write: int = 0
    would_write_groups: int = 0
    in_place: int = 0
    """In a preview: offsets already at their mapped value on the target."""
    left_alone: list[str] = field(default_factory=list)
    """Rollback: partitions whose offset apply never wrote, with what the target holds there instead
    (not apply's to undo, ``--allow-rewind`` or not)."""
    waited_s: float = 0.0
    waited_for: list[str] = field(default_factory=list)
    """Each group that had members while the run waited, with them (``waiting.who``)."""
    static_removed: list[str] = field(default_factory=list)
    """``--remove-static-members``: each static member removed, as ``group: group.instance.id`` (and the
    broker's error, if it refused)."""
    timings: dict[str, float] = field(default_factory=dict)
    polls: int = 0
    journal_corrections: list[str] = field(default_factory=list)
    """Rollback: the previous offsets where the plan disagreed with the journal, which was followed."""

    skip_outcomes: dict[str, Outcome] = field(default_factory=dict)
    """Per skipped group, what kept it from being written (``Outcome``): what its entries record."""

    def skip(self, group: str, outcome: Outcome, why: str) -> None:
        """A group this run does not write, with what held it (for the report) and why (for people)."""
        self.groups_skipped[group] = why
        self.skip_outcomes[group] = outcome

    @property
    def done_in_part(self) -> bool:
        return bool(self.groups_skipped or self.rewinds_skipped)


Progress = Callable[[str, int, int], None]
