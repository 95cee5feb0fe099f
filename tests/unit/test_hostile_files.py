"""Files that would fill memory or crash a reader: each refused in one line naming the file and the bound, at
once, in bounded memory, with nothing written (offset_restore/files.py and its callers)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from offset_restore.apply import run as apply_run
from offset_restore.cli.main import main
from offset_restore.errors import BadInputError
from offset_restore.kafka.client_properties import ClientProperties, Store
from offset_restore.kafka.tls_files import materialize
from offset_restore.snapshot import store as snapshot_store
from offset_restore.snapshot.export import read_export
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.storage import LocalStore, open_location

from tests.unit.test_snapshot_store import make

MB = 1024 * 1024


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


def _planted(tmp_path: Path, content: bytes, groups: int) -> tuple[SnapshotRepository, str]:
    """A snapshot whose first items file an attacker replaced with ``content`` (gzip), the manifest's checksum
    and group count made to match."""
    repository = SnapshotRepository(LocalStore(tmp_path))
    key = repository.write(make("s1", datetime(2026, 11, 20, tzinfo=UTC)))
    folder = tmp_path / key.rsplit("/", 1)[0]
    (folder / "items-00000.jsonl.gz").write_bytes(content)
    manifest = json.loads((tmp_path / key).read_text())
    manifest["items"][0]["sha256"] = hashlib.sha256(content).hexdigest()
    manifest["items"][0]["groups"] = groups
    (tmp_path / key).write_text(json.dumps(manifest))
    return repository, key


def _bomb(line: bytes, total: int) -> bytes:
    """``total`` bytes of ``line`` repeated, gzip-compressed as a stream (a few hundred kilobytes)."""
    out = io.BytesIO()
    chunk = line * (MB // len(line))
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as writer:
        for _ in range(total // len(chunk)):
            writer.write(chunk)
    return out.getvalue()


def _refused(work: Callable[[], object]) -> tuple[str, int]:
    """The refusal ``work`` ends in, and the most memory Python held meanwhile."""
    tracemalloc.start()
    try:
        with pytest.raises(BadInputError) as refused:
            work()
        return str(refused.value), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_gzip_bomb_of_newlines_is_refused_at_its_first_line(tmp_path: Path) -> None:
    """512 MB of newlines in half a megabyte, the manifest saying it holds 512 million groups: it used to be
    decompressed whole (MemoryError at 2.5 GB for 3 GB); now its first line is refused, having read one."""
    bomb = _bomb(b"\n", 512 * MB)
    assert len(bomb) < MB
    repository, key = _planted(tmp_path, bomb, 512 * MB)
    said, peak = _refused(lambda: list(repository.groups(key, repository.manifest(key))))
    assert "items-00000.jsonl.gz line 1 is invalid" in said, said
    assert peak < 16 * MB, peak


def test_an_items_file_past_the_groups_its_manifest_counts_is_refused_at_the_next_line(tmp_path: Path) -> None:
    """Valid group documents repeated far past the count the manifest gives: refused at the first line over it."""
    line = json.dumps({"group": "g", "state": "Empty", "partitions": []}).encode() + b"\n"
    repository, key = _planted(tmp_path, _bomb(line, 256 * MB), 2)
    said, peak = _refused(lambda: list(repository.groups(key, repository.manifest(key))))
    assert "holds more than the 2 lines its manifest says" in said, said
    assert peak < 16 * MB, peak


def test_a_line_past_the_bound_is_refused_having_read_no_further(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One line of 64 MB, with the bound lowered to 1 MB for the test: refused naming the bound."""
    monkeypatch.setattr(snapshot_store, "MAX_GROUP_LINE", MB)
    repository, key = _planted(tmp_path, _bomb(b"a", 64 * MB), 1)
    said, peak = _refused(lambda: list(repository.groups(key, repository.manifest(key))))
    assert "line 1 is longer than 1,048,576 bytes" in said, said
    assert peak < 8 * MB, peak


def test_an_items_file_that_is_not_gzip_is_named(tmp_path: Path) -> None:
    repository, key = _planted(tmp_path, b"not gzip at all", 1)
    with pytest.raises(BadInputError, match=r"items-00000.jsonl.gz is not gzip"):
        list(repository.groups(key, repository.manifest(key)))


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "line 1 is longer than 65,536 characters"),  # /dev/zero
        (b"g," + b"x" * 50_000_000 + b",orders,0,5\n", "line 1 is longer than 65,536 characters"),
        (b'g1,orders,0,5\n"g2,orders,1,7\n', "line 2 is not group,topic,partition,offset"),  # quote never closed
        (b"g1,orders,0,5\n\x00\x00,orders,1,7\n", "line 2 holds NUL bytes"),
        (b"\xff\xfe,orders,0,5\n", "codec can't decode"),
    ],
    ids=["dev-zero", "50-million-character-field", "unclosed-quote", "nul-bytes", "not-utf-8"],
)
def test_an_export_that_is_no_export_is_refused_by_line(tmp_path: Path, content: bytes | None, said: str) -> None:
    path = "/dev/zero"
    if content is not None:
        (tmp_path / "export.csv").write_bytes(content)
        path = str(tmp_path / "export.csv")
    message, peak = _refused(lambda: read_export(path, group=None))
    assert message.startswith(f"--from-export {path}") and said in message, message
    assert peak < 8 * MB, peak


