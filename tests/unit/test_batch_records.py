"""The compiled record reader (aiokafka's, ``kafka/batch_records.py``) against kafka-python's own decoder, on
batches kafka-python's builder writes: every codec, null keys and values, headers, LogAppendTime, records
before the fetch offset skipped, ``until``, a batch cut short, a corrupt record refused — and the shape of
what the reader yields, pinned (it is not a documented API of aiokafka)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecordsBuilder
from kafka.record.util import calc_crc32c
from offset_restore.errors import UnreadableBatchError
from offset_restore.kafka.batch_records import abort_marker, batches, decode_records, records_before
from offset_restore.kafka.model import NO_TIMESTAMP, FetchedRecord, Record
from offset_restore.translate.resume_points import PartitionLog

from tests.helpers import held

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
        data[22] |= 0x08  # attributes: timestamp type LogAppendTime
    return sealed(data)


def sealed(data: bytearray) -> bytes:
    """The batch with its CRC-32C (over everything after it) set again, as a broker would have written it."""
    data[17:21] = calc_crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def theirs(data: bytes, fetch_offset: int) -> list[FetchedRecord]:
    return [
        FetchedRecord(r.offset, r.timestamp, r.key, r.value, tuple(r.headers))
        for r in DefaultRecordBatch(data)
        if r.offset >= fetch_offset
    ]


def ours(data: bytes, fetch_offset: int, until: int | None = None) -> tuple[list[FetchedRecord], bool]:
    """The records ``decode_records`` yields, as what they hold (the reader's records compare by identity)."""
    found: list[Record] = []
    stopped = False
    for base, _, parsed in batches(data):
        stopped = decode_records(parsed, base, fetch_offset, until, found)
    return held(found), stopped


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
    before = records_before(data, 1_000 + skip, 1_000 + start)
    assert held(before) == [r for r in theirs(data, 1_000 + start) if r.offset < 1_000 + skip]


@settings(max_examples=150, deadline=None)
@given(
    count=st.integers(1, 30),
    gaps=st.integers(1, 3),
    before=st.integers(0, 5),
    until=st.one_of(st.none(), st.integers(990, 1_100)),
)
def test_until_cuts_a_batch_asked_for_whole_after_the_first_record_at_or_past_it(
    count: int, gaps: int, before: int, until: int | None
) -> None:
    """A batch asked for from its base offset or before (taken in one step when no record reaches ``until``):
    until at, inside, past or before its last record, in a compacted batch (gaps between offsets) too."""
    data = batch([(None, bytes([i]), [], i) for i in range(count)], gaps=gaps)
    found, stopped = ours(data, 1_000 - before, until)
    offsets = [1_000 + i * gaps for i in range(count)]
    reached = [o for o in offsets if until is not None and o >= until]
    expected = offsets[: offsets.index(reached[0]) + 1] if reached else offsets
    assert ([r.offset for r in found], stopped) == (expected, bool(reached))


def test_a_compressed_legacy_message_set_asked_from_inside_skips_the_records_before() -> None:
    """A message set of format 1 compressed carries its last record's offset where format 2 has its first:
    asked from an offset inside it, the records before are left out, not taken with the rest."""
    builder = MemoryRecordsBuilder(magic=1, compression_type=CODECS["gzip"], batch_size=1 << 20)
    for i in range(6):
        builder.append(1_700_000_000_000 + i, None, bytes([i]), [])
    builder.close()
    data = bytearray(builder.buffer())
    data[0:8] = (1_005).to_bytes(8, "big")  # the wrapper's offset, as a broker writes it: its last record's
    found, stopped = ours(bytes(data), 1_003)
    assert [r.offset for r in found] == [1_003, 1_004, 1_005] and not stopped


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_a_message_set_of_format_0_gives_its_records_no_timestamp_as_kafka_does(codec: str) -> None:
    """Format 0 has no timestamp (the reader says None): each record is given Kafka's -1, as the Java consumer
    gives it, so the columns a whole read keeps hold integers; key, value and offset are the record's."""
    builder = MemoryRecordsBuilder(magic=0, compression_type=CODECS[codec], batch_size=1 << 20)
    for i in range(4):
        builder.append(None, bytes([i]), b"v%d" % i, [])
    builder.close()
    data = bytearray(builder.buffer())
    if codec != "none":
        data[0:8] = (3).to_bytes(8, "big")  # the wrapper's offset, as a broker writes it: its last record's
    found, _ = ours(bytes(data), 1)
    assert found == [FetchedRecord(o, NO_TIMESTAMP, bytes([o]), b"v%d" % o, ()) for o in (1, 2, 3)]
    assert NO_TIMESTAMP == -1
    log = PartitionLog()
    log.extend([r.offset for r in found], [None] * 3, [r.timestamp for r in found])
    assert list(log.timestamps) == [-1, -1, -1]


def test_log_append_time_gives_every_record_the_batchs_time() -> None:
    data = batch([(b"k", b"v", [], s) for s in (5, 1, 9)], append_time=True)
    found, _ = ours(data, 0)
    assert [r.timestamp for r in found] == [1_700_000_000_009] * 3 == [r.timestamp for r in theirs(data, 0)]


def test_until_stops_after_the_first_record_at_or_past_it() -> None:
    data = batch([(None, bytes([i]), [], i) for i in range(10)])
    found, stopped = ours(data, 1_002, until=1_005)
    assert [r.offset for r in found] == [1_002, 1_003, 1_004, 1_005] and stopped


@pytest.mark.parametrize("damage", ["length", "shorter", "headers", "no headers", "more records", "fewer records"])
def test_a_record_whose_length_lies_is_refused_though_its_crc_matches(damage: str) -> None:
    """A batch whose CRC-32C matches its bytes (written that way, not damaged on the way) but whose record
    lies about its length or its header count, or whose header lies about its record count: one line naming
    the batch, never a record read wrong (an offset header read as absent would move a group)."""
    data = bytearray(batch([(b"key", b"value", [("h", b"x")], 0), (b"k2", b"v2", [], 1)]))
    at = 61  # the first record's length varint, right after the batch header
    headers = at + 1 + 1 + 1 + 1 + 1 + 3 + 1 + 5  # the first record's header count
    if damage in ("length", "shorter"):
        data[at] += 2 if damage == "length" else -2  # a byte longer or shorter than it holds
    elif damage in ("headers", "no headers"):
        data[headers] = 0x7E if damage == "headers" else 0  # 63 headers, or none (it has one)
    else:
        data[57:61] = (3 if damage == "more records" else 1).to_bytes(4, "big")  # the batch's record count
    with pytest.raises(UnreadableBatchError, match=r"the record batch at offset 1000 cannot be read .*corrupt"):
        ours(sealed(data), 0)


def test_a_batch_damaged_on_the_way_fails_its_crc_and_is_never_read() -> None:
    data = bytearray(batch([(b"key", b"value", [], 0)]))
    data[-1] ^= 0xFF
    with pytest.raises(UnreadableBatchError, match=r"the record batch at offset 1000 fails its CRC-32C check"):
        ours(bytes(data), 0)


def test_a_batch_cut_short_by_the_size_limit_ends_the_answer() -> None:
    """The broker cuts an answer at its size limit, mid-batch: the whole batches before are read, the cut
    one is not (the next fetch reads it)."""
    first, second = batch([(None, b"a", [], 0)] * 3), batch([(None, b"b", [], 0)] * 3, base=1_003)
    found, _ = ours(first + second[:-5], 0)
    assert [r.offset for r in found] == [1_000, 1_001, 1_002]


def test_the_readers_records_keep_their_shape() -> None:
    """What ``decode_records`` takes from aiokafka's reader, pinned: an upgrade that changes it fails here."""
    from aiokafka.record.memory_records import MemoryRecords

    data = batch([(b"k", b"v", [("x-source-offset", b"\x00" * 8)], 3)])
    parsed = MemoryRecords(data).next_batch()
    assert parsed is not None and parsed.validate_crc() and parsed.next_offset == 1_001
    assert (parsed.is_control_batch, parsed.is_transactional, parsed.base_offset, parsed.last_offset_delta) == (
        False, False, 1_000, 0,
    )  # fmt: skip
    found: list[Record] = []
    decode_records(parsed, 1_000, 0, None, found)
    [record] = found  # handed on as the reader yields it: it must be a ``Record`` as it is
    assert isinstance(record, Record)
    fields = (record.offset, record.timestamp, record.key, record.value, record.headers)
    assert fields == (1_000, 1_700_000_000_003, b"k", b"v", [("x-source-offset", b"\x00" * 8)])
    name, value = record.headers[0]
    assert type(name) is str and type(value) is bytes and type(record.offset) is int


def test_an_abort_marker_is_told_from_a_commit_marker() -> None:
    from aiokafka.record.memory_records import MemoryRecords

    for kind, abort in ((0, True), (1, False)):
        builder = DefaultRecordBatchBuilder(2, 0, True, 7, 0, -1, 10_000)
        builder.append(0, 1_700_000_000_000, (0).to_bytes(2, "big") + kind.to_bytes(2, "big"), b"", [])
        data = bytearray(builder.build())
        data[22] |= 0x20  # attributes: a control batch
        parsed = MemoryRecords(sealed(data)).next_batch()
        assert parsed is not None and parsed.is_control_batch and abort_marker(parsed) is abort


def test_faster_than_kafka_pythons_iterator_on_a_dense_batch() -> None:
    """Not a timing assertion (bench/ measures): the decoder reads 2,000 records the same as kafka-python."""
    rng = random.Random(1)
    records = [(b"k%d" % i, rng.randbytes(100), [("x-source-offset", i.to_bytes(8, "big"))], i) for i in range(2_000)]
    data = batch(records, CODECS["lz4"])
    assert ours(data, 1_500)[0] == theirs(data, 1_500)
