"""DynamoDB conditional writes, for the items that say who may write (the target's lock, a restore's
recorded input): a write whose condition does not hold is an answer, not an error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["conditional_transaction", "conditional_write"]


def conditional_write(call: Callable[..., Any], **request: Any) -> bool:
    """Send ``request`` with ``call`` (a DynamoDB client's put_item, update_item, delete_item); False
    when its ConditionExpression did not hold, True when it was written. Any other error is raised."""
    from botocore.exceptions import ClientError

    try:
        call(**request)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
            raise
        return False
    return True


def conditional_transaction(client: Any, items: list[dict[str, Any]]) -> bool:
    """One DynamoDB TransactWriteItems of ``items``; False when one of their conditions did not hold (the
    transaction was cancelled), True when all were written. Any other error is raised."""
    from botocore.exceptions import ClientError

    try:
        client.transact_write_items(TransactItems=items)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "TransactionCanceledException":
            raise
        return False
    return True
