"""The local workflow's shortcut for DynamoDB answers must give boto3 exactly what moto's own
serializer gives, for every kind of attribute and answer the project meets."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.core.responses import ActionResult
from offset_restore.devtools.local_aws import REGION, TABLE, Invocation, accounted_to, local_workflow
from offset_restore.formats.plan import Status
from offset_restore.stores.mappings import MappingStore

from tests.helpers import plan_entry

ITEM: dict[str, Any] = {
    "pk": {"S": "odd"},
    "sk": {"S": "kinds"},
    "n": {"N": "-12.5"},
    "b": {"B": b"\x00\xffbytes"},
    "ss": {"SS": ["a", "é"]},
    "ns": {"NS": ["1", "2"]},
    "m": {"M": {"x": {"L": [{"S": "y"}, {"NULL": True}, {"BOOL": False}, {"N": "3"}]}}},
    "u": {"S": 'ünïcode \u2603 "quoted"'},
}

STATUSES: tuple[Status, ...] = ("mapped", "pending")


def test_plain_answers_equal_moto_serializer() -> None:
    moto_serializer = vars(ActionResult)["execute_result"]
    with local_workflow("127.0.0.1:1", "127.0.0.1:2"):
        shortcut = vars(ActionResult)["execute_result"]
        assert shortcut is not moto_serializer
        client: Any = boto3.client("dynamodb", region_name=REGION)
        store = MappingStore(TABLE, client)
        store.put("r", [plan_entry(f"g{i}", p, s) for i in range(30) for p, s in enumerate(STATUSES)])
        client.put_item(TableName=TABLE, Item=ITEM)

        def both(call: Callable[[], Any]) -> None:
            answers = []
            for serializer in (shortcut, moto_serializer):
                ActionResult.execute_result = serializer  # type: ignore[method-assign]
                try:
                    answer = call()
                    answer.pop("ResponseMetadata", None)
                    answers.append(answer)
                except ClientError as error:
                    answers.append(("error", error.response["Error"]["Code"]))
                finally:
                    ActionResult.execute_result = shortcut  # type: ignore[method-assign]
            assert answers[0] == answers[1]

        pk = {":pk": {"S": "r"}}
        both(lambda: client.query(TableName=TABLE, KeyConditionExpression="pk = :pk", ExpressionAttributeValues=pk))
        both(
            lambda: client.query(
                TableName=TABLE, KeyConditionExpression="pk = :pk", ExpressionAttributeValues=pk, Limit=7
            )
        )
        both(lambda: client.get_item(TableName=TABLE, Key={"pk": ITEM["pk"], "sk": ITEM["sk"]}))
        both(lambda: client.get_item(TableName=TABLE, Key={"pk": {"S": "none"}, "sk": {"S": "none"}}))
        both(lambda: client.scan(TableName=TABLE))
        keys = [{"pk": {"S": "odd"}, "sk": {"S": "kinds"}}, {"pk": {"S": "none"}, "sk": {"S": "x"}}]
        both(lambda: client.batch_get_item(RequestItems={TABLE: {"Keys": keys}}))
        both(lambda: client.batch_write_item(RequestItems={TABLE: [{"PutRequest": {"Item": ITEM}}]}))
        both(
            lambda: client.update_item(
                TableName=TABLE,
                Key={"pk": ITEM["pk"], "sk": ITEM["sk"]},
                UpdateExpression="SET n = :n",
                ExpressionAttributeValues={":n": {"N": "1"}},
                ReturnValues="ALL_NEW",
            )
        )
        both(
            lambda: client.put_item(
                TableName=TABLE, Item=ITEM, ConditionExpression="attribute_not_exists(pk)", ReturnValues="NONE"
            )
        )
        both(lambda: client.describe_table(TableName=TABLE))
    assert vars(ActionResult)["execute_result"] is moto_serializer


def test_a_failed_condition_is_still_an_error() -> None:
    with local_workflow("127.0.0.1:1", "127.0.0.1:2"):
        client: Any = boto3.client("dynamodb", region_name=REGION)
        client.put_item(TableName=TABLE, Item=ITEM)
        with pytest.raises(ClientError, match="ConditionalCheckFailed"):
            client.put_item(TableName=TABLE, Item=ITEM, ConditionExpression="attribute_not_exists(pk)")


def test_an_item_over_the_size_limit_is_still_refused() -> None:
    with local_workflow("127.0.0.1:1", "127.0.0.1:2"):
        client: Any = boto3.client("dynamodb", region_name=REGION)
        big = {"pk": {"S": "big"}, "sk": {"S": "x"}, **{f"a{i}": {"S": "x" * 100_000} for i in range(5)}}
        with pytest.raises(ClientError, match="Item size has exceeded the maximum allowed size"):
            client.put_item(TableName=TABLE, Item=big)
        client.put_item(TableName=TABLE, Item={**big, "a4": {"S": "x"}})  # 400,000 bytes fit
        assert "Item" in client.get_item(TableName=TABLE, Key={"pk": {"S": "big"}, "sk": {"S": "x"}})


def test_requests_a_handler_sends_a_few_at_once_count_for_its_invocation() -> None:
    """A save of 500 mappings is 20 BatchWriteItems on the mapping store's worker threads: the local
    runner counts every one for the invocation, and its time in AWS once while they overlap."""
    with local_workflow("127.0.0.1:1", "127.0.0.1:2"):
        store = MappingStore(TABLE, boto3.client("dynamodb", region_name=REGION))
        entries = [plan_entry(f"g{i:04d}", 0, "mapped", offset=i) for i in range(500)]
        record = Invocation("Commit", 0.0, 0.0, None, True)
        started = time.perf_counter()
        with accounted_to(record):
            store.save("r", entries)
            assert len(store.entries("r")) == 500
        elapsed = time.perf_counter() - started
    assert record.aws_calls["dynamodb.BatchWriteItem"] == 20
    assert record.aws_calls["dynamodb.ItemsWritten"] == 500
    assert record.aws_calls["dynamodb.Query"] == 1
    assert 0 < record.aws_seconds <= elapsed
    assert record.in_flight == 0


def test_a_full_collection_on_a_handlers_thread_is_left_out_of_its_own_time() -> None:
    """A full collection walks every object of the process (moto's tables too): its time is counted
    apart (``gc_seconds``) and not in the handler's own time; a young one stays in."""
    import gc

    with local_workflow("127.0.0.1:1", "127.0.0.1:2"):
        kept = [[i] for i in range(300_000)]  # objects for the collection to walk, as moto's items are
        record = Invocation("Commit", 0.0, 0.0, None, True)
        with accounted_to(record):
            started = time.perf_counter()
            gc.collect(2)
            gc.collect(0)
            record.seconds = time.perf_counter() - started
        del kept
    assert 0 < record.gc_seconds <= record.seconds
    assert record.own_seconds == max(0.0, record.seconds - record.gc_seconds)
    assert record.gc_cpu_seconds > 0


def test_a_handler_working_while_its_requests_are_in_flight_keeps_that_work_in_its_own_time() -> None:
    """Alone, the own time is the wall time outside AWS requests, or the thread's CPU time outside
    them where that is more: Prepare builds the next work item while the last ones are being written."""
    overlapped = Invocation("Prepare", 1.0, 0.5, None, True, aws_seconds=0.9, aws_cpu_seconds=0.0)
    assert overlapped.own_seconds == pytest.approx(0.5)
    waited = Invocation("CheckEmpty", 1.0, 0.1, None, True, aws_seconds=0.2, aws_cpu_seconds=0.05)
    assert waited.own_seconds == pytest.approx(0.8)  # waiting on Kafka is its own time
    together = Invocation("Commit", 9.0, 0.7, None, False, aws_cpu_seconds=0.2, gc_cpu_seconds=0.1)
    assert together.own_seconds == pytest.approx(0.4)


def test_moto_dynamodb_answers_a_query_while_other_threads_write() -> None:
    """The local workflow runs a Map's items as threads of one process, and moto's tables take no lock: a
    Query iterated every item while another thread's write added one. Four Translate invocations of a
    120,000 group-partition run failed so (``RuntimeError: dictionary changed size during iteration``),
    which DynamoDB never answers. Queries now read one partition key's items (``moto_query``); a Scan
    still iterates every item: writers add items under new keys while a reader scans, for a while."""
    import threading

    with local_workflow("127.0.0.1:1", "127.0.0.1:2"):
        client: Any = boto3.client("dynamodb", region_name=REGION)
        for n in range(2_000):
            client.put_item(TableName=TABLE, Item={"pk": {"S": f"seed-{n}"}, "sk": {"S": "x"}})
        stop, failures = threading.Event(), list[BaseException]()

        def write(name: str) -> None:
            writer: Any = boto3.client("dynamodb", region_name=REGION)
            n = 0
            while not stop.is_set():
                writer.put_item(TableName=TABLE, Item={"pk": {"S": f"{name}-{n}"}, "sk": {"S": "x"}})
                n += 1

        writers = [threading.Thread(target=write, args=(f"w{i}",)) for i in range(3)]
        for thread in writers:
            thread.start()
        try:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not failures:
                try:
                    client.scan(TableName=TABLE, Limit=20)
                except RuntimeError as error:
                    failures.append(error)
        finally:
            stop.set()
            for thread in writers:
                thread.join()
        assert not failures, failures[0]
