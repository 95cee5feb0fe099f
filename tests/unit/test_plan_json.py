"""A plan saved in pieces (``formats/plan_json.py``) is the plan's one-string JSON byte for byte, with and
without the whole seal's exclusions, for any names and any number of entries: a plan sealed by an earlier
version verifies under this one, and a save's version is the digest of what a later read gets."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from offset_restore.apply.run import PlanFile
from offset_restore.apply.seal import _NOT_SEALED_WHOLE
from offset_restore.formats import plan_json
from offset_restore.formats.plan import ClusterRef, Plan, PlanEntry
from offset_restore.formats.plan_json import json_pieces

NAMES = st.text(min_size=1, max_size=12) | st.sampled_from(['"entries":[]', "},{", "]", '\\"', "\u00e9\n\t"])


def entry(group: str, topic: str, number: int) -> PlanEntry:
    return PlanEntry.model_validate(
        {
            "group": group,
            "topic": topic,
            "partition": number,
            "target_topic": topic,
            "source_offset": number,
            "target_offset": number,
            "method": "header",
            "exact": True,
            "max_duplicates": 0,
            "status": "mapped",
            "metadata": group,
            "previous_target_offset": number + 1,
            "previous_recorded": True,
            "previous_seal": "ab" * 16,
            "expected_fingerprint": topic,
            "source_positions": {number: number + 1},
            "a later field": [{"entries": []}, group],  # a field this version does not know, kept as written
        }
    )


def plan_of(entries: list[PlanEntry], name: str) -> Plan:
    return Plan(
        restore_id=name,
        snapshot_id="s1",
        created_at=datetime(2026, 12, 6, tzinfo=UTC),
        source=ClusterRef.model_validate({"cluster": name, "entries": []}),
        target=ClusterRef(cluster='"entries":[]', cluster_id="abc"),
        entries=entries,
        topic_map={name: name},
        notes=[name],
        seal="cd" * 16,
    )


@settings(max_examples=60, deadline=None)
@given(names=st.lists(st.tuples(NAMES, NAMES), max_size=7), name=NAMES, per_piece=st.integers(1, 4))
def test_the_pieces_are_the_one_string_json_byte_for_byte(
    names: list[tuple[str, str]], name: str, per_piece: int
) -> None:
    plan = plan_of([entry(g, t, n) for n, (g, t) in enumerate(names)], name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plan_json, "ENTRIES_PER_PIECE", per_piece)
        assert b"".join(json_pieces(plan)) == plan.model_dump_json().encode()
        whole = plan.model_dump_json(exclude=_NOT_SEALED_WHOLE).encode()
        assert b"".join(json_pieces(plan, _NOT_SEALED_WHOLE)) == whole


def test_a_plan_saved_in_pieces_reads_back_as_it_was_and_its_version_is_the_files_digest(tmp_path: Path) -> None:
    plan = plan_of([entry(f"g{n}", "orders", n) for n in range(2_500)], "r1")
    plan.seal = None
    path = tmp_path / "plan.json"
    path.write_text(plan.model_dump_json())
    saved = PlanFile(str(path))
    read = saved.load()
    read.entries[1_234].previous_target_offset = 7
    saved.save(read)
    assert saved.version == hashlib.sha256(path.read_bytes()).hexdigest()
    again = PlanFile(str(path))
    assert again.load() == read
    assert again.version == saved.version
