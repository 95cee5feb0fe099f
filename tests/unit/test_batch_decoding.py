"""The one batch decoder (kafka/protocol.py): every codec, each batch's CRC-32C checked, and a codec
this install lacks a line of its own — on batches built by kafka-python's own builder."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from offset_restore.errors import UnreadableBatchError
from offset_restore.kafka.protocol import decode_fetch, decode_partition, readable_codecs

CODES = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def batch(codec: str, base: int = 100, count: int = 50) -> bytes:
    builder = DefaultRecordBatchBuilder(2, CODES[codec], False, -1, -1, -1, batch_size=1 << 20)
    for i in range(count):
        builder.append(i, 1_700_000_000_000 + i, f"k{i}".encode(), b"v" * 200, [("h", str(i).encode())])
    data = builder.build()
    data[0:8] = base.to_bytes(8, "big")  # the base offset (not covered by the CRC, as on the broker)
    return bytes(data)


def part(records: bytes) -> SimpleNamespace:
    return SimpleNamespace(error_code=0, records=records, high_watermark=1_000, log_start_offset=0, partition_index=3)


@pytest.mark.parametrize("codec", list(CODES))
def test_every_codec_decodes_to_the_same_records(codec: str) -> None:
    fetched = decode_partition(120, part(batch(codec) + batch(codec, base=150)), None)
    assert [r.offset for r in fetched.records] == list(range(120, 200))
    assert fetched.records[0].key == b"k20" and list(fetched.records[0].headers) == [("h", b"20")]
    assert fetched.next_offset == 200


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_a_batch_that_fails_its_crc_is_never_read(codec: str) -> None:
    good, bad = batch(codec), bytearray(batch(codec, base=150))
    bad[-5] ^= 0x01  # one bit of the records, as a flaw on the disk or the wire would flip it
    response = SimpleNamespace(responses=[SimpleNamespace(topic="orders", partitions=[part(good + bytes(bad))])])
    with pytest.raises(UnreadableBatchError) as refused:
        list(decode_fetch(response, {("orders", 3): 100}, None))  # type: ignore[dict-item]
    said = str(refused.value)
    assert said.startswith("orders/3: the record batch at offset 150 fails its CRC-32C check") and "\n" not in said


def test_a_codec_this_install_lacks_is_one_line_naming_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader decodes lz4 with cramjam; an install without it (a broken environment) is one line."""
    import aiokafka.codec

    compressed = batch("lz4")
    monkeypatch.setattr(aiokafka.codec, "has_lz4", lambda: False)
    with pytest.raises(UnreadableBatchError, match="batch at offset 100 is compressed with a codec this install"):
        decode_partition(100, part(compressed), None)


def test_the_version_names_every_codec_this_install_reads() -> None:
    assert readable_codecs() == {"gzip": True, "snappy": True, "lz4": True, "zstd": True}
