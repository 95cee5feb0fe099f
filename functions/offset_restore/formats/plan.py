"""The plan document (docs/design.md §5.2): one entry per group-partition, with how it was mapped."""

from __future__ import annotations

import operator
import secrets
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from offset_restore.formats.lean import SHARED_FIELDS_SET, LeanModel
from offset_restore.kafka.model import TP

__all__ = [
    "Method",
    "Outcome",
    "Plan",
    "PlanEntry",
    "PlanSummary",
    "Status",
    "csv_unsafe",
    "holds_group",
    "legacy_outcome",
    "new_restore_id",
    "share_groups",
    "written_by_apply",
]

Method = Literal["header", "origin", "fingerprint", "checkpoint", "mm2", "timestamp", "earliest", "end"]
Status = Literal["mapped", "pending", "unmapped", "committed", "skipped", "failed"]
Outcome = Literal[
    "unanswered",
    "ahead",
    "active",
    "moved_on",
    "target_changed",
    "not_written",
    "refused",
    "rollback_started",
    "rolled_back",
]
"""What the last apply or rollback did with an entry when it did not simply write it (docs/design.md §5.2):
``unanswered`` the commit got no answer (all or nothing of the group written); ``ahead`` the group is past
the mapped offset on the target, not rewound; ``active`` the group had members; ``moved_on`` its offsets
changed while apply ran; ``target_changed`` the records next to the mapped offset are no longer the
plan's; ``not_written`` another reason (the entry's ``reason`` says it); ``refused`` the broker refused
this partition; ``rollback_started``/``rolled_back`` a rollback is writing / wrote the previous offset
back. The report counts from this field; the ``reason`` beside it is for people and may be reworded."""

_LEGACY_NO_ANSWER = "the commit got no answer (the cluster stopped answering): apply again"


def legacy_outcome(status: object, reason: object) -> Outcome | None:
    """The outcome of an entry written before the field existed (a plan file, a DynamoDB item), read
    from its reason as the report used to read it. Frozen: these are the words those versions wrote."""
    text = reason if isinstance(reason, str) else ""
    if status == "committed":  # written (again, after a rollback whose words stayed on the entry)
        return None
    if text.startswith("rolled back"):
        return "rolled_back"
    if text.startswith("rollback started"):
        return "rollback_started"
    if text == _LEGACY_NO_ANSWER:
        return "unanswered"
    if status == "skipped":
        return "ahead" if text.startswith("ahead:") else "not_written"
    if status == "failed" and text.startswith("commit refused"):
        return "refused"
    if not text.startswith("not written: "):
        return None
    if "still active" in text or "member joined" in text:
        return "active"
    if "moved on since" in text:
        return "moved_on"
    return "target_changed" if text.startswith("not written: the target changed since the plan") else "not_written"


def share_groups(entries: Iterable[PlanEntry]) -> set[str]:
    """The groups of these entries that are share groups (``PlanEntry.group_kind``)."""
    return {e.group for e in entries if e.group_kind == "share"}


def written_by_apply(status: str, rewinding: bool) -> bool:
    """Whether an apply writes an entry of ``status``: ``mapped`` always; ``skipped`` — a group ahead
    of its mapped position on the target, left for the operator's decision — only when the apply
    rewinds that group (``--allow-rewind GROUP``, the workflow's ``allow_rewind``). Any other apply
    leaves it alone: neither waits for its live consumers nor checks offsets it will not write."""
    return status == "mapped" or (rewinding and status == "skipped")


def holds_group(status: str, held: bool) -> bool:
    """Whether an entry keeps its whole group from being written: a ``pending`` one (its consumers
    must not start on half its partitions) and one of a topic whose shape changed in the restore that
    could not be mapped (``holds_group``: written anywhere, the group would read that topic from its
    reset policy). The CSV leaves such a group out, as apply and the workflow do."""
    return status == "pending" or held


