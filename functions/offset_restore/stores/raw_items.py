"""DynamoDB's items as the service sent them, not walked again by botocore's parser.

botocore parses a DynamoDB answer shape by shape: every attribute of every item is matched against the
service model, which costs about 67 us a mapping (``bench/results/client-cost.md``) — 8 s of CPU for a
step that reads 120,000 mappings, most of Summarize's and Report's time. Yet for DynamoDB's JSON
protocol the parsed items are the JSON document's items unchanged (``{"S": ...}``, ``{"N": "12"}``,
``{"M": {...}}``, ``{"BOOL": true}``, ``{"NULL": true}``), except binary values, which botocore
decodes from base64. So the items of a Query or BatchGetItem answer are taken from the JSON directly
(``json.loads``, in C) and botocore parses the rest (the next page's key, the unprocessed keys).

An answer that holds a binary attribute (``"B":`` or ``"BS":`` appears as a key in the JSON; an escaped
string cannot look so) is left to botocore whole: nothing this project writes is binary, and whatever
another writer put in the table still reads as botocore would read it.
"""

from __future__ import annotations

import json
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["RAW_ITEMS", "keep_items_raw"]

RAW_ITEMS = {"Query": "Items", "BatchGetItem": "Responses"}
"""The operations whose items are read raw, and the member of the answer that holds them."""
_BINARY = (b'"B":', b'"BS":')


def keep_items_raw(client: DynamoDBClient) -> DynamoDBClient:
    """Register the raw reading of items on ``client`` (once, however often it is called) and return it."""
    for operation, member in RAW_ITEMS.items():
        client.meta.events.register(
            f"before-parse.dynamodb.{operation}",
            partial(_take_items, member),
            unique_id=f"offset-restore-raw-{operation}",
        )
    return client


def _take_items(member: str, response_dict: dict[str, Any], customized_response_dict: dict[str, Any], **_: Any) -> None:
    """botocore's ``before-parse`` hook: move ``member`` out of the body into what botocore adds to its
    parsed answer. Errors and binary answers are left as they are."""
    body = response_dict.get("body")
    if response_dict.get("status_code") != 200 or not isinstance(body, bytes) or any(b in body for b in _BINARY):
        return
    document = json.loads(body)
    if member in document:
        customized_response_dict[member] = document.pop(member)
        response_dict["body"] = json.dumps(document).encode()
