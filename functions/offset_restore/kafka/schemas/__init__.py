"""Wire schemas of Kafka requests kafka-python 3.0 does not define, in the JSON form its protocol
classes load (``load_json=`` this package): ConsumerGroupDescribe (API 69, KIP-848) and StreamsGroupDescribe
(API 89, KIP-1071), which describe the groups of the new consumer and streams protocols that the classic
DescribeGroups answers as GROUP_ID_NOT_FOUND; DescribeShareGroupOffsets, AlterShareGroupOffsets and
DeleteShareGroupOffsets (APIs 90-92, KIP-932), which read, set and remove a share group's start offsets.
Each is Kafka's own schema, field for field, at version 0 (DescribeShareGroupOffsets to 1: KIP-1226's lag),
checked against Apache Kafka 4.4's answers."""

from __future__ import annotations

import sys

from kafka.protocol.api_message import ApiMessage

__all__ = [
    "AlterShareGroupOffsetsRequest",
    "AlterShareGroupOffsetsResponse",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "DeleteShareGroupOffsetsRequest",
    "DeleteShareGroupOffsetsResponse",
    "DescribeShareGroupOffsetsRequest",
    "DescribeShareGroupOffsetsResponse",
    "StreamsGroupDescribeRequest",
    "StreamsGroupDescribeResponse",
]

_HERE = sys.modules[__name__]


class ConsumerGroupDescribeRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class StreamsGroupDescribeRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class StreamsGroupDescribeResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class DescribeShareGroupOffsetsRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class DescribeShareGroupOffsetsResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class AlterShareGroupOffsetsRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class AlterShareGroupOffsetsResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class DeleteShareGroupOffsetsRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class DeleteShareGroupOffsetsResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass
