"""How every request is sent: retried with back-off when the failure is transient, and pipelined.

kafka-python 3.0 runs its I/O on a background thread; coroutines given to ``manager.run`` run there,
which lets one call send a request to every broker before waiting for the first answer
(``pipelined``). Its errors become ours here, with the operation and the cluster named.
"""

from __future__ import annotations

import logging
import random
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import kafka.errors as kafka_errors
from kafka import KafkaAdminClient

from offset_restore.errors import ClusterError, ClusterUnreachableError
from offset_restore.kafka.clients import Clients
from offset_restore.kafka.failures import transient

__all__ = ["IN_FLIGHT", "Calls", "pipelined"]

# Named for the module every caller imports, as before the cluster was split by capability: the test
# brokers' start-up (devtools/apache_broker.py) quiets the retries it expects through this name.
log = logging.getLogger("offset_restore.kafka.cluster")

IN_FLIGHT = 16  # requests outstanding per connection (the client is configured to allow 32)


class Calls(Clients):
    """Mixin of ``KafkaCluster``: calling kafka-python. The attributes are set by ``KafkaCluster.__init__``."""

    _admin: KafkaAdminClient
    _manager: Any

    def _call(self, operation: str, function: Any, *args: Any, retry: bool = True, **kwargs: Any) -> Any:
        """Call kafka-python, retrying transient failures with back-off (``retry``: the call is
        idempotent), and turning its errors into ours with the operation and cluster named."""
        attempts = self.settings.retries + 1 if retry else 1
        for attempt in range(1, attempts + 1):
            try:
                return function(*args, **kwargs)
            except kafka_errors.KafkaError as error:
                if not transient(error) or attempt == attempts:
                    raise self._failure(operation, error, attempt) from None
                self._back_off(operation, error, attempt, attempts)
        raise AssertionError("unreachable")  # pragma: no cover

    def _failure(self, operation: str, error: BaseException, attempts: int) -> ClusterError:
        tried = f" after {attempts} attempts" if attempts > 1 else ""
        message = f"{operation} on {self.settings.bootstrap_servers} failed{tried}: {type(error).__name__}: {error}"
        return ClusterUnreachableError(message) if transient(error) else ClusterError(message)

    def _back_off(self, operation: str, error: BaseException, attempt: int, attempts: int) -> None:
        """Sleep before the next attempt: exponential, capped, with full jitter (so many clients
        retrying after one broker restart do not all come back at the same instant)."""
        ceiling = min(self.settings.retry_backoff_max_s, self.settings.retry_backoff_s * 2 ** (attempt - 1))
        delay = random.uniform(0, ceiling)
        said = type(error).__name__ if isinstance(error, kafka_errors.KafkaError) else str(error)  # ours: the code
        log.warning("%s failed (%s); attempt %d of %d in %.2f s", operation, said, attempt + 1, attempts, delay)
        time.sleep(delay)

    def _run(self, operation: str, coro: Any, *args: Any, retry: bool = True) -> Any:
        """Run a coroutine on kafka-python's I/O thread (again from the start on a transient failure)."""
        return self._call(operation, self._manager.run, coro, *args, retry=retry)


async def pipelined(
    items: Sequence[tuple[Any, int, Any]],
    send: Any,
    answers: list[tuple[Any, Any]] | None = None,
    read: Callable[[Any, Any], Any] | None = None,
) -> list[tuple[Any, Any]]:
    """Send ``(tag, node, request)`` items keeping up to ``IN_FLIGHT`` outstanding at all times (a
    sliding window: the next request goes out as soon as the oldest is answered, so encoding here
    overlaps the broker's work); answers come back as ``(tag, response)`` in order, appended to
    ``answers`` as they arrive. ``read(tag, response)``, when given, is what is kept of each response, taken
    as it arrives: the answers after it keep coming meanwhile (a fetch decodes one while the next is sent)."""
    pending: deque[tuple[Any, Any]] = deque()
    answers = [] if answers is None else answers

    async def answered(tag: Any, future: Any) -> None:
        response = await future
        answers.append((tag, response if read is None else read(tag, response)))

    for tag, node, request in items:
        if len(pending) >= IN_FLIGHT:
            await answered(*pending.popleft())
        pending.append((tag, send(node, request)))
    while pending:
        await answered(*pending.popleft())
    return answers
