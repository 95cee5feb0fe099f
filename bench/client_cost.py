"""botocore's own CPU for each AWS request a handler makes, measured (``bench/deployed_estimate.py``).

The local runner times every AWS request from ``BaseClient._make_api_call`` in and out, and takes that
time out of the handler's as "moto's time". But that span holds more than moto: botocore's own work
in the handler's thread — validating and serializing the request, signing it, and parsing the answer
(for DynamoDB, a JSON document walked attribute by attribute) — which a Lambda does too. This
measures that part alone, per operation, on this machine's core: each request goes through a real
botocore client (the handlers' kind: ``boto3.client`` with the default configuration) whose HTTP send
is replaced (a ``before-send`` hook) by one that reads the request's body as the HTTP layer would (S3
computes its CRC32 checksum as the body is read) and returns a ready answer of the size the workflow
gets; the thread's CPU time (``time.thread_time``) is read around a number of requests, and the
figure is the median of ``--rounds`` rounds. Left out: the socket's own CPU (writing and reading
the bytes), which the cited latencies and S3's bandwidth stand for.

The requests are the workflow's, at their largest:

- ``dynamodb.Query``: one full page of committed mappings (as Summarize and Report read them, their
  items taken from the JSON by ``stores/raw_items.py``, the rest parsed by botocore): as
  many as fit DynamoDB's 1 MB page, each at its DynamoDB item size (``item_size``, the rules of
  [item-size]); the 120,000 group-partition run read its 120,000 mappings in 56 pages (2,143 an
  average page) where this counts 2,092 a page — the figure is kept per item and charged per page;
- ``dynamodb.BatchGetItem``: 100 keys, 100 whole mappings back (Commit reads its batch so; raw items too);
- ``dynamodb.BatchWriteItem``: 25 whole mappings (Translate and Commit write so);
- ``dynamodb.PutItem``: one item (a lock, an idempotency record; charged for GetItem, UpdateItem and
  DeleteItem too);
- ``s3.PutObject`` with an empty body and with a 1 MB body (the difference is the checksum and copy of
  the body, charged per byte), ``s3.GetObject`` (the answer's headers; the body is read later, in the
  handler's own time), ``s3.ListObjectsV2`` (ten keys), ``sns.Publish``.

[item-size]: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html

    python -m bench.client_cost     # writes bench/results/client-cost.md (about half a minute)
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import boto3
import botocore
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders

RESULTS = Path(__file__).parent / "results"
QUERY_PAGE_BYTES = 1024 * 1024
"""DynamoDB returns at most 1 MB of items per Query request (the items' sizes, not the JSON's)."""


def item_size(item: dict[str, Any]) -> int:
    """An item's size as DynamoDB counts it: each attribute's name in UTF-8 bytes plus its value (a
    string's UTF-8 bytes; a number about one byte per two significant digits, plus one; a boolean or
    null one byte; a map or list three bytes plus one per element, plus its elements)."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _value_size(value: dict[str, Any]) -> int:
    (kind, content), *_ = value.items()
    if kind == "S":
        return len(content.encode())
    if kind == "N":
        digits = content.lstrip("-").replace(".", "").strip("0") or "0"
        return (len(digits) + 1) // 2 + 1
    if kind == "M":
        return 3 + sum(len(k.encode()) + _value_size(v) + 1 for k, v in content.items())
    if kind == "L":
        return 3 + sum(_value_size(v) + 1 for v in content)
    return 1  # BOOL, NULL


class _Body(io.BytesIO):
    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.getvalue()


@dataclass
class _Answer:
    """What the stubbed send returns next: status 200, these headers, this body."""

    headers: dict[str, str]
    body: bytes = b""


