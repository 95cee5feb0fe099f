"""Kafka requests built and answers decoded, apart from any I/O: what ``cluster.py`` sends and
what it makes of the answers, as pure functions (tested without a broker in tests/unit/test_protocol.py).

Requests are built from kafka-python's public protocol classes where its admin helpers would be
wrong for us (DescribeGroups trips on unknown authorized-operation bits; its metadata call can create
topics) and where no helper exists (a multi-partition Fetch at chosen offsets, an admin commit of
many groups pipelined).
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Callable, Collection, Container, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import kafka.errors as kafka_errors
from kafka.admin import MemberToRemove
from kafka.protocol.admin import DescribeGroupsRequest
from kafka.protocol.consumer import FetchRequest, OffsetCommitRequest, OffsetFetchRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer import AddOffsetsToTxnRequest, EndTxnRequest, InitProducerIdRequest, TxnOffsetCommitRequest

from offset_restore.errors import ClusterError, UnreadableBatchError
from offset_restore.kafka.batch_records import LOG_OVERHEAD, abort_marker, batches, decode_records, records_before
from offset_restore.kafka.model import (
    ONE_BATCH,
    POINT_READ_BYTES,
    SHARE_GROUP,
    TP,
    AbortedBatch,
    CommittedOffset,
    GroupInfo,
    PartitionFetch,
    PartitionIdentity,
    Record,
)
from offset_restore.kafka.schemas import ConsumerGroupDescribeRequest, StreamsGroupDescribeRequest
from offset_restore.packing import packed

__all__ = [
    "FETCH_MAX_VERSION",
    "add_offsets_request",
    "alone_max_bytes",
    "batch_costs",
    "chunks",
    "commit_errors",
    "committed_offsets",
    "consumer_group_describe_request",
    "coordinator_moved",
    "decode_fetch",
    "decode_partition",
    "describe_groups_request",
    "described_groups",
    "end_txn_request",
    "error_name",
    "fetch_requests",
    "first_batch_bytes",
    "group_kinds",
    "init_producer_id_request",
    "listed_groups",
    "metadata_request",
    "moved_groups",
    "moved_reason",
    "offset_commit_request",
    "over_limit",
    "partition_identities",
    "stable_offset_requests",
    "streams_group_describe_request",
    "topics_and_leaders",
    "txn_offset_commit_request",
    "unstable_groups",
    "whole_past_limit",
]

_FetchTopic = FetchRequest.FetchTopic
_FetchPartition = _FetchTopic.FetchPartition
_CommitTopic = OffsetCommitRequest.OffsetCommitRequestTopic
_CommitPartition = _CommitTopic.OffsetCommitRequestPartition
FETCH_MAX_VERSION = 12
"""Fetch v13+ names topics by id only; v12 keeps names, which is all we need."""
_COORDINATOR_MOVED = {
    error.errno: error
    for error in (
        kafka_errors.NotCoordinatorError,
        kafka_errors.CoordinatorNotAvailableError,
        kafka_errors.CoordinatorLoadInProgressError,
    )
}
"""Group answers that say "ask again, maybe elsewhere": Apache Kafka gives them while an offsets-topic
partition is loading (after a start or a leader move) or moving; the local broker never did."""


def error_name(code: int) -> str:
    """The name of a Kafka error code, as reports and messages show it."""
    return kafka_errors.for_code(code).__name__


def chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# -- cluster metadata ---------------------------------------------------------------------------


def metadata_request() -> Any:
    """Metadata for every topic: asking for named topics makes some brokers create them."""
    return MetadataRequest(
        topics=None,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )


def topics_and_leaders(response: Any) -> tuple[dict[str, int], dict[TP, int]]:
    """Partition counts of every non-internal topic, and the leader of each partition."""
    counts: dict[str, int] = {}
    leaders: dict[TP, int] = {}
    for topic in response.topics:
        if topic.error_code or topic.is_internal:
            continue
        counts[topic.name] = len(topic.partitions)
        for partition in topic.partitions:
            leaders[TP(topic.name, partition.partition_index)] = partition.leader_id
    return counts, leaders


NO_TOPIC_ID = "00000000-0000-0000-0000-000000000000"


def partition_identities(response: Any) -> dict[TP, PartitionIdentity]:
    """Each partition's topic id and leader epoch, where the answer carries both (Metadata v10+; an
    older broker's answer gives none, and the caller then reads again what it would have reused)."""
    found: dict[TP, PartitionIdentity] = {}
    for topic in response.topics:
        topic_id = str(getattr(topic, "topic_id", None) or NO_TOPIC_ID)
        if topic.error_code or topic_id == NO_TOPIC_ID:
            continue
        for partition in topic.partitions:
            epoch = getattr(partition, "leader_epoch", -1)
            if not partition.error_code and epoch is not None and epoch >= 0:
                found[TP(topic.name, partition.partition_index)] = PartitionIdentity(topic_id, epoch)
    return found


