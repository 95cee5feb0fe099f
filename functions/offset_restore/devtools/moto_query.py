"""moto's DynamoDB Query, answered from the one partition key asked: the same pages, without sorting the table.

moto answers every Query on a table by sorting all of its items (``Table.all_items``, comparing
``DynamoType`` objects in Python), keeping those of the partition key, sorting them again, then walking
past every item of the pages before ``ExclusiveStartKey``. A local workflow at 120,000 group-partitions
holds about 360,000 items in one table: each page of Summarize's reading of the mappings, and each
progress-pair Query of a Translate invocation, sorted all of them, and the run spent most of an hour in
moto. Here a Query of the table itself (not an index) on a string sort key is handed only the items of
its partition key, in order, from after the start key, up to the first item past the page's limits:
moto then builds the same page from them (its own limit, size, condition and filter code runs
unchanged). Any other Query goes to moto as it is."""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import RESULT_SIZE_LIMIT, Table

__all__ = ["partition_query"]

Query = Callable[..., tuple[list[Item], int, dict[str, Any] | None]]


def partition_query(original: Query) -> Query:
    """``Table.query`` that serves a Query of the table's own keys from its partition key's items alone."""

    def query(
        table: Table,
        hash_key: DynamoType | None,
        range_comparison: str | None,
        range_objs: list[DynamoType],
        limit: int | None,
        exclusive_start_key: dict[str, Any] | None,
        scan_index_forward: bool,
        projection_expressions: Any,
        index_name: str | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> tuple[list[Item], int, dict[str, Any] | None]:
        bucket = table.items.get(hash_key, {}) if _served(table, hash_key, index_name, kwargs) else None
        if not isinstance(bucket, dict):
            return original(table, hash_key, range_comparison, range_objs, limit, exclusive_start_key,
                            scan_index_forward, projection_expressions, index_name, *args, **kwargs)  # fmt: skip
        page = _page(table, bucket, range_comparison, range_objs, limit, exclusive_start_key, scan_index_forward)
        table.all_items = lambda: page  # type: ignore[method-assign]  # this Query's, while it runs
        try:
            return original(table, hash_key, range_comparison, range_objs, limit, None,
                            scan_index_forward, projection_expressions, index_name, *args, **kwargs)  # fmt: skip
        finally:
            del table.all_items

    return query


_KNOWN = {"hash_key_conditions", "range_key_conditions"}
"""The keyword arguments moto's own Query passes besides a legacy ``QueryFilter`` (counted differently)."""


def _served(table: Table, hash_key: DynamoType | None, index_name: str | None, kwargs: dict[str, Any]) -> bool:
    """Whether the Query reads the table's own keys, a string sort key, with at most one sort key condition
    and no legacy filter: the Queries this project makes."""
    conditions = kwargs.get("range_key_conditions") or []
    return (
        index_name is None
        and hash_key is not None
        and bool(table.range_key_attr)
        and table.range_key_type == "S"
        and len(conditions) <= 1
        and set(kwargs) <= _KNOWN
    )


def _page(
    table: Table,
    bucket: dict[DynamoType, Item],
    comparison: str | None,
    objs: list[DynamoType],
    limit: int | None,
    start: dict[str, Any] | None,
    forward: bool,
) -> list[Item]:
    """The partition's items moto's page may hold, in the order asked, after ``start``: those that pass the
    sort key condition, up to and including the first that would pass the page's count or size limit (moto
    sees it, stops before it and names the page's last item as where the next one starts)."""
    ordered = sorted(bucket.values(), key=lambda item: item.range_key.value)  # type: ignore[union-attr]
    values = [item.range_key.value for item in ordered]  # type: ignore[union-attr]
    if start is not None:
        after = start[table.range_key_attr]["S"]  # type: ignore[index]
        if forward:
            ordered = ordered[bisect.bisect_right(values, after) :]
        else:
            ordered = ordered[: bisect.bisect_left(values, after)]
    if not forward:
        ordered.reverse()
    page: list[Item] = []
    size = 0
    for item in ordered:
        if comparison and not item.range_key.compare(comparison, objs):  # type: ignore[union-attr]
            continue
        page.append(item)
        size += item.size()
        if (limit is not None and len(page) > limit) or size > RESULT_SIZE_LIMIT:
            break
    return page
