"""The cluster operations the rest of the library needs: the I/O, with requests built and answers
decoded in ``protocol.py`` and kafka-python's private calls in ``internals.py``.

kafka-python 3.0 runs its I/O on a background thread; coroutines given to ``manager.run`` run there,
which lets one call send a request to every broker before waiting for the first answer. Only the
``kafka`` package (this module, ``protocol.py``, ``internals.py``) imports kafka-python.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from types import TracebackType
from typing import Any

import kafka.errors as kafka_errors
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import NewTopic, OffsetSpec
from kafka.protocol.consumer import IsolationLevel

from offset_restore.errors import BadInputError, ClusterError, ClusterUnreachableError, CommitInterruptedError
from offset_restore.kafka import internals, msk_iam, protocol
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.kafka.model import (
    TP,
    CommittedOffset,
    FetchedRecord,
    GroupInfo,
    LogBounds,
    PartitionFetch,
)
from offset_restore.kafka.reachability import PROBE_TIMEOUT_S, refuse_if_nothing_listens
from offset_restore.kafka.rounds import read_whole
from offset_restore.kafka.schemas import ConsumerGroupDescribeRequest

__all__ = ["KafkaCluster", "ProducedRecord", "group_member"]

msk_iam.register()  # AWS_MSK_IAM signs for the broker's own region, not the process's

log = logging.getLogger(__name__)

IN_FLIGHT = 16  # requests outstanding per connection (the client is configured to allow 32)
COMMIT_LANES = 4
"""Connections a large commit is spread over. A broker serves one connection's requests one at a
time, and Kafka 4's group coordinator holds each write up to ``group.coordinator.append.linger.ms``
(5 ms) to batch it: on one connection 2,000 commits took 13.6 s; commits arriving together on several
connections share those appends."""
LANE_MIN_GROUPS = 64
"""Groups per extra connection: a small commit stays on the one connection it has."""
_UNREACHABLE = (kafka_errors.KafkaTimeoutError, kafka_errors.KafkaConnectionError, kafka_errors.NodeNotReadyError)


@contextmanager
def _connection_errors() -> Iterator[list[str]]:
    """Collect why kafka-python lost connections while this lasts: it logs the cause (a SASL
    authentication failure, a certificate it does not trust) and then only times out."""
    lost: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = record.getMessage()
            for marker in ("Connection lost:", "Connection failed:", "Abort ("):
                if marker in text:
                    lost.append(text.split(marker, 1)[1].strip().removesuffix(")"))

    # The transport logs the broker's answer (an authentication failure) where the connection may
    # report only that the socket closed: both are collected, and the most telling is named.
    names = ("kafka.net.connection", "kafka.net.manager", "kafka.net.transport")
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    handler = Collect(logging.ERROR)
    for logger in loggers:
        logger.addHandler(handler)
        if logger.getEffectiveLevel() > logging.ERROR:
            logger.setLevel(logging.ERROR)
    try:
        yield lost
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)


def _names_a_cause(lost: Sequence[str]) -> bool:
    """Whether a collected cause says more than that the socket closed."""
    return any(words in text for text in lost for words in _TELLING)


_TELLING = ("Authentication", "SSL", "Handshake")


def _telling(lost: Sequence[str]) -> str:
    """The most telling of the collected causes: an authentication or TLS failure over a bare
    disconnect."""
    for words in _TELLING:
        found = [text.strip() for text in lost if words in text]
        if found:
            return found[-1]
    return lost[-1].strip()


def _transient(error: BaseException) -> bool:
    """A failure that a later attempt of the same request may not meet: a reset or timed-out
    connection, a coordinator or leader that moved. Not an unknown topic: that stays unknown."""
    if isinstance(error, _UNREACHABLE):
        return True
    return (
        isinstance(error, kafka_errors.KafkaError)
        and bool(getattr(error, "retriable", False))
        and not isinstance(error, kafka_errors.UnknownTopicOrPartitionError)
    )


ProducedRecord = tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes]], int | None]
"""(key, value, headers, timestamp_ms or None) for ``KafkaCluster.produce``."""


class KafkaCluster:
    """A connection to one cluster. Use as a context manager; every call has a timeout."""

    def __init__(self, settings: ConnectionSettings, *, fetch_max_wait_ms: int = 10) -> None:
        self.settings = settings
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.fetch_max_bytes = settings.fetch_max_bytes
        self.requests_sent: Counter[str] = Counter()
        self.fetched_bytes = 0
        """Bytes of record batches received by ``fetch`` (what reads cost on the wire)."""
        self._count_lock = threading.Lock()
        self._producer: KafkaProducer | None = None
        self._admin = self._connect()
        self._manager = internals.manager(self._admin)
        self._lanes: list[KafkaAdminClient] = []
        self._count_requests(self._manager)

    def _connect(self) -> KafkaAdminClient:
        """An admin client (its own connection), or an error that says why not: the cause
        kafka-python only logs (a wrong password, an untrusted certificate) is added to its timeout."""
        settings = self.settings
        refuse_if_nothing_listens(settings.bootstrap_servers, min(PROBE_TIMEOUT_S, settings.connect_timeout_s))
        with _connection_errors() as lost:
            return self._connect_or_explain(lost)

    def _connect_or_explain(self, lost: list[str]) -> KafkaAdminClient:
        settings = self.settings
        try:
            return _within(
                settings.connect_timeout_s * 2 + 5,
                lambda: KafkaAdminClient(
                    **self._client_config(),
                    bootstrap_timeout_ms=self._connect_ms,
                    max_in_flight_requests_per_connection=32,
                    kafka_client=lambda **configs: internals.client_without_metrics(
                        **configs,
                        # A connection whose handshake is not answered counts as unreachable this soon.
                        socket_connection_setup_timeout_ms=self._connect_ms,
                        socket_connection_setup_timeout_max_ms=self._connect_ms,
                    ),
                ),
            )
        except TimeoutError:
            hint = " (a TLS client talking to a plaintext listener?)" if "SSL" in settings.security_protocol else ""
            raise ClusterUnreachableError(
                f"cannot reach Kafka at {settings.bootstrap_servers}: the connection handshake got no answer "
                f"within {settings.connect_timeout_s * 2 + 5:g} s{hint}"
            ) from None
        except _UNREACHABLE as error:
            said = f"; the broker's connection ended with: {_telling(lost)}" if lost else ""
            if lost and "SASL" in settings.security_protocol and not _names_a_cause(lost):
                said += (
                    "; a broker that refuses SASL credentials ends the connection, and kafka-python may see the "
                    "close before the refusal: check the username and the password"
                )
            raise ClusterUnreachableError(
                f"cannot reach Kafka at {settings.bootstrap_servers} "
                f"within {settings.connect_timeout_s:g} s ({type(error).__name__}){said}"
            ) from None
        except kafka_errors.KafkaConfigurationError as error:
            raise BadInputError(f"Kafka connection settings are not usable: {error}") from None

    # -- plumbing ---------------------------------------------------------------------------------

    @property
    def _connect_ms(self) -> int:
        return int(self.settings.connect_timeout_s * 1000)

    @property
    def _request_ms(self) -> int:
        return int(self.settings.request_timeout_s * 1000)

    def _client_config(self) -> dict[str, Any]:
        s = self.settings
        config: dict[str, Any] = {
            "bootstrap_servers": [server.strip() for server in s.bootstrap_servers.split(",")],
            "client_id": s.client_id,
            "request_timeout_ms": self._request_ms,
            "security_protocol": s.security_protocol,
        }
        if s.ssl_cafile:
            config["ssl_cafile"] = s.ssl_cafile
        if s.sasl_mechanism:
            config["sasl_mechanism"] = s.sasl_mechanism
        if s.sasl_mechanism in ("SCRAM-SHA-512", "PLAIN"):
            config["sasl_plain_username"] = s.sasl_username
            config["sasl_plain_password"] = s.sasl_password.get_secret_value() if s.sasl_password else None
        return config

    def _count_requests(self, manager: Any) -> None:
        """Wrap a connection manager's send so benchmarks can report every request by API."""
        send = manager.send
        counter, lock = self.requests_sent, self._count_lock

        def counting_send(request: Any, *args: Any, **kwargs: Any) -> Any:
            with lock:  # commit lanes send from their own I/O threads
                counter[type(request).__name__.removesuffix("Request")] += 1
            return send(request, *args, **kwargs)

        manager.send = counting_send

    def _commit_lanes(self, groups: int) -> list[KafkaAdminClient]:
        """This client and up to ``COMMIT_LANES - 1`` more (opened once, kept until close), one per
        ``LANE_MIN_GROUPS`` groups to commit."""
        wanted = max(1, min(COMMIT_LANES, groups // LANE_MIN_GROUPS))
        while len(self._lanes) < wanted - 1:
            lane = self._connect()
            self._count_requests(internals.manager(lane))
            self._lanes.append(lane)
        return [self._admin, *self._lanes[: wanted - 1]]

    def _call(self, operation: str, function: Any, *args: Any, retry: bool = True, **kwargs: Any) -> Any:
        """Call kafka-python, retrying transient failures with back-off (``retry``: the call is
        idempotent), and turning its errors into ours with the operation and cluster named."""
        attempts = self.settings.retries + 1 if retry else 1
        for attempt in range(1, attempts + 1):
            try:
                return function(*args, **kwargs)
            except kafka_errors.KafkaError as error:
                if not _transient(error) or attempt == attempts:
                    raise self._failure(operation, error, attempt) from None
                self._back_off(operation, error, attempt, attempts)
        raise AssertionError("unreachable")  # pragma: no cover

    def _failure(self, operation: str, error: BaseException, attempts: int) -> ClusterError:
        tried = f" after {attempts} attempts" if attempts > 1 else ""
        message = f"{operation} on {self.settings.bootstrap_servers} failed{tried}: {type(error).__name__}: {error}"
        return ClusterUnreachableError(message) if _transient(error) else ClusterError(message)

    def _back_off(self, operation: str, error: BaseException, attempt: int, attempts: int) -> None:
        """Sleep before the next attempt: exponential, capped, with full jitter (so many clients
        retrying after one broker restart do not all come back at the same instant)."""
        ceiling = min(self.settings.retry_backoff_max_s, self.settings.retry_backoff_s * 2 ** (attempt - 1))
        delay = random.uniform(0, ceiling)
        log.warning(
            "%s failed (%s); attempt %d of %d in %.2f s", operation, type(error).__name__, attempt + 1, attempts, delay
        )
        time.sleep(delay)

    def _run(self, operation: str, coro: Any, *args: Any, retry: bool = True) -> Any:
        """Run a coroutine on kafka-python's I/O thread (again from the start on a transient failure)."""
        return self._call(operation, self._manager.run, coro, *args, retry=retry)

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

    # -- cluster and topics -----------------------------------------------------------------------

    @property
    def cluster_id(self) -> str:
        return str(internals.cluster_id(self._admin) or "unknown-cluster")

    def _metadata(self) -> Any:
        request = protocol.metadata_request()

        async def send() -> Any:
            return await self._manager.send(request, request_timeout_ms=self._request_ms)

        return self._run("reading cluster metadata", send)

    def _leaders(self) -> tuple[dict[str, int], dict[TP, int]]:
        """Partition counts of every non-internal topic, and the leader of each partition."""
        return protocol.topics_and_leaders(self._metadata())

    def topic_partitions(self) -> dict[str, int]:
        """Every non-internal topic with its partition count."""
        return self._leaders()[0]

    def create_topics(self, partitions_by_topic: Mapping[str, int]) -> None:
        new = [NewTopic(name, count, 1) for name, count in partitions_by_topic.items()]
        if new:
            self._call("creating topics", self._admin.create_topics, new, timeout_ms=self._request_ms, retry=False)

    def delete_records(self, before: Mapping[TP, int]) -> None:
        """Move each partition's log start to the offset given (a retention loss, for tests and the
        comparison; a restore never deletes records)."""
        asked = {KafkaTopicPartition(tp.topic, tp.partition): offset for tp, offset in before.items()}
        self._call("deleting records", self._admin.delete_records, asked, timeout_ms=self._request_ms, retry=False)

    # -- groups -----------------------------------------------------------------------------------

    def list_group_ids(self) -> list[str]:
        groups = self._call("listing consumer groups", self._admin.list_groups)
        return sorted({group["group_id"] for group in groups})

    def _per_coordinator(
        self,
        operation: str,
        group_ids: Sequence[str],
        batch_size: int,
        build: Any,
        *,
        answers: list[tuple[Any, Any]] | None = None,
        retry: bool = True,
        lane: KafkaAdminClient | None = None,
    ) -> list[tuple[Any, Any]]:
        """Send the ``(tag, request)`` pairs of ``build(batch)`` for batches of groups to their
        coordinators; returns ``(tag, response)`` pairs in any order (also into ``answers`` as they
        arrive, so a caller keeps what was answered before a failure).

        Up to ``IN_FLIGHT`` requests per coordinator are outstanding at once, so the broker works on
        the next batch while this process decodes the last one.
        """
        admin = lane or self._admin
        manager, timeout = internals.manager(admin), self._request_ms

        async def send_all() -> list[tuple[Any, Any]]:
            coordinators = await internals.find_coordinators(admin, group_ids)
            by_node: dict[int, list[str]] = defaultdict(list)
            for group_id in group_ids:
                by_node[coordinators[group_id]].append(group_id)
            queue = [
                (node, tag, request)
                for node, members in by_node.items()
                for batch in protocol.chunks(members, batch_size)
                for tag, request in build(batch)
            ]
            answered = await _pipelined(
                [(tag, node, request) for node, tag, request in queue],
                lambda node, request: manager.send(request, node_id=node, request_timeout_ms=timeout),
                [] if answers is None else answers,
            )
            if answers is None:  # a caller keeping answers (the commit) looks at each group itself
                moved = next((e for e in (protocol.coordinator_moved(r) for _, r in answered) if e is not None), None)
                if moved is not None:
                    self._forget_coordinators(group_ids)
                    raise moved()  # retriable: the whole call again, after a back-off
            return answered

        if not group_ids:
            return []
        return list(self._call(operation, manager.run, send_all, retry=retry))

    def _forget_coordinators(self, group_ids: Iterable[str]) -> None:
        """Drop kafka-python's cached coordinators (of every connection), so the next attempt asks
        FindCoordinator again."""
        for admin in (self._admin, *self._lanes):
            internals.forget_coordinators(admin, group_ids)

    def describe_groups(self, group_ids: Sequence[str], batch_size: int = 500) -> dict[str, GroupInfo]:
        """State and member count per group, in batched DescribeGroups requests.

        Authorized-operation bits are neither asked for nor decoded: some brokers set bits that
        kafka-python's enum does not know.
        """

        def build(batch: Sequence[str]) -> list[tuple[None, Any]]:
            return [(None, protocol.describe_groups_request(batch))]

        result = self._described("describing consumer groups", group_ids, batch_size, build, protocol_type="")
        unknown = [g for g, info in result.items() if info.error == "GroupIdNotFoundError"]
        if unknown and self._supports(ConsumerGroupDescribeRequest.API_KEY):
            # Kafka 4 answers the classic DescribeGroups for a group of the new consumer protocol
            # (KIP-848) as GROUP_ID_NOT_FOUND / Dead even while it has members: ask the way it knows.
            def build_new(batch: Sequence[str]) -> list[tuple[None, Any]]:
                return [(None, protocol.consumer_group_describe_request(batch))]

            found = self._described(
                "describing consumer groups (KIP-848)", unknown, batch_size, build_new, protocol_type="consumer"
            )
            result.update({g: info for g, info in found.items() if info.error is None})
        return result

    def _described(
        self, operation: str, group_ids: Sequence[str], batch_size: int, build: Any, *, protocol_type: str
    ) -> dict[str, GroupInfo]:
        answers = self._per_coordinator(operation, group_ids, batch_size, build)
        return {
            info.group_id: info
            for _, response in answers
            for info in protocol.described_groups(response, protocol_type)
        }

    def _supports(self, api_key: int) -> bool:
        return internals.api_supported(self._admin, api_key)

    def committed_offsets(
        self, group_ids: Sequence[str], batch_size: int = 250
    ) -> dict[str, dict[TP, CommittedOffset]]:
        """Committed offsets of many groups: one OffsetFetch (v8, multi-group) per batch.

        Partitions without a commit (offset -1) are left out. An error on a group names the group.
        """

        def build(batch: Sequence[str]) -> list[tuple[str | None, Any]]:
            # One multi-group request on brokers with OffsetFetch v8, else one request per group.
            return internals.offset_fetch_requests(self._admin, batch)

        result: dict[str, dict[TP, CommittedOffset]] = {}
        for tag, response in self._per_coordinator("reading committed offsets", group_ids, batch_size, build):
            result.update(protocol.committed_offsets(tag, response))
        return result

    def alter_offsets(self, group_id: str, offsets: Mapping[TP, CommittedOffset]) -> dict[TP, str | None]:
        """Admin OffsetCommit for a group without members; per partition the error name or None.

        A broker rejects it with UNKNOWN_MEMBER_ID while the group has members.
        """
        return self.alter_offsets_many({group_id: offsets}).get(group_id, {})

    def alter_offsets_many(
        self, offsets_by_group: Mapping[str, Mapping[TP, CommittedOffset]]
    ) -> dict[str, dict[TP, str | None]]:
        """Admin OffsetCommits for many groups, pipelined per coordinator; per group and partition the
        error name or None. Each group is one request, so the broker accepts or rejects it whole.

        After a transient failure only the groups without an answer are sent again (the same
        offsets: a commit that reached the broker before the answer was lost changes nothing the
        second time). When the attempts run out, ``CommitInterruptedError`` carries what was answered.
        """

        def build(batch: Sequence[str]) -> list[tuple[str, Any]]:
            return [(group, protocol.offset_commit_request(group, offsets_by_group[group])) for group in batch]

        result: dict[str, dict[TP, str | None]] = {}
        remaining = [group for group, offsets in offsets_by_group.items() if offsets]
        attempts = self.settings.retries + 1
        for attempt in range(1, attempts + 1):
            answers, failure = self._commit_round(remaining, build)
            moved = [group for group, response in answers if protocol.coordinator_moved(response) is not None]
            if moved:  # not committed: sent again with the unanswered ones
                self._forget_coordinators(moved)
                failure = failure or ClusterUnreachableError(f"committing offsets: coordinator moved for {moved[0]}")
            for group, response in answers:
                if group in moved:
                    continue
                result[group] = protocol.commit_errors(response)
            remaining = [group for group in remaining if group not in result]
            if failure is None or not remaining:
                return result
            if attempt == attempts:
                raise CommitInterruptedError(f"{failure} (after {attempts} attempts)", result, remaining)
            self._back_off("committing offsets", failure, attempt, attempts)
        return result

    def _commit_round(
        self, groups: Sequence[str], build: Any
    ) -> tuple[list[tuple[Any, Any]], ClusterUnreachableError | None]:
        """One attempt at every group, spread over the commit lanes (each its own connection, sent
        together): what was answered, and the first failure if a lane failed."""
        lanes = self._commit_lanes(len(groups))
        shares = [list(groups[i :: len(lanes)]) for i in range(len(lanes))]
        answered: list[list[tuple[Any, Any]]] = [[] for _ in lanes]

        def send(i: int) -> ClusterUnreachableError | None:
            try:
                self._per_coordinator(
                    "committing offsets", shares[i], 1, build, answers=answered[i], retry=False, lane=lanes[i]
                )
            except ClusterUnreachableError as error:
                return error
            return None

        if len(lanes) == 1:
            failures = [send(0)]
        else:
            with ThreadPoolExecutor(max_workers=len(lanes), thread_name_prefix="commit-lane") as pool:
                failures = list(pool.map(send, range(len(lanes))))
        return [pair for share in answered for pair in share], next((f for f in failures if f), None)

    def delete_groups(self, group_ids: Sequence[str]) -> dict[str, str | None]:
        """Delete groups (their committed offsets); per group the error name or None."""
        if not group_ids:
            return {}
        # Not retried: a second attempt after a lost answer would report the deleted group as missing.
        answer = self._call("deleting consumer groups", self._admin.delete_groups, list(group_ids), retry=False)
        return {group: (None if result == "OK" else str(result)) for group, result in answer.items()}

    def delete_offsets(self, group_id: str, partitions: Sequence[TP]) -> dict[TP, str | None]:
        """Delete one group's committed offsets on some partitions (OffsetDelete; the group must be
        empty); per partition the error name or None. Not retried, like ``delete_groups``."""
        if not partitions:
            return {}
        kafka_tps = [KafkaTopicPartition(tp.topic, tp.partition) for tp in partitions]
        try:
            answer = self._call(
                "deleting committed offsets", self._admin.delete_group_offsets, group_id, kafka_tps, retry=False
            )
        except ClusterError as error:  # e.g. a broker without OffsetDelete: every partition failed, saying why
            return dict.fromkeys(partitions, str(error))
        return {
            TP(tp.topic, tp.partition): (
                None if error is kafka_errors.NoError else getattr(error, "__name__", str(error))
            )
            for tp, error in answer.items()
        }

    # -- records ----------------------------------------------------------------------------------

    def fetch(
        self,
        positions: Mapping[TP, int],
        *,
        partition_max_bytes: int | Mapping[TP, int] = 256 * 1024,
        until: Mapping[TP, int] | None = None,
        leaders: Mapping[TP, int] | None = None,
        max_wait_ms: int | None = None,
    ) -> dict[TP, PartitionFetch]:
        """One fetch round: Fetch requests to every leader (as many per leader as the response limit
        ``fetch_max_bytes`` needs), sent together before any answer is awaited.

        ``until`` stops decoding a partition after its first record at or past that offset. Partitions
        without a leader (missing topic) come back with error ``UnknownTopicOrPartitionError``.
        """
        if not positions:
            return {}
        if leaders is None:
            leaders = self._leaders()[1]
        by_node: dict[int, list[tuple[TP, int]]] = defaultdict(list)
        result: dict[TP, PartitionFetch] = {}
        for tp, offset in positions.items():
            node = leaders.get(tp)
            if node is None:
                result[tp] = PartitionFetch(offset, error="UnknownTopicOrPartitionError")
            elif node < 0:  # an election under way
                result[tp] = PartitionFetch(offset, error="LeaderNotAvailableError", retriable=True)
            else:
                by_node[node].append((tp, offset))
        wait_ms = self.fetch_max_wait_ms if max_wait_ms is None else max_wait_ms
        limits = (
            dict.fromkeys(positions, partition_max_bytes)
            if isinstance(partition_max_bytes, int)
            else partition_max_bytes
        )
        requests = protocol.fetch_requests(by_node, limits, self.fetch_max_bytes, wait_ms)
        manager, timeout = self._manager, self._request_ms + wait_ms

        async def send_all() -> list[Any]:
            answered = await _pipelined(
                [(None, node, request) for node, request in requests],
                lambda node, request: manager.send(request, node_id=node, request_timeout_ms=timeout),
            )
            return [response for _, response in answered]

        for response in self._run("fetching records", send_all):
            for tp, answer in protocol.decode_fetch(response, positions, until):
                result[tp] = answer
                self.fetched_bytes += answer.size
        for tp, offset in positions.items():
            result.setdefault(tp, PartitionFetch(offset, error="NoResponse", retriable=True))
        return result

    def read_partition(self, tp: TP) -> list[FetchedRecord]:
        """Every record of one partition, from its log start to its high watermark: for the demo and
        tests (a restore reads what a position needs, never this); a failed fetch is an error."""
        records, failed = read_whole(self, {tp: self.log_bounds([tp])[tp].start})
        if failed:
            raise ClusterError(f"reading {tp.topic}/{tp.partition} failed: {failed[tp].reason}")
        return records[tp]

    def log_bounds(self, partitions: Iterable[TP]) -> dict[TP, LogBounds]:
        """Log start and end of many partitions in three requests per leader.

        The end is a fetch's high watermark: some brokers answer ListOffsets LATEST with the first
        offset of the last batch plus one, so its answer is only where the fetch starts.
        """
        tps = sorted(set(partitions))
        if not tps:
            return {}
        kafka_tps = [KafkaTopicPartition(tp.topic, tp.partition) for tp in tps]
        earliest = self._call(
            "reading log start offsets",
            self._admin.list_partition_offsets,
            dict.fromkeys(kafka_tps, OffsetSpec.EARLIEST),
        )
        latest = self._call(  # read_committed: the end is the last stable offset, as every read sees it
            "reading log end offsets",
            self._admin.list_partition_offsets,
            dict.fromkeys(kafka_tps, OffsetSpec.LATEST),
            isolation_level=IsolationLevel.READ_COMMITTED,
        )
        hints = {TP(tp.topic, tp.partition): max(0, latest[tp].offset) for tp in kafka_tps}
        # Only the high watermark is wanted: every partition reports it, records or not, so do not
        # wait for data (some brokers read partitions one by one until the wait is over).
        fetched = self.fetch(hints, partition_max_bytes=1, until=hints, max_wait_ms=1)
        bounds: dict[TP, LogBounds] = {}
        for ktp in kafka_tps:
            tp = TP(ktp.topic, ktp.partition)
            start = earliest[ktp].offset
            end = max(hints[tp], fetched[tp].high_watermark)
            bounds[tp] = LogBounds(start=start, end=max(start, end))
        return bounds

    def produce(self, topic: str, partition: int, records: Iterable[ProducedRecord]) -> int:
        """Append records to one partition and wait until all are acknowledged; returns the count.

        For restore tools, the demo and tests; nothing in a restore run produces.
        """
        if self._producer is None:
            self._producer = self._call(
                "connecting a producer",
                KafkaProducer,
                retry=False,
                **self._client_config(),
                linger_ms=5,
                acks=1,
                # acks=1 turns kafka-python's idempotence off, and a retried batch could then land
                # after the next one: records out of order (met writing 200 partitions to Apache
                # Kafka). One request in flight keeps the order through retries.
                max_in_flight_requests_per_connection=1,
                max_block_ms=self._connect_ms,
            )
        producer = self._producer
        futures = [
            producer.send(
                topic, key=key, value=value, partition=partition, headers=list(headers), timestamp_ms=timestamp
            )
            for key, value, headers, timestamp in records
        ]
        # Not retried: producing is not idempotent here.
        self._call("producing records", producer.flush, timeout=self.settings.request_timeout_s, retry=False)
        for future in futures:
            self._call("producing records", future.get, timeout=self.settings.request_timeout_s, retry=False)
        return len(futures)


@contextmanager
def group_member(settings: ConnectionSettings, group: str, topic: str, timeout_s: float = 15) -> Iterator[None]:
    """A live consumer in ``group`` (for the demo: an application still connected on the target).

    It joins, reads nothing it commits, and leaves when the block ends.
    """
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=[server.strip() for server in settings.bootstrap_servers.split(",")],
        group_id=group,
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
        client_id=settings.client_id,
    )
    try:
        deadline = time.monotonic() + timeout_s
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=200, max_records=1)
        yield
    finally:
        consumer.close()