# -- groups -------------------------------------------------------------------------------------


def coordinator_moved(response: Any) -> type[kafka_errors.KafkaError] | None:
    """The coordinator error in a group answer (DescribeGroups, OffsetFetch, OffsetCommit, at group
    or partition level), or None."""
    codes = [getattr(response, "error_code", 0)]
    for group in getattr(response, "groups", None) or ():
        codes.append(getattr(group, "error_code", 0))
        codes.extend(p.error_code for t in getattr(group, "topics", None) or () for p in t.partitions)
    codes.extend(p.error_code for t in getattr(response, "topics", None) or () for p in t.partitions)
    return next((_COORDINATOR_MOVED[code] for code in codes if code in _COORDINATOR_MOVED), None)


def moved_groups(answers: Iterable[tuple[str, Any]]) -> dict[str, type[kafka_errors.KafkaError]]:
    """The groups of ``(group, answer)`` pairs whose coordinator moved (``coordinator_moved``), each with its
    error: not written, to be sent again after the coordinators are looked up again, and named in the
    back-off's warning (a coordinator still loading reads apart from one on another broker)."""
    return {group: error for group, response in answers if (error := coordinator_moved(response)) is not None}


def moved_reason(moved: Mapping[str, type[kafka_errors.KafkaError]]) -> str:
    """What ``moved_groups`` found, in words: the first group and its error."""
    group, error = next(iter(moved.items()), (None, None))
    return "coordinator moved" if error is None else f"coordinator moved for {group} ({error.__name__})"


def describe_groups_request(batch: Sequence[str]) -> Any:
    """Classic DescribeGroups; authorized-operation bits are neither asked for nor decoded (some
    brokers set bits that kafka-python's enum does not know)."""
    return DescribeGroupsRequest(groups=list(batch), include_authorized_operations=False)


def consumer_group_describe_request(batch: Sequence[str]) -> Any:
    """ConsumerGroupDescribe (KIP-848), for groups of the new consumer protocol."""
    return ConsumerGroupDescribeRequest(group_ids=list(batch), include_authorized_operations=False)


def streams_group_describe_request(batch: Sequence[str]) -> Any:
    """StreamsGroupDescribe (KIP-1071), for the groups of Kafka Streams applications of the streams protocol;
    its answer names members as ConsumerGroupDescribe's does (``described_groups`` reads both)."""
    return StreamsGroupDescribeRequest(group_ids=list(batch), include_authorized_operations=False)


