"""Requests built and answers decoded without a broker (kafka/protocol.py), and the kafka-python
internals the client reaches into (kafka/internals.py) still where we use them."""

from __future__ import annotations

import functools
import inspect
from types import SimpleNamespace as NS

import kafka.errors as kafka_errors
import pytest
from kafka import KafkaAdminClient
from kafka.record.memory_records import MemoryRecordsBuilder
from offset_restore.errors import ClusterError
from offset_restore.kafka import protocol
from offset_restore.kafka.model import TP, CommittedOffset, GroupInfo

from tests.helpers import held


def _batch(base: int, count: int) -> bytes:
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20, offset=base)
    for i in range(count):
        builder.append(1000 + i, f"k{base + i}".encode(), b"v", [("h", b"x")])
    builder.close()
    return bytes(builder.buffer())


def _part(records: bytes | None, *, error: int = 0, hw: int = 100) -> NS:
    return NS(error_code=error, high_watermark=hw, log_start_offset=0, records=records, partition_index=0)


def test_fetch_requests_hold_as_many_partitions_as_the_response_limit_serves_in_full() -> None:
    node1 = [(TP("a", p), 10 * p) for p in range(5)]
    node2 = [(TP("b", 0), 7), (TP("a", 9), 3)]
    requests = protocol.fetch_requests(
        {1: node1, 2: node2}, dict.fromkeys([tp for tp, _ in node1 + node2], 100), 250, 5
    )
    asked = [
        (node, [(t.topic, p.partition, p.fetch_offset, p.partition_max_bytes) for t in r.topics for p in t.partitions])
        for node, r in requests
    ]
    assert asked == [
        (1, [("a", 0, 0, 100), ("a", 1, 10, 100)]),
        (1, [("a", 2, 20, 100), ("a", 3, 30, 100)]),
        (1, [("a", 4, 40, 100)]),
        (2, [("b", 0, 7, 100), ("a", 9, 3, 100)]),
    ]
    assert {(r.max_wait_ms, r.isolation_level) for _, r in requests} == {(5, 1)}  # read_committed
    # the response limit is what the partitions' limits add up to (at most 250): a broker that fills the
    # first partition up to it (the local one) sends the share's bytes, not the response limit's
    assert [r.max_bytes for _, r in requests] == [200, 200, 100, 200]
    wide = protocol.fetch_requests({1: node1}, dict.fromkeys([tp for tp, _ in node1], 1000), 2500, 5)
    assert [r.max_bytes for _, r in wide] == [2000, 2000, 1000]  # two to a request, the last alone: its own


def test_on_a_node_that_ignores_limits_each_partition_goes_alone_and_a_point_read_asks_one_batch() -> None:
    entries = [(TP("a", p), 10 * p) for p in range(3)]
    limits = {TP("a", 0): 16 * 1024, TP("a", 1): 1024 * 1024, TP("a", 2): 0}  # point read, range, ONE_BATCH
    requests = protocol.fetch_requests({1: entries, 2: [(TP("b", 0), 0)]}, {**limits, TP("b", 0): 100}, 4096, 5, {1})
    asked = [
        (node, r.max_bytes, [(t.topic, p.partition) for t in r.topics for p in t.partitions]) for node, r in requests
    ]
    assert asked == [
        (1, 1, [("a", 0)]),  # the batch holding the position, whole, nothing after it
        (1, 1024 * 1024, [("a", 1)]),  # a range: its own limit is the response's
        (1, 1, [("a", 2)]),
        (2, 100, [("b", 0)]),  # another node, not seen to ignore limits: shared as before, at its limits
    ]


