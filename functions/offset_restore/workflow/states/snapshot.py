"""The scheduled and on-demand snapshot: the source cluster's groups into the deployment's bucket (not a state
of the restore's state machine: its own function, on a schedule)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from offset_restore.errors import BadInputError
from offset_restore.snapshot.filters import DEFAULT_EXCLUDE_GROUPS
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import SnapshotResult, run_snapshot
from offset_restore.stores.storage import S3Store
from offset_restore.validation import describe
from offset_restore.workflow.settings import SnapshotSettings, read_secret

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["SnapshotRequest", "scheduled_snapshot"]


class SnapshotRequest(BaseModel):
    """The event: filters as in the CLI; an EventBridge schedule may send ``{}``."""

    model_config = ConfigDict(extra="ignore")

    groups: str | None = None
    exclude_groups: str | None = DEFAULT_EXCLUDE_GROUPS
    topics: str | None = None
    evidence_records: int = Field(default=3, ge=0, le=100)
    snapshot_id: str | None = None


def scheduled_snapshot(event: dict[str, object] | None, settings: SnapshotSettings, s3: S3Client) -> SnapshotResult:
    """Take the snapshot the event asks for (a bad one is refused by name, nothing taken) and store it."""
    try:
        request = SnapshotRequest.model_validate(event or {})
        options = SnapshotOptions(cluster=settings.source.name, **request.model_dump())
    except ValueError as error:  # pydantic's ValidationError is one
        raise BadInputError(f"invalid snapshot request: {describe(error)}") from None
    store = S3Store(settings.bucket, settings.prefix, s3)
    return run_snapshot(settings.source.connection(read_secret), store, options)