def group_kinds(listed: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each listed group's kind (ListGroups' answers, as kafka-python gives them): its ``group_type``
    (ListGroups v5, Kafka 4.0 on: ``classic``, ``consumer``, ``share``, ``streams``), else what its protocol
    type says (``share``, ``streams``), else ``classic``: before Kafka 4.0 every group is one."""
    kinds: dict[str, str] = {}
    for group in listed:
        kind = group.get("group_type") or ""
        if not kind:
            protocol_type = group.get("protocol_type") or ""
            kind = protocol_type if protocol_type in (SHARE_GROUP, "streams") else "classic"
        kinds[group["group_id"]] = kind.lower()
    return kinds


DESCRIBED_KINDS = ("classic", "consumer")
"""The group kinds DescribeGroups and ConsumerGroupDescribe describe, members and all."""


def listed_groups(listed: Iterable[Mapping[str, Any]], wanted: Collection[str]) -> dict[str, GroupInfo]:
    """The ``wanted`` groups the brokers list whose kind neither describe request describes (a Streams
    application's group of the streams protocol, Kafka 4.1 on), each with the state the listing gives
    (ListGroups v4 on) and its members not counted (``GroupInfo.members`` -1): both describes answer such a
    group GROUP_ID_NOT_FOUND even while it has members, and not found must not read as empty."""
    kinds = group_kinds(listed)
    states = {group["group_id"]: group.get("group_state") or "StateNotListed" for group in listed}  # never writable
    return {
        g: GroupInfo(group_id=g, state=states[g], protocol_type=kinds[g], members=-1)
        for g in wanted
        if g in kinds and kinds[g] not in DESCRIBED_KINDS
    }


def described_groups(response: Any, protocol: str) -> list[GroupInfo]:
    """Both describe answers have the same shape where it matters: id, state, members, error;
    ``protocol`` is the protocol type when the answer carries none (ConsumerGroupDescribe answers
    only for groups of the consumer protocol)."""
    return [
        GroupInfo(
            group_id=group.group_id,
            state=group.group_state or "Unknown",
            protocol_type=getattr(group, "protocol_type", "") or protocol,
            members=len(group.members),
            error=error_name(group.error_code) if group.error_code else None,
            clients=tuple(
                f"{m.client_id or '(no client id)'} from {m.client_host or '(unknown host)'}" for m in group.members
            ),
            static_members=tuple(sorted(filter(None, (_instance_id(m) for m in group.members)))),
        )
        for group in response.groups
    ]


def _instance_id(member: Any) -> str | None:
    """A member's ``group.instance.id``: DescribeGroups (v4+) and ConsumerGroupDescribe name it differently."""
    return getattr(member, "group_instance_id", None) or getattr(member, "instance_id", None)


DELETION_BUDGET = 256 * 1024
"""The most tombstone bytes one DeleteGroups request is sized to make. Kafka 4's group coordinator writes the
tombstones of every group one request deletes as one batch per offsets-topic partition, and refuses a batch past
``message.max.bytes`` (1 MB by default) as an unknown server error: deleting 400 groups of 200 partitions at once
failed so. A quarter of the default leaves room for brokers set lower and for the estimate's error."""
_GROUP_TOMBSTONES = 512
"""Bytes of a group's own tombstones besides its offsets' (its metadata, its assignment records)."""


def deletion_batches(held: Mapping[str, Collection[TP]], budget: int = DELETION_BUDGET) -> list[list[str]]:
    """The groups of ``held`` (each with the offsets it holds) in DeleteGroups requests whose tombstones fit
    ``budget``, in order; a group larger than the budget alone (its offsets were committed in one request, so
    its tombstones, smaller than those records, fit a batch)."""
    requests: list[list[str]] = []
    size = budget
    for group, partitions in held.items():
        named = len(group.encode())
        cost = _GROUP_TOMBSTONES + named + sum(_offset_tombstone(named, tp.topic) for tp in partitions)
        if size + cost > budget:
            requests.append([])
            size = 0
        requests[-1].append(group)
        size += cost
    return requests


def _offset_tombstone(group_bytes: int, topic: str) -> int:
    """An offset's tombstone in a batch: its key (version, group, topic, partition: 10 bytes besides the names)
    and a record's framing (at most 14 bytes with a null value and no headers)."""
    return 24 + group_bytes + len(topic.encode())


def remove_static_members_request(instance_ids: Sequence[str], reason: str) -> list[Any]:
    """The members LeaveGroup (v3+, as RemoveMembersFromConsumerGroup sends it) removes: by instance id alone."""
    return [MemberToRemove(group_instance_id=instance_id, reason=reason) for instance_id in instance_ids]


def committed_offsets(tag: str | None, response: Any) -> dict[str, dict[TP, CommittedOffset]]:
    """An OffsetFetch answer (multi-group when ``tag`` is None, else the one group ``tag``):
    committed offsets per group, partitions without a commit (-1) left out. An error names the
    group and partition."""
    result: dict[str, dict[TP, CommittedOffset]] = {}
    groups = [(g.group_id, g) for g in response.groups] if tag is None else [(tag, response)]
    for group_id, group in groups:
        if group.error_code:
            raise ClusterError(f"reading committed offsets of group {group_id} failed: {error_name(group.error_code)}")
        offsets: dict[TP, CommittedOffset] = {}
        for topic in group.topics:
            for part in topic.partitions:
                if part.error_code:
                    raise ClusterError(
                        f"reading the offset of group {group_id} on {topic.name}/{part.partition_index} failed: "
                        f"{error_name(part.error_code)}"
                    )
                if part.committed_offset >= 0:
                    offsets[TP(topic.name, part.partition_index)] = CommittedOffset(
                        part.committed_offset, part.metadata or None
                    )
        result[group_id] = offsets
    return result


def offset_commit_request(group: str, offsets: Mapping[TP, CommittedOffset]) -> Any:
    """An admin OffsetCommit (no member, no generation) for one group.

    Version 7 at most: the flexible versions' tagged fields cost more to encode than the whole rest
    of a commit, and add nothing an admin commit uses.
    """
    by_topic = _partitions_by_topic(offsets, _CommitPartition)
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        retention_time_ms=-1,
        topics=[_CommitTopic(name=name, partitions=parts) for name, parts in by_topic.items()],
        max_version=7,
    )