def _within(seconds: float, build: Any) -> Any:
    """``build()`` on a daemon thread, or ``TimeoutError`` after ``seconds``.

    kafka-python awaits a TLS handshake without a timeout: a TLS client against a plaintext port
    waits forever. The abandoned thread ends with the process (it is a daemon).
    """
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, build()))
        except BaseException as error:  # handed to the caller below
            outcome.append((False, error))

    worker = threading.Thread(target=run, name="kafka-connect", daemon=True)
    worker.start()
    worker.join(seconds)
    if not outcome:
        raise TimeoutError(f"no answer within {seconds:g} s")
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


async def _pipelined(
    items: Sequence[tuple[Any, int, Any]], send: Any, answers: list[tuple[Any, Any]] | None = None
) -> list[tuple[Any, Any]]:
    """Send ``(tag, node, request)`` items keeping up to ``IN_FLIGHT`` outstanding at all times (a
    sliding window: the next request goes out as soon as the oldest is answered, so encoding here
    overlaps the broker's work); answers come back as ``(tag, response)`` in order, appended to
    ``answers`` as they arrive."""
    pending: deque[tuple[Any, Any]] = deque()
    answers = [] if answers is None else answers
    for tag, node, request in items:
        if len(pending) >= IN_FLIGHT:
            done_tag, future = pending.popleft()
            answers.append((done_tag, await future))
        pending.append((tag, send(node, request)))
    while pending:
        done_tag, future = pending.popleft()
        answers.append((done_tag, await future))
    return answers
