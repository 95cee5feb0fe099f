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
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from offset_restore.errors import BadInputError
from offset_restore.translate.model import Plan, PlanEntry

__all__ = ["KEY_ENV", "PlanKey", "default_key_path", "seal_plan", "unsealed"]

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
        message = json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode()
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()[:32]


def seal_plan(plan: Plan, key: PlanKey) -> None:
    """Seal every recorded previous offset (before the plan is saved); clear the seal of the others."""
    for entry in plan.entries:
        entry.previous_seal = key.seal(plan, entry) if entry.previous_recorded else None


def unsealed(plan: Plan, key: PlanKey) -> list[str]:
    """The entries whose recorded previous offset the key did not seal as it is: each named."""
    found = []
    for number, entry in enumerate(plan.entries):
        if not entry.previous_recorded:
            continue
        seal = entry.previous_seal
        if seal is None or not hmac.compare_digest(seal, key.seal(plan, entry)):
            what = "has no seal" if seal is None else "does not match its seal"
            found.append(
                f"entry {number} ({entry.group} {entry.target}): previous offset {entry.previous_target_offset} {what}"
            )
    return found
