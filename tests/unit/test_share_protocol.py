"""Share groups' requests and answers without a broker (kafka/share_protocol.py): the answers are Kafka's own
response schemas, encoded and decoded as they cross the wire."""

from __future__ import annotations

from typing import Any

import pytest
from offset_restore.errors import ClusterError
from offset_restore.kafka import share_protocol
from offset_restore.kafka.model import TP, CommittedOffset
from offset_restore.kafka.schemas import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponse,
)

_DGroup = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseGroup
_DTopic = _DGroup.DescribeShareGroupOffsetsResponseTopic
_DPart = _DTopic.DescribeShareGroupOffsetsResponsePartition
_ATopic = AlterShareGroupOffsetsResponse.AlterShareGroupOffsetsResponseTopic
_APart = _ATopic.AlterShareGroupOffsetsResponsePartition
_XTopic = DeleteShareGroupOffsetsResponse.DeleteShareGroupOffsetsResponseTopic
NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, UNKNOWN_TOPIC_OR_PARTITION = 68, 69, 3


def wire(message: Any) -> Any:
    """``message`` as the other side reads it: encoded and decoded by its schema."""
    return type(message).decode(message.encode(version=0), version=0)


def described(*groups: tuple[str, int, list[tuple[str, int, int, int]]]) -> Any:
    """A DescribeShareGroupOffsets answer: per group its error and (topic, partition, start, error) rows."""
    return wire(
        DescribeShareGroupOffsetsResponse(
            throttle_time_ms=0,
            groups=[
                _DGroup(
                    group_id=group,
                    error_code=error,
                    error_message=None,
                    topics=[
                        _DTopic(
                            topic_name=topic,
                            topic_id=None,
                            partitions=[
                                _DPart(
                                    partition_index=p, start_offset=s, leader_epoch=0, error_code=e, error_message=None
                                )
                                for t, p, s, e in rows
                                if t == topic
                            ],
                        )
                        for topic in sorted({t for t, *_ in rows})
                    ],
                )
                for group, error, rows in groups
            ],
        )
    )


def test_start_offsets_leave_out_partitions_without_state_as_offset_fetch_leaves_out_those_without_a_commit() -> None:
    answer = described(("q", 0, [("t", 0, 120, 0), ("t", 1, -1, 0), ("u", 2, 0, 0)]), ("empty", 0, []))
    assert share_protocol.start_offsets(answer) == {
        "q": {TP("t", 0): CommittedOffset(120, None), TP("u", 2): CommittedOffset(0, None)},
        "empty": {},
    }


@pytest.mark.parametrize(
    ("group_error", "partition_error", "said"),
    [
        (GROUP_ID_NOT_FOUND, 0, "reading the start offsets of share group q failed: GroupIdNotFoundError"),
        (0, UNKNOWN_TOPIC_OR_PARTITION, "share group q on t/1 failed: UnknownTopicOrPartitionError"),
    ],
)
def test_an_error_reading_start_offsets_names_the_group_and_partition(
    group_error: int, partition_error: int, said: str
) -> None:
    answer = described(("q", group_error, [("t", 0, 5, 0), ("t", 1, 5, partition_error)]))
    with pytest.raises(ClusterError, match=said):
        share_protocol.start_offsets(answer)


def test_an_alter_request_holds_every_partition_asked_under_its_topic() -> None:
    asked = {
        TP("t", 1): CommittedOffset(25, None),
        TP("t", 0): CommittedOffset(110, "x"),
        TP("u", 3): CommittedOffset(0, None),
    }
    sent = wire(share_protocol.alter_request("q", asked))
    assert isinstance(sent, AlterShareGroupOffsetsRequest) and sent.group_id == "q"
    assert [(t.topic_name, [(p.partition_index, p.start_offset) for p in t.partitions]) for t in sent.topics] == [
        ("t", [(0, 110), (1, 25)]),
        ("u", [(3, 0)]),
    ]


