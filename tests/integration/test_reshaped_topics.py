"""Issue 30 on the real brokers: a restore that re-partitioned a topic (more target partitions, fewer,
the same count with keys re-routed), with and without the source-partition header. The CLI snapshots,
plans and applies; an independent reader of every target partition then checks that no record any of a
group's source positions needs lies before where the group resumes, and that a held group is written
nowhere (nor in the CSV)."""

from __future__ import annotations

import io
import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest
from offset_restore.cli.main import main
from offset_restore.formats.plan import PlanEntry
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.reading.whole import read_whole
from offset_restore.workflow.report import render_report

from tests.helpers import Brokers, Produced, commit, produce, unique

RECORDS = 40
POSITIONS = (0, 1, 17, 39, 40)
"""Each group's committed offset on source partition ``q`` is ``POSITIONS[(g + q) % 5]``: groups at the
start, in the middle and caught up, a different mix on every partition."""


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


@dataclass
class Restored:
    topic: str
    partitions: int
    placed: dict[int, list[tuple[int, int]]]
    """Target partition -> the (source partition, source offset) of each record, in offset order."""


class Case:
    """A source topic of ``sources`` partitions of 40 records, five groups snapshotted by the CLI, and a
    second topic one group also reads (unchanged by the restore)."""

    def __init__(self, brokers: Brokers, source: KafkaCluster, folder: Path, sources: int) -> None:
        self.brokers, self.folder, self.sources = brokers, folder, sources
        self.topic, self.other = unique("shape"), unique("shape-other")
        source.create_topics({self.topic: sources, self.other: 1})
        self.records = {q: produce(source, self.topic, q, RECORDS) for q in range(sources)}
        self.other_records = produce(source, self.other, 0, 10)
        self.groups = {
            unique(f"shape-g{g}"): {q: POSITIONS[(g + q) % len(POSITIONS)] for q in range(sources)} for g in range(5)
        }
        for group, positions in self.groups.items():
            commit(source, group, {TP(self.topic, q): c for q, c in positions.items()})
        self.both = next(iter(self.groups))
        commit(source, self.both, {TP(self.other, 0): 4})
        status, _, err = run(
            "snapshot", "--bootstrap-servers", brokers.source.bootstrap_servers, "--output", str(folder / "snaps"),
            "--groups", "|".join(self.groups),
        )  # fmt: skip
        assert status == 0, err

    def restore(self, target: KafkaCluster, partitions: int, *, partition_header: bool) -> Restored:
        """Every record to the target partition its key hashes to (a restore's default partitioner),
        the source partitions interleaved record by record, each keeping its own order."""
        restored, other = unique("shape-dr"), unique("shape-other-dr")
        target.create_topics({restored: partitions, other: 1})
        placed: dict[int, list[tuple[int, int]]] = {t: [] for t in range(partitions)}
        batches: dict[int, list[tuple[bytes, bytes, tuple[tuple[str, bytes], ...], int]]] = {t: [] for t in placed}
        for offset in range(RECORDS):
            for q in range(self.sources):
                r: Produced = self.records[q][offset]
                t = zlib.crc32(r.key) % partitions
                headers = (*r.headers, ("x-source-offset", str(offset).encode()))
                if partition_header:
                    headers = (*headers, ("x-source-partition", str(q).encode()))
                batches[t].append((r.key, r.value, headers, r.timestamp))
                placed[t].append((q, offset))
        for t, batch in batches.items():
            target.produce(restored, t, batch)
        target.produce(
            other,
            0,
            [(r.key, r.value, (*r.headers, ("x-source-offset", str(r.offset).encode())), r.timestamp)
             for r in self.other_records],
        )  # fmt: skip
        self.maps = ("--topic-map", f"{self.topic}={restored}", "--topic-map", f"{self.other}={other}")
        self.other_restored = other
        return Restored(restored, partitions, placed)

    def plan(self, name: str, *options: str) -> tuple[int, dict, str]:
        plan = self.folder / f"{name}.json"
        status, out, err = run(
            "plan", "--snapshot", str(self.folder / "snaps"), "--bootstrap-servers",
            self.brokers.target.bootstrap_servers, *self.maps, "--output", str(plan),
            "--csv", str(self.folder / f"{name}.csv"), *options,
        )  # fmt: skip
        assert status in (0, 3), out + err
        return status, json.loads(plan.read_text()), out + err

    def apply(self, name: str) -> tuple[int, str]:
        status, out, err = run(
            "apply", "--plan", str(self.folder / f"{name}.json"), "--bootstrap-servers",
            self.brokers.target.bootstrap_servers, "--poll-interval", "0.2", "--execute",
        )  # fmt: skip
        return status, out + err


