"""The seal on a plan file's previous offsets: what rollback puts back cannot be edited unseen.

Apply records each partition's previous offset in the plan file before its first write, and rollback
writes it back. A plan file is JSON anyone with the file can change: an edited or damaged previous
offset would be committed by rollback (the log-end check catches only offsets past the end). So the
CLI seals each recorded previous offset with a keyed checksum — HMAC-SHA256 under a key kept outside
the plan (``PlanKey``: a file of 32 random bytes, created on first use, readable by its owner only)
over the restore id, the target cluster id, the entry's group and target partition and its previous
offset and metadata — and checks every seal when it reads the plan again, in apply and in rollback,
before anything is read from or written to the cluster. An edit of the file alone cannot forge it;
a flipped bit is caught with the entry named.

Why a keyed checksum and not a second copy: a copy beside the plan is rewritten in the same stroke
by whoever rewrites the plan, and a plan on S3 has no safe place beside it; a key is one small file
that stays where the operator's configuration is. The workflow needs neither: its previous offsets
live in DynamoDB items only its commit step's role writes.

The previous offsets are what rollback writes, but what decides whether it writes them is the rest of
the entry: ``previous_recorded``, the target offset and its anchor, the status, the entry being there at
all. So every save also seals the whole plan but its previous offsets (``seal_whole``), with a
generation that grows at each save; beside the key, a record per restore keeps the last generation this
machine sealed (``SealRecord``): a plan edited since, with its whole seal removed, or an older copy of it
(whose seals are valid, and whose previous offsets are out of date) is refused by name.
``--trust-previous-offsets`` relaxes only the previous offsets' seals, and never seals again a previous
offset it did not read from the cluster: such an entry stays unsealed, refused at the next read unless
trusted again.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from offset_restore.errors import BadInputError
from offset_restore.formats.plan import Plan, PlanEntry
from offset_restore.formats.plan_json import json_pieces

__all__ = [
    "KEY_ENV",
    "PlanKey",
    "SealRecord",
    "default_key_path",
    "seal_plan",
    "seal_whole",
    "unsealed",
    "unsealed_numbers",
    "whole_problem",
]

KEY_ENV = "OFFSET_RESTORE_PLAN_KEY"
"""The key file's path, when not the default."""
KEY_BYTES = 32


def default_key_path() -> Path:
    """``$OFFSET_RESTORE_PLAN_KEY``, else ``$XDG_CONFIG_HOME/offset-restore/plan.key`` (``~/.config``)."""
    if os.environ.get(KEY_ENV):
        return Path(os.environ[KEY_ENV])
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "offset-restore" / "plan.key"


