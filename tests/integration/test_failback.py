"""A failback on the real brokers: the ``source`` broker plays the DR cluster, which holds a restore of
the primary (each restored record carries its primary offset in ``x-source-offset``) and records born
on it after the failover; the ``target`` broker plays the primary, back. The DR's groups are
snapshotted, planned against the primary and applied there: the origin strategy maps the groups whose
last processed record is a restored one exactly, and leaves alone the one past records born on the DR."""

from __future__ import annotations

from pathlib import Path

import pytest
from offset_restore.formats.plan import Plan, PlanEntry
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP

from tests.helpers import Brokers, Produced, commit, produce, restore, unique
from tests.integration.test_apply import run
from tests.integration.test_compressed_topics import produce as produce_compressed


def planned_back(brokers: Brokers, folder: Path, groups: str, name: str, partial: bool = False) -> list[PlanEntry]:
    """The failback's CLI steps: the DR (the session's source broker) snapshotted with the origin search
    for ``groups``, planned onto the primary (the target broker) into ``folder/<name>.json``."""
    snapshots = folder / f"{name}-snaps"
    status, _, err = run(
        "snapshot", "--bootstrap-servers", brokers.source.bootstrap_servers, "--output", str(snapshots),
        "--groups", groups, "--cluster", "dr", "--origin-search",
    )  # fmt: skip
    assert status == 0, err
    plan_path = folder / f"{name}.json"
    status, out, err = run(
        "plan", "--snapshot", str(snapshots), "--bootstrap-servers", brokers.target.bootstrap_servers,
        "--output", str(plan_path),
    )  # fmt: skip
    assert status in ((0, 3) if partial else (0,)), out + err
    return list(Plan.model_validate_json(plan_path.read_text()).entries)


