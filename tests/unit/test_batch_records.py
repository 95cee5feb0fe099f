"""The fast record decoder against kafka-python's own, on batches kafka-python's builder writes: every
codec, null keys and values, headers, LogAppendTime, records before the fetch offset skipped, ``until``,
and a corrupt record refused."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from offset_restore.errors import UnreadableBatchError
from offset_restore.kafka import internals
from offset_restore.kafka.batch_records import BatchBody, decode_records, records_before
from offset_restore.kafka.model import FetchedRecord

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

record = st.tuples(
    st.one_of(st.none(), st.binary(max_size=300)),
    st.one_of(st.none(), st.binary(max_size=3000)),
    st.lists(st.tuples(st.text(max_size=20), st.one_of(st.none(), st.binary(max_size=40))), max_size=4),
    st.integers(-(2**40), 2**40),
)


def batch(records: list, codec: int = 0, base: int = 1_000, append_time: bool = False, gaps: int = 1) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 10_000_000)
    for i, (key, value, headers, stamp) in enumerate(records):
        builder.append(i * gaps, 1_700_000_000_000 + stamp, key, value, headers)
    data = builder.build()
    data[0:8] = base.to_bytes(8, "big", signed=True)  # base offset, as the broker assigns it
    if append_time:
        data[22] |= 0x08  # attributes: timestamp type LogAppendTime (the CRC is not checked here)
    return bytes(data)


def theirs(data: bytes, fetch_offset: int) -> list[FetchedRecord]:
    return [
        FetchedRecord(r.offset, r.timestamp, r.key, r.value, tuple(r.headers))
        for r in DefaultRecordBatch(data)
        if r.offset >= fetch_offset
    ]


def ours(data: bytes, fetch_offset: int, until: int | None = None) -> tuple[list[FetchedRecord], bool]:
    parsed = DefaultRecordBatch(data)
    body = internals.batch_body(parsed)
    assert body is not None
    append = parsed.max_timestamp if parsed.timestamp_type == 1 else None
    return decode_records(BatchBody(*body, parsed.base_offset, parsed.first_timestamp, append), fetch_offset, until)


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(record, min_size=1, max_size=40),
    codec=st.sampled_from(sorted(CODECS.values())),
    skip=st.integers(0, 45),
    start=st.integers(0, 45),
    gaps=st.integers(1, 3),
)
def test_the_same_records_as_kafka_python_for_any_batch(
    records: list, codec: int, skip: int, start: int, gaps: int
) -> None:
    """At or after the fetch offset, and (``records_before``) the part of the batch before it."""
    data = batch(records, codec, gaps=gaps)
    found, stopped = ours(data, 1_000 + skip)
    assert found == theirs(data, 1_000 + skip) and not stopped
    parsed = DefaultRecordBatch(data)
    body = internals.batch_body(parsed)
    assert body is not None
    before = records_before(BatchBody(*body, 1_000, parsed.first_timestamp, None), 1_000 + skip, 1_000 + start)
    assert before == [r for r in theirs(data, 1_000 + start) if r.offset < 1_000 + skip]


def test_log_append_time_gives_every_record_the_batchs_time() -> None:
    data = batch([(b"k", b"v", [], s) for s in (5, 1, 9)], append_time=True)
    found, _ = ours(data, 0)
    assert [r.timestamp for r in found] == [1_700_000_000_009] * 3 == [r.timestamp for r in theirs(data, 0)]


def test_until_stops_after_the_first_record_at_or_past_it() -> None:
    data = batch([(None, bytes([i]), [], i) for i in range(10)])
    found, stopped = ours(data, 1_002, until=1_005)
    assert [r.offset for r in found] == [1_002, 1_003, 1_004, 1_005] and stopped


@pytest.mark.parametrize("damage", ["length", "headers"])
def test_a_record_whose_length_lies_is_refused(damage: str) -> None:
    data = bytearray(batch([(b"key", b"value", [("h", b"x")], 0), (b"k2", b"v2", [], 1)]))
    at = 61  # the first record's length varint, right after the batch header
    if damage == "length":
        data[at] += 2  # two bytes longer than it holds
    else:
        data[at + 1 + 1 + 1 + 1 + 1 + 3 + 1 + 5] = 0x7E  # its header count: 63 (it has one)
    with pytest.raises(UnreadableBatchError, match=r"corrupt"):
        ours(bytes(data), 0)


def test_faster_than_kafka_pythons_iterator_on_a_dense_batch() -> None:
    """Not a timing assertion (bench/ measures): the decoder reads 2,000 records the same as kafka-python."""
    rng = random.Random(1)
    records = [(b"k%d" % i, rng.randbytes(100), [("x-source-offset", i.to_bytes(8, "big"))], i) for i in range(2_000)]
    data = batch(records, CODECS["lz4"])
    assert ours(data, 1_500)[0] == theirs(data, 1_500)