def new_restore_id(now: datetime | None = None) -> str:
    return f"restore-{(now or datetime.now(UTC)):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


class PlanEntry(LeanModel):
    model_config = ConfigDict(extra="allow")

    group: str
    topic: str
    partition: int = Field(ge=0, strict=True, frozen=True)
    """The source partition."""
    target_topic: str = Field(frozen=True)
    target_partition: int | None = Field(default=None, ge=0, strict=True, frozen=True)
    """The target partition, when it is not ``partition``: a topic the restore re-partitioned gets one
    entry per target partition (``source_positions`` holds the group's source positions it follows)."""
    source_offset: int = Field(ge=0, strict=True)
    target_offset: int | None = Field(default=None, ge=0, strict=True)
    method: Method | None = None
    """How the target offset was found; null for pending and unmapped entries."""
    exact: bool = False
    max_duplicates: int | None = None
    """At most this many records may be processed twice (0 when exact; null when unknown)."""
    status: Status
    reason: str | None = None
    outcome: Outcome | None = None
    """What the last apply or rollback did with this entry, when it did not simply write it (``Outcome``);
    ``reason`` then says it in words."""
    metadata: str | None = None
    previous_target_offset: int | None = Field(default=None, ge=0, strict=True)
    previous_metadata: str | None = None
    """The commit metadata the target held with ``previous_target_offset``: rollback puts it back."""
    previous_recorded: bool = False
    """Set when apply first read ``previous_target_offset``: an apply run again after an
    interruption keeps it, so rollback still knows what was there before the first write."""
    previous_seal: str | None = None
    """The CLI's keyed checksum of the recorded previous offset (apply/seal.py): an edit is refused."""
    expected_fingerprint: str | None = None
    """The fingerprint the record at ``target_offset`` must have (when it is the copy of the
    snapshot's next record): apply verifies it after committing."""
    verified: bool | None = None
    anchor_offset: int | None = Field(default=None, ge=0, strict=True)
    """A target record the plan read next to the resume point: the record at ``target_offset``, or the
    last restored one before it when the group resumes at the end. Apply re-reads it just before
    committing and refuses the group when it is no longer the same (the target changed)."""
    anchor_source_offset: int | None = Field(default=None, strict=True)
    """The source offset the anchor record carried in the offset header (null: none, or not read)."""
    anchor_timestamp: int | None = Field(default=None, strict=True)
    """The anchor record's timestamp (null: not read)."""
    lost_before: int | None = Field(default=None, ge=0, strict=True)
    """A re-partitioned topic's count, on the group's first entry of it: records the group had not processed
    that the restore lacks before the first of each source partition's it holds (retention, a gap of the
    backup). Other entries need none: the source offset their anchor carries says it (null: none known)."""
    never_restored: int | None = Field(default=None, ge=0, strict=True)
    """At most this many source records the group had not processed will never be on the target: the
    restore was declared complete before it brought them (``restore_complete``; null: none known)."""
    live_at_snapshot: bool | None = None
    """The group had consumers when the snapshot read its positions, or its commits moved between the
    last two snapshots: what it processed after them it reads again (``exposure``). Null: not known."""
    exposure: int | None = Field(default=None, ge=0, strict=True)
    """Estimated records the group processed on the source after the position this entry starts from
    (the snapshot's, or a newer checkpoint's) and so reads again on the target, beyond
    ``max_duplicates``: its commit rate between the last two snapshots x the time to the plan. Null: no
    earlier snapshot to say (a live group) or not estimated."""
    target_topic_id: str | None = None
    """The target topic's id when the plan read it (Kafka's topic id, new whenever the topic is deleted and
    created again): apply and rollback write nothing into a topic whose id is another now. Null: the
    broker gave none (or a plan made before topic ids were recorded)."""
    group_kind: Literal["share"] | None = None
    """``share``: the group is a share group (a queue, KIP-932), whose position is its start offset on the
    share-partition (the first record not acknowledged, where delivery starts again): apply sets it with
    AlterShareGroupOffsets, rollback puts back or removes it. Null: a consumer group's committed offset."""
    redelivered: int | None = Field(default=None, ge=0, strict=True)
    """A share group's: the records after its start offset its consumers had already acknowledged on the
    source (``PartitionSnapshot.delivered_after_start``, at most this many). Resuming from the start offset,
    they are delivered again, beyond ``max_duplicates``. Null: not known (a broker before Kafka 4.2) or not
    a share group."""
    unprovable: bool = False
    """Not exact for records the target already holds (moved before the position, copied twice, identical):
    no later plan proves it, so a migration does not wait for it (``PlanSummary.unprovable``)."""
    holds_group: bool = False
    """Apply writes no partition of this group while this entry stands (a topic whose shape changed in
    the restore, not mapped: ``reason`` says why and what would end it)."""
    source_positions: dict[int, int] | None = None
    """For an entry of a re-partitioned topic: the group's committed offset on every source partition,
    each of whose records not yet processed lies at or after ``target_offset`` on this partition."""

    @cached_property
    def target(self) -> TP:
        """The target partition this entry writes: kept once asked (apply and the plan ask it of each entry
        at every step; the fields it is made of are frozen)."""
        return TP(self.target_topic, self.partition if self.target_partition is None else self.target_partition)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy that asks its own ``target`` again (an update may move it: a tampered plan in the tests)."""
        copied = super().model_copy(update=update, deep=deep)
        copied.__dict__.pop("target", None)
        return copied

    @property
    def holds(self) -> bool:
        return holds_group(self.status, self.holds_group)

    def record_outcome(self, outcome: Outcome, reason: str, status: Status | None = None) -> None:
        """Say what apply or rollback did with this entry: the outcome the report counts, the words people read."""
        self.outcome, self.reason = outcome, reason
        if status is not None:
            self.status = status

    def clear_outcome(self) -> None:
        """The entry is written as planned (or decided again): an earlier run's outcome, and the reason
        that said it, no longer hold. A reason the plan gave is kept."""
        if self.outcome is not None:
            self.outcome, self.reason = None, None

    def mark_committed(self) -> None:
        self.status = "committed"
        self.clear_outcome()

    @classmethod
    def made(cls, **values: Any) -> PlanEntry:
        """An entry the plan makes from an answer it holds (every value typed already, the reason its own),
        without validating it again: checking thirty fields it typed itself is most of an entry's cost.
        What validation would refuse of such values is refused here: a field the model does not have, one
        it needs, and a written entry without its offset. ``tests/unit/test_plan_entry_made.py`` holds it
        equal to the validated entry."""
        fields = new_entry_fields()
        fields.update(values)
        return cls.made_of(fields)

    @classmethod
    def made_of(cls, fields: dict[str, Any]) -> PlanEntry:
        """``made`` of ``fields`` from ``new_entry_fields()``, filled in place and taken as they are (no keyword
        dict built and copied again: a dense plan makes an entry a group-partition, hundreds of thousands).
        Refuses a field the model does not have, one it needs left None, and a written entry without its offset."""
        if len(fields) != len(_ENTRY_TEMPLATE) or None in _required(fields):
            unknown = sorted(fields.keys() - _ENTRY_TEMPLATE.keys())
            missing = sorted(name for name in _ENTRY_REQUIRED if fields.get(name) is None)
            raise TypeError(f"PlanEntry has no field {', '.join(unknown)}" if unknown
                            else f"PlanEntry needs {', '.join(missing)}")  # fmt: skip
        status, offset = fields["status"], fields["target_offset"]
        if status in ("mapped", "committed") and (offset is None or offset < 0):
            raise ValueError(f"a {status} entry needs a target_offset (not {offset})")
        entry = cls.__new__(cls)
        _set(entry, "__dict__", fields)
        _set(entry, "__pydantic_fields_set__", SHARED_FIELDS_SET)
        _set(entry, "__pydantic_extra__", {})
        _set(entry, "__pydantic_private__", None)
        return entry

    @model_validator(mode="before")
    @classmethod
    def _outcome_of_older_entries(cls, data: Any) -> Any:
        """An entry written before ``outcome`` existed (a plan file, a DynamoDB item) takes it from its
        reason, as the report used to; an entry that has the field, null or not, keeps it."""
        if isinstance(data, dict) and "outcome" not in data:
            outcome = legacy_outcome(data.get("status"), data.get("reason"))
            if outcome is not None:
                return {**data, "outcome": outcome}
        return data

    @model_validator(mode="after")
    def _written_entries_have_an_offset(self) -> PlanEntry:
        if self.status in ("mapped", "committed") and self.target_offset is None:
            raise ValueError(f"a {self.status} entry needs a target_offset")
        return self


_ENTRY_REQUIRED = frozenset(name for name, f in PlanEntry.model_fields.items() if f.is_required())
_ENTRY_TEMPLATE = {name: None if f.is_required() else f.default for name, f in PlanEntry.model_fields.items()}
"""Every field in the model's order, an optional one with its default (none is mutable: no factory)."""
_required = operator.itemgetter(*sorted(_ENTRY_REQUIRED))
_set = object.__setattr__


