"""Hostile and broken input, fuzzed with hypothesis: every input kind a user or a file can hand us.

The property is the same for each: the input is accepted as something valid, or refused with one of
our named errors (``OffsetRestoreError``: a message that says what is wrong) — never an unnamed
exception, never a hang, never a write. ``FUZZ_EXAMPLES`` sets the cases per kind (the figures
command runs more than CI does).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from offset_restore.apply.run import PlanFile
from offset_restore.errors import BadInputError, OffsetRestoreError
from offset_restore.snapshot.filters import NameFilter, compile_pattern
from offset_restore.snapshot.headers import parse_offset_header
from offset_restore.snapshot.offsets_topic import CorruptRecordError, OffsetCommit, Tombstone, decode_record
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.storage import open_location
from offset_restore.translate.run import parse_topic_map
from offset_restore.workflow.states.validate import RunInput, validate_input
from offset_restore_handlers.requests import ApplyRequest, BatchRequest, CheckRequest, LockRequest, ReportRequest, parse
from pydantic import BaseModel

from tests.figures import record

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=0, max_size=40)


def fuzz(kind: str, strategy: st.SearchStrategy[Any], check: Callable[[Any], None]) -> None:
    """Run ``check`` on ``EXAMPLES`` cases and record the figures (cases tried, failures found)."""
    tried = 0

    @FUZZ
    @given(strategy)
    def run(case: Any) -> None:
        nonlocal tried
        tried += 1
        check(case)

    try:
        run()
    except BaseException:
        record("fuzz", input=kind, cases=tried, failures=1)
        raise
    record("fuzz", input=kind, cases=tried, failures=0)


def named_or_valid(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except OffsetRestoreError as error:
        assert str(error), "a refusal must say what is wrong"
        return None


# -- execution input (docs/design.md §5.3) and the step requests ----------------------------------------

run_input_fields = {
    "mode": st.sampled_from(["plan", "apply", "sideways", ""]) | json_values,
    "groups": names | json_values,
    "exclude_groups": names | st.none(),
    "topics": names | st.none(),
    "restore_id": names | json_values,
    "snapshot": st.sampled_from(["latest", {"id": "s-1"}, {"as_of": "2026-11-29T00:00:00Z"}, {"as_of": "x"}])
    | json_values,
    "topic_map": st.dictionaries(names, names, max_size=3) | json_values,
    "strategies": st.lists(st.sampled_from(["header", "fingerprint", "timestamp", "checkpoint", "magic"]))
    | json_values,
    "wait": st.fixed_dictionaries({}, optional={"timeout_seconds": json_values, "interval_seconds": json_values})
    | json_values,
    "pending_retries": st.integers(-5, 500) | json_values,
    "on_wait_timeout": st.sampled_from(["fail", "commit_empty", "later"]) | json_values,
    "allow_rewind": json_values,
    "trigger": json_values,
}


def test_execution_input() -> None:
    def check(raw: dict[str, Any]) -> None:
        run = named_or_valid(lambda: validate_input(raw, {"source_cluster": "src", "target_cluster": "dr"}))
        if run is not None:
            assert isinstance(run, RunInput)
            assert len(set(run.topic_map.values())) == len(run.topic_map)  # never two topics onto one

    fuzz("execution input (§5.3)", st.fixed_dictionaries({}, optional=run_input_fields), check)


def test_step_requests() -> None:
    models: list[type[BaseModel]] = [ApplyRequest, BatchRequest, CheckRequest, LockRequest, ReportRequest]

    def check(case: tuple[int, Any]) -> None:
        model = models[case[0]]
        event = case[1]
        named_or_valid(lambda: parse(model, event if isinstance(event, dict) else {"value": event}, "fuzz"))

    events = st.dictionaries(
        st.sampled_from(
            ["restore_id", "groups", "batches", "lane", "fence", "action", "target_cluster", "started_at", "mode"]
        ),
        json_values,
    )
    fuzz("step requests", st.tuples(st.integers(0, len(models) - 1), events | json_values), check)


# -- plan documents ----------------------------------------------------------------------------

VALID_PLAN: dict[str, Any] = {
    "restore_id": "restore-1",
    "snapshot_id": "snap-1",
    "created_at": "2026-11-29T00:00:00Z",
    "source": {"cluster": "src"},
    "target": {"cluster": "dr"},
    "entries": [
        {
            "group": "g",
            "topic": "t",
            "partition": 0,
            "target_topic": "t",
            "source_offset": 5,
            "target_offset": 3,
            "method": "header",
            "exact": True,
            "status": "mapped",
        }
    ],
}


def _mutate(document: Any, path: list[int], value: Any) -> Any:
    """Replace the node that ``path`` walks to (each step picks a child by index) with ``value``."""
    if not path or not isinstance(document, dict | list) or not document:
        return value
    keys = list(document) if isinstance(document, dict) else list(range(len(document)))
    key = keys[path[0] % len(keys)]
    copy = dict(document) if isinstance(document, dict) else list(document)
    copy[key] = _mutate(document[key], path[1:], value)
    return copy


def test_plan_documents(tmp_path: Path) -> None:
    folder = tmp_path / "plans"
    folder.mkdir()

    def check(case: tuple[list[int], Any, int, bool]) -> None:
        path, value, cut, raw = case
        text = json.dumps(_mutate(VALID_PLAN, path, value)).encode()
        (folder / "plan.json").write_bytes(text[:cut] if raw else text)
        plan = named_or_valid(lambda: PlanFile(str(folder / "plan.json")).load())
        if plan is not None:  # what apply would write must make sense
            for entry in plan.entries:
                assert entry.partition >= 0
                assert entry.target_offset is None or entry.target_offset >= 0
                assert entry.status != "mapped" or entry.target_offset is not None

    cases = st.tuples(st.lists(st.integers(0, 20), max_size=5), json_values, st.integers(0, 600), st.booleans())
    fuzz("plan documents", cases, check)


# -- snapshot documents ------------------------------------------------------------------------

GROUP_LINE: dict[str, Any] = {
    "group": "g",
    "state": "Empty",
    "partitions": [
        {
            "topic": "t",
            "partition": 0,
            "committed_offset": 5,
            "next": {"offset": 5, "timestamp": 1, "fingerprint": "ab"},
        }
    ],
}


def _write_snapshot(folder: Path, manifest_change: tuple[list[int], Any] | None, line: bytes, items_name: str) -> None:
    data = gzip.compress(line + b"\n")
    manifest: dict[str, Any] = {
        "snapshot_id": "snap-1",
        "cluster": "src",
        "created_at": "2026-11-29T00:00:00Z",
        "completed_at": "2026-11-29T00:00:01Z",
        "items": [{"name": items_name, "groups": 1, "group_partitions": 1, "sha256": hashlib.sha256(data).hexdigest()}],
    }
    if manifest_change is not None:
        manifest = _mutate(manifest, *manifest_change)
    snap = folder / "snapshots" / "src" / "2026" / "11" / "29" / "snap-1"
    snap.mkdir(parents=True, exist_ok=True)
    (snap / "manifest.json").write_text(json.dumps(manifest))
    (snap / "groups-00000.jsonl.gz").write_bytes(data)


def test_snapshot_documents(tmp_path: Path) -> None:
    (tmp_path / "snaps" / "snapshots" / "secret.jsonl.gz").parent.mkdir(parents=True)
    (tmp_path / "snaps" / "snapshots" / "secret.jsonl.gz").write_bytes(
        gzip.compress(json.dumps(GROUP_LINE).encode() + b"\n")
    )

    def check(case: tuple[bool, list[int], Any, list[int], Any, str]) -> None:
        change_manifest, m_path, m_value, g_path, g_value, items_name = case
        folder = tmp_path / "snaps"
        line = json.dumps(_mutate(GROUP_LINE, g_path, g_value)).encode()
        _write_snapshot(folder, (m_path, m_value) if change_manifest else None, line, items_name)
        repository = SnapshotRepository(open_location(str(folder)))

        def load() -> Any:
            key, manifest = repository.latest()
            return repository.load(key, manifest)

        snapshot = named_or_valid(load)
        if snapshot is not None:
            assert all(item.name == "groups-00000.jsonl.gz" for item in snapshot.manifest.items)
            for group in snapshot.groups:
                assert all(p.committed_offset >= 0 and p.partition >= 0 for p in group.partitions)

    item_names = st.sampled_from(["groups-00000.jsonl.gz", "../../../../secret.jsonl.gz", "/etc/passwd", ""]) | names
    cases = st.tuples(
        st.booleans(),
        st.lists(st.integers(0, 20), max_size=4),
        json_values,
        st.lists(st.integers(0, 20), max_size=5),
        json_values,
        item_names,
    )
    fuzz("snapshot documents", cases, check)


def test_snapshot_items_streams(tmp_path: Path) -> None:
    """Any bytes as an items file whose manifest checksum and group count an attacker made match (gzip or
    not, truncated, lines of any length): its groups, or one line naming the file; never a traceback."""
    folder = tmp_path / "snaps"
    line = json.dumps(GROUP_LINE).encode()
    pieces = st.sampled_from([line, b"\n", b"{}", b"\x00", line[:20]]) | st.binary(max_size=16)

    def check(case: tuple[bytes, bool, int, int]) -> None:
        content, compressed, cut, count = case
        data = gzip.compress(content) if compressed else content
        data = data[: len(data) - cut] if cut < len(data) else data
        _write_snapshot(folder, None, b"", "groups-00000.jsonl.gz")
        snap = folder / "snapshots" / "src" / "2026" / "11" / "29" / "snap-1"
        (snap / "groups-00000.jsonl.gz").write_bytes(data)
        manifest = json.loads((snap / "manifest.json").read_text())
        manifest["items"][0].update(sha256=hashlib.sha256(data).hexdigest(), groups=count)
        (snap / "manifest.json").write_text(json.dumps(manifest))
        repository = SnapshotRepository(open_location(str(folder)))
        key, found = repository.latest()
        named_or_valid(lambda: list(repository.groups(key, found)))

    contents = st.lists(pieces, max_size=6).map(b"".join)
    fuzz("snapshot items streams", st.tuples(contents, st.booleans(), st.integers(0, 8), st.integers(0, 4)), check)


# -- record contents: offset headers and __consumer_offsets records ----------------------------


def test_client_properties_files(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Any bytes as a --command-config file: settings, or one line that names the file; never a
    traceback (bad escapes, binary content, odd continuations)."""
    from offset_restore.errors import BadInputError
    from offset_restore.kafka.client_properties import read_client_properties

    path = tmp_path_factory.mktemp("props") / "client.properties"

    def check(content: bytes) -> None:
        path.write_bytes(content)
        try:
            read_client_properties(str(path))
        except BadInputError as refused:
            assert str(refused).startswith(f"--command-config {path}: ") and "\n" not in str(refused)

    lines = st.lists(
        st.sampled_from([b"security.protocol=", b"sasl.mechanism=", b"\\u", b"\\", b"=", b":", b" ", b"\n", b"#"])
        | st.binary(max_size=12),
        max_size=12,
    ).map(b"".join)
    fuzz("client properties files", lines, check)