# -- the fence: a transaction under the target's transactional id -----------------------------------
# Versions before KIP-890's second part (EndTxn 5, TxnOffsetCommit 5): the producer epoch stays the one
# InitProducerId gave until another writer's InitProducerId bumps it, so one epoch carries a writer
# through every transaction of its run, in any process that holds it.

_TxnTopic = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
_TxnPartition = _TxnTopic.TxnOffsetCommitRequestPartition


def init_producer_id_request(transactional_id: str, transaction_timeout_ms: int) -> Any:
    """InitProducerId: the id's epoch bumped (whatever an older writer left open aborted)."""
    return InitProducerIdRequest(
        transactional_id=transactional_id, transaction_timeout_ms=transaction_timeout_ms, max_version=4
    )


def add_offsets_request(transactional_id: str, producer_id: int, epoch: int, group: str) -> Any:
    return AddOffsetsToTxnRequest(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=epoch, group_id=group,
        max_version=3,
    )  # fmt: skip


def txn_offset_commit_request(
    transactional_id: str, producer_id: int, epoch: int, group: str, offsets: Mapping[TP, CommittedOffset]
) -> Any:
    """TxnOffsetCommit for a group without members (no generation, no member), in the open transaction."""
    by_topic = _partitions_by_topic(offsets, _TxnPartition)
    return TxnOffsetCommitRequest(
        transactional_id=transactional_id,
        group_id=group,
        producer_id=producer_id,
        producer_epoch=epoch,
        generation_id=-1,
        member_id="",
        group_instance_id=None,
        topics=[_TxnTopic(name=name, partitions=parts) for name, parts in by_topic.items()],
        max_version=4,
    )


def end_txn_request(transactional_id: str, producer_id: int, epoch: int, *, commit: bool) -> Any:
    return EndTxnRequest(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=epoch, committed=commit,
        max_version=4,
    )  # fmt: skip


