"""One run per restore id (docs/design.md §5.4: ``pk=RESTORE#<restore_id>``, ``sk=META``).

A restore id names one restore: the snapshot it was made from, the groups and topics it selected,
the topic map and strategies, the target. The first run of an id records that resolved input; a
later run with the same id must resolve to the same input — a plan run and then an apply run of one
restore, or a run started again after a failure — or it is refused with the difference named. So a
reused id can never commit mappings made for other groups, or from an older snapshot.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from offset_restore.errors import BadInputError
from offset_restore.stores.conditional import conditional_write
from offset_restore.stores.keys import META_SK, restore_pk

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["RunRecord"]


class RunRecord:
    def __init__(self, table: str, client: DynamoDBClient) -> None:
        self.table, self.client = table, client

    def claim(self, restore_id: str, resolved: Mapping[str, Any], now: float | None = None) -> None:
        """Record ``resolved`` as this restore's input, or check it equals the one recorded."""
        document = json.dumps(resolved, sort_keys=True)
        recorded = conditional_write(
            self.client.put_item,
            TableName=self.table,
            Item={
                "pk": {"S": restore_pk(restore_id)},
                "sk": {"S": META_SK},
                "run_input": {"S": document},
                "created_at": {"N": str(int(time.time() if now is None else now))},
            },
            ConditionExpression="attribute_not_exists(pk) OR run_input = :same",
            ExpressionAttributeValues={":same": {"S": document}},
        )
        if not recorded:
            raise BadInputError(self._refusal(restore_id, resolved))

    def resolved(self, restore_id: str) -> dict[str, Any]:
        """The input the restore was first run with ({} when none was recorded)."""
        return _input_of(self._record(restore_id))

    def target_of(self, restore_id: str) -> tuple[str | None, str | None]:
        """The target cluster the restore was run against: its name (from the input) and the id of the
        brokers it committed to, each None when not recorded; one read."""
        item = self._record(restore_id)
        return _input_of(item).get("target_cluster"), item.get("target_cluster_id", {}).get("S")

    def _record(self, restore_id: str) -> dict[str, Any]:
        """The restore's ``META`` item ({} when there is none)."""
        return dict(
            self.client.get_item(
                TableName=self.table,
                Key={"pk": {"S": restore_pk(restore_id)}, "sk": {"S": META_SK}},
                ConsistentRead=True,
            ).get("Item", {})
        )

    def committed_to(self, restore_id: str, cluster_id: str) -> None:
        """Record the id of the cluster the restore commits to, before its first commit; a restore
        already committed to another cluster (the same name, other brokers) is refused. A rollback
        checks its brokers against this id: names can be typed wrong, ids cannot."""
        recorded = conditional_write(
            self.client.update_item,
            TableName=self.table,
            Key={"pk": {"S": restore_pk(restore_id)}, "sk": {"S": META_SK}},
            UpdateExpression="SET target_cluster_id = if_not_exists(target_cluster_id, :id)",
            # Only on a restore's record (a commit outside a workflow run has none to add it to).
            ConditionExpression="attribute_exists(pk) AND "
            "(attribute_not_exists(target_cluster_id) OR target_cluster_id = :id)",
            ExpressionAttributeValues={":id": {"S": cluster_id}},
        )
        committed = None if recorded else self.target_of(restore_id)[1]
        if committed is not None:
            raise BadInputError(
                f"restore {restore_id} was committed to the cluster with id {committed}, "
                f"but these brokers are cluster {cluster_id}: start a new restore_id for this cluster"
            )

    def _refusal(self, restore_id: str, resolved: Mapping[str, Any]) -> str:
        first = self.resolved(restore_id)
        differences = [
            f"{name} {json.dumps(first.get(name))} then, {json.dumps(resolved.get(name))} now"
            for name in sorted(set(first) | set(resolved))
            if first.get(name) != resolved.get(name)
        ]
        return (
            f"restore_id {restore_id} names a restore already made with another input ({'; '.join(differences)}): "
            "its mappings belong to that input. Start this one with a new restore_id, or give the same input "
            '(e.g. snapshot {"id": ...} of that run)'
        )


def _input_of(item: Mapping[str, Any]) -> dict[str, Any]:
    return dict(json.loads(item.get("run_input", {}).get("S", "{}")))