def test_export_files(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Any bytes as a --from-export file: commits, or one line naming the file (and the line); never a
    traceback (quotes never closed, NUL bytes, text that is not UTF-8, odd column counts)."""
    from offset_restore.errors import BadInputError
    from offset_restore.snapshot.export import read_export

    path = tmp_path_factory.mktemp("export") / "offsets.csv"

    def check(case: tuple[bytes, bool]) -> None:
        content, one_group = case
        path.write_bytes(content)
        try:
            commits = read_export(str(path), group="g" if one_group else None).commits
        except BadInputError as refused:
            assert str(refused).startswith(f"--from-export {path}") and "\n" not in str(refused)
            return
        assert commits and all(c.partition >= 0 and c.offset >= 0 and c.group and c.topic for c in commits)

    fields = st.sampled_from([b"g", b"orders", b"0", b"17", b'"', b'"a,b"', b"-1", b" 5", b"\x00", b"\xff"])
    lines = st.lists(st.lists(fields | st.binary(max_size=6), min_size=1, max_size=5).map(b",".join), max_size=5)
    fuzz("export files", st.tuples(lines.map(b"\n".join), st.booleans()), check)


def test_tls_files(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Any bytes as a PEM CA file, certificate or key, or as a PKCS12 keystore: accepted, or one line naming
    the file; never a traceback, never a prompt for a password."""
    from offset_restore.errors import BadInputError
    from offset_restore.kafka.client_properties import ClientProperties, Store
    from offset_restore.kafka.connection import ConnectionSettings
    from offset_restore.kafka.tls_check import check_tls_files
    from offset_restore.kafka.tls_files import materialize

    folder = tmp_path_factory.mktemp("tls")
    pem = folder / "file.pem"
    pieces = st.sampled_from(
        [b"-----BEGIN CERTIFICATE-----\n", b"-----END CERTIFICATE-----\n", b"-----BEGIN PRIVATE KEY-----\n",
         b"-----END PRIVATE KEY-----\n", b"-----BEGIN ENCRYPTED PRIVATE KEY-----\n", b"MIIB\n", b"\n"]
    ) | st.binary(max_size=20)  # fmt: skip

    def check(case: tuple[bytes, str]) -> None:
        content, role = case
        pem.write_bytes(content)
        try:
            if role == "pkcs12":
                materialize(ClientProperties(keystore=Store("PKCS12", location=str(pem), password="changeit")))
            else:
                settings = ConnectionSettings(bootstrap_servers="h:1", security_protocol="SSL")
                field = "ssl_cafile" if role == "ca" else "ssl_certfile"
                check_tls_files(settings.model_copy(update={field: str(pem)}))
        except BadInputError as refused:
            assert str(pem) in str(refused) and "\n" not in str(refused)

    fuzz(
        "TLS files",
        st.tuples(st.lists(pieces, max_size=8).map(b"".join), st.sampled_from(["ca", "pair", "pkcs12"])),
        check,
    )


def test_offset_header_values() -> None:
    def check(value: bytes | None) -> None:
        try:
            offset = parse_offset_header(value)
        except ValueError:
            return  # the plan turns this into a named refusal citing the record (tests/integration)
        assert offset is None or 0 <= offset < 2**63

    fuzz(
        "offset header values",
        st.none()
        | st.binary(max_size=24)
        | st.integers(0, 2**63 - 1).map(lambda n: n.to_bytes(8, "big"))
        | st.integers(0, 10**19).map(lambda n: str(n).encode()),
        check,
    )


def _offsets_key(group: bytes, topic: bytes, partition: int, version: int) -> bytes:
    return (
        struct.pack(">hh", version, len(group))
        + group
        + struct.pack(">h", len(topic))
        + topic
        + struct.pack(">i", partition)
    )


def test_consumer_offsets_records() -> None:
    def check(case: tuple[bytes | None, bytes | None]) -> None:
        key, value = case
        try:
            decoded = decode_record(key, value)
        except CorruptRecordError as error:
            assert str(error)
            return
        assert decoded is None or isinstance(decoded, OffsetCommit | Tombstone)

    keys = (
        st.none()
        | st.binary(max_size=40)
        | st.builds(
            _offsets_key,
            st.binary(max_size=12),
            st.binary(max_size=12),
            st.integers(-(2**31), 2**31 - 1),
            st.integers(-2, 3),
        )
    )
    values = (
        st.none()
        | st.binary(max_size=60)
        | st.builds(
            lambda v, o, m, t: struct.pack(">hq", v, o) + struct.pack(">h", len(m)) + m + struct.pack(">q", t),
            st.integers(0, 3),
            st.integers(-(2**63), 2**63 - 1),
            st.binary(max_size=8),
            st.integers(-(2**63), 2**63 - 1),
        )
    )
    fuzz("__consumer_offsets records", st.tuples(keys, values), check)


# -- regexes and topic maps --------------------------------------------------------------------

regex_atoms = st.sampled_from(
    ["a", ".", "\\w", "\\d", "[a-z]", "(", ")", "|", "*", "+", "?", "{2,}", "\\1", "(?=", "^", "$"]
)


def test_group_and_topic_patterns() -> None:
    def check(case: tuple[str, str]) -> None:
        pattern, name = case
        compiled = named_or_valid(lambda: compile_pattern(pattern, "--groups"))
        if compiled is not None:
            NameFilter(include=compiled)(name * 8)  # linear time: RE2 cannot backtrack

    patterns = st.lists(regex_atoms, max_size=25).map("".join) | names
    fuzz("group/topic regexes", st.tuples(patterns, names), check)


def test_topic_maps() -> None:
    def check(pairs: list[str]) -> None:
        mapping = named_or_valid(lambda: parse_topic_map(pairs))
        if mapping is not None:
            assert len(set(mapping.values())) == len(mapping)  # one-to-one: collisions are refused

    small = st.sampled_from(["a", "b", "c", ""])
    pairs = st.lists(
        st.builds(lambda s, sep, t: f"{s}{sep}{t}", small | names, st.sampled_from(["=", "", "=="]), small | names)
    )
    fuzz("topic maps", pairs, check)


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["a=x", "b=x"], "maps both a and b to x"),
        (["a=x", "a=y"], "maps a twice"),
        (["a"], "is not SRC_TOPIC=TGT_TOPIC"),
        (["=x"], "is not SRC_TOPIC=TGT_TOPIC"),
    ],
)
def test_colliding_topic_maps_are_refused_by_name(pairs: list[str], message: str) -> None:
    with pytest.raises(BadInputError, match=message):
        parse_topic_map(pairs)