@dataclass(frozen=True)
class PlanKey:
    """The sealing key, read from ``path`` (or made there, when ``create`` and absent)."""

    path: Path
    secret: bytes

    @classmethod
    def load(cls, path: Path | None = None, *, create: bool = False) -> PlanKey:
        where = path or default_key_path()
        if not where.exists() and create:
            where.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            descriptor = os.open(where, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as file:
                file.write(secrets.token_bytes(KEY_BYTES))
        try:
            with where.open("rb") as file:
                secret = file.read(KEY_BYTES + 1)
        except OSError as error:
            raise BadInputError(
                f"cannot read the plan key {where} ({error.strerror}): the plan's previous offsets were sealed with "
                f"the key of the machine that applied it; give that key file with --plan-key (or {KEY_ENV}), or, "
                "having checked the previous offsets yourself, --trust-previous-offsets"
            ) from None
        if len(secret) != KEY_BYTES:
            raise BadInputError(f"the plan key {where} holds {len(secret)} bytes, not {KEY_BYTES}: not a plan key")
        return cls(where, secret)

    def seal(self, plan: Plan, entry: PlanEntry) -> str:
        fields = [
            plan.restore_id,
            plan.target.cluster_id,
            entry.group,
            *entry.target,
            entry.previous_target_offset,
            entry.previous_metadata,
        ]
        return self.mac(json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode())

    def mac(self, message: bytes) -> str:
        """The seal of any message under this key (a keyed checksum, HMAC-SHA256, shortened)."""
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()[:32]

    def seal_whole(self, plan: Plan) -> str:
        """The plan but its seal and its entries' previous offsets (each sealed on its own), as pydantic writes
        its JSON (fields in the model's order: the same bytes for the same plan), taken in pieces
        (``json_pieces``: a whole plan's JSON at once would be apply's peak memory)."""
        mac = hmac.new(self.secret, digestmod=hashlib.sha256)
        for piece in json_pieces(plan, _NOT_SEALED_WHOLE):
            mac.update(piece)
        return mac.hexdigest()[:32]


_NOT_SEALED_WHOLE: dict[str, Any] = {
    "seal": True,
    "entries": {"__all__": {"previous_target_offset", "previous_metadata", "previous_seal"}},
}
"""The plan's own seal, and each entry's previous offset and its seal: left out of the whole plan's seal."""


def seal_plan(plan: Plan, key: PlanKey, distrusted: dict[int, tuple[object, object]] | None = None) -> None:
    """Seal every recorded previous offset (before the plan is saved); clear the seal of the others.
    ``distrusted``: entries (by number) whose previous offset the operator trusted without its seal, with
    that offset: still the same, it is not sealed again (this run did not read it from the cluster)."""
    for number, entry in enumerate(plan.entries):
        kept = (distrusted or {}).get(number)
        if kept is not None and kept == (entry.previous_target_offset, entry.previous_metadata):
            entry.previous_seal = None
            continue
        entry.previous_seal = key.seal(plan, entry) if entry.previous_recorded else None


def seal_whole(plan: Plan, key: PlanKey) -> None:
    """The next generation of the plan, sealed whole (after ``seal_plan``, right before the save)."""
    plan.generation += 1
    plan.seal = key.seal_whole(plan)


def whole_problem(plan: Plan, key: PlanKey, record: SealRecord) -> str | None:
    """What is wrong with the plan as a whole, or None: not the plan apply or rollback last sealed here."""
    last = record.read()
    if last is not None and plan.generation < int(str(last.get("generation", 0))):
        return (
            f"it is an older copy of the plan: generation {plan.generation}, while this machine sealed generation "
            f"{last.get('generation')} at {last.get('sealed_at')} (its previous offsets may be out of date; if this "
            f"copy is the one to use, remove {record.path} first)"
        )
    if plan.seal is None:
        if last is not None:
            return f"its seal as a whole was removed (this machine sealed generation {last.get('generation')} of it)"
        return None
    if not hmac.compare_digest(plan.seal, key.seal_whole(plan)):
        return (
            "it was edited since it was planned or apply or rollback last saved it (an entry's target offset, "
            "status, anchor or recorded flag changed, or an entry was added or removed), or it was sealed with "
            f"another key than {key.path} (--plan-key for the key of the machine that made or applied it): plan "
            "again, or use the plan as it was saved"
        )
    return None


@dataclass(frozen=True)
class SealRecord:
    """Beside the key, the last generation of one plan this machine sealed: what tells an older copy, or a
    plan whose whole seal was removed, from the plan as it was last saved."""

    path: Path

    @classmethod
    def of(cls, key: PlanKey, plan: Plan) -> SealRecord:
        # One plan document: its restore, its target and when it was made (under the whole seal: not editable).
        identity = [plan.restore_id, plan.target.cluster_id, plan.created_at.isoformat()]
        name = hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:32]
        return cls(key.path.parent / "sealed" / f"{name}.json")

    def read(self) -> dict[str, object] | None:
        try:
            found = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            raise BadInputError(f"the seal record {self.path} cannot be read ({error}): remove it or fix it") from None
        return found if isinstance(found, dict) else None

    def write(self, plan: Plan, location: str) -> None:
        """Atomically (a crash leaves the old record or the new one)."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        record = {
            "restore_id": plan.restore_id,
            "cluster_id": plan.target.cluster_id,
            "generation": plan.generation,
            "sealed_at": datetime.now(UTC).isoformat(),
            "location": location,
        }
        partial = self.path.with_suffix(".tmp")
        partial.write_text(json.dumps(record))
        os.replace(partial, self.path)


def unsealed_numbers(plan: Plan, key: PlanKey) -> list[int]:
    """The entries (by number) whose recorded previous offset the key did not seal as it is."""
    return [
        number
        for number, entry in enumerate(plan.entries)
        if entry.previous_recorded
        and (entry.previous_seal is None or not hmac.compare_digest(entry.previous_seal, key.seal(plan, entry)))
    ]


def unsealed(plan: Plan, key: PlanKey) -> list[str]:
    """``unsealed_numbers``, each named."""
    found = []
    for number in unsealed_numbers(plan, key):
        entry = plan.entries[number]
        what = "has no seal" if entry.previous_seal is None else "does not match its seal"
        found.append(
            f"entry {number} ({entry.group} {entry.target}): previous offset {entry.previous_target_offset} {what}"
        )
    return found