UNSTABLE_OFFSET_COMMIT = 88


def stable_offset_requests(
    partitions_by_group: Mapping[str, Collection[TP]], multi_group: bool
) -> list[tuple[str | None, Any]]:
    """OffsetFetch requests that require stable offsets (KIP-447) for these partitions of these groups: a
    partition whose transactional commit's markers are not written yet answers UNSTABLE_OFFSET_COMMIT
    instead of its older offset (asked for by name: a request for all of a group's partitions leaves out one
    whose only offset is still pending). One multi-group request (v8+) tagged None, or one v7 request per
    group tagged with its id."""

    def topics(tps: Collection[TP]) -> dict[str, list[int]]:
        named: dict[str, list[int]] = defaultdict(list)
        for tp in tps:
            named[tp.topic].append(tp.partition)
        return named

    if multi_group:
        _Group = OffsetFetchRequest.OffsetFetchRequestGroup
        groups = [
            _Group(group_id=g, topics=[_Group.OffsetFetchRequestTopics(name=t, partition_indexes=ps)
                                       for t, ps in topics(tps).items()])
            for g, tps in partitions_by_group.items()
        ]  # fmt: skip
        return [(None, OffsetFetchRequest(groups=groups, require_stable=True, min_version=8, max_version=8))]
    _Topic = OffsetFetchRequest.OffsetFetchRequestTopic
    requests: list[tuple[str | None, Any]] = []
    for g, tps in partitions_by_group.items():
        named = [_Topic(name=t, partition_indexes=ps) for t, ps in topics(tps).items()]
        request = OffsetFetchRequest(group_id=g, topics=named, require_stable=True, min_version=7, max_version=7)
        requests.append((g, request))
    return requests


def unstable_groups(tag: str | None, response: Any) -> list[str]:
    """The groups of an OffsetFetch answer (``stable_offset_requests``) whose offsets are not stable yet."""
    groups = [(g.group_id, g) for g in response.groups] if tag is None else [(tag, response)]
    unstable = []
    for group_id, group in groups:
        codes = [getattr(group, "error_code", 0)]
        codes.extend(p.error_code for t in group.topics for p in t.partitions)
        if UNSTABLE_OFFSET_COMMIT in codes:
            unstable.append(group_id)
    return unstable


def _partitions_by_topic(offsets: Mapping[TP, CommittedOffset], partition: Any) -> dict[str, list[Any]]:
    """A commit's partitions (OffsetCommit's or TxnOffsetCommit's ``partition`` class) grouped by topic."""
    by_topic: dict[str, list[Any]] = defaultdict(list)
    for tp, committed in offsets.items():
        by_topic[tp.topic].append(
            partition(
                partition_index=tp.partition,
                committed_offset=committed.offset,
                committed_leader_epoch=-1,
                committed_metadata=committed.metadata or "",
            )
        )
    return by_topic


def commit_errors(response: Any) -> dict[TP, str | None]:
    """An OffsetCommit answer: per partition the error name or None."""
    return {
        TP(topic.name, part.partition_index): (error_name(part.error_code) if part.error_code else None)
        for topic in response.topics
        for part in topic.partitions
    }


# -- records ------------------------------------------------------------------------------------


