"""The journal of previous offsets: what each apply replaced, written before its first write, never rewritten.

A plan file is rewritten at every save, and a plan is a file people copy, edit and keep old copies of.
The offsets an apply replaced are the one thing a rollback cannot do without, so they are also kept
where nothing rewrites them: beside the plan, a folder ``<plan>.journal/`` of numbered records, each
created once and never replaced (an exclusive create locally, a conditional put on S3). Apply writes a
record of the previous offsets it recorded after saving them in the plan and before its first write,
and another when the cluster refused a write (the offsets it had recorded are then not offsets it
replaced). Each record is sealed with the plan key (apply/seal.py), so an edited record is refused by
name.

Rollback reads the journal and uses its latest word on each partition: where the plan says otherwise
(an older copy of the plan, a value trusted with ``--trust-previous-offsets``, a plan whose last save
failed), the journal's value is used and the report says so. A partition the journal never mentions
keeps the plan's value (a plan applied before journals were kept).
"""

from __future__ import annotations

import hmac
import io
import json
import os
import re
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import BaseModel, ValidationError

from offset_restore.apply.seal import PlanKey
from offset_restore.errors import AlreadyExistsError, BadInputError, StorageError
from offset_restore.formats.plan import Plan, PlanEntry
from offset_restore.kafka.model import TP
from offset_restore.stores.storage import BlobStore
from offset_restore.validation import describe

__all__ = ["JOURNAL_SUFFIX", "Journal", "JournalOffset", "JournalRecord", "Offset"]

JOURNAL_SUFFIX = ".journal"
CREATE_ATTEMPTS = 20
"""Another writer may take the next number between the listing and the create: the next one is tried."""
_NUMBERED = re.compile(r"(\d{8})\.json")


Offset = tuple[str, str, int, bool, int | None, str | None]
"""One partition's previous offset as an apply recorded it: group, topic, partition, whether it is recorded
(false: given up — the cluster refused the write it was recorded for, or the group's own consumers own the
partition), the offset and its metadata. A row, not an object: a journal record holds every partition of a
large apply, written and read on apply's and rollback's critical path."""


@dataclass(frozen=True)
class JournalOffset:
    """A partition's previous offset by the journal."""

    offset: int | None
    metadata: str | None


class JournalRecord(BaseModel):
    """One record: the plan it belongs to (restore, target cluster id, when it was made), who wrote it
    when, and the offsets."""

    restore_id: str
    cluster_id: str | None
    plan_created_at: datetime
    written_at: datetime
    writer: str
    offsets: list[Offset]

    def belongs_to(self, plan: Plan) -> bool:
        return (self.restore_id, self.cluster_id, self.plan_created_at) == (
            plan.restore_id,
            plan.target.cluster_id,
            plan.created_at,
        )


def _row(entry: PlanEntry) -> Offset:
    recorded, target = entry.previous_recorded, entry.target
    if not recorded:
        return entry.group, target.topic, target.partition, False, None, None
    return entry.group, target.topic, target.partition, True, entry.previous_target_offset, entry.previous_metadata


class Journal:
    """The journal beside the plan ``plan_name`` in ``store``. ``key``: the plan key that seals each record
    and checks it when read (None: records are neither sealed nor checked, as the plan is not)."""

    def __init__(self, store: BlobStore, plan_name: str, key: Callable[[], PlanKey] | None = None) -> None:
        self.store, self.folder, self.key = store, f"{plan_name}{JOURNAL_SUFFIX}", key

    def append(self, plan: Plan, entries: Sequence[PlanEntry]) -> None:
        """A record of these entries' previous offsets as they stand now (nothing when there are none): its
        JSON on the first line, the seal of that line's bytes on the second."""
        if not entries:
            return
        record = {
            "restore_id": plan.restore_id,
            "cluster_id": plan.target.cluster_id,
            "plan_created_at": plan.created_at.isoformat(),
            "written_at": datetime.now(UTC).isoformat(),
            "writer": f"pid {os.getpid()} on {socket.gethostname()}",
            "offsets": [_row(e) for e in entries],
        }
        body = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()  # one line: \n is escaped
        seal = self.key().mac(body) if self.key is not None else None
        data = body + b"\n" + json.dumps({"seal": seal}).encode() + b"\n"
        for _ in range(CREATE_ATTEMPTS):
            name = f"{self.folder}/{self._last_number() + 1:08d}.json"
            try:
                self.store.create_file(name, io.BytesIO(data), "application/json")
                return
            except AlreadyExistsError:
                continue
        raise StorageError(
            f"cannot add a record to the journal {self.folder}: {CREATE_ATTEMPTS} other writers got there first"
        )

    def previous(self, plan: Plan) -> dict[tuple[str, TP], JournalOffset]:
        """Each partition's previous offset by the journal's latest word on it (partitions whose latest
        word is "no longer recorded" are left out, as are records of another plan once at this path)."""
        latest: dict[tuple[str, TP], Offset] = {}
        for name in self._records():
            record = self._read(name)
            if record.belongs_to(plan):
                for row in record.offsets:
                    latest[(row[0], TP(row[1], row[2]))] = row
        return {where: JournalOffset(row[4], row[5]) for where, row in latest.items() if row[3]}

    def correct(self, plan: Plan) -> list[str]:
        """Set every entry's previous offset to the journal's where they differ; one line per correction."""
        found = self.previous(plan)
        corrected: list[str] = []
        for entry in plan.entries:
            journal = found.get((entry.group, entry.target))
            if journal is None:
                continue
            said = (entry.previous_target_offset, entry.previous_metadata) if entry.previous_recorded else None
            if said == (journal.offset, journal.metadata):
                continue
            was = "nothing recorded" if said is None else f"previous offset {_offset(said[0])}"
            corrected.append(
                f"{entry.group} {entry.target}: the plan said {was}, the journal {_offset(journal.offset)}"
            )
            entry.previous_target_offset, entry.previous_metadata = journal.offset, journal.metadata
            entry.previous_recorded = True
        return corrected

    def _records(self) -> list[str]:
        """The folder's numbered records, in order (their numbers are zero-padded: sorted by name)."""
        listed = self.store.list(f"{self.folder}/")
        return sorted(name for name in listed if _NUMBERED.fullmatch(name.rpartition("/")[2]))

    def _last_number(self) -> int:
        records = self._records()
        return int(records[-1].rpartition("/")[2][:8]) if records else 0

    def _read(self, name: str) -> JournalRecord:
        body, _, rest = self.store.get(name).partition(b"\n")
        try:
            seal = json.loads(rest).get("seal") if rest.strip() else None
            record = JournalRecord.model_validate_json(body)
        except (ValueError, AttributeError) as error:
            said = describe(error) if isinstance(error, ValidationError) else "not JSON"
            raise BadInputError(
                f"the journal record {name} is not a journal record ({said}): nothing was written"
            ) from None
        if self.key is None:
            return record
        key = self.key()
        if not isinstance(seal, str) or not hmac.compare_digest(seal, key.mac(body)):
            raise BadInputError(
                f"the journal record {name} is not as apply wrote it (edited or damaged, or sealed with another key "
                f"than {key.path}): nothing was written (--plan-key for the key of the machine that applied the plan)"
            )
        return record


def _offset(offset: int | None) -> str:
    return "none (no offset)" if offset is None else str(offset)
