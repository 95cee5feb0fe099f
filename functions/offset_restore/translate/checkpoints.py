"""Restore-progress checkpoints (docs/design.md §5.4): pairs (source offset -> target offset) that a restore
tool writes while it copies a partition, read by the ``checkpoint`` strategy.

Item: ``pk = PROGRESS#<target cluster>#<target topic>#<partition>``, ``sk`` = the source offset
zero-padded to 20 digits, attribute ``target_offset`` (number). The pair says: the record at this
source offset was written at this target offset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["Checkpoint", "CheckpointReader", "DynamoCheckpoints", "MemoryCheckpoints", "progress_key", "sort_key"]


@dataclass(frozen=True, slots=True)
class Checkpoint:
    source_offset: int
    target_offset: int


def progress_key(cluster: str, topic: str, partition: int) -> str:
    return f"PROGRESS#{cluster}#{topic}#{partition}"


def sort_key(source_offset: int) -> str:
    return f"{source_offset:020d}"


class CheckpointReader(Protocol):
    def floor(self, cluster: str, topic: str, partition: int, source_offset: int) -> Checkpoint | None: ...
    def ceiling(self, cluster: str, topic: str, partition: int, source_offset: int) -> Checkpoint | None: ...
    def last(self, cluster: str, topic: str, partition: int) -> Checkpoint | None: ...


class MemoryCheckpoints:
    """For tests and for restore tools that hand pairs over in process."""

    def __init__(self, pairs: dict[tuple[str, str, int], list[Checkpoint]] | None = None) -> None:
        self.pairs = {k: sorted(v, key=lambda c: c.source_offset) for k, v in (pairs or {}).items()}

    def _of(self, cluster: str, topic: str, partition: int) -> list[Checkpoint]:
        return self.pairs.get((cluster, topic, partition), [])

    def floor(self, cluster: str, topic: str, partition: int, source_offset: int) -> Checkpoint | None:
        below = [c for c in self._of(cluster, topic, partition) if c.source_offset <= source_offset]
        return below[-1] if below else None

    def ceiling(self, cluster: str, topic: str, partition: int, source_offset: int) -> Checkpoint | None:
        return next((c for c in self._of(cluster, topic, partition) if c.source_offset >= source_offset), None)

    def last(self, cluster: str, topic: str, partition: int) -> Checkpoint | None:
        pairs = self._of(cluster, topic, partition)
        return pairs[-1] if pairs else None


class DynamoCheckpoints:
    """Reads pairs with one Query each (newest-first or oldest-first, limit 1)."""

    def __init__(self, table: str, client: DynamoDBClient) -> None:
        self.table = table
        self.client = client

    def _one(self, pk: str, condition: str, values: dict[str, Any], forward: bool) -> Checkpoint | None:
        answer = self.client.query(
            TableName=self.table,
            KeyConditionExpression=f"pk = :pk{condition}",
            ExpressionAttributeValues={":pk": {"S": pk}, **values},
            ScanIndexForward=forward,
            Limit=1,
            ConsistentRead=True,
        )
        items = answer.get("Items", [])
        if not items:
            return None
        return Checkpoint(int(items[0]["sk"]["S"]), int(items[0]["target_offset"]["N"]))

    def floor(self, cluster: str, topic: str, partition: int, source_offset: int) -> Checkpoint | None:
        return self._one(
            progress_key(cluster, topic, partition), " AND sk <= :sk", {":sk": {"S": sort_key(source_offset)}}, False
        )

    def ceiling(self, cluster: str, topic: str, partition: int, source_offset: int) -> Checkpoint | None:
        return self._one(
            progress_key(cluster, topic, partition), " AND sk >= :sk", {":sk": {"S": sort_key(source_offset)}}, True
        )

    def last(self, cluster: str, topic: str, partition: int) -> Checkpoint | None:
        return self._one(progress_key(cluster, topic, partition), "", {}, False)