def fetch_requests(
    by_node: Mapping[int, Sequence[tuple[TP, int]]],
    limits: Mapping[TP, int],
    fetch_max_bytes: int,
    wait_ms: int,
    ignoring: Collection[int] = (),
) -> list[tuple[int, Any]]:
    """Fetch requests per leader, each partition with its byte limit: as many partitions per request
    as fit the response limit at their full limits, so that the broker serves every partition asked
    for (a partition left out by a full response would only be asked again).

    On a node of ``ignoring`` (seen to answer over a partition's limit: ``over_limit``) every partition
    goes alone, its limit the request's (``alone_max_bytes``): such a broker (the local one, Tansu)
    fills a request's first partition up to the response limit whatever the partition's own, but
    honours the response limit."""
    requests = []
    for node, entries in by_node.items():
        each_alone = node in ignoring
        alone = [entry for entry in entries if each_alone or limits[entry[0]] == ONE_BATCH]
        shared = packed(
            [entry for entry in entries if not each_alone and limits[entry[0]] != ONE_BATCH],
            lambda entry: max(1, limits[entry[0]]),
            fetch_max_bytes,
        )
        shares = [([entry], alone_max_bytes(limits[entry[0]])) for entry in alone]
        for share, max_bytes in [
            *shares,
            *((share, shared_max_bytes(share, limits, fetch_max_bytes)) for share in shared),
        ]:
            topics: dict[str, list[Any]] = defaultdict(list)
            for tp, offset in share:
                topics[tp.topic].append(
                    _FetchPartition(
                        partition=tp.partition,
                        fetch_offset=offset,
                        partition_max_bytes=max(1, limits[tp]),
                        current_leader_epoch=-1,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                    )
                )
            request = FetchRequest(
                replica_id=-1,
                max_wait_ms=wait_ms,
                min_bytes=1,
                max_bytes=max_bytes,
                isolation_level=READ_COMMITTED,
                topics=[_FetchTopic(topic=name, partitions=parts) for name, parts in topics.items()],
                max_version=FETCH_MAX_VERSION,
            )
            requests.append((node, request))
    return requests


def shared_max_bytes(share: Sequence[tuple[TP, int]], limits: Mapping[TP, int], fetch_max_bytes: int) -> int:
    """The response limit of a request that asks several partitions: what their limits add up to, at
    most ``fetch_max_bytes``. A broker that honours each partition's limit sends no more anyway; one
    that fills a request's first partition up to the response limit (the local one, before it is seen
    doing so) then sends the share's bytes, not 4 MiB of one partition's log (its first request of
    each connection: 1.3-2.9 MB over-read for 20 point reads of 16 KB)."""
    return min(fetch_max_bytes, sum(max(1, limits[tp]) for tp, _ in share))


def alone_max_bytes(limit: int) -> int:
    """The response limit of a request that asks one partition alone: 1 byte (the batch holding the
    position, whole, and nothing after it) for ``ONE_BATCH`` and for a point read, which wants that
    batch; the partition's own limit for a read of a range."""
    return 1 if limit <= POINT_READ_BYTES else limit


def whole_past_limit(answer: PartitionFetch, limit: int) -> bool:
    """Whether a broker sent a partition more than its limit in more than its first batch: whole batches
    past the limit, where Apache Kafka stops at the limit and cuts the batch it ends in (KIP-74 lets
    only a first batch larger than the limit come whole). Such a broker (the local one) never cuts a
    batch: a reader may ask a limit that ends just before records it holds."""
    return answer.size > max(1, limit) and answer.size > answer.first_batch_bytes


def over_limit(answer: PartitionFetch, limit: int) -> bool:
    """Whether a broker sent a partition more than twice its limit across more than one batch. Apache
    Kafka sends at most the limit, or the first batch whole when that alone is larger (KIP-74); the
    local broker sends a request's first partition everything up to the response limit (megabytes for
    a point read of 16 KB). Twice: it also rounds each partition up to a whole batch, which is cheap."""
    return answer.size > max(2 * max(1, limit), answer.first_batch_bytes)


def first_batch_bytes(data: bytes | None) -> int:
    """Bytes of the first record batch of a partition's answer, whole (its length field and the
    12 bytes of offset and length before it); 0 when there is none."""
    if not data or len(data) < LOG_OVERHEAD:
        return 0
    (length,) = struct.unpack_from(">i", data, 8)
    return LOG_OVERHEAD + length


_MAGIC_AT = 16
_LAST_OFFSET_DELTA_AT = 23
"""Where a v2 record batch holds its last offset delta: base offset (8), length (4), leader epoch (4),
magic (1), CRC (4), attributes (2)."""