def test_an_answer_over_its_limit_is_the_broker_ignoring_it_unless_it_is_one_batch_whole() -> None:
    one, two = _batch(0, 40), _batch(40, 40)
    alone = protocol.decode_partition(0, _part(one), until=None)
    assert alone.first_batch_bytes == len(one) and alone.size == len(one)
    assert not protocol.over_limit(alone, 1)  # KIP-74: the first batch whole, however small the limit
    both = protocol.decode_partition(0, _part(one + two), until=5)  # decoding stopped early: still counted
    assert both.first_batch_bytes == len(one) and both.size == len(one) + len(two)
    assert protocol.over_limit(both, 1) and protocol.over_limit(both, (len(one) + len(two)) // 2 - 1)
    assert not protocol.over_limit(both, (len(one) + len(two)) // 2)  # rounded up to whole batches: cheap
    cut = protocol.decode_partition(0, _part(one + two[:10]), until=None)
    assert not protocol.over_limit(cut, len(one) + 10)  # the limit honoured: the next batch cut short
    assert protocol.first_batch_bytes(None) == 0 and protocol.first_batch_bytes(one[:5]) == 0


def test_batch_costs_count_the_whole_batches_only_from_their_first_offset() -> None:
    one, two = _batch(0, 40), _batch(40, 20)
    assert protocol.batch_costs(one + two) == ((len(one) + len(two)) / 60, len(one))
    assert protocol.batch_costs(one + two[:30]) == (len(one) / 40, len(one))  # the cut batch left out
    # A read begun at offset 35 costs the first batch whole: priced by its 40 offsets, not the 25 read past 35.
    answer = protocol.decode_partition(35, _part(one + two), until=None)
    assert (answer.bytes_per_offset, answer.largest_batch_bytes) == ((len(one) + len(two)) / 60, len(one))
    assert protocol.batch_costs(None) == protocol.batch_costs(one[:30]) == (0.0, 0)
    legacy = MemoryRecordsBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    legacy.append(1000, b"k", b"v", [])
    legacy.close()
    assert protocol.batch_costs(bytes(legacy.buffer())) == (0.0, 0)  # magic 1: no offset delta to read


def test_a_partition_is_decoded_from_its_fetch_offset_and_stops_after_until() -> None:
    answer = protocol.decode_partition(13, _part(_batch(10, 10)), until=15)
    assert [r.offset for r in answer.records] == [13, 14, 15]
    assert answer.records[0].key == b"k13" and list(answer.records[0].headers) == [("h", b"x")]
    assert answer.read_to == 16 and answer.size > 0
    whole = protocol.decode_partition(13, _part(_batch(10, 10)), until=None)
    assert [r.offset for r in whole.records] == list(range(13, 20)) and whole.read_to == 20


def test_a_partition_read_for_some_offsets_returns_those_records_alone_and_reads_to_the_same_end() -> None:
    """Apply's anchors: the records at the offsets asked for, whole, and where the next read starts as if
    every record were returned (the offsets between are settled, not lost)."""
    blob = _batch(10, 10) + _batch(20, 5)
    whole = protocol.decode_partition(12, _part(blob), until=None)
    kept = protocol.decode_partition(12, _part(blob), until=None, keep={11, 13, 21, 24, 30})
    assert [r.offset for r in kept.records] == [13, 21, 24]  # 11 is before the read, 30 past the answer
    assert held(kept.records) == held(r for r in whole.records if r.offset in {13, 21, 24})
    assert kept.read_to == whole.read_to == 25 and kept.size == whole.size
    nothing = protocol.decode_partition(12, _part(blob), until=None, keep=set())
    assert nothing.records == [] and nothing.read_to == 25
    with pytest.raises(ValueError, match="not both"):
        protocol.decode_partition(12, _part(blob), until=14, keep={13})


def test_a_batch_cut_short_by_the_size_limit_decodes_to_nothing_read() -> None:
    blob = _batch(0, 50)
    answer = protocol.decode_partition(0, _part(blob[: len(blob) // 2]), until=None)
    assert answer.records == [] and answer.read_to == -1 and answer.error is None


def test_an_error_answer_is_named() -> None:
    answer = protocol.decode_partition(5, _part(None, error=1, hw=-1), until=None)
    assert answer.error == "OffsetOutOfRangeError" and answer.records == []


def test_committed_offsets_leave_out_partitions_without_a_commit_and_name_a_failing_group() -> None:
    topic = NS(
        name="t",
        partitions=[
            NS(partition_index=0, committed_offset=5, metadata="m", error_code=0),
            NS(partition_index=1, committed_offset=-1, metadata="", error_code=0),
        ],
    )
    answer = NS(groups=[NS(group_id="g", error_code=0, topics=[topic])])
    assert protocol.committed_offsets(None, answer) == {"g": {TP("t", 0): CommittedOffset(5, "m")}}
    single = NS(error_code=0, topics=[topic])
    assert protocol.committed_offsets("h", single) == {"h": {TP("t", 0): CommittedOffset(5, "m")}}
    with pytest.raises(ClusterError, match="group g failed: GroupAuthorizationFailedError"):
        protocol.committed_offsets(None, NS(groups=[NS(group_id="g", error_code=30, topics=[])]))


def test_coordinator_errors_at_any_level_say_ask_again() -> None:
    moved = NS(groups=[NS(error_code=0, topics=[NS(partitions=[NS(error_code=16)])])])
    assert protocol.coordinator_moved(moved) is kafka_errors.NotCoordinatorError
    assert protocol.coordinator_moved(NS(error_code=14)) is kafka_errors.CoordinatorLoadInProgressError
    assert protocol.coordinator_moved(NS(error_code=0, topics=[NS(partitions=[NS(error_code=25)])])) is None


def test_the_groups_whose_coordinator_moved_are_named_with_their_error() -> None:
    """A retry's warning says which group and which error (a coordinator still loading reads apart from one on
    another broker)."""
    answers = [("a", NS(error_code=0)), ("b", NS(error_code=14)), ("c", NS(error_code=16))]
    moved = protocol.moved_groups(answers)
    assert moved == {"b": kafka_errors.CoordinatorLoadInProgressError, "c": kafka_errors.NotCoordinatorError}
    assert protocol.moved_reason(moved) == "coordinator moved for b (CoordinatorLoadInProgressError)"
    assert protocol.moved_reason({}) == "coordinator moved"


def test_an_admin_commit_has_no_member_and_keeps_each_partitions_metadata() -> None:
    request = protocol.offset_commit_request(
        "g", {TP("t", 1): CommittedOffset(7, None), TP("t", 0): CommittedOffset(3, "m")}
    )
    assert (request.group_id, request.generation_id_or_member_epoch, request.member_id) == ("g", -1, "")
    parts = {
        (p.partition_index, p.committed_offset, p.committed_metadata) for t in request.topics for p in t.partitions
    }
    assert parts == {(1, 7, ""), (0, 3, "m")}
    answer = NS(
        topics=[NS(name="t", partitions=[NS(partition_index=0, error_code=0), NS(partition_index=1, error_code=25)])]
    )
    assert protocol.commit_errors(answer) == {TP("t", 0): None, TP("t", 1): "UnknownMemberIdError"}


def test_the_kafka_python_internals_we_use_exist() -> None:
    """A kafka-python upgrade that renames one of these fails here, by name."""
    for name in ("_find_coordinator_ids", "_list_group_offsets_requests"):
        assert callable(getattr(KafkaAdminClient, name, None)), f"KafkaAdminClient.{name} is gone"
    assert inspect.iscoroutinefunction(KafkaAdminClient._find_coordinator_ids)
    init = inspect.getsource(KafkaAdminClient.__init__)
    assert "self._manager" in init, "KafkaAdminClient no longer keeps its connection manager in _manager"
    from kafka.net.manager import KafkaConnectionManager

    manager_source = inspect.getsource(KafkaConnectionManager)
    assert "broker_version_data" in manager_source and "def run" in manager_source and "def send" in manager_source
    from kafka.cluster import ClusterMetadata

    assert "_coordinators" in inspect.getsource(ClusterMetadata.__init__)
    from kafka.record.default_records import DefaultRecordBatch

    assert callable(getattr(DefaultRecordBatch, "_maybe_uncompress", None))
    assert {"_buffer", "_pos", "_num_records"} <= set(DefaultRecordBatch.__slots__)


def test_partitions_with_larger_limits_take_more_of_a_request() -> None:
    entries = [(TP("a", p), 0) for p in range(4)]
    limits = {TP("a", 0): 100, TP("a", 1): 400, TP("a", 2): 50, TP("a", 3): 50}
    requests = protocol.fetch_requests({1: entries}, limits, 500, 5)
    shares = [[p.partition for t in r.topics for p in t.partitions] for _, r in requests]
    assert shares == [[0, 1], [2, 3]]


def test_shares_are_packed_in_order_and_an_oversized_item_stands_alone() -> None:
    from offset_restore.packing import packed

    assert list(packed([3, 3, 9, 1, 1, 4], lambda n: n, 6)) == [[3, 3], [9], [1, 1, 4]]
    assert list(packed([], lambda n: n, 6)) == []
    stream = packed(iter(range(1, 100)), lambda n: 1, 2)
    assert next(stream) == [1, 2]  # given as soon as full: the input may be endless


def test_each_listed_group_has_its_kind_on_every_broker() -> None:
    """ListGroups v5 (Kafka 4.0 on) names each group's type; older brokers list only classic groups, their
    protocol type ``consumer`` or empty; a share or streams protocol type names its kind without v5."""
    listed = [
        {"group_id": "a", "protocol_type": "consumer", "group_state": "Stable", "group_type": "classic"},
        {"group_id": "b", "protocol_type": "consumer", "group_state": "Stable", "group_type": "Consumer"},
        {"group_id": "q", "protocol_type": "share", "group_state": "Empty", "group_type": "share"},
        {"group_id": "s", "protocol_type": "streams", "group_state": "Empty", "group_type": "streams"},
        {"group_id": "old", "protocol_type": "consumer"},
        {"group_id": "older", "protocol_type": ""},
        {"group_id": "q2", "protocol_type": "share"},
    ]
    assert protocol.group_kinds(listed) == {
        "a": "classic",
        "b": "consumer",
        "q": "share",
        "s": "streams",
        "old": "classic",
        "older": "classic",
        "q2": "share",
    }


def test_a_group_neither_describe_knows_is_taken_as_the_brokers_list_it_never_as_empty() -> None:
    """A Streams application's group of the streams protocol is answered GROUP_ID_NOT_FOUND by DescribeGroups
    and ConsumerGroupDescribe even while it has members: the listing's state stands for it (held unless
    Empty; NotReady named), its members not counted; a group of a kind they describe, or not listed, is not
    taken from the listing (not found there means it does not exist: a new group)."""
    from offset_restore.apply.waiting import active_groups, members_text

    listed = [
        {"group_id": "app", "protocol_type": "streams", "group_state": "Stable", "group_type": "streams"},
        {"group_id": "starting", "protocol_type": "streams", "group_state": "NotReady", "group_type": "streams"},
        {"group_id": "stopped", "protocol_type": "streams", "group_state": "Empty", "group_type": "streams"},
        {"group_id": "stateless", "protocol_type": "streams"},
        {"group_id": "plain", "protocol_type": "consumer", "group_state": "Dead", "group_type": "consumer"},
    ]
    wanted = ["app", "starting", "stopped", "stateless", "plain", "new"]
    infos = protocol.listed_groups(listed, wanted)
    assert {g: (i.state, i.protocol_type, i.members) for g, i in infos.items()} == {
        "app": ("Stable", "streams", -1),
        "starting": ("NotReady", "streams", -1),
        "stopped": ("Empty", "streams", -1),
        "stateless": ("StateNotListed", "streams", -1),
    }
    assert sorted(active_groups(wanted, infos)) == ["app", "starting", "stateless"]
    # The write's own check inside its transaction (kafka/fence.py) asks the same of each: members not
    # counted are members unless the brokers list the group Empty (or Dead).
    assert sorted(g for g, info in infos.items() if info.occupied) == ["app", "starting", "stateless"]
    said = members_text(infos["starting"])
    assert said.startswith("NotReady, a streams-protocol group whose members cannot be described") and "-1" not in said


@pytest.mark.parametrize(
    ("state", "members", "occupied"),
    [
        ("Empty", 0, False),
        ("Dead", 0, False),
        ("Unknown", 0, False),
        ("", 0, False),
        ("PreparingRebalance", 0, True),  # a rebalance whose members left: not over
        ("Stable", 0, True),
        ("Unknown", 2, True),  # members counted, whatever the state says
        ("Empty", -1, False),
        ("", -1, True),  # only listed, its state not given: nothing says it is empty
    ],
)
def test_one_rule_says_whether_a_group_may_be_written(state: str, members: int, occupied: bool) -> None:
    """The wait, apply's check before each write and the fence's check inside the write's transaction ask
    one question of a group, answered in one place (``GroupInfo.occupied``)."""
    from offset_restore.apply.waiting import active_groups

    info = GroupInfo("g", state, "consumer", members)
    assert info.occupied is occupied
    assert ("g" in active_groups(["g"], {"g": info})) is occupied


@functools.cache
def _tombstones(group_bytes: int, topic: str, count: int) -> int:
    """The bytes of a batch of ``count`` offsets' tombstones of a group whose name takes ``group_bytes`` bytes, as a
    coordinator writes them (OffsetCommitKey version 1: group, topic, partition; a null value), without the
    batch's own header. The size depends on the name's length alone."""
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 30)
    named, encoded = b"g" * group_bytes, topic.encode()
    for partition in range(count):
        key = b"\x00\x01" + len(named).to_bytes(2, "big") + named + len(encoded).to_bytes(2, "big") + encoded
        builder.append(1_800_000_000_000, key + partition.to_bytes(4, "big"), None, [])
    builder.close()
    return len(builder.buffer()) - 61  # a v2 batch's header


@pytest.mark.parametrize(
    ("group", "topic", "count"), [("g", "t", 30_000), ("g" * 200, "t" * 249, 3_000), ("é" * 50, "orders", 500)]
)
def test_a_deletion_request_is_sized_at_or_above_the_tombstones_it_makes(group: str, topic: str, count: int) -> None:
    """Each DeleteGroups request's tombstones must fit the budget as the coordinator writes them: the estimate
    may be high, never low."""
    partitions = [TP(topic, p) for p in range(count)]
    budget = 10 * _tombstones(len(group.encode()), topic, count)
    many = {f"{group}{n}": partitions for n in range(20)}
    requests = protocol.deletion_batches(many, budget)
    assert [g for request in requests for g in request] == list(many)  # each once, in order
    for request in requests:
        assert sum(_tombstones(len(g.encode()), topic, count) for g in request) <= budget
    assert len(requests) >= 2


def test_a_group_larger_than_the_budget_is_deleted_alone_and_small_ones_together() -> None:
    big, small = [TP("orders", p) for p in range(5_000)], [TP("orders", 0)]
    held = {"a": small, "b": small, "huge": big, "c": small, "d": small}
    assert protocol.deletion_batches(held, budget=64 * 1024) == [["a", "b"], ["huge"], ["c", "d"]]
    assert protocol.deletion_batches({}) == []
