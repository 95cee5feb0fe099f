"""The errors the library raises on purpose; each maps to a CLI exit status.

Callers (the CLI, the handlers) catch ``OffsetRestoreError`` and show ``str(error)``: every message
names the thing that is wrong, so an operator in an incident does not need a stack trace.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AlreadyExistsError",
    "BadInputError",
    "ClusterError",
    "ClusterUnreachableError",
    "CommitInterruptedError",
    "OffsetRestoreError",
    "PlanBusyError",
    "SnapshotExistsError",
    "SnapshotNotFoundError",
    "StorageError",
    "WriterFencedError",
]


class OffsetRestoreError(Exception):
    """Base class; ``exit_status`` follows docs/design.md §5.1 (1 failed, 2 bad input)."""

    exit_status = 1


class BadInputError(OffsetRestoreError):
    """The user gave something unusable: a bad regex, location, id or document."""

    exit_status = 2


class SnapshotExistsError(BadInputError):
    """The output location already holds a snapshot with this id; nothing is overwritten."""


class SnapshotNotFoundError(BadInputError):
    """No snapshot matches the id, time or cluster asked for."""


class StorageError(OffsetRestoreError):
    """S3 or the local file system refused a read or write (no bucket, no permission)."""

    exit_status = 2


class AlreadyExistsError(StorageError):
    """A document that is created, never replaced (a plan, a snapshot's files), is there already."""


class PlanBusyError(OffsetRestoreError):
    """Another apply or rollback holds the plan, or changed it since this run read it: nothing of
    either run's record is overwritten."""


class ClusterError(OffsetRestoreError):
    """The Kafka cluster answered with an error we cannot work around."""


class UnreadableBatchError(ClusterError):
    """A record batch the broker sent cannot be read: its CRC-32C does not match (corrupt on disk or
    in flight), or it is compressed with a codec this install cannot decode. Never used, never guessed."""


class ClusterUnreachableError(ClusterError):
    """No broker of the cluster answered within the connect timeout."""


class CommitInterruptedError(ClusterUnreachableError):
    """The cluster stopped answering in the middle of a batch of commits.

    ``answered`` holds the broker's answer per group that got one; ``unanswered`` the groups whose
    commit may or may not have reached the broker. Applying again settles them: it reads the
    target's offsets first and writes only what is not there yet.
    """

    def __init__(self, message: str, answered: dict[str, Any], unanswered: list[str]) -> None:
        super().__init__(message)
        self.answered = answered
        self.unanswered = unanswered


class TranslationIncompleteError(OffsetRestoreError):
    """Group-partitions the run selected have no plan entry once every Translate work item ran: an item
    ended without writing its entries (a failed or stopped invocation a Map let pass). Nothing is
    committed; the same restore id run again translates them."""


class WriterFencedError(OffsetRestoreError):
    """Another writer took the target's fence (``kafka/fence.py``) after this one: this run's write was
    refused by the cluster and wrote nothing; the offsets there are the other writer's."""