# -- hand-written cases: what the fuzzers above found, and the classics ------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"target_offset": None}, "a mapped entry needs a target_offset"),
        ({"target_offset": -5}, "entries.0.target_offset"),
        ({"previous_target_offset": -1}, "entries.0.previous_target_offset"),
        ({"partition": -1}, "entries.0.partition"),
        ({"status": "done"}, "entries.0.status"),
    ],
)
def test_edited_plans_that_would_commit_nonsense_are_refused(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    plan = json.loads(json.dumps(VALID_PLAN))
    plan["entries"][0].update(change)
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    with pytest.raises(BadInputError, match=message):
        PlanFile(str(tmp_path / "plan.json")).load()


@pytest.mark.parametrize("name", ["../../../../secret.jsonl.gz", "/etc/passwd", "a/b.gz", "..", "x\x00y", ""])
def test_a_manifest_cannot_point_outside_its_folder(tmp_path: Path, name: str) -> None:
    _write_snapshot(tmp_path, None, json.dumps(GROUP_LINE).encode(), name)
    repository = SnapshotRepository(open_location(str(tmp_path)))
    with pytest.raises(BadInputError, match="is not a plain file name"):
        repository.latest()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"groups": "(a+)+" * 1000}, "at most 4096"),
        ({"groups": "(?<=x)y"}, "invalid groups regex"),
        ({"topic_map": {"a": "x", "b": "x"}}, "maps two source topics to one target topic"),
        ({"mode": "apply", "wait": {"timeout_seconds": -1}}, "wait.timeout_seconds"),
        ({"restore_id": "../../etc"}, "restore_id"),
        ({"snapshot": {"as_of": "yesterday"}}, "snapshot"),
    ],
)
def test_execution_inputs_that_are_refused_by_name(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(BadInputError, match=message):
        validate_input({"restore_id": "r-1", **raw}, {"source_cluster": "src", "target_cluster": "dr"})