def _stubbed(service: str) -> tuple[Any, _Answer]:
    client: Any = boto3.client(
        cast(Any, service), region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    answer = _Answer({})

    def send(request: Any, **_: Any) -> AWSResponse:
        body = request.body  # read as the HTTP layer would: a streamed body's checksum is made as it is read
        while hasattr(body, "read") and body.read(1 << 16):
            pass
        headers = {**answer.headers, "content-length": str(len(answer.body))}
        return AWSResponse(request.url, 200, HTTPHeaders.from_dict(headers), _Body(answer.body))

    client.meta.events.register(f"before-send.{service}", send)
    return client, answer


def cpu_per_call(call: Callable[[], Any], calls: int, rounds: int) -> float:
    """The thread's CPU time of one ``call``: the median of ``rounds`` rounds of ``calls`` calls."""
    call()  # the first request loads the service model and builds the handlers: not per request
    figures = []
    for _ in range(rounds):
        started = time.thread_time()
        for _ in range(calls):
            call()
        figures.append((time.thread_time() - started) / calls)
    return statistics.median(figures)


@dataclass(frozen=True)
class Figure:
    operation: str
    request: str
    seconds: float
    """CPU seconds per request (per item for the Query page, per byte for the body)."""
    unit: str


def _mappings(count: int) -> list[dict[str, Any]]:
    from offset_restore.stores.mappings import MappingStore, entry_key

    from bench.handler_memory import entries

    return [MappingStore._item(entry_key("scale-run", entry), entry) for entry in entries(count)]


def _dynamodb(rounds: int) -> list[Figure]:
    from offset_restore.stores.raw_items import keep_items_raw

    items = _mappings(3_000)
    page_items = QUERY_PAGE_BYTES // max(item_size(item) for item in items)
    ddb, answer = _stubbed("dynamodb")
    keep_items_raw(ddb)  # as MappingStore reads: a Query's and a BatchGetItem's items from the JSON itself
    answer.headers = {"content-type": "application/x-amz-json-1.0"}

    def json_body(document: dict[str, Any]) -> bytes:
        return json.dumps(document).encode()

    answer.body = json_body({"Items": items[:page_items], "Count": page_items, "ScannedCount": page_items})
    values = {":pk": items[0]["pk"], ":map": {"S": "MAP#"}}
    query = cpu_per_call(
        lambda: ddb.query(
            TableName="t",
            KeyConditionExpression="pk = :pk AND begins_with(sk, :map)",
            ExpressionAttributeValues=values,
            ConsistentRead=True,
        ),
        3,
        rounds,
    )
    answer.body = json_body({"Responses": {"t": items[:100]}, "UnprocessedKeys": {}})
    keys = [{"pk": item["pk"], "sk": item["sk"]} for item in items[:100]]
    batch_get = cpu_per_call(
        lambda: ddb.batch_get_item(RequestItems={"t": {"Keys": keys, "ConsistentRead": True}}), 40, rounds
    )
    answer.body = json_body({"UnprocessedItems": {}})
    puts = [{"PutRequest": {"Item": item}} for item in items[:25]]
    batch_write = cpu_per_call(lambda: ddb.batch_write_item(RequestItems={"t": puts}), 100, rounds)
    answer.body = b"{}"
    put = cpu_per_call(lambda: ddb.put_item(TableName="t", Item=items[0]), 300, rounds)
    return [
        Figure(
            "dynamodb.Query", f"a page of {page_items:,} mappings ({item_size(items[0])} bytes each)", query, "page"
        ),
        Figure("dynamodb.Query", "per mapping read", query / page_items, "item"),
        Figure("dynamodb.BatchGetItem", "100 keys, 100 mappings back", batch_get, "request"),
        Figure("dynamodb.BatchWriteItem", "25 mappings", batch_write, "request"),
        Figure("dynamodb.PutItem", "one mapping (GetItem, UpdateItem, DeleteItem alike)", put, "request"),
    ]


def _s3_and_sns(rounds: int) -> list[Figure]:
    s3, answer = _stubbed("s3")
    answer.headers = {"etag": '"x"'}
    empty = cpu_per_call(lambda: s3.put_object(Bucket="b", Key="k", Body=b""), 200, rounds)
    megabyte = b"x" * 1_000_000
    full = cpu_per_call(lambda: s3.put_object(Bucket="b", Key="k", Body=megabyte), 50, rounds)
    answer.headers = {"etag": '"x"', "content-type": "application/json", "last-modified": "Mon, 1 Dec 2025 0:00:00 GMT"}
    answer.body = b"{}"
    get = cpu_per_call(lambda: s3.get_object(Bucket="b", Key="k"), 200, rounds)
    contents = "".join(f"<Contents><Key>work/{i:05d}.json</Key><Size>100</Size></Contents>" for i in range(10))
    answer.headers = {"content-type": "application/xml"}
    answer.body = (
        '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>b</Name><KeyCount>10</KeyCount>'
        f"<IsTruncated>false</IsTruncated>{contents}</ListBucketResult>"
    ).encode()
    listing = cpu_per_call(lambda: s3.list_objects_v2(Bucket="b", Prefix="work/"), 200, rounds)
    sns, answer = _stubbed("sns")
    answer.headers = {"content-type": "text/xml"}
    answer.body = b"<PublishResponse><PublishResult><MessageId>m</MessageId></PublishResult></PublishResponse>"
    topic = "arn:aws:sns:eu-west-1:123456789012:t"
    publish = cpu_per_call(lambda: sns.publish(TopicArn=topic, Message="done"), 200, rounds)
    return [
        Figure("s3.PutObject", "empty body", empty, "request"),
        Figure("s3.PutObject", "per byte of body (1 MB less empty)", max(0.0, full - empty) / len(megabyte), "byte"),
        Figure("s3.GetObject", "the answer's headers", get, "request"),
        Figure("s3.ListObjectsV2", "ten keys", listing, "request"),
        Figure("sns.Publish", "one message", publish, "request"),
    ]


def measure(rounds: int = 5) -> list[Figure]:
    return _dynamodb(rounds) + _s3_and_sns(rounds)


def cpu_model() -> str:
    try:
        described = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "cpu unknown"
    names = [line.split(":", 1)[1].strip() for line in described.splitlines() if line.startswith("model name")]
    return names[0] if names else platform.processor() or "cpu unknown"


def _shown(figure: Figure) -> str:
    if figure.unit == "byte":
        return f"{figure.seconds * 1e9:.2f} ns"
    return f"{figure.seconds * 1e6:,.1f} us"


def lines(figures: list[Figure], rounds: int) -> list[str]:
    return [
        f"botocore's own CPU per request (`python -m bench.client_cost`): botocore {botocore.__version__}, "
        f"Python {platform.python_version()}, {platform.machine()}, {cpu_model()}; the thread's CPU "
        f"time with the HTTP send stubbed, the median of {rounds} rounds. `bench/deployed_estimate.py` charges "
        "these as the handler's own time (its `CLIENT_CPU_S`).",
        "",
        "| operation | request | botocore CPU | per |",
        "|---|---|---|---|",
        *(f"| {f.operation} | {f.request} | {_shown(f)} | {f.unit} |" for f in figures),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", type=Path, default=RESULTS / "client-cost.md")
    args = parser.parse_args(argv)
    text = "\n".join(lines(measure(args.rounds), args.rounds)) + "\n"
    args.output.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