@pytest.fixture
def make_case(brokers: Brokers, source: KafkaCluster, tmp_path: Path):
    return lambda sources: Case(brokers, source, tmp_path, sources)


def read_back(target: KafkaCluster, restored: Restored) -> dict[int, list[tuple[int, int, int]]]:
    """What an independent reader finds on the target: per partition (offset, source partition, source offset)."""
    records, failed = read_whole(target, {TP(restored.topic, t): 0 for t in range(restored.partitions)})
    assert not failed
    found: dict[int, list[tuple[int, int, int]]] = {}
    for tp, rows in records.items():
        headers = [dict(r.headers) for r in rows]
        found[tp.partition] = [
            (r.offset, int(h.get("x-source-partition") or b"-1"), int(h["x-source-offset"] or b"-1"))
            for r, h in zip(rows, headers, strict=True)
        ]
    return found


SHAPES = [pytest.param(2, 4, id="more"), pytest.param(4, 2, id="fewer"), pytest.param(2, 2, id="rerouted")]


@pytest.mark.parametrize(("sources", "targets"), SHAPES)
def test_with_the_partition_header_every_target_partition_resumes_without_a_skip(
    make_case, target: KafkaCluster, sources: int, targets: int
) -> None:
    case = make_case(sources)
    restored = case.restore(target, targets, partition_header=True)
    _, plan, said = case.plan("mapped")
    assert case.topic in plan["reshaped"], said
    on_topic = [e for e in plan["entries"] if e["topic"] == case.topic]
    for group in case.groups:
        mine = [e for e in on_topic if e["group"] == group]
        assert sorted(e["target_partition"] for e in mine) == list(range(targets)), mine
        assert all(e["status"] == "mapped" for e in mine), mine
    # Every record was restored: the report counts none the groups will not read (an anchor carries the offset
    # of whichever source partition's record lies at its resume point, not what the entry's partition lacks).
    entries = [PlanEntry.model_validate(e) for e in plan["entries"]]
    assert (
        json.loads(render_report({"restore_id": "r"}, entries, "applied")["report.json"])["headline"]["lost_records"]
        == 0
    )
    first = next(iter(case.groups))
    commit(target, first, {TP(restored.topic, 0): 0})  # an offset it held on the target before the apply
    assert case.apply("mapped")[0] == 0
    log = read_back(target, restored)
    for group, positions in case.groups.items():
        committed = target.committed_offsets([group])[group]
        for t in range(targets):
            resume = committed[TP(restored.topic, t)].offset
            needed = [at for at, q, o in log[t] if o >= positions[q]]
            processed_after = [at for at, q, o in log[t] if o < positions[q] and at >= resume]
            entry = next(e for e in on_topic if e["group"] == group and e["target_partition"] == t)
            assert all(at >= resume for at in needed), (group, t, resume, needed[:3])
            assert entry["max_duplicates"] >= len(processed_after), entry
            if entry["exact"]:
                assert not processed_after and (not needed or resume == min(needed)), entry
    other = target.committed_offsets([case.both])[case.both]
    assert other[TP(case.other_restored, 0)].offset == 4
    status, out, err = run(
        "rollback", "--plan", str(case.folder / "mapped.json"), "--bootstrap-servers",
        case.brokers.target.bootstrap_servers, "--execute",
    )  # fmt: skip
    assert status == 0, out + err  # the second promise: every target partition back as it was
    after = target.committed_offsets(list(case.groups))
    assert {tp: c.offset for tp, c in after[first].items()} == {TP(restored.topic, 0): 0}
    assert all(not any(tp.topic == restored.topic for tp in after[g]) for g in case.groups if g != first)


