"""Wire schemas of Kafka requests kafka-python 3.0 does not define, in the JSON form its protocol
classes load (``load_json=`` this package): ConsumerGroupDescribe (API 69, KIP-848) and StreamsGroupDescribe
(API 89, KIP-1071), which describe the groups of the new consumer and streams protocols that the classic
DescribeGroups answers as GROUP_ID_NOT_FOUND."""

from __future__ import annotations

import sys

from kafka.protocol.api_message import ApiMessage

__all__ = [
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
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
