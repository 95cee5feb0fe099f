"""DynamoDB's batch calls to the end: a BatchGetItem or BatchWriteItem sent again with what it left
unprocessed (throttling), backing off — every reader and writer of batches goes through one loop, so
none gives up in silence on keys DynamoDB did not get to; reads by key go through ``batch_get``, which
sends its requests a few at once (``in_flight.concurrently``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from offset_restore.errors import StorageError
from offset_restore.stores.in_flight import concurrently

__all__ = ["batch_get", "until_processed"]

ATTEMPTS = 8


def until_processed(call: Callable[..., Any], request: Any, leftover: str, table: str, subject: str) -> list[Any]:
    """Send ``request`` (``RequestItems``), then again with ``answer[leftover]`` until nothing is left;
    returns every answer. ``subject`` names what is read or written, for the errors."""
    from botocore.exceptions import ClientError

    answers = []
    for attempt in range(ATTEMPTS):
        try:
            answer = call(RequestItems=request)
        except ClientError as error:
            raise StorageError(f"cannot access {subject} in table {table}: {error}") from None
        answers.append(answer)
        request = answer.get(leftover) or {}
        if not request:
            return answers
        time.sleep(0.05 * 2**attempt)
    raise StorageError(f"table {table} kept throttling {subject}")


def batch_get(client: Any, table: str, keys: list[dict[str, Any]], subject: str, **request: Any) -> list[Any]:
    """The items with these ``keys``, 100 per BatchGetItem, a few requests at once, strongly consistent,
    unprocessed keys asked again; ``request``: more of each request (a projection and its names)."""

    def read(chunk: list[dict[str, Any]]) -> list[Any]:
        asked = {table: {"Keys": chunk, "ConsistentRead": True, **request}}
        answers = until_processed(client.batch_get_item, asked, "UnprocessedKeys", table, subject)
        return [item for answer in answers for item in answer.get("Responses", {}).get(table, [])]

    return [
        item for items in concurrently(read, [keys[i : i + 100] for i in range(0, len(keys), 100)]) for item in items
    ]