@pytest.mark.parametrize(("sources", "targets"), SHAPES)
def test_without_the_partition_header_the_groups_are_held_and_written_nowhere(
    make_case, target: KafkaCluster, sources: int, targets: int
) -> None:
    case = make_case(sources)
    case.restore(target, targets, partition_header=False)
    status, plan, said = case.plan("held")
    assert status == 3
    assert case.topic in plan["reshaped"], said
    on_topic = [e for e in plan["entries"] if e["topic"] == case.topic]
    assert on_topic and all(e["status"] == "unmapped" and e["holds_group"] for e in on_topic), on_topic
    assert all("x-source-partition" in e["reason"] and "held" in e["reason"] for e in on_topic)
    assert (case.folder / "held.csv").read_text() == ""
    left_out = next(line for line in said.splitlines() if "left out of the CSV" in line)
    assert all(group in left_out for group in case.groups), left_out
    _, preview, _ = run(
        "apply", "--plan", str(case.folder / "held.json"), "--bootstrap-servers", case.brokers.target.bootstrap_servers,
    )  # fmt: skip
    assert all(group in preview for group in case.groups) and "changed shape" in preview, preview
    status, out = case.apply("held")
    assert status == 3, out
    assert "changed shape" in out, out
    assert target.committed_offsets(list(case.groups)) == {g: {} for g in case.groups}


def test_a_restore_of_the_same_shape_with_the_partition_header_plans_as_before(make_case, target: KafkaCluster) -> None:
    """The header agrees with every partition: nothing changed, the header strategy maps one to one."""
    case = make_case(2)
    restored = unique("shape-same")
    target.create_topics({restored: 2, unique("unused"): 1})
    for q in range(2):
        target.produce(
            restored,
            q,
            [(r.key, r.value, (*r.headers, ("x-source-offset", str(r.offset).encode()),
              ("x-source-partition", str(q).encode())), r.timestamp) for r in case.records[q]],
        )  # fmt: skip
    case.maps = (
        "--topic-map",
        f"{case.topic}={restored}",
        "--groups",
        "|".join(g for g in case.groups if g != case.both),
    )
    _, plan, said = case.plan("same")
    assert plan["reshaped"] == {}, said
    entries = plan["entries"]
    assert entries and all(
        e["status"] == "mapped" and e["exact"] and e.get("target_partition") is None for e in entries
    )
    assert all(e["target_offset"] == e["source_offset"] for e in entries)


def test_a_re_partitioning_restore_still_running_holds_the_group_until_it_reaches_its_positions(
    make_case, target: KafkaCluster
) -> None:
    """The restore has written source offsets 0..19 of each partition onto 4 partitions: the groups past
    them wait (pending, written nowhere), those within are mapped; once the rest is restored, all map."""
    case = make_case(2)
    restored = unique("shape-running")
    target.create_topics({restored: 4})
    case.maps = (
        "--topic-map",
        f"{case.topic}={restored}",
        "--groups",
        "|".join(g for g in case.groups if g != case.both),
    )

    def write(offsets: range) -> None:
        for q in range(2):
            for r in (case.records[q][o] for o in offsets):
                headers = (
                    *r.headers,
                    ("x-source-offset", str(r.offset).encode()),
                    ("x-source-partition", str(q).encode()),
                )
                target.produce(restored, zlib.crc32(r.key) % 4, [(r.key, r.value, headers, r.timestamp)])

    write(range(20))
    _, plan, said = case.plan("running")
    by_group: dict[str, set[str]] = {}
    for e in plan["entries"]:
        by_group.setdefault(e["group"], set()).add(e["status"])
    for group, positions in case.groups.items():
        if group == case.both:
            continue
        waits = any(c > 20 for c in positions.values())
        assert by_group[group] == ({"pending"} if waits else {"mapped"}), (group, positions, by_group[group])
    assert case.apply("running")[0] == 3
    waiting = [g for g, s in by_group.items() if s == {"pending"}]
    assert waiting and all(target.committed_offsets([g])[g] == {} for g in waiting)
    pending = [e for e in plan["entries"] if e["status"] == "pending"]
    assert all(f"--restore-complete {case.topic}/" in e["reason"] for e in pending), pending[0]["reason"]
    _, declared, said = case.plan("declared", "--restore-complete", case.topic)  # were it finished: none waits
    assert {e["status"] for e in declared["entries"]} == {"mapped"}, said
    lost = {e["group"]: e["never_restored"] for e in declared["entries"] if e["never_restored"]}
    # Each group's records from max(its position, 20) on were never restored, waiting or not.
    expected = {g: sum(RECORDS - max(c, 20) for c in positions.values()) for g, positions in case.groups.items()
                if g != case.both}  # fmt: skip
    assert lost == expected, (lost, expected)
    write(range(20, RECORDS))
    _, plan, said = case.plan("finished")
    assert {e["status"] for e in plan["entries"]} == {"mapped"}, said