def new_entry_fields() -> dict[str, Any]:
    """A new entry's fields in the model's order, each optional one at its default and each required one None,
    for ``PlanEntry.made_of`` once filled."""
    return _ENTRY_TEMPLATE.copy()


class PlanSummary(BaseModel):
    entries: int = 0
    groups: int = 0
    mapped: int = 0
    exact: int = 0
    pending: int = 0
    unmapped: int = 0
    held: int = 0
    """Unmapped entries that hold their group: a topic whose shape changed that nothing the target holds maps
    (no partition header). A later plan of the same target reads the same shape, so nothing waits for them."""
    unprovable: int = 0
    """Mapped entries not exact for records the target already holds (``PlanEntry.unprovable``): no later plan
    proves them, so nothing waits for them either."""
    by_method: dict[str, int] = Field(default_factory=dict)
    max_duplicates_total: int = 0
    entries_without_bound: int = 0
    never_restored_total: int = 0
    """At most this many source records the groups had not processed will never be on the target (the
    restore declared complete before them: ``never_restored``)."""
    groups_live: int = 0
    """Groups live when the snapshot read their positions (``live_at_snapshot``): what they processed
    after, they read again."""
    groups_assumed_idle: int = 0
    """Groups without consumers at the snapshot whose commits did not move between the last two snapshots:
    taken to have processed nothing after it (exposure 0), which no snapshot can prove."""
    exposure_total: int = 0
    """Their estimated records read again beyond ``max_duplicates_total`` (``exposure``), over the
    entries that have an estimate."""
    entries_exposure_unknown: int = 0
    """Entries without an estimate: of groups no earlier snapshot gives a rate for (or a plan made
    before the estimate existed)."""
    redelivered_total: int = 0
    """Records share groups' consumers had acknowledged after their start offsets, delivered again
    (``redelivered``)."""

    @property
    def not_exact(self) -> int:
        """Entries not yet exact: pending, unmapped, or mapped without proof (the target lacks a record)."""
        return self.entries - self.exact

    @property
    def awaiting_catch_up(self) -> int:
        """A migration's entries a later plan may still prove exact: all not exact but those ``held`` and
        ``unprovable`` (one rule for the CLI's ``migrate`` and the workflow's mode migrate)."""
        return self.not_exact - self.held - self.unprovable

    @classmethod
    def of(cls, entries: Iterable[PlanEntry]) -> PlanSummary:
        tally = SummaryTally()
        for entry in entries:
            tally.add(entry)
        return tally.result()


