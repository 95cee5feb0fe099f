"""The cluster operations the rest of the library needs: the I/O, with requests built and answers
decoded in ``protocol.py`` and kafka-python's private calls in ``internals.py``.

kafka-python 3.0 runs its I/O on a background thread; coroutines given to ``manager.run`` run there,
which lets one call send a request to every broker before waiting for the first answer. Only the
``kafka`` package imports kafka-python (a contract of ``make lint``, pyproject.toml).

``KafkaCluster`` is the one object the rest of the code uses; it is composed of one mixin per
capability, as kafka-python's ``KafkaAdminClient`` is, each building on those it needs:

- ``clients.py``: opening kafka-python's clients, and why one could not be;
- ``calls.py``: every call retried with back-off when transient, requests pipelined
  (``failures.py``: which failures are transient, and the cause kafka-python only logs);
- ``topics.py``: the cluster id, topics, partitions and their leaders;
- ``coordinators.py``: requests to group coordinators, forgotten when one moves;
- ``groups.py``: listing, describing and deleting groups;
- ``share_groups.py``: share groups' start offsets, read, set and removed as committed offsets are;
- ``fetches.py``: one fetch round;
- ``offsets.py``: committed offsets and log bounds;
- ``commits.py``: committing offsets over commit lanes;
- ``records.py``: reading a whole partition and producing (demo and tests).

State lives here (``__init__``, ``close``); the mixins only declare the attributes they use.
"""

from __future__ import annotations

import threading
from collections import Counter
from types import TracebackType

from kafka import KafkaAdminClient, KafkaProducer

from offset_restore.kafka import internals, msk_iam
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.kafka.fence import Fences
from offset_restore.kafka.groups import Groups, group_member
from offset_restore.kafka.records import ProducedRecord, Records

__all__ = ["KafkaCluster", "ProducedRecord", "group_member"]

msk_iam.register()  # AWS_MSK_IAM signs for the broker's own region, not the process's


class KafkaCluster(Fences, Groups, Records):
    """A connection to one cluster. Use as a context manager; every call has a timeout."""

    def __init__(self, settings: ConnectionSettings, *, fetch_max_wait_ms: int = 10) -> None:
        self.settings = settings
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.fetch_max_bytes = settings.fetch_max_bytes
        self.requests_sent: Counter[str] = Counter()
        self.fetched_bytes = 0
        """Bytes of record batches received by ``fetch`` (what reads cost on the wire)."""
        self.limit_ignoring: set[int] = set()
        self.uncut_senders: set[int] = set()
        self._known_leaders = None
        self._count_lock = threading.Lock()
        self._producer: KafkaProducer | None = None
        self._admin = self._connect()
        self._manager = internals.manager(self._admin)
        self._lanes: list[KafkaAdminClient] = []
        self.share_group_ids: set[str] = set()
        self._count_requests(self._manager)

    def requests_by_api(self, clear: bool = False) -> Counter[str]:
        """The requests sent so far, by API; read (and with ``clear`` reset) under the lock the commit
        lanes' I/O threads count under, so a count never changes while it is read."""
        with self._count_lock:
            counted = Counter(self.requests_sent)
            if clear:
                self.requests_sent.clear()
        return counted

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close(timeout=self.settings.request_timeout_s)
            self._producer = None
        for lane in self._lanes:
            lane.close()
        self._lanes = []
        self._admin.close()

    def __enter__(self) -> KafkaCluster:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
