"""The origin strategy (translate/strategies/origin.py) against an in-memory target: a failback's groups
carried back to the cluster the restore came from, by the origin offsets the snapshot's records carry,
each proven by the target's record there; and what the snapshot reads and keeps of those offsets."""

from __future__ import annotations

from collections.abc import Mapping

from offset_restore.kafka.model import TP, FetchedRecord, LogBounds, PartitionFetch
from offset_restore.snapshot.evidence import collect_evidence
from offset_restore.snapshot.fingerprint import fingerprint
from offset_restore.snapshot.model import GroupSnapshot, PartitionSnapshot, RecordEvidence
from offset_restore.translate.context import Context
from offset_restore.translate.options import STRATEGIES, PlanOptions
from offset_restore.translate.plan import collect_positions
from offset_restore.translate.positions import Decision, PositionKey, TranslateStats
from offset_restore.translate.strategies.origin import by_origin

from tests.fake_log import FakeLog, FakeTarget

HEADER = "x-source-offset"
TOPIC = TP("t", 0)


def primary_record(offset: int) -> FetchedRecord:
    """The primary's record at ``offset`` (the failback's target): no offset header."""
    return FetchedRecord(offset, 1_000 + offset, f"k{offset}".encode(), b"v", (("trace", b"t"),))


class Primary(FakeTarget):
    """One partition of the target, its records at offsets ``start..end - 1``, ``per_fetch`` a fetch
    (``tests/fake_log.py``); ``fetched``: the positions of each fetch asked."""

    cluster_id = "primary"

    def __init__(self, start: int, end: int, per_fetch: int = 5, replaced: Mapping[int, FetchedRecord] = {}) -> None:
        records = [replaced.get(o, primary_record(o)) for o in range(start, end)]
        super().__init__(FakeLog({TOPIC: records}, per_fetch=per_fetch, high_watermarks={TOPIC: end}))
        self.fetched = self.log.positions_seen


def dr_evidence(dr_offset: int, origin: int | None) -> RecordEvidence:
    """The DR's record at ``dr_offset``: the restored copy of the primary's record ``origin`` (None: a
    record produced on the DR, with content of its own)."""
    if origin is None:
        return RecordEvidence(offset=dr_offset, timestamp=9_000 + dr_offset, fingerprint=fingerprint(b"dr", b"own"))
    source = primary_record(origin)
    printed = fingerprint(source.key, source.value, source.headers)
    return RecordEvidence(offset=dr_offset, timestamp=source.timestamp, fingerprint=printed, origin_offset=origin)


def group(
    committed: int, before: list[RecordEvidence], nxt: RecordEvidence | None, log_start: int = 0
) -> GroupSnapshot:
    partition = PartitionSnapshot(
        topic="t", partition=0, committed_offset=committed, log_start=log_start, log_end=400, next=nxt, before=before
    )
    return GroupSnapshot(group=f"g{committed}", state="Empty", partitions=[partition])


def decide(target: Primary, *groups: GroupSnapshot) -> dict[PositionKey, Decision | str]:
    options = PlanOptions(strategies=("origin",))
    ctx = Context(target, options, "primary", target.log_bounds([TOPIC]), None, TranslateStats())
    return by_origin(collect_positions(groups, options), ctx)


def test_the_last_record_processed_maps_exactly_after_its_origin() -> None:
    # DR offsets 0.. are the primary's 20..: a group at DR offset 50 processed the primary's record 69.
    target = Primary(0, 300)
    before = [dr_evidence(o, o + 20) for o in range(47, 50)]
    (decision,) = decide(target, group(50, before, dr_evidence(50, 70))).values()
    assert isinstance(decision, Decision), decision
    assert (decision.status, decision.target_offset, decision.method) == ("mapped", 70, "origin")
    assert decision.exact and decision.max_duplicates == 0
    assert decision.expected_fingerprint == dr_evidence(50, 70).fingerprint
    assert decision.anchor == (70, None, primary_record(70).timestamp)
    assert "carries x-source-offset = 69" in (decision.reason or "")


def test_at_the_end_of_the_restored_range_it_resumes_after_the_last_copy() -> None:
    # The last restored record is the primary's last one; the DR's next record was born there.
    target = Primary(0, 300)
    (decision,) = decide(target, group(280, [dr_evidence(279, 299)], dr_evidence(280, None))).values()
    assert isinstance(decision, Decision), decision
    assert (decision.target_offset, decision.exact, decision.expected_fingerprint) == (300, True, None)
    assert decision.anchor == (299, None, primary_record(299).timestamp)
    assert "produced on the source itself, not restored" in (decision.reason or "")


def test_at_the_dr_log_start_the_next_record_maps_to_its_origin() -> None:
    target = Primary(0, 300)
    (decision,) = decide(target, group(0, [], dr_evidence(0, 20))).values()
    assert isinstance(decision, Decision), decision
    assert (decision.target_offset, decision.method, decision.exact) == (20, "origin", True)
    assert decision.expected_fingerprint == dr_evidence(0, 20).fingerprint