def test_groups_on_the_dr_are_carried_back_to_the_primary_by_origin(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    dr, primary, topic = source, target, unique("failback")
    primary.create_topics({topic: 1})
    dr.create_topics({topic: 1})
    records = produce(primary, topic, 0, 300)
    # The restore began at primary offset 20: DR offset d is the primary's record d + 20.
    origin_of = {d: s for s, d in restore(dr, topic, 0, records, keep=lambda r: r.offset >= 20)}
    born = produce(dr, topic, 0, 30, start_offset=280, headers=[("born-on", b"dr")], base_timestamp=1_710_000_000_000)
    assert [r.offset for r in born] == list(range(280, 310))
    at = {"inside": 100, "restored_end": 280, "log_start": 0, "past_born": 310}
    groups = {name: unique(f"failback-{name}") for name in at}
    tp = TP(topic, 0)
    for name, offset in at.items():
        commit(dr, groups[name], {tp: offset})

    status, _, err = run(
        "snapshot",
        "--bootstrap-servers",
        brokers.source.bootstrap_servers,
        "--output",
        str(tmp_path / "snaps"),
        "--groups",
        "|".join(groups.values()),
        "--cluster",
        "dr",
    )
    assert status == 0, err
    plan_path = tmp_path / "plan.json"
    status, out, err = run(
        "plan",
        "--snapshot",
        str(tmp_path / "snaps"),
        "--bootstrap-servers",
        brokers.target.bootstrap_servers,
        "--output",
        str(plan_path),
    )
    assert status in (0, 3), err
    entries = {e.group: e for e in Plan.model_validate_json(plan_path.read_text()).entries}

    # The truth, from the records: after the primary's copy of the last record processed on the DR;
    # at the DR's log start, at the copy of the next one.
    truth = {
        "inside": origin_of[at["inside"] - 1] + 1,
        "restored_end": origin_of[at["restored_end"] - 1] + 1,
        "log_start": origin_of[0],
    }
    assert truth == {"inside": 120, "restored_end": 300, "log_start": 20}
    for name, expected in truth.items():
        e = entries[groups[name]]
        assert (e.status, e.method, e.target_offset, e.exact, e.max_duplicates) == (
            "mapped",
            "origin",
            expected,
            True,
            0,
        ), (name, e)
        assert e.anchor_offset is not None
    assert entries[groups["inside"]].expected_fingerprint == records[120].fingerprint
    # Past records born on the DR: the origin strategy declines it, and what maps it (the timestamp
    # strategy, at the primary's end) claims nothing; never past the primary's end.
    past = entries[groups["past_born"]]
    assert past.method != "origin" and not past.exact, past
    assert past.target_offset in (None, len(records)), past

    status, out, err = run(
        "apply", "--plan", str(plan_path), "--bootstrap-servers", brokers.target.bootstrap_servers, "--execute"
    )
    assert status in (0, 3), (out, err)
    committed = primary.committed_offsets(list(groups.values()))
    for name, expected in truth.items():
        assert committed[groups[name]][tp].offset == expected, name
    if past.status == "mapped":
        assert committed[groups["past_born"]][tp].offset == past.target_offset
    else:
        assert tp not in committed.get(groups["past_born"], {})


def produce_as(cluster: KafkaCluster, topic: str, records: list[Produced]) -> None:
    """Append copies of ``records`` (key, value, headers, timestamp), as a replicator does."""
    cluster.produce(topic, 0, ((r.key, r.value, r.headers, r.timestamp) for r in records))


def test_a_group_past_records_born_on_the_dr_resumes_after_the_last_restored_one(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """The DR got the primary's records 20..289 (DR offsets 0..269), then 30 records of its own
    (270..299). Two groups processed some of those; with --origin-search the snapshot finds the last
    restored record (DR 269, primary 289) and both resume at primary offset 290 — not at the primary's
    end 300: records 290..299 were never on the DR, so neither group read them."""
    dr, primary, topic = source, target, unique("failback-born")
    primary.create_topics({topic: 1})
    dr.create_topics({topic: 1})
    records = produce(primary, topic, 0, 300)
    restore(dr, topic, 0, records, keep=lambda r: 20 <= r.offset < 290)
    born = produce(dr, topic, 0, 30, start_offset=270, headers=[("born-on", b"dr")], base_timestamp=1_710_000_000_000)
    groups = {"at_end": unique("born-end"), "among_born": unique("born-mid")}
    tp = TP(topic, 0)
    commit(dr, groups["at_end"], {tp: 300})
    commit(dr, groups["among_born"], {tp: 285})
    plan_path = tmp_path / "plan.json"
    entries = {e.group: e for e in planned_back(brokers, tmp_path, "|".join(groups.values()), "plan")}
    for name, processed_born in (("at_end", 30), ("among_born", 15)):
        e = entries[groups[name]]
        assert (e.method, e.target_offset, e.exact, e.max_duplicates) == ("origin", 290, True, 0), e
        assert f"({processed_born} records processed that the target lacks)" in (e.reason or ""), e.reason
    status, out, err = run(
        "apply", "--plan", str(plan_path), "--bootstrap-servers", brokers.target.bootstrap_servers, "--execute"
    )
    assert status == 0, out + err
    committed = primary.committed_offsets(list(groups.values()))
    assert {committed[g][tp].offset for g in groups.values()} == {290}

    # A primary whose log ended where the DR's restore did (290), to which MirrorMaker 2 from the DR then
    # brought the DR's own records back (290..319): resuming after the last restored record would read
    # again the 15 the group processed. origin sees the target's last record as recent as the DR's own
    # and steps aside; the fingerprint strategy finds the copy of the group's last record.
    short, short_topic = target, unique("failback-short")
    short.create_topics({short_topic: 1})
    dr.create_topics({short_topic: 1})
    kept = [r for r in records if r.offset < 290]
    produce_as(short, short_topic, kept)  # the primary lost 290..299: its log ends where the DR's restore did
    restore(dr, short_topic, 0, kept, keep=lambda r: r.offset >= 20)
    produce_as(dr, short_topic, born)
    produce_as(short, short_topic, born)  # brought back: primary 290..319
    group = unique("born-back")
    commit(dr, group, {TP(short_topic, 0): 285})  # processed the DR's own 270..284
    (entry,) = planned_back(brokers, tmp_path, group, "plan2")
    assert (entry.method, entry.target_offset, entry.exact) == ("fingerprint", 305, True), entry  # after 284's copy


Row = tuple[bytes, bytes, list[tuple[str, bytes]], int]
"""A record to produce: key, value, headers, timestamp."""


@pytest.mark.parametrize(("primary_codec", "dr_codec"), [("zstd", "lz4"), ("lz4", "zstd")])
def test_a_failback_over_compressed_topics_maps_by_origin_and_its_search(
    brokers: Brokers, tmp_path: Path, primary_codec: str, dr_codec: str
) -> None:
    """Most producers compress: the primary's records in one codec, the DR's restore (with the offset
    header) and its own records in another, in 16 KB batches. The origin strategy and the final snapshot's
    search read through the same decoding as every reader: a group inside the restored range and one past
    the DR's own records resume exactly where the uncompressed case puts them."""
    topic = unique(f"failback-{primary_codec}")
    for settings in (brokers.source_settings, brokers.target_settings):
        with KafkaCluster(settings) as cluster:
            cluster.create_topics({topic: 1})
    rows: list[Row] = [
        (f"k{i}".encode(), f"value {i}".encode() * 8, [("trace", str(i).encode())], 1_700_000_000_000 + i)
        for i in range(400)
    ]
    produce_compressed(brokers.target.bootstrap_servers, topic, rows, primary_codec, 16_384)
    restored: list[Row] = [
        (k, v, [*h, ("x-source-offset", (i).to_bytes(8, "big"))], t) for i, (k, v, h, t) in enumerate(rows) if i >= 40
    ]
    born: list[Row] = [(f"dr{i}".encode(), b"born on the dr", [], 1_710_000_000_000 + i) for i in range(25)]
    produce_compressed(brokers.source.bootstrap_servers, topic, restored + born, dr_codec, 16_384)
    inside, past = unique("codec-inside"), unique("codec-past")
    with KafkaCluster(brokers.source_settings) as dr:
        commit(dr, inside, {TP(topic, 0): 200})  # processed DR 0..199: primary 40..239
        commit(dr, past, {TP(topic, 0): 370})  # every restored record (DR 0..359), then 10 of the DR's own
    entries = {e.group: e for e in planned_back(brokers, tmp_path, f"{inside}|{past}", "plan")}
    assert (entries[inside].method, entries[inside].target_offset, entries[inside].exact) == ("origin", 240, True)
    assert (entries[past].method, entries[past].target_offset, entries[past].exact) == ("origin", 400, True)


def _judge_back(entries: dict[str, PlanEntry], at: dict[str, int], origins: list[int], end: int) -> list[str]:
    """Every entry against the truth read from the DR's layout: a group at DR position c processed the
    origin records ``origins[:c]``; it must resume on the primary no later than the first it did not."""
    problems = []
    for group, c in at.items():
        e = entries[group]
        processed = set(origins[:c])
        truth = min(x for x in range(end + 1) if x not in processed)
        if e.status != "mapped":
            continue
        assert e.target_offset is not None
        again = sum(1 for x in processed if x >= e.target_offset)
        if e.target_offset > truth:
            problems.append(f"c={c}: resumes at {e.target_offset}, skipping {truth}")
        elif e.exact and (e.target_offset != truth or again):
            problems.append(f"c={c}: exact at {e.target_offset}, the truth is {truth} ({again} read again)")
        elif e.max_duplicates is not None and e.max_duplicates < again:
            problems.append(f"c={c}: at most {e.max_duplicates} read again, but {again} are")
    return problems


@pytest.mark.parametrize(
    "layout",
    [
        [*range(50), *range(60, 70), *range(50, 60), *range(70, 100)],  # parallel workers
        [*range(60), *range(40, 60), *range(60, 100)],  # a chunk written twice
    ],
    ids=["out-of-order", "chunk-twice"],
)
def test_a_failback_over_a_restore_written_out_of_order_skips_nothing(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path, layout: list[int]
) -> None:
    """The DR's restore written as parallel workers write (origin 0..49, 60..69, 50..59, 70..99), or with a
    chunk written twice: the records around a group's position say nothing of those before them. A group
    at 55 used to resume at 65 on the primary, "exact", never reading 50..59; with a chunk twice, groups
    were "exact" while reading up to 20 records again. The failback's snapshot reads each such DR
    partition whole: no group resumes past a record it did not process, and none is exact that is not."""
    dr, primary, topic = source, target, unique("failback-order")
    primary.create_topics({topic: 1})
    dr.create_topics({topic: 1})
    records = produce(primary, topic, 0, 100)
    restore(dr, topic, 0, [records[o] for o in layout])
    at = {unique(f"back-{c}"): c for c in range(0, len(layout) + 1, 3)}
    for group, c in at.items():
        commit(dr, group, {TP(topic, 0): c})
    entries = {e.group: e for e in planned_back(brokers, tmp_path, "|".join(at), "order")}
    assert _judge_back(entries, at, layout, 100) == []
    exact = sum(e.exact for e in entries.values())
    assert exact >= len(at) * 2 // 3, [(c, entries[g].exact, entries[g].reason) for g, c in at.items()]


def test_the_proof_holds_a_failback_past_the_floor_when_the_strategys_own_order_check_is_off(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The DR restored out of order (origin 0..49, 60..69, 50..59, 70..99), and the origin strategy's own use of
    the snapshot's whole read switched off: it answers after each group's last processed record, "exact" (a
    group at DR 55 at primary 65, never reading 50..59). The proof checks the answers against that whole read
    itself, having found the primary holds the group's processed record at its origin offset: every answer
    past the floor is held, none skips."""
    from offset_restore.translate.strategies import origin

    monkeypatch.setattr(origin, "_floored", lambda *args, **kwargs: None)
    layout = [*range(50), *range(60, 70), *range(50, 60), *range(70, 100)]
    dr, primary, topic = source, target, unique("failback-unchecked")
    primary.create_topics({topic: 1})
    dr.create_topics({topic: 1})
    records = produce(primary, topic, 0, 100)
    restore(dr, topic, 0, [records[o] for o in layout])
    at = {unique(f"unchecked-{c}"): c for c in range(3, len(layout), 4)}
    for group, c in at.items():
        commit(dr, group, {TP(topic, 0): c})
    entries = {e.group: e for e in planned_back(brokers, tmp_path, "|".join(at), "unchecked", partial=True)}
    assert _judge_back(entries, at, layout, 100) == []
    held = [c for g, c in at.items() if "origin record" in (entries[g].reason or "") and entries[g].status == "pending"]
    assert held and all(50 < c < 70 for c in held), held  # the groups between the chunks, and only those


def test_a_failback_after_a_restore_that_ended_short_resumes_at_the_first_record_the_dr_never_had(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """The DR's restore ended at the primary's record 79 of 100 (every backup ends somewhere); a group caught
    up on the DR, and one that went on to records produced on the DR. The primary's records 80..99 were never
    on the DR: neither group processed them. They used to be moved to the primary's end (20 records never
    read, "exact"). With the failback's snapshot they resume at 80; with a plain snapshot they wait."""
    dr, primary, topic = source, target, unique("failback-short")
    primary.create_topics({topic: 1})
    dr.create_topics({topic: 1})
    records = produce(primary, topic, 0, 100)
    restore(dr, topic, 0, records[:80])
    caught_up, went_on = unique("short-caught-up"), unique("short-went-on")
    commit(dr, caught_up, {TP(topic, 0): 80})
    produce(dr, topic, 0, 10, start_offset=80, headers=[("born-on", b"dr")], base_timestamp=1_760_000_000_000)
    commit(dr, went_on, {TP(topic, 0): 90})
    commit(primary, caught_up, {TP(topic, 0): 64})  # where it stood on the primary before the failover

    searched = {e.group: e for e in planned_back(brokers, tmp_path, f"{caught_up}|{went_on}", "searched")}
    for group in (caught_up, went_on):
        e = searched[group]
        assert (e.status, e.method, e.target_offset) == ("mapped", "origin", 80), e
    status, out, err = run(
        "snapshot", "--bootstrap-servers", brokers.source.bootstrap_servers, "--output", str(tmp_path / "plain"),
        "--groups", f"{caught_up}|{went_on}", "--cluster", "dr",
    )  # fmt: skip
    assert status == 0, err
    status, out, err = run(
        "plan", "--snapshot", str(tmp_path / "plain"), "--bootstrap-servers", brokers.target.bootstrap_servers,
        "--output", str(tmp_path / "plain.json"),
    )  # fmt: skip
    assert status in (0, 3), out + err
    plain = {e.group: e for e in Plan.model_validate_json((tmp_path / "plain.json").read_text()).entries}
    assert plain[caught_up].target_offset == 80, plain[caught_up]
    assert plain[went_on].status == "pending" or (plain[went_on].target_offset or 0) <= 80, plain[went_on]


@pytest.mark.parametrize(
    ("layout", "exact"),
    [
        ([None] * 5 + list(range(100)) + [None] * 10, 27),  # records of the DR's own before the restore
        # Producers on the DR while the restore ran; the origins they displaced restored at the end: no group
        # but those at the start processed 0, 10, 20..., so none is exact.
        ([o if i % 10 else None for i, o in enumerate(range(100))] + list(range(0, 100, 10)) + [None] * 5, 0),
    ],
    ids=["own-records-first", "written-while-restoring"],
)
def test_a_failback_over_a_dr_whose_own_records_are_among_the_restored_ones_skips_nothing(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path, layout: list[int | None], exact: int
) -> None:
    """The DR held records of its own before the restore began (the search for the last restored record
    assumed the restore was the log's prefix, and sent groups past it to the primary's end), or producers
    wrote on the DR while the restore ran (its records between the restored ones): no group resumes on the
    primary past a record it did not process, whichever group processed which."""
    dr, primary, topic = source, target, unique("failback-own")
    primary.create_topics({topic: 1})
    dr.create_topics({topic: 1})
    records = produce(primary, topic, 0, 100)
    dr.produce(topic, 0, [
        (b"own", f"born on the DR {i}".encode(), (), 1_760_000_000_000 + i) if o is None
        else (records[o].key, records[o].value, (*records[o].headers, ("x-source-offset", o.to_bytes(8, "big"))),
              records[o].timestamp)
        for i, o in enumerate(layout)
    ])  # fmt: skip
    at = {unique(f"own-{c}"): c for c in range(0, len(layout) + 1, 4)}
    for group, c in at.items():
        commit(dr, group, {TP(topic, 0): c})
    entries = {e.group: e for e in planned_back(brokers, tmp_path, "|".join(at), "own", partial=True)}
    origins = [o if o is not None else -1 for o in layout]
    assert _judge_back(entries, at, origins, 100) == []
    assert sum(e.exact for e in entries.values()) >= exact  # 29 positions; before the tops read whole, 25