def batch_costs(data: bytes | None) -> tuple[float, int]:
    """What an offset takes on the wire in an answer's whole batches (their bytes over the offsets they
    span), and the largest of them, from the batch headers alone, nothing decoded; (0.0, 0) when none
    is whole. A batch cut short at the limit is left out, and so is where the position fell inside the
    first batch: the answer's bytes over the offsets it read past the position would price a read
    begun near a batch's end at many times its cost."""
    if not data:
        return 0.0, 0
    at, first, end, largest = 0, -1, -1, 0
    while at + _LAST_OFFSET_DELTA_AT + 4 <= len(data):
        base, length = struct.unpack_from(">qi", data, at)
        if at + LOG_OVERHEAD + length > len(data):
            break
        if data[at + _MAGIC_AT] != 2:
            return 0.0, 0  # a legacy message set (magic 0 or 1) holds no offset delta there: not priced
        (delta,) = struct.unpack_from(">i", data, at + _LAST_OFFSET_DELTA_AT)
        first = base if first < 0 else first
        largest = max(largest, LOG_OVERHEAD + length)
        end, at = base + delta + 1, at + LOG_OVERHEAD + length
    return (at / (end - first), largest) if end > first else (0.0, 0)


def decode_fetch(
    response: Any,
    positions: Mapping[TP, int],
    until: Mapping[TP, int] | None,
    limits: Mapping[TP, int] | None = None,
    keep: Mapping[TP, Container[int]] | None = None,
) -> Iterator[tuple[TP, PartitionFetch]]:
    """Each partition of a Fetch answer, decoded. One far over its limit (``over_limit``, with
    ``limits``) is decoded whole, past ``until``: a broker that ignores the limit sent megabytes for
    a point read (the local one, its first partition of a request), and a reader may use them instead
    of asking for them again. ``keep``: a partition named there returns only its records at those offsets
    (``decode_partition``)."""
    for topic in response.responses:
        for part in topic.partitions:
            tp = TP(topic.topic, part.partition_index)
            cut = until.get(tp) if until is not None else None
            kept = keep.get(tp) if keep is not None else None
            try:
                answer = decode_partition(positions[tp], part, cut, kept)
                if cut is not None and limits is not None and tp in limits and over_limit(answer, limits[tp]):
                    answer = decode_partition(positions[tp], part, None)
                yield tp, answer
            except UnreadableBatchError as error:
                raise UnreadableBatchError(f"{tp}: {error}") from None


CODEC_LIBRARIES = {"gzip": "gzip", "snappy": "cramjam", "lz4": "cramjam", "zstd": "cramjam"}
"""Each codec Kafka has, and the module the record reader decodes it with (``batch_records``)."""


def readable_codecs() -> dict[str, bool]:
    """Which codecs this install can decode (``offset-restore --version`` lists them)."""
    import importlib.util

    return {codec: importlib.util.find_spec(module) is not None for codec, module in CODEC_LIBRARIES.items()}


READ_COMMITTED = 1
"""Every read sees what a ``read_committed`` consumer sees: records of aborted transactions are never
evidence, anchors or matches, and a partition ends at its last stable offset (an open transaction's
records are not read until it ends)."""


def _readable_end(part: Any) -> int:
    """Where a read_committed read of the partition ends: its last stable offset (the high watermark
    from a broker that does not report one)."""
    stable = getattr(part, "last_stable_offset", -1)
    return stable if stable is not None and stable >= 0 else part.high_watermark


