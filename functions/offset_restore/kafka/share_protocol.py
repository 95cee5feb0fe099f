"""Share groups' requests and answers (KIP-932), built and decoded apart from I/O: DescribeShareGroupOffsets,
AlterShareGroupOffsets and DeleteShareGroupOffsets (APIs 90-92, Kafka's own schemas in ``schemas/``).

A share group's position on a share-partition is its start offset (SPSO): the first record not yet
acknowledged, where delivery starts again after a restart. It is read, set and removed here as a consumer
group's committed offset is by OffsetFetch, OffsetCommit and OffsetDelete, and shown to the rest of the code
as one (``CommittedOffset``, no metadata): a translated SPSO means what a translated committed offset means.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from offset_restore.errors import ClusterError
from offset_restore.kafka.model import TP, CommittedOffset
from offset_restore.kafka.protocol import error_name
from offset_restore.kafka.schemas import (
    AlterShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
)

__all__ = [
    "DESCRIBE_SHARE_GROUP_OFFSETS",
    "NOT_EMPTY",
    "alter_errors",
    "alter_request",
    "delete_errors",
    "delete_request",
    "delivered_after_start",
    "describe_request",
    "start_offsets",
]

DESCRIBE_SHARE_GROUP_OFFSETS = DescribeShareGroupOffsetsRequest.API_KEY
"""The request a broker with share groups announces (Kafka 4.1 on; on by default from 4.2)."""
NOT_EMPTY = "NonEmptyGroupError"
"""The error AlterShareGroupOffsets and DeleteShareGroupOffsets give a group with members: nothing written."""
_NO_START = -1
"""The start offset a share-partition without state is described with (never consumed by the group)."""

_Group = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup
_AlterTopic = AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic
_AlterPartition = _AlterTopic.AlterShareGroupOffsetsRequestPartition
_DeleteTopic = DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic


def describe_request(group_ids: Sequence[str]) -> Any:
    """The start offsets of every share-partition each group holds (topics null: all of them)."""
    return DescribeShareGroupOffsetsRequest(groups=[_Group(group_id=g, topics=None) for g in group_ids])


def start_offsets(response: Any) -> dict[str, dict[TP, CommittedOffset]]:
    """A DescribeShareGroupOffsets answer: per group its start offset per share-partition, those without
    state left out (as OffsetFetch leaves out partitions without a commit). A group the brokers do not know
    is answered without topics, as one that never consumed. An error names the group and partition."""
    result: dict[str, dict[TP, CommittedOffset]] = {}
    for group in response.groups:
        if group.error_code:
            raise ClusterError(
                f"reading the start offsets of share group {group.group_id} failed: {error_name(group.error_code)}"
                + (f" ({group.error_message})" if group.error_message else "")
            )
        offsets: dict[TP, CommittedOffset] = {}
        for topic in group.topics:
            for part in topic.partitions:
                if part.error_code:
                    raise ClusterError(
                        f"reading the start offset of share group {group.group_id} on {topic.topic_name}/"
                        f"{part.partition_index} failed: {error_name(part.error_code)}"
                    )
                if part.start_offset != _NO_START:
                    offsets[TP(topic.topic_name, part.partition_index)] = CommittedOffset(part.start_offset, None)
        result[group.group_id] = offsets
    return result


def delivered_after_start(response: Any, ends: Mapping[TP, int]) -> dict[str, dict[TP, int]]:
    """A DescribeShareGroupOffsets answer of version 1 on (KIP-1226, Kafka 4.2): per group and share-partition
    the records after its start offset whose delivery had completed (acknowledged, or given up on): ``ends``
    (the log ends) less the start offset less the broker's lag. A consumer resuming from that start offset is
    given them again. An end read after the answer counts records produced in between too: at most this many.
    Nothing for an answer of version 0 (no lag) or a partition without state."""
    if getattr(response, "version", 0) < 1:
        return {}
    result: dict[str, dict[TP, int]] = {}
    for group in response.groups:
        counts = {
            tp: max(0, ends[tp] - part.start_offset - part.lag)
            for topic in group.topics
            for part in topic.partitions
            if (tp := TP(topic.topic_name, part.partition_index)) in ends
            and part.start_offset != _NO_START
            and part.lag >= 0
            and not part.error_code
        }
        result[group.group_id] = counts
    return result


def alter_request(group_id: str, offsets: Mapping[TP, CommittedOffset]) -> Any:
    """Set the group's start offsets on these share-partitions (the group must have no members)."""
    by_topic: dict[str, list[Any]] = defaultdict(list)
    for tp, offset in sorted(offsets.items()):
        by_topic[tp.topic].append(_AlterPartition(partition_index=tp.partition, start_offset=offset.offset))
    return AlterShareGroupOffsetsRequest(
        group_id=group_id, topics=[_AlterTopic(topic_name=t, partitions=parts) for t, parts in by_topic.items()]
    )


def alter_errors(response: Any, asked: Mapping[TP, CommittedOffset]) -> dict[TP, str | None]:
    """An AlterShareGroupOffsets answer: per partition asked, the error name or None. An error of the whole
    request (a group with members, ``NOT_EMPTY``; a group of another kind) is every partition's."""
    if response.error_code:
        return dict.fromkeys(asked, _said(response.error_code, response.error_message))
    answered = {
        TP(topic.topic_name, part.partition_index): (
            _said(part.error_code, part.error_message) if part.error_code else None
        )
        for topic in response.responses
        for part in topic.partitions
    }
    return {tp: answered.get(tp, "NoAnswer") for tp in asked}


def delete_request(group_id: str, topics: Sequence[str]) -> Any:
    """Remove the group's start offsets on every partition of these topics (the request's unit is a topic)."""
    return DeleteShareGroupOffsetsRequest(group_id=group_id, topics=[_DeleteTopic(topic_name=t) for t in topics])


def delete_errors(response: Any, topics: Sequence[str]) -> dict[str, str | None]:
    """A DeleteShareGroupOffsets answer: per topic asked, the error name or None."""
    if response.error_code:
        return dict.fromkeys(topics, _said(response.error_code, response.error_message))
    answered = {
        t.topic_name: _said(t.error_code, t.error_message) if t.error_code else None for t in response.responses
    }
    return {topic: answered.get(topic, "NoAnswer") for topic in topics}


def _said(code: int, message: str | None) -> str:
    """An error's name; NON_EMPTY_GROUP bare (the callers test for it), others with the broker's words."""
    name = error_name(code)
    return name if name == NOT_EMPTY or not message else f"{name}: {message}"