def test_a_target_record_that_differs_declines() -> None:
    changed = FetchedRecord(69, primary_record(69).timestamp, b"k69", b"another value", (("trace", b"t"),))
    target = Primary(0, 300, replaced={69: changed})
    (reason,) = decide(target, group(50, [dr_evidence(49, 69)], dr_evidence(50, 70))).values()
    assert isinstance(reason, str) and "holds another record (its content differs)" in reason


def test_a_timestamp_that_differs_declines() -> None:
    moved = FetchedRecord(69, 5, b"k69", b"v", (("trace", b"t"),))
    target = Primary(0, 300, replaced={69: moved})
    (reason,) = decide(target, group(50, [dr_evidence(49, 69)], dr_evidence(50, 70))).values()
    assert isinstance(reason, str) and "timestamp 5" in reason


def test_a_last_record_born_on_the_dr_declines_without_a_read() -> None:
    target = Primary(0, 300)
    (reason,) = decide(target, group(310, [dr_evidence(308, None), dr_evidence(309, None)], None)).values()
    assert isinstance(reason, str) and "produced on the source itself, not restored" in reason
    assert not target.fetched


def test_a_last_record_born_on_the_dr_before_a_restored_one_declines() -> None:
    target = Primary(0, 300)
    (reason,) = decide(target, group(50, [dr_evidence(49, None)], dr_evidence(50, 70))).values()
    assert isinstance(reason, str) and "(before source offset 50) carries no x-source-offset" in reason
    assert not target.fetched


def test_below_the_target_log_start_declines_without_a_read() -> None:
    target = Primary(100, 300)
    (reason,) = decide(target, group(50, [dr_evidence(49, 69)], dr_evidence(50, 70))).values()
    assert isinstance(reason, str) and "below the target's log start 100" in reason
    assert not target.fetched


def test_a_next_record_from_before_the_last_one_declines() -> None:
    target = Primary(0, 300)
    (reason,) = decide(target, group(50, [dr_evidence(49, 69)], dr_evidence(50, 12))).values()
    assert isinstance(reason, str) and "out of order" in reason


def test_no_origin_evidence_costs_no_read() -> None:
    target = Primary(0, 300)
    plain = [RecordEvidence(offset=o, timestamp=o, fingerprint=fingerprint(b"k", b"v")) for o in (48, 49)]
    outcome = decide(target, group(50, plain, plain[-1]), group(0, [], None))
    assert all(isinstance(o, str) for o in outcome.values()), outcome
    assert "neither the last record the group processed nor its next one" in str(outcome[("t", 0, 50)])
    assert "no origin offset to map by" in str(outcome[("t", 0, 0)])
    assert not target.fetched


def test_positions_of_one_partition_share_fetch_rounds() -> None:
    """Positions far apart on one partition: each round reads the lowest offset still wanted."""
    target = Primary(0, 300, per_fetch=5)
    groups = [group(c, [dr_evidence(c - 1, c + 19)], dr_evidence(c, c + 20)) for c in (10, 12, 150, 250)]
    outcome = decide(target, *groups)
    assert {k[2]: d.target_offset for k, d in outcome.items() if isinstance(d, Decision)} == {
        10: 30,
        12: 32,
        150: 170,
        250: 270,
    }
    assert [f[TOPIC] for f in target.fetched] == [29, 169, 269]  # 29..33 in one window


def test_the_default_order_tries_origin_right_after_header() -> None:
    assert STRATEGIES[:2] == ("header", "origin")


def test_the_snapshot_keeps_origin_offsets_only_where_records_carry_them() -> None:
    plain = RecordEvidence(offset=1, timestamp=2, fingerprint="f")
    assert "origin_offset" not in plain.model_dump_json()
    copied = RecordEvidence(offset=1, timestamp=2, fingerprint="f", origin_offset=7)
    assert RecordEvidence.model_validate_json(copied.model_dump_json()) == copied
    assert RecordEvidence.model_validate_json('{"offset": 1, "timestamp": 2, "fingerprint": "f"}') == plain


def test_the_evidence_reader_fills_origin_offsets_from_the_offset_header() -> None:
    dr = TP("t", 0)
    records = [
        FetchedRecord(0, 1, b"a", b"v", ((HEADER, (20).to_bytes(8, "big")),)),
        FetchedRecord(1, 2, b"b", b"v", ((HEADER, b"21"),)),
        FetchedRecord(2, 3, b"c", b"v", ()),
    ]

    def fetch(
        positions: Mapping[TP, int], until: object, limits: object, wait_ms: object = None
    ) -> dict[TP, PartitionFetch]:
        return {tp: PartitionFetch(p, records[p:], 3, 0, None, 3) for tp, p in positions.items()}

    found, _ = collect_evidence({dr: {2}}, {dr: LogBounds(0, 3)}, 5, fetch, offset_header=HEADER)
    evidence = found[(dr, 2)]
    assert [e.origin_offset for e in evidence.before] == [20, 21]
    assert evidence.next is not None and evidence.next.origin_offset is None
    assert evidence.before[0].fingerprint == fingerprint(b"a", b"v", ())  # the header is left out, as before
    (position,) = collect_positions([group(2, list(evidence.before), evidence.next)], PlanOptions()).values()
    assert (position.last_origin, position.next_origin) == (21, None)