class SummaryTally:
    """A plan summary kept entry by entry, for steps that stream the mappings instead of holding them."""

    def __init__(self) -> None:
        self.numbers: Counter[str] = Counter()
        self.statuses: Counter[str] = Counter()
        self.groups: set[str] = set()
        self.live: set[str] = set()
        self.idle: set[str] = set()
        self.methods: Counter[str] = Counter()

    def add(self, e: PlanEntry) -> None:
        n = self.numbers
        n["entries"] += 1
        self.statuses[e.status] += 1
        self.groups.add(e.group)
        if e.live_at_snapshot:
            self.live.add(e.group)
        elif e.live_at_snapshot is False:
            self.idle.add(e.group)
        n["exposure_total"] += e.exposure or 0
        n["never_restored_total"] += e.never_restored or 0
        n["redelivered_total"] += e.redelivered or 0
        n["entries_exposure_unknown"] += e.exposure is None
        n["held"] += e.status == "unmapped" and e.holds_group
        n["unprovable"] += e.status not in ("pending", "unmapped") and e.unprovable and not e.exact
        # Mapped means a target offset was found, whatever apply did with it since.
        if e.status not in ("pending", "unmapped") and e.target_offset is not None:
            n["mapped"] += 1
            n["exact"] += bool(e.exact)
            if e.method:
                self.methods[e.method] += 1
            n["max_duplicates_total"] += e.max_duplicates or 0
            n["entries_without_bound"] += e.max_duplicates is None

    def result(self) -> PlanSummary:
        n = self.numbers
        return PlanSummary(
            entries=n["entries"],
            groups=len(self.groups),
            mapped=n["mapped"],
            exact=n["exact"],
            pending=self.statuses["pending"],
            unmapped=self.statuses["unmapped"],
            held=n["held"],
            unprovable=n["unprovable"],
            by_method=dict(sorted(self.methods.items())),
            max_duplicates_total=n["max_duplicates_total"],
            entries_without_bound=n["entries_without_bound"],
            never_restored_total=n["never_restored_total"],
            groups_live=len(self.live),
            groups_assumed_idle=len(self.idle - self.live),
            exposure_total=n["exposure_total"],
            entries_exposure_unknown=n["entries_exposure_unknown"],
            redelivered_total=n["redelivered_total"],
        )


