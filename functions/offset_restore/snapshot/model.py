"""The snapshot document: a manifest plus items files of one JSON line per group (README: Snapshots)."""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime
from typing import Literal

from pydantic import ConfigDict, Field, field_validator

from offset_restore.formats.lean import LeanModel

__all__ = [
    "SNAPSHOT_FORMAT",
    "CommittedPosition",
    "GroupPositions",
    "GroupSnapshot",
    "ItemsFile",
    "PartitionSnapshot",
    "RecordEvidence",
    "SnapshotCounts",
    "SnapshotManifest",
    "UncommittedPartition",
    "default_cluster_name",
    "new_snapshot_id",
    "parse_time",
    "validate_name",
]

SNAPSHOT_FORMAT = "offset-restore/snapshot/v1"
_ITEMS_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def validate_name(value: str, what: str) -> str:
    """Ids and cluster names become S3 key parts: keep them to a safe alphabet."""
    if not _NAME.fullmatch(value):
        raise ValueError(
            f"{what} {value!r} must be 1-128 characters of letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return value


def default_cluster_name(cluster_id: str) -> str:
    """A cluster's name when the user gives none: its id, made a valid name. Kafka's ids are 22
    URL-safe base64 characters and may start with '_' (Kafka avoids only '-'), which a name may not:
    such an id gets the prefix ``cluster-``."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", cluster_id)[:120] or "unknown-cluster"
    return name if _NAME.fullmatch(name) else f"cluster-{name}"


def parse_time(text: str) -> datetime:
    """An ISO-8601 time (``Z`` accepted); a time without a zone is taken as UTC. ValueError if not."""
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def new_snapshot_id(now: datetime) -> str:
    """Sortable by time, unique without coordination: ``20261129T204859Z-3fa2c1``."""
    return f"{now.astimezone(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def _absent(value: object) -> bool:
    """A field written only when known (None is left out): snapshots that have none of them stay as they
    were. Checked per field by pydantic's serializer, which stays on its fast path (a model serializer
    that popped them built every partition as a Python dict: five times slower)."""
    return value is None


class _Document(LeanModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class RecordEvidence(_Document):
    """A record as seen on the source: where it was, when, and what it held (its fingerprint)."""

    offset: int
    timestamp: int
    fingerprint: str
    origin_offset: int | None = Field(default=None, exclude_if=_absent)
    """The restore's offset header on this record (the snapshot's ``offset_header``): its offset on the
    cluster the restore came from, which a failback carries the group back to (the origin strategy).
    Written only when the record carries it: a snapshot of a cluster no restore wrote stays as it was."""


class PartitionSnapshot(_Document):
    topic: str
    partition: int = Field(ge=0)
    committed_offset: int = Field(ge=0)
    metadata: str | None = None
    log_start: int | None = None
    log_end: int | None = None
    lag: int | None = None
    next: RecordEvidence | None = None
    """The record the group would process next: the first record at or after the committed offset."""
    before: list[RecordEvidence] = Field(default_factory=list)
    """Up to ``evidence_records`` records just before the committed offset, oldest first."""
    origin_top: RecordEvidence | None = Field(default=None, exclude_if=_absent)
    """A failback's (``SnapshotOptions.origin_search``): the last record before the committed offset that
    carries the restore's offset header, when the records just before it carry none — the group processed
    records produced on this cluster after the restore; the origin strategy resumes it after this one.
    Written only when found: other snapshots stay as they were."""
    own_since: int | None = Field(default=None, exclude_if=_absent)
    """With ``origin_top``: the timestamp of the record after it, the first the source produced itself."""
    origin_floor: int | None = Field(default=None, exclude_if=_absent)
    """A failback's (``SnapshotOptions.origin_search``), the partition read whole: the first record of the
    cluster the restore came from that the group may not have processed, whatever order the restore wrote
    (``snapshot/origin_order.py``). Written only when known."""
    origin_twice: int | None = Field(default=None, exclude_if=_absent)
    """With ``origin_floor``: the records before the position whose origin offset is at or past it (the
    group processed them and reads them again from the floor)."""
    evidence_complete: bool = True
    """False when the broker did not give all the records asked for (it is said why in the manifest)."""
    delivered_after_start: int | None = Field(default=None, exclude_if=_absent)
    """A share group's: the records after its start offset whose delivery had completed when the snapshot
    read it (acknowledged out of order, KIP-1226's lag; at most this many). A consumer resuming from the
    start offset is given them again. Written only when known (Kafka 4.2 on)."""


class UncommittedPartition(_Document):
    topic: str
    partition: int


class GroupSnapshot(_Document):
    group: str
    state: str
    members: int = 0
    """-1: not counted (a Streams application's group of the streams protocol, which the brokers only list)."""
    protocol_type: str = ""
    partitions: list[PartitionSnapshot] = Field(default_factory=list)
    uncommitted_partitions: list[UncommittedPartition] = Field(default_factory=list)
    """Partitions of the topics the group commits on that have no commit: the consumer's reset
    policy decides there, on the source as on the target."""


class CommittedPosition(_Document):
    topic: str
    partition: int
    committed_offset: int = Field(ge=0)


class GroupPositions(_Document):
    """A stored group's committed positions alone, the rest of its line skipped unparsed: what an earlier
    snapshot is read for (each group's commit rate), where parsing its evidence too took a run's Prepare
    seconds at 120,000 group-partitions."""

    group: str
    partitions: list[CommittedPosition] = Field(default_factory=list)


class ItemsFile(_Document):
    name: str
    groups: int
    group_partitions: int
    sha256: str

    @field_validator("name")
    @classmethod
    def _plain_file_name(cls, value: str) -> str:
        """Read beside the manifest and nowhere else: a manifest cannot point at ``../`` paths."""
        if not _ITEMS_NAME.fullmatch(value):
            raise ValueError(f"items file name {value[:80]!r} is not a plain file name")
        return value


class SnapshotCounts(_Document):
    groups: int = 0
    groups_without_commits: int = 0
    group_partitions: int = 0
    partitions: int = 0
    with_evidence: int = 0
    evidence_incomplete: int = 0
    total_lag: int = 0
    states: dict[str, int] = Field(default_factory=dict)
    offsets_topic_records: int = 0
    offsets_topic_corrupt: int = 0


class SnapshotManifest(_Document):
    format: str = SNAPSHOT_FORMAT
    snapshot_id: str
    cluster: str
    created_at: datetime
    completed_at: datetime
    source: Literal["cluster", "offsets-topic", "export"] = "cluster"
    as_of: datetime | None = None
    filters: dict[str, str | None] = Field(default_factory=dict)
    evidence_records: int = 0
    offset_header: str | None = None
    groups_stopped: bool = False
    """A migration's final snapshot, taken once every group in it had stopped on the source: none moved
    after it (what each entry's exposure says), unless its own state here shows members."""
    topic_partitions: dict[str, int] = Field(default_factory=dict)
    """How many partitions each topic the groups commit on had on the source: a plan compares them
    with the target's to tell a restore that re-partitioned a topic (empty in older snapshots and in
    those made from an export, which do not know)."""
    topic_ids: dict[str, str] = Field(default_factory=dict)
    """Each of those topics' id (Kafka's topic id: new whenever a topic is deleted and created again), where
    the broker gives one: positions in one incarnation of a topic are no evidence for another (empty in
    older snapshots and those made from an export or a restored ``__consumer_offsets``)."""
    counts: SnapshotCounts = Field(default_factory=SnapshotCounts)
    notes: list[str] = Field(default_factory=list)
    items: list[ItemsFile] = Field(default_factory=list)

    @property
    def positions_at(self) -> datetime:
        """When the groups' positions were read (a restored ``__consumer_offsets`` says its own time):
        what a plan from this snapshot is exact as of."""
        return self.as_of or self.created_at

    @field_validator("snapshot_id")
    @classmethod
    def _id_is_safe(cls, value: str) -> str:
        return validate_name(value, "snapshot id")

    @field_validator("cluster")
    @classmethod
    def _cluster_is_safe(cls, value: str) -> str:
        return validate_name(value, "cluster name")

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if value != SNAPSHOT_FORMAT:
            raise ValueError(f"unknown snapshot format {value!r} (this version reads {SNAPSHOT_FORMAT})")
        return value