def test_snapshot_from_dev_zero_exits_2_in_one_line_and_writes_nothing(tmp_path: Path) -> None:
    status, _, err = run(
        "snapshot", "--from-export", "/dev/zero", "--cluster", "prod", "--output", str(tmp_path / "snaps")
    )  # fmt: skip
    assert status == 2, err
    assert err.strip().count("\n") == 0 and "--from-export /dev/zero line 1 is longer than" in err, err
    assert not (tmp_path / "snaps").exists() or not any((tmp_path / "snaps").rglob("*.json"))


@pytest.mark.parametrize("kind", ["keystore", "truststore"])
def test_a_pkcs12_store_that_is_dev_zero_is_refused_by_its_property(kind: str) -> None:
    """It used to be read until memory ran out (a traceback)."""
    store = Store("PKCS12", location="/dev/zero", password="changeit")
    keystore = kind == "keystore"
    properties = ClientProperties(keystore=store if keystore else None, truststore=None if keystore else store)
    with pytest.raises(BadInputError, match=rf"^ssl\.{kind}\.location /dev/zero: larger than 1,048,576 bytes"):
        materialize(properties)


def test_the_source_command_config_is_named_as_given(tmp_path: Path) -> None:
    status, _, err = run(
        "migrate", "--source-bootstrap-servers", "localhost:1", "--source-command-config", "/dev/zero",
        "--bootstrap-servers", "localhost:2", "--snapshots", str(tmp_path / "snaps"),
        "--plan", str(tmp_path / "plan.json"), "--all-groups", "--connect-timeout", "1",
    )  # fmt: skip
    assert status == 2, err
    assert "--source-command-config /dev/zero: larger than" in err, err
    assert not (tmp_path / "snaps").exists() and not (tmp_path / "plan.json").exists()


def test_an_execution_input_past_what_step_functions_takes_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    arn = "arn:aws:states:eu-west-1:123456789012:stateMachine:offset-restore"
    status, _, err = run("start", "--state-machine", arn, "--input", "/dev/zero")
    assert status == 2 and "--input /dev/zero: larger than 262,144 bytes: not an execution input" in err, err


@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_manifest_past_its_bound_is_refused_having_read_no_further(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, s3: object, where: str
) -> None:
    """A manifest planted larger than any this tool writes (the bound lowered to 1 KiB for the test): refused
    naming it, the S3 object asked for with a ranged GET of the bound and a byte."""
    monkeypatch.setattr(snapshot_store, "MAX_MANIFEST_BYTES", 1024)
    location = str(tmp_path) if where == "local" else "s3://snapshots/prefix"
    store = open_location(location)
    store.put("snapshots/prod/2026/11/20/s1/manifest.json", b"{" + b" " * 4096 + b"}", "application/json")
    with pytest.raises(BadInputError, match=r"manifest\.json is larger than 1,024 bytes, more than this tool writes"):
        SnapshotRepository(store).latest("prod")


def test_a_refused_argument_is_one_line_that_says_how_to_give_a_value_beginning_with_a_dash(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--group -x``: argparse takes ``-x`` for an option; the refusal is one line (no usage block), says
    ``--group=-x`` gives it, and shows a control character the argument held as an escape."""
    status, _, _ = run("snapshot", "--group", "-x", "--output", "/nonexistent/snaps")
    err = capsys.readouterr().err  # argparse writes to the process's stderr
    assert status == 2 and err.count("\n") == 1, err
    assert "argument --group: expected one argument (a value that begins with '-' is given as --group=VALUE)" in err
    status, _, _ = run("snapshot", "--grops\x1b[2J", "g", "--output", "/nonexistent/snaps")
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "\x1b" not in err and "--grops\\x1b[2J" in err, err


@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_plan_past_its_bound_is_refused_having_read_no_further(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, s3: object, where: str
) -> None:
    """The bound lowered to 1 KiB for the test: a larger plan is refused by name, read no further."""
    monkeypatch.setattr(apply_run, "MAX_PLAN_BYTES", 1024)
    location = f"{tmp_path}/plan.json" if where == "local" else "s3://snapshots/plans/plan.json"
    open_location(location.rsplit("/", 1)[0]).put("plan.json", b"{" + b" " * 4096 + b"}", "application/json")
    with pytest.raises(BadInputError, match=r"plan\.json is larger than 1,024 bytes"):
        apply_run.PlanFile(location).load()