class ClusterRef(BaseModel):
    model_config = ConfigDict(extra="allow")

    cluster: str
    bootstrap_servers: str | None = None
    cluster_id: str | None = None
    """The cluster id the brokers reported when the plan was made, whatever ``cluster`` names them:
    apply and rollback refuse brokers that report another one."""


class Plan(BaseModel):
    model_config = ConfigDict(extra="allow")

    restore_id: str
    snapshot_id: str
    created_at: datetime
    source: ClusterRef
    target: ClusterRef
    entries: list[PlanEntry]
    summary: PlanSummary = Field(default_factory=PlanSummary)
    strategies: list[str] = Field(default_factory=list)
    offset_header: str | None = None
    topic_map: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    order_check: str | None = None
    """How the header strategy checked the restore's order: ``windows`` or ``full`` (docs/translation.md)."""
    out_of_order: dict[str, str] = Field(default_factory=dict)
    """Target partitions (``topic/partition``) found out of order, with why; each was read whole."""
    reshaped: dict[str, str] = Field(default_factory=dict)
    recovery_point: datetime | None = None
    """When the snapshot read the positions (T): the plan is exact as of then, or of a newer
    MirrorMaker 2 checkpoint where an entry's reason says so; what live groups processed after, they
    read again (``summary.exposure_total``)."""
    history_at: datetime | None = None
    """When the snapshot before it read its positions: the groups' commit rates are measured from there."""
    """Source topics whose shape changed in the restore, with why (translate/reshaped.py)."""
    seal: str | None = None
    """The keyed checksum of the whole plan but its previous offsets, as apply or rollback last saved it
    (apply/seal.py): an entry edited, added or removed since is refused by name."""
    generation: int = 0
    """How many times apply or rollback saved this plan sealed: a copy older than the last one is refused."""

    def problems(self) -> list[str]:
        """What makes this plan unsafe to apply as it is (an edited or damaged plan): each names the
        entry. Checked before anything is read from or written to a cluster."""
        found: list[str] = []
        seen: dict[tuple[str, str, int, int | None], int] = {}
        targets: dict[tuple[str, str, int], int] = {}
        for number, e in enumerate(self.entries):
            where = f"entry {number} ({e.group} {e.topic}/{e.partition})"
            key, onto = (e.group, e.topic, e.partition, e.target_partition), (e.group, *e.target)
            if key in seen:
                found.append(f"{where} repeats entry {seen[key]}")
            elif onto in targets and e.status in ("mapped", "committed"):
                found.append(f"{where} maps onto {e.target} like entry {targets[onto]}")
            seen.setdefault(key, number)
            if e.status in ("mapped", "committed"):
                targets.setdefault(onto, number)
            if e.target_topic != self.topic_map.get(e.topic, e.topic):
                found.append(f"{where} names target topic {e.target_topic}, which the plan's topic map does not")
            problem = _offset_off_anchor(e)
            if problem:
                found.append(f"{where} {problem}")
        return found

    def csv_lines(self) -> list[str]:
        """``group,topic,partition,offset`` for mapped entries: what kafka-consumer-groups.sh
        ``--reset-offsets --from-file`` reads (names checked by ``csv_unsafe`` first); a group an
        entry holds is left out ."""
        held = {e.group for e in self.entries if e.holds}
        return [line for e in self.entries if e.group not in held and (line := self.csv_line(e)) is not None]

    @staticmethod
    def csv_line(e: PlanEntry) -> str | None:
        """One entry's ``--from-file`` line; None for an entry with nothing to write."""
        if e.status == "mapped" and e.target_offset is not None:
            return f"{e.group},{e.target_topic},{e.target.partition},{e.target_offset}"
        return None


