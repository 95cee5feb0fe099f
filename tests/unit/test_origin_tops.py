"""The failback snapshot's search for the last restored record (snapshot/origin_tops.py), over a fake
log: restored records (with the offset header) as a prefix, then the cluster's own; batches of a few
records, as a broker answers a point read."""

from __future__ import annotations

from collections.abc import Mapping

from offset_restore.kafka.model import TP, FetchedRecord
from offset_restore.snapshot.origin_tops import find_origin_tops

from tests.fake_log import FakeLog

HEADER = "x-source-offset"


def fake_log(shapes: Mapping[TP, tuple[int, int]], batch: int = 4) -> FakeLog:
    """Per partition: ``restored`` records with the header (origin offset + 20), then ``own`` without; an
    answer is the batch holding the position."""
    records = {
        tp: [
            FetchedRecord(o, 1_000 + o, b"k", f"v{o}".encode(), ((HEADER, str(o + 20).encode()),) if o < r else ())
            for o in range(r + own)
        ]
        for tp, (r, own) in shapes.items()
    }
    return FakeLog(records, batch=batch, per_fetch=1)


def test_the_last_restored_record_is_found_in_shared_rounds_of_a_binary_search() -> None:
    a, b, plain, short = TP("t", 0), TP("t", 1), TP("t", 2), TP("t", 3)
    log = fake_log({a: (70_000, 500), b: (3, 10_000), plain: (0, 2_000), short: (500, 0)})
    tops, rounds = find_origin_tops({a: 70_400, b: 9_000, plain: 1_500, short: 400}, log.every_bounds(), log,
                                    offset_header=HEADER)  # fmt: skip
    assert {tp: (e.top.offset, e.top.origin_offset) for tp, e in tops.items()} == {
        a: (69_999, 70_019),
        b: (2, 22),
        short: (399, 419),
    }
    assert tops[a].own_since == 1_000 + 70_000 and tops[b].own_since == 1_003 and tops[short].own_since is None
    assert plain not in tops  # its log starts without the header: no restore there, one probe
    assert rounds == log.rounds and rounds <= 20  # about log2(70,400 / 4) rounds, every partition in each


def test_a_search_below_a_group_ignores_what_lies_at_or_after_it() -> None:
    tp = TP("t", 0)
    log = fake_log({tp: (100, 50)})
    tops, _ = find_origin_tops({tp: 60}, log.every_bounds(), log, offset_header=HEADER)
    assert (
        tops[tp].top.offset == 59 and tops[tp].own_since is None
    )  # every record below the group carries the header: the last one below it
    assert find_origin_tops({tp: 0}, log.every_bounds(), log, offset_header=HEADER) == ({}, 0)
