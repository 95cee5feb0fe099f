"""Restore-progress checkpoints (docs/design.md §5.4): pairs (source offset -> target offset) that a restore
tool writes while it copies a partition, read by the ``checkpoint`` strategy.

Item: ``pk = PROGRESS#<target cluster>#<target topic>#<partition>``, ``sk`` = the source offset
zero-padded to 20 digits, attribute ``target_offset`` (number). The pair says: the record at this
source offset was written at this target offset.

A restore tool that finished a partition says so with the item ``sk = COMPLETE`` (attribute
``last_source_offset``, number: the last source offset it restored): the plan then treats the
partition as declared complete (``restore_complete``). Its sort key sorts after every pair's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from offset_restore.heap import collections_resumed
from offset_restore.stores.batches import batch_get
from offset_restore.stores.keys import COMPLETE_SK, progress_key, progress_sk

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = [
    "Checkpoint",
    "CheckpointReader",
    "CollectedCheckpoints",
    "DynamoCheckpoints",
    "MemoryCheckpoints",
]

_HIGHEST = "9" * 20
"""Above every pair's sort key and below ``COMPLETE_SK``: ranges of pairs end here."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    source_offset: int
    target_offset: int


class CheckpointReader(Protocol):
    def floor(self, cluster: str, topic: str, partition: int, source_offset: int) -> Checkpoint | None: ...
    def ceiling(self, cluster: str, topic: str, partition: int, source_offset: int) -> Checkpoint | None: ...
    def last(self, cluster: str, topic: str, partition: int) -> Checkpoint | None: ...
    def completed(self, cluster: str, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]: ...


class MemoryCheckpoints:
    """For tests and for restore tools that hand pairs over in process."""

    def __init__(
        self,
        pairs: dict[tuple[str, str, int], list[Checkpoint]] | None = None,
        complete: dict[tuple[str, str, int], int] | None = None,
    ) -> None:
        self.pairs = {k: sorted(v, key=lambda c: c.source_offset) for k, v in (pairs or {}).items()}
        self.complete = dict(complete or {})

    def completed(self, cluster: str, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        return {(t, p): self.complete[(cluster, t, p)] for t, p in partitions if (cluster, t, p) in self.complete}

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


class CollectedCheckpoints:
    """A reader whose every call runs with the garbage collector on (``heap.collections_resumed``): the plan
    decides with it paused, and a DynamoDB client's requests leave cycles that would wait for the plan's end."""

    def __init__(self, reader: CheckpointReader) -> None:
        self.reader = reader

    def floor(self, cluster: str, topic: str, partition: int, source_offset: int) -> Checkpoint | None:
        with collections_resumed():
            return self.reader.floor(cluster, topic, partition, source_offset)

    def ceiling(self, cluster: str, topic: str, partition: int, source_offset: int) -> Checkpoint | None:
        with collections_resumed():
            return self.reader.ceiling(cluster, topic, partition, source_offset)

    def last(self, cluster: str, topic: str, partition: int) -> Checkpoint | None:
        with collections_resumed():
            return self.reader.last(cluster, topic, partition)

    def completed(self, cluster: str, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        with collections_resumed():
            return self.reader.completed(cluster, partitions)


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
            progress_key(cluster, topic, partition), " AND sk <= :sk", {":sk": {"S": progress_sk(source_offset)}}, False
        )

    def ceiling(self, cluster: str, topic: str, partition: int, source_offset: int) -> Checkpoint | None:
        return self._one(
            progress_key(cluster, topic, partition),
            " AND sk BETWEEN :sk AND :top",
            {":sk": {"S": progress_sk(source_offset)}, ":top": {"S": _HIGHEST}},
            True,
        )

    def last(self, cluster: str, topic: str, partition: int) -> Checkpoint | None:
        return self._one(progress_key(cluster, topic, partition), " AND sk <= :top", {":top": {"S": _HIGHEST}}, False)

    def completed(self, cluster: str, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """The partitions whose restore tool recorded that it finished, with its last source offset
        (``batch_get``: 100 keys a BatchGetItem, a few at once, keys left unprocessed asked again)."""
        wanted = sorted(set(partitions))
        found: dict[tuple[str, int], int] = {}
        keys = [{"pk": {"S": progress_key(cluster, t, p)}, "sk": {"S": COMPLETE_SK}} for t, p in wanted]
        for item in batch_get(self.client, self.table, keys, f"the restore progress of cluster {cluster}"):
            _, _, topic, partition = item["pk"]["S"].rsplit("#", 3)
            last = item.get("last_source_offset", {}).get("N", "")
            if last.isdigit():  # an item without its last offset says nothing usable
                found[(topic, int(partition))] = int(last)
        return found