def _offset_off_anchor(e: PlanEntry) -> str | None:
    """A mapped offset must sit at the record the plan read (its anchor), or just after it for an
    entry that resumes after its last record."""
    if e.anchor_offset is None or e.target_offset is None or e.status not in ("mapped", "committed"):
        return None
    after = e.method == "end" or (e.method in ("fingerprint", "mm2", "origin") and e.expected_fingerprint is None)
    if e.anchor_offset == e.target_offset or (after and e.anchor_offset < e.target_offset):
        return None
    return f"has target_offset {e.target_offset}, but the record the plan read for it is at {e.anchor_offset}"


CSV_UNSAFE = frozenset(',\n\r"')


SPREADSHEET_FORMULA = ("=", "+", "-", "@", "\t", "\r")
"""What a cell begins with that a spreadsheet opening a CSV runs as a formula."""


def spreadsheet_formula(line: str) -> bool:
    """Whether a ``--from-file`` line's group or topic begins as a spreadsheet formula does. Nothing can be
    done to it that kafka-consumer-groups would still read as the same name (a quote or a leading ``'`` is
    part of the name to its reader), so the plan says so instead."""
    group, topic = line.split(",")[:2]  # neither holds a comma (``csv_unsafe``)
    return group.startswith(SPREADSHEET_FORMULA) or topic.startswith(SPREADSHEET_FORMULA)


def csv_unsafe(name: str) -> str | None:
    """Why a group id or topic cannot go into a ``--from-file`` CSV safely (None when it can).

    kafka-consumer-groups splits the file on newlines and each line on commas: a comma or a newline
    in a group id (legal in Kafka) would make one group's line reset another group; a quote or
    surrounding space is read differently by its CSV reader than written.
    """
    bad = sorted({ch for ch in name if ch in CSV_UNSAFE})
    if bad:
        return "contains " + " and ".join(repr(ch) for ch in bad)
    if name != name.strip():
        return "starts or ends with white space"
    return None