class _Aborted:
    """The aborted transactions of one fetch answer, as the Java consumer (and kafka-python's own
    fetcher) tracks them: a producer's batches are skipped from the first offset of its aborted
    transaction until the abort marker that ends it."""

    def __init__(self, transactions: Any) -> None:
        self.pending = sorted(((t.first_offset, t.producer_id) for t in transactions), reverse=True)
        self.producers: dict[int, int] = {}
        """Producers whose aborted transaction is under way in the answer -> its first offset."""
        self.batches: list[AbortedBatch] = []
        """The aborted transactions' data batches skipped, in offset order."""
        self.markers: list[int] = []
        """The offsets of the control batches skipped."""
        self.ended: list[tuple[int, int]] = []
        """(first offset, abort marker's offset) of each aborted transaction whose marker the answer held."""

    def skips(self, batch: Any) -> bool:
        """Whether ``batch`` holds nothing to read: a control batch, or one of an aborted transaction
        (noted in ``batches``)."""
        delta = getattr(batch, "last_offset_delta", None)  # a legacy (v0/v1) batch is never transactional
        last = None if delta is None else batch.base_offset + delta
        while self.pending and last is not None and self.pending[-1][0] <= last:
            first, producer = self.pending.pop()
            self.producers[producer] = first
        if getattr(batch, "is_control_batch", False):
            if batch.producer_id in self.producers and abort_marker(batch):
                self.ended.append((self.producers.pop(batch.producer_id), batch.base_offset))
            self.markers.append(batch.base_offset)
            return True
        if not getattr(batch, "is_transactional", False) or batch.producer_id not in self.producers:
            return False
        self.batches.append(
            AbortedBatch(
                batch.base_offset, batch.next_offset, batch.producer_id, batch.producer_epoch,
                batch.base_sequence, self.producers[batch.producer_id],
            )
        )  # fmt: skip
        return True


def decode_partition(
    fetch_offset: int, part: Any, until: int | None, keep: Container[int] | None = None
) -> PartitionFetch:
    """One partition of a Fetch answer: data records at or after the fetch offset (a batch starts
    before it), control batches skipped but counted in where the next fetch starts, decoding
    stopped after the first record at or past ``until``. A batch cut short by the size limit
    decodes to nothing (kafka-python's ``next_batch`` stops there). ``keep``: only the records at these
    offsets are returned, and ``until`` is not given with it (where the next fetch starts is the batches'
    end, whichever records are kept)."""
    if keep is not None and until is not None:
        raise ValueError("a read keeps some offsets or stops at one, not both")
    if part.error_code:
        error = kafka_errors.for_code(part.error_code)
        return PartitionFetch(
            fetch_offset,
            high_watermark=part.high_watermark,
            log_start_offset=part.log_start_offset,
            error=error.__name__,
            # A missing topic stays missing; a moving leader or a replica not ready may pass.
            retriable=error.retriable and error is not kafka_errors.UnknownTopicOrPartitionError,
        )
    records: list[Record] = []
    next_offset = -1
    earlier: tuple[int, Callable[[int], list[Record]]] | None = None
    aborted = _Aborted(getattr(part, "aborted_transactions", None) or ())
    if part.records:
        for base, raw, batch in batches(part.records):
            if aborted.skips(batch):  # a transaction marker, or a batch of an aborted transaction: it takes offsets
                next_offset = max(next_offset, batch.next_offset)
                continue
            done = decode_records(batch, base, fetch_offset, until, records, keep)
            if earlier is None and next_offset < 0 and base < fetch_offset:
                earlier = (base, partial(records_before, raw, fetch_offset))
            if done:
                next_offset = records[-1].offset + 1
                break
            next_offset = max(next_offset, batch.next_offset)
    costs = batch_costs(part.records)
    return PartitionFetch(
        fetch_offset,
        records=records,
        high_watermark=_readable_end(part),
        log_start_offset=part.log_start_offset,
        next_offset=next_offset,
        size=len(part.records or b""),
        first_batch_bytes=first_batch_bytes(part.records),
        bytes_per_offset=costs[0],
        largest_batch_bytes=costs[1],
        earlier_from=earlier[0] if earlier else -1,
        earlier=earlier[1] if earlier else None,
        aborted=tuple(aborted.batches),
        markers=tuple(aborted.markers),
        aborted_ends=tuple(aborted.ended),
    )
