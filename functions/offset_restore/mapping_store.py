"""Plan entries in DynamoDB (DESIGN §5.4): ``pk=RESTORE#<restore_id>``, ``sk=MAP#<group>#<topic>#<partition>``.

Writes are conditional so that re-running a translation is harmless: a new entry is written, a
``pending`` or ``unmapped`` one may be replaced (the restore moved on), anything else — a mapping
already made, or committed — stays as it is.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from offset_restore.errors import StorageError
from offset_restore.plan_model import PlanEntry

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["MappingStore", "entry_key"]

REPLACEABLE = ("pending", "unmapped")


def entry_key(restore_id: str, entry: PlanEntry) -> dict[str, dict[str, str]]:
    return {
        "pk": {"S": f"RESTORE#{restore_id}"},
        "sk": {"S": f"MAP#{entry.group}#{entry.topic}#{entry.partition}"},
    }


def _attribute(value: Any) -> dict[str, Any]:
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int):
        return {"N": str(value)}
    return {"S": str(value)}


def _value(attribute: Mapping[str, Any]) -> Any:
    if "NULL" in attribute:
        return None
    if "BOOL" in attribute:
        return attribute["BOOL"]
    if "N" in attribute:
        return int(attribute["N"])
    return attribute["S"]


class MappingStore:
    def __init__(self, table: str, client: DynamoDBClient) -> None:
        self.table = table
        self.client = client

    def put(self, restore_id: str, entries: Iterable[PlanEntry]) -> dict[str, int]:
        """Returns how many entries were ``written`` and how many left ``unchanged``."""
        from botocore.exceptions import ClientError

        counts = {"written": 0, "unchanged": 0}
        for entry in entries:
            item = {**entry_key(restore_id, entry)}
            for name, value in entry.model_dump(mode="json").items():
                item[name] = _attribute(value)
            try:
                self.client.put_item(
                    TableName=self.table,
                    Item=item,
                    ConditionExpression="attribute_not_exists(pk) OR #status IN (:pending, :unmapped)",
                    ExpressionAttributeNames={"#status": "status"},
                    ExpressionAttributeValues={":pending": {"S": "pending"}, ":unmapped": {"S": "unmapped"}},
                )
                counts["written"] += 1
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                    raise StorageError(
                        f"cannot write mapping {entry.group} {entry.topic}/{entry.partition} "
                        f"to table {self.table}: {error}"
                    ) from None
                counts["unchanged"] += 1
        return counts

    def save(self, restore_id: str, entries: Iterable[PlanEntry]) -> None:
        """Overwrite entries as apply changed them (status, previous offsets, verification), 25 per
        BatchWriteItem. Only apply calls this, under the target cluster's lock."""
        from botocore.exceptions import ClientError

        items = []
        for entry in entries:
            item = {**entry_key(restore_id, entry)}
            for name, value in entry.model_dump(mode="json").items():
                item[name] = _attribute(value)
            items.append({"PutRequest": {"Item": item}})
        for start in range(0, len(items), 25):
            requests: Any = {self.table: items[start : start + 25]}
            for attempt in range(8):
                try:
                    answer = self.client.batch_write_item(RequestItems=requests)
                except ClientError as error:
                    raise StorageError(f"cannot save mappings of {restore_id} to table {self.table}: {error}") from None
                requests = answer.get("UnprocessedItems") or {}
                if not requests:
                    break
                time.sleep(0.05 * 2**attempt)  # throttled: back off and write the rest
            else:
                raise StorageError(f"table {self.table} kept throttling the mappings of {restore_id}")

    def entries(self, restore_id: str, groups: Iterable[str] | None = None) -> list[PlanEntry]:
        wanted = set(groups) if groups is not None else None
        paginator = self.client.get_paginator("query")
        found = []
        for page in paginator.paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :map)",
            ExpressionAttributeValues={":pk": {"S": f"RESTORE#{restore_id}"}, ":map": {"S": "MAP#"}},
            ConsistentRead=True,
        ):
            for item in page.get("Items", []):
                values = {k: _value(v) for k, v in item.items() if k not in ("pk", "sk")}
                if wanted is None or values["group"] in wanted:
                    found.append(PlanEntry.model_validate(values))
        return found
