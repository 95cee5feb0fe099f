"""The local workflow's moto Query (``devtools/moto_query.py``) answers every page as moto's own Query does:
both are asked the same Queries of one table, page by page, and must give the same items, counts and start
keys."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.models.table import Table
from offset_restore.devtools.local_aws import REGION, TABLE, create_table
from offset_restore.devtools.moto_query import partition_query


@pytest.fixture
def client() -> Iterator[Any]:
    with mock_aws():
        dynamodb: Any = boto3.client("dynamodb", region_name=REGION)
        create_table(dynamodb)
        for pk in ("RESTORE#a", "RESTORE#b", "RESTORE#'quoted\nnewline"):
            for n in range(300):
                item = {"pk": {"S": pk}, "sk": {"S": f"M#{n % 7}#{n:05d}"}, "n": {"N": str(n)}}
                if n % 50 == 0:
                    item["blob"] = {"S": "x" * 300_000}  # pages cut by moto's 1 MB limit, not only by Limit
                dynamodb.put_item(TableName=TABLE, Item=item)
        yield dynamodb


QUERIES: list[dict[str, Any]] = [
    {"KeyConditionExpression": "pk = :pk", "ExpressionAttributeValues": {":pk": {"S": "RESTORE#a"}}},
    {"KeyConditionExpression": "pk = :pk", "ExpressionAttributeValues": {":pk": {"S": "RESTORE#a"}}, "Limit": 37},
    {
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": {":pk": {"S": "RESTORE#b"}},
        "Limit": 1,
        "ScanIndexForward": False,
    },
    {
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :p)",
        "ExpressionAttributeValues": {":pk": {"S": "RESTORE#'quoted\nnewline"}, ":p": {"S": "M#3#"}},
        "Limit": 11,
    },
    {
        "KeyConditionExpression": "pk = :pk AND sk BETWEEN :lo AND :hi",
        "ExpressionAttributeValues": {":pk": {"S": "RESTORE#b"}, ":lo": {"S": "M#2#"}, ":hi": {"S": "M#4#"}},
        "Limit": 25,
        "ScanIndexForward": False,
    },
    {
        "KeyConditionExpression": "pk = :pk AND sk > :after",
        "FilterExpression": "n > :least",
        "ExpressionAttributeValues": {":pk": {"S": "RESTORE#a"}, ":after": {"S": "M#5#"}, ":least": {"N": "120"}},
        "Limit": 9,
    },
    {"KeyConditionExpression": "pk = :pk", "ExpressionAttributeValues": {":pk": {"S": "RESTORE#none"}}, "Limit": 5},
]


def _pages(dynamodb: Any, query: dict[str, Any]) -> list[tuple[list[str], int, Any]]:
    """Every page of ``query``: its sort keys, its scanned count and where the next page starts."""
    pages: list[tuple[list[str], int, Any]] = []
    start: dict[str, Any] | None = None
    while True:
        answer = dynamodb.query(TableName=TABLE, **query, **({"ExclusiveStartKey": start} if start else {}))
        start = answer.get("LastEvaluatedKey")
        pages.append(([item["sk"]["S"] for item in answer["Items"]], answer["ScannedCount"], start))
        if start is None:
            return pages


@pytest.mark.parametrize("query", QUERIES, ids=range(len(QUERIES)))
def test_every_page_is_the_page_moto_itself_answers(client: Any, query: dict[str, Any]) -> None:
    expected = _pages(client, query)
    original = vars(Table)["query"]
    Table.query = partition_query(original)  # type: ignore[method-assign]
    try:
        served = _pages(client, query)
    finally:
        Table.query = original  # type: ignore[method-assign]
    assert served == expected
    assert sum(len(items) for items, _, _ in expected) > 0 or query["ExpressionAttributeValues"][":pk"]["S"].endswith(
        "none"
    )
