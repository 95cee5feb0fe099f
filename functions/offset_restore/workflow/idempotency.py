"""powertools Idempotency as the workflow uses it, set up in one place: the commit step's records in
the project's table, under their own partition key and key prefix (``stores.keys``), kept 12 hours.

A Lambda or Map retry of a commit batch within one execution gets the answer the first attempt gave,
whatever happened on the target since; a new execution has another input (its id is part of it) and
commits again, which changes nothing that is already in place. The clients are injected: the handler
builds them, the tests build them on moto.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.idempotency import (
    BasePersistenceLayer,
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)

from offset_restore.stores.keys import COMMIT_IDEMPOTENCY_KEY_PREFIX, COMMIT_IDEMPOTENCY_PK

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["COMMIT_RECORDS_KEPT_S", "Idempotency", "commit_idempotency"]

COMMIT_RECORDS_KEPT_S = 12 * 3600
"""How long a commit's first answer is kept for its retries: longer than any execution's retries of
one batch, short enough that the records do not pile up (DynamoDB's TTL removes them)."""


class Idempotency:
    """A persistence layer and its configuration, and the prefix of the records' keys."""

    def __init__(self, persistence: BasePersistenceLayer, config: IdempotencyConfig, key_prefix: str) -> None:
        self.persistence, self.config, self.key_prefix = persistence, config, key_prefix

    def once(self, work: Callable[[], dict[str, Any]], key: Mapping[str, Any]) -> dict[str, Any]:
        """``work()``'s answer, or the answer it gave the first time it was called with ``key`` (a
        JSON-able mapping: its hash is the record's key). An answer must be JSON-able too."""

        @idempotent_function(
            data_keyword_argument="key",
            persistence_store=self.persistence,
            config=self.config,
            key_prefix=self.key_prefix,
        )
        def first_answer(key: dict[str, Any]) -> dict[str, Any]:
            return work()

        answer: dict[str, Any] = first_answer(key=dict(key))
        return answer


def commit_idempotency(table: str, dynamodb: DynamoDBClient, context: LambdaContext | None = None) -> Idempotency:
    """The commit step's: records in ``table`` (the settings' ``TABLE_NAME``) with the item layout of
    the project's table (``pk``/``sk``, ``ttl``). With the invocation's ``context``, a record left "in
    progress" by an attempt that timed out expires with that invocation, so its retry runs."""
    persistence = DynamoDBPersistenceLayer(
        table_name=table,
        key_attr="pk",
        sort_key_attr="sk",
        static_pk_value=COMMIT_IDEMPOTENCY_PK,
        expiry_attr="ttl",
        boto3_client=dynamodb,
    )
    config = IdempotencyConfig(expires_after_seconds=COMMIT_RECORDS_KEPT_S)
    if context is not None:
        config.register_lambda_context(context)
    return Idempotency(persistence, config, COMMIT_IDEMPOTENCY_KEY_PREFIX)
