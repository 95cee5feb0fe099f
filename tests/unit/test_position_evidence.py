"""A plan keeps the snapshot's evidence before each position packed (``translate/positions.py``): what it
gives back must be exactly what the snapshot held, whatever the fingerprints look like."""

from __future__ import annotations

import pytest
from offset_restore.snapshot.fingerprint import fingerprint
from offset_restore.translate.positions import Evidence, last_evidence, pack_evidence, unpack_evidence

STANDARD = [Evidence(7 + i, 1_700_000_000_000 + i, fingerprint(str(i).encode(), b"v")) for i in range(3)]


def test_standard_fingerprints_are_packed_32_bytes_a_record_and_come_back_equal() -> None:
    packed = pack_evidence(STANDARD)
    assert isinstance(packed, bytes) and len(packed) == 32 * 3
    assert unpack_evidence(packed) == tuple(STANDARD)
    assert pack_evidence([]) == b"" and unpack_evidence(b"") == ()


@pytest.mark.parametrize(
    "odd",
    [
        Evidence(1, 2, STANDARD[0].fingerprint.upper()),  # hex would come back lower case
        Evidence(1, 2, STANDARD[0].fingerprint + "00"),  # longer than 128 bits: would be cut
        Evidence(1, 2, "not-hex"),
        Evidence(1, 2, ""),
        Evidence(1, 2, STANDARD[0].fingerprint[:16] + " " + STANDARD[0].fingerprint[16:31]),  # hex parsing skips spaces
        Evidence(2**63, 2, STANDARD[0].fingerprint),  # beyond a signed 64-bit offset
        Evidence(1, -(2**63) - 1, STANDARD[0].fingerprint),
    ],
)
def test_anything_else_is_kept_as_it_is(odd: Evidence) -> None:
    records = [STANDARD[0], odd]
    assert unpack_evidence(pack_evidence(records)) == tuple(records)


def test_lengths_are_checked_a_fingerprint_at_a_time() -> None:
    """31 and 33 hex digits make 64 together: packed, they would come back as two of 32."""
    short, long = STANDARD[0].fingerprint[:31], STANDARD[1].fingerprint + "a"
    records = [Evidence(1, 2, short), Evidence(3, 4, long)]
    assert unpack_evidence(pack_evidence(records)) == tuple(records)


@pytest.mark.parametrize("count", [0, 1, 3])
def test_the_last_record_alone_is_the_last_of_all(count: int) -> None:
    records = STANDARD[:count]
    for packed in (pack_evidence(records), tuple(records)):
        assert last_evidence(packed) == (unpack_evidence(packed)[-1] if count else None)


def test_a_position_built_as_a_tuple_has_every_field_where_its_name_says() -> None:
    """``plan._position`` lays the fields out by their order: a field added or moved in ``Position`` fails here
    unless the builder follows."""
    from offset_restore.kafka.model import TP
    from offset_restore.snapshot.model import PartitionSnapshot, RecordEvidence
    from offset_restore.translate.plan import _position
    from offset_restore.translate.positions import Position, evidence_of

    def record(offset: int, origin: int | None) -> RecordEvidence:
        return RecordEvidence(offset=offset, timestamp=offset * 10, fingerprint=fingerprint(str(offset).encode(), b"v"),
                              origin_offset=origin)  # fmt: skip

    before, nxt, top = [record(4, 40), record(5, 50)], record(6, None), record(3, 30)
    p = PartitionSnapshot(topic="orders", partition=2, committed_offset=6, log_start=1, log_end=9, next=nxt,
                          before=before, origin_top=top, own_since=77, origin_floor=44, origin_twice=3)  # fmt: skip
    source, target = TP("orders", 2), TP("orders-dr", 2)
    assert _position(p, source, target) == Position(
        source=source, target=target, committed=6, log_start=1, log_end=9, next=evidence_of(nxt),
        packed_before=pack_evidence(before), last_origin=50, next_origin=None, top=evidence_of(top), top_origin=30,
        own_since=77, origin_floor=44, origin_twice=3,
    )  # fmt: skip
    bare = PartitionSnapshot(topic="orders", partition=2, committed_offset=6)
    assert _position(bare, source, source) == Position(source=source, target=source, committed=6, log_start=None,
                                                       log_end=None, next=None, packed_before=b"")  # fmt: skip
    assert len(Position._fields) == 14  # the builder's count


@pytest.mark.parametrize("records", [STANDARD, [STANDARD[0], Evidence(1, 2, "not-hex")], STANDARD[:1], []])
def test_the_last_mark_is_the_last_records_offset_and_fingerprint(records: list[Evidence]) -> None:
    from offset_restore.translate.positions import last_mark

    last = last_evidence(pack_evidence(records))
    assert last_mark(pack_evidence(records)) == (None if last is None else (last.offset, last.fingerprint))
    assert last == (records[-1] if records else None)
