"""The offset header's value in exactly its two documented encodings, and nothing read as another number."""

from __future__ import annotations

import pytest
from offset_restore.snapshot.headers import LARGEST_BINARY_OFFSET, parse_offset_header


@pytest.mark.parametrize(
    ("value", "offset"),
    [
        (b"0", 0),
        (b"12", 12),
        (b"9223372036854775807", 2**63 - 1),
        ((12).to_bytes(8, "big"), 12),
        ((0).to_bytes(8, "big"), 0),
        (LARGEST_BINARY_OFFSET.to_bytes(8, "big"), LARGEST_BINARY_OFFSET),
        (b"00000012", 12),  # eight ASCII digits: text (as big-endian it would be past 2**61)
        (b"0000000000000000012", 12),  # nineteen digits, below 2**63
        (b"9" * 18, 10**18 - 1),
        (None, None),
    ],
)
def test_the_documented_encodings(value: bytes | None, offset: int | None) -> None:
    assert parse_offset_header(value) == offset


@pytest.mark.parametrize(
    "value",
    [
        b"      12",  # space-padded to 8 bytes: as big-endian 2,314,885,530,818,453,810
        b"+0000012",
        b"-0000012",
        b" 12",
        b"12 ",
        (12).to_bytes(8, "little"),  # a little-endian 12: as big-endian 864,691,128,455,135,232
        (150).to_bytes(8, "little"),
        (12).to_bytes(4, "big"),
        (-1).to_bytes(8, "big", signed=True),
        (LARGEST_BINARY_OFFSET + 1).to_bytes(8, "big"),
        b"9223372036854775808",
        b"",
        b"1e5",
        b"1_000",  # int() reads underscores; a header never holds them
        "\u0663".encode(),  # a non-ASCII digit (ARABIC-INDIC THREE): bytes are digits only in ASCII
        b"9" * 20,
        b"00000000000000000012",  # twenty digits: past a signed 64-bit offset's length
    ],
)
def test_anything_else_is_refused(value: bytes) -> None:
    with pytest.raises(ValueError):
        parse_offset_header(value)
