"""DynamoDB's batch calls to the end: a BatchGetItem or BatchWriteItem sent again with what it left
unprocessed (throttling), backing off — every reader and writer of batches goes through one loop, so
none gives up in silence on keys DynamoDB did not get to (the callers send their batches a few at once,
``in_flight.concurrently``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from offset_restore.errors import StorageError

__all__ = ["until_processed"]

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
