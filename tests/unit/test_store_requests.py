"""Items read raw from DynamoDB's JSON (stores/raw_items.py) equal botocore's parse of them, and the
requests sent a few at once (stores/in_flight.py) all end before a save returns or fails."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from offset_restore.errors import StorageError
from offset_restore.formats.plan import PlanEntry
from offset_restore.stores.in_flight import IN_FLIGHT, InFlight, concurrently
from offset_restore.stores.mappings import MappingStore, entry_of
from offset_restore.stores.raw_items import keep_items_raw

ITEMS: list[dict[str, Any]] = [
    {
        "pk": {"S": "p"},
        "sk": {"S": f"MAP#g{i:03d}#t#0"},
        "n": {"N": str(i * 1_000_000_007)},
        "nested": {"M": {"none": {"NULL": True}, "flag": {"BOOL": i % 2 == 0}, "deep": {"M": {"x": {"N": "-3"}}}}},
        "text": {"S": f'a "B": lookalike, \\ quotes\nand a newline, é {i}'},
        "list": {"L": [{"S": "one"}, {"N": "2"}]},
        "strings": {"SS": ["x", "y"]},
    }
    for i in range(40)
]


def _clients(table: str) -> tuple[Any, Any]:
    region = os.environ["AWS_DEFAULT_REGION"]
    plain, raw = boto3.client("dynamodb", region_name=region), boto3.client("dynamodb", region_name=region)
    for item in ITEMS:
        plain.put_item(TableName=table, Item=item)
    return plain, keep_items_raw(keep_items_raw(raw))  # registered twice: still once


def _pages(client: Any, table: str) -> list[dict[str, Any]]:
    """Every page of the query, 7 items a page, without the request's metadata."""
    pages = client.get_paginator("query").paginate(
        TableName=table,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :map)",
        ExpressionAttributeValues={":pk": {"S": "p"}, ":map": {"S": "MAP#"}},
        Limit=7,
    )
    return [{k: v for k, v in page.items() if k != "ResponseMetadata"} for page in pages]


def test_query_pages_read_raw_equal_botocores(table: str) -> None:
    plain, raw = _clients(table)
    expected, got = _pages(plain, table), _pages(raw, table)
    assert len(got) == 6  # 40 items, 7 a page: the next page's key still parsed
    assert got == expected
    assert [item["sk"] for page in got for item in page["Items"]] == [item["sk"] for item in ITEMS]


def test_batch_get_read_raw_equals_botocores(table: str) -> None:
    plain, raw = _clients(table)
    keys = [{"pk": item["pk"], "sk": item["sk"]} for item in ITEMS[:30]]
    request = {table: {"Keys": keys, "ConsistentRead": True}}

    def answer(client: Any) -> tuple[list[Any], Any]:
        got = client.batch_get_item(RequestItems=request)
        return sorted(got["Responses"][table], key=lambda i: i["sk"]["S"]), got["UnprocessedKeys"]

    assert answer(raw) == answer(plain)
    assert len(answer(raw)[0]) == 30


def test_a_binary_attribute_is_left_to_botocore(table: str) -> None:
    _, raw = _clients(table)
    raw.put_item(TableName=table, Item={"pk": {"S": "p"}, "sk": {"S": "MAP#zz"}, "blob": {"B": b"\x00\xff"}})
    raw.put_item(TableName=table, Item={"pk": {"S": "p"}, "sk": {"S": "MAP#zzz"}, "blobs": {"BS": [b"\x01"]}})
    items = [item for page in _pages(raw, table) for item in page["Items"]]
    assert {"B": b"\x00\xff"} in [item.get("blob") for item in items]  # bytes, as botocore decodes them
    assert {"BS": [b"\x01"]} in [item.get("blobs") for item in items]


def test_errors_still_raise_as_botocores(table: str) -> None:
    _, raw = _clients(table)
    with pytest.raises(ClientError, match="ResourceNotFoundException"):
        raw.query(
            TableName="no-such-table", KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "p"}}
        )


def _entries(count: int) -> list[PlanEntry]:
    return [
        PlanEntry(
            group=f"group-{i:05d}",
            topic="orders",
            partition=i % 7,
            target_topic="orders",
            source_offset=i,
            status="pending",
        )
        for i in range(count)
    ]


def test_a_save_of_many_batches_lands_whole_and_reads_back_equal(table: str) -> None:
    store = MappingStore(table, boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"]))
    entries = _entries(260)  # 11 BatchWriteItems (more than the 8 in flight at once), 3 BatchGetItems
    assert store.put("r-1", entries) == {"written": 260, "unchanged": 0}
    for number, entry in enumerate(entries):
        if number % 3:
            entry.status, entry.target_offset, entry.method, entry.exact = "mapped", number, "header", True
        else:
            entry.status, entry.reason = "unmapped", "changed"
    store.save("r-1", entries)
    assert sorted(store.entries("r-1"), key=lambda e: e.group) == entries
    keys = [f"MAP#{e.group}#{e.topic}#{e.partition}" for e in entries[::-1]]
    assert sorted(store.entries_by_keys("r-1", keys), key=lambda e: e.group) == entries
    assert store.put("r-1", entries) == {"written": 87, "unchanged": 173}  # the unmapped ones replaced


def test_raw_items_read_back_as_the_entries_written(table: str) -> None:
    client = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"])
    store = MappingStore(table, client)
    entry = _entries(1)[0]
    entry.source_positions = {0: 12, 3: 40}
    store.save("r-2", [entry])
    item = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"]).query(
        TableName=table, KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": {"S": "RESTORE#r-2"}}
    )["Items"][0]
    assert store.entries("r-2") == [entry] == [entry_of(item)]


class Width:
    """How many calls ran at once, at most: each call sleeps a little inside ``running``."""

    def __init__(self) -> None:
        self.lock, self.now, self.most = threading.Lock(), 0, 0

    def running(self) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.01)
        with self.lock:
            self.now -= 1


def test_concurrently_keeps_order_and_sends_a_few_at_once() -> None:
    width = Width()

    def send(chunk: int) -> int:
        width.running()
        return chunk * 2

    assert concurrently(send, list(range(30))) == [c * 2 for c in range(30)]
    assert 1 < width.most <= IN_FLIGHT


def test_concurrently_raises_only_after_every_chunk_ended() -> None:
    ended: list[int] = []

    def send(chunk: int) -> None:
        if chunk == 0:
            raise StorageError("table t kept throttling the mappings of r")
        time.sleep(0.02)
        ended.append(chunk)

    with pytest.raises(StorageError, match="kept throttling"):
        concurrently(send, list(range(12)))
    assert sorted(ended) == list(range(1, 12))  # nothing left in flight when the error goes up


def test_in_flight_holds_a_producer_to_its_width_and_raises_after_all_ended() -> None:
    width, ended = Width(), []

    def put(number: int) -> None:
        width.running()
        if number == 4:
            raise StorageError("cannot write restores/r/work/item-00004.json")
        ended.append(number)

    with pytest.raises(StorageError, match="item-00004"), InFlight(3) as flight:
        for number in range(20):
            flight.submit(put, number)
            assert len(flight.running) <= 3  # the documents held are the ones in flight
    assert width.most == 3
    assert sorted(ended) == [n for n in range(20) if n != 4]