def altered(error: int, message: str | None, rows: list[tuple[str, int, int]]) -> Any:
    return wire(
        AlterShareGroupOffsetsResponse(
            throttle_time_ms=0,
            error_code=error,
            error_message=message,
            responses=[
                _ATopic(
                    topic_name=topic,
                    topic_id=None,
                    partitions=[
                        _APart(partition_index=p, error_code=e, error_message=None) for t, p, e in rows if t == topic
                    ],
                )
                for topic in sorted({t for t, *_ in rows})
            ],
        )
    )


def test_a_group_with_members_refuses_every_partition_and_a_partition_not_answered_is_said() -> None:
    asked = {TP("t", 0): CommittedOffset(1, None), TP("t", 1): CommittedOffset(2, None)}
    assert share_protocol.alter_errors(altered(NON_EMPTY_GROUP, "has members", []), asked) == dict.fromkeys(
        asked, share_protocol.NOT_EMPTY
    )
    assert share_protocol.alter_errors(altered(GROUP_ID_NOT_FOUND, "Group cg is not a share group.", []), asked) == (
        dict.fromkeys(asked, "GroupIdNotFoundError: Group cg is not a share group.")
    )
    answer = altered(0, None, [("t", 0, 0)])
    assert share_protocol.alter_errors(answer, asked) == {TP("t", 0): None, TP("t", 1): "NoAnswer"}
    answer = altered(0, None, [("t", 0, UNKNOWN_TOPIC_OR_PARTITION), ("t", 1, 0)])
    assert share_protocol.alter_errors(answer, asked) == {TP("t", 0): "UnknownTopicOrPartitionError", TP("t", 1): None}


def test_a_removal_answers_per_topic() -> None:
    answer = wire(
        DeleteShareGroupOffsetsResponse(
            throttle_time_ms=0,
            error_code=0,
            error_message=None,
            responses=[
                _XTopic(topic_name="t", topic_id=None, error_code=0, error_message=None),
                _XTopic(topic_name="u", topic_id=None, error_code=UNKNOWN_TOPIC_OR_PARTITION, error_message="gone"),
            ],
        )
    )
    assert share_protocol.delete_errors(answer, ["t", "u", "v"]) == {
        "t": None,
        "u": "UnknownTopicOrPartitionError: gone",
        "v": "NoAnswer",
    }
    sent = wire(share_protocol.delete_request("q", ["t", "u"]))
    assert (sent.group_id, [t.topic_name for t in sent.topics]) == ("q", ["t", "u"])


def test_records_done_past_the_start_offset_are_the_log_end_less_the_start_less_the_lag() -> None:
    """KIP-1226's lag (DescribeShareGroupOffsets v1) counts the records from the start offset to the high
    watermark not yet delivered to completion: the rest past the start offset were acknowledged and are
    delivered again from it. A version 0 answer has no lag: nothing is said."""
    partitions = [
        _DPart(partition_index=0, start_offset=100, leader_epoch=0, lag=50, error_code=0, error_message=None),
        _DPart(partition_index=1, start_offset=-1, leader_epoch=0, lag=-1, error_code=0, error_message=None),
        _DPart(partition_index=2, start_offset=7, leader_epoch=0, lag=10, error_code=0, error_message=None),
    ]
    answer = DescribeShareGroupOffsetsResponse(
        throttle_time_ms=0,
        groups=[_DGroup(group_id="q", error_code=0, error_message=None,
                        topics=[_DTopic(topic_name="t", topic_id=None, partitions=partitions)])],
    )  # fmt: skip
    ends = {TP("t", 0): 200, TP("t", 1): 200, TP("t", 2): 12}
    v1 = DescribeShareGroupOffsetsResponse.decode(answer.encode(version=1), version=1)
    # Partition 2's end was read before records arrived that the lag counts: never below 0.
    assert share_protocol.delivered_after_start(v1, ends) == {"q": {TP("t", 0): 50, TP("t", 2): 0}}
    v0 = DescribeShareGroupOffsetsResponse.decode(answer.encode(version=0), version=0)
    assert share_protocol.delivered_after_start(v0, ends) == {}
