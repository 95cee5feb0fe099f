"""Writing and finding snapshots in a local folder (the S3 store is exercised against moto)."""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO

import pytest
from offset_restore.errors import BadInputError, SnapshotExistsError, SnapshotNotFoundError, StorageError
from offset_restore.snapshot.live import Snapshot, SnapshotStream, count_groups
from offset_restore.snapshot.model import (
    GroupSnapshot,
    PartitionSnapshot,
    SnapshotManifest,
    default_cluster_name,
    validate_name,
)
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.storage import LocalStore, open_location

T0 = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)


def make(snapshot_id: str, created_at: datetime, groups: int = 3, cluster: str = "prod") -> Snapshot:
    items = [
        GroupSnapshot(
            group=f"g{i}",
            state="Empty",
            partitions=[PartitionSnapshot(topic="t", partition=p, committed_offset=i * 10 + p) for p in range(2)],
        )
        for i in range(groups)
    ]
    manifest = SnapshotManifest(
        snapshot_id=snapshot_id,
        cluster=cluster,
        created_at=created_at,
        completed_at=created_at,
        counts=count_groups(items),
    )
    return Snapshot(manifest=manifest, groups=items)


class RecordingStore(LocalStore):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.puts: list[str] = []

    def create_file(self, key: str, data: IO[bytes], content_type: str = "application/octet-stream") -> None:
        self.puts.append(key)
        super().create_file(key, data, content_type)


def test_items_first_manifest_last_and_round_trip(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path)
    repo = SnapshotRepository(store, groups_per_file=2)
    key = repo.write(make("s1", T0, groups=5))
    assert key == "snapshots/prod/2026/11/20/s1/manifest.json"
    assert store.puts == [
        "snapshots/prod/2026/11/20/s1/items-00000.jsonl.gz",
        "snapshots/prod/2026/11/20/s1/items-00001.jsonl.gz",
        "snapshots/prod/2026/11/20/s1/items-00002.jsonl.gz",
        key,
    ]
    found_key, manifest = repo.latest("prod")
    assert [(i.groups, i.group_partitions) for i in manifest.items] == [(2, 4), (2, 4), (1, 2)]
    loaded = repo.load(found_key, manifest)
    assert [g.group for g in loaded.groups] == ["g0", "g1", "g2", "g3", "g4"]
    assert loaded.groups[3].partitions[1].committed_offset == 31


def test_latest_by_id_and_as_of(tmp_path: Path) -> None:
    repo = SnapshotRepository(LocalStore(tmp_path))
    for n in range(3):
        repo.write(make(f"s{n}", T0 + timedelta(days=n)))
    assert repo.latest()[1].snapshot_id == "s2"
    assert repo.by_id("s1")[1].created_at == T0 + timedelta(days=1)
    assert repo.as_of(T0 + timedelta(days=1, hours=5))[1].snapshot_id == "s1"
    assert repo.as_of(T0)[1].snapshot_id == "s0"
    with pytest.raises(SnapshotNotFoundError, match="at or before 2026-11-19"):
        repo.as_of(T0 - timedelta(days=1))
    with pytest.raises(SnapshotNotFoundError, match="no complete snapshot with id nope") as unknown:
        repo.by_id("nope")
    assert str(unknown.value).endswith("; the newest there: s2 (prod), s1 (prod), s0 (prod)")  # to copy from
    with pytest.raises(SnapshotNotFoundError, match="it holds none"):
        SnapshotRepository(LocalStore(tmp_path / "empty")).by_id("nope")


def test_an_unfinished_snapshot_is_invisible_and_its_id_is_still_taken(tmp_path: Path) -> None:
    repo = SnapshotRepository(LocalStore(tmp_path))
    repo.write(make("done", T0))
    crashed = tmp_path / "snapshots/prod/2026/11/21/crashed"
    crashed.mkdir(parents=True)
    (crashed / "items-00000.jsonl.gz").write_bytes(gzip.compress(b"{}\n"))
    assert repo.latest()[1].snapshot_id == "done"
    with pytest.raises(SnapshotExistsError, match="already holds a snapshot with id crashed"):
        repo.write(make("crashed", T0 + timedelta(days=1)))
    with pytest.raises(SnapshotExistsError):
        repo.write(make("done", T0 + timedelta(days=3)))


def test_several_clusters_must_be_named(tmp_path: Path) -> None:
    repo = SnapshotRepository(LocalStore(tmp_path))
    repo.write(make("a", T0, cluster="east"))
    repo.write(make("b", T0, cluster="west"))
    with pytest.raises(BadInputError, match=r"several clusters \(east, west\)"):
        repo.latest()
    assert repo.latest("west")[1].snapshot_id == "b"


def test_tampered_items_are_detected_with_their_location(tmp_path: Path) -> None:
    repo = SnapshotRepository(LocalStore(tmp_path))
    key = repo.write(make("s1", T0))
    items = tmp_path / "snapshots/prod/2026/11/20/s1/items-00000.jsonl.gz"
    items.write_bytes(gzip.compress(b'{"group": "x"}\n'))
    manifest_key, manifest = repo.latest()
    with pytest.raises(BadInputError, match=r"items-00000.jsonl.gz does not match its manifest"):
        list(repo.groups(manifest_key, manifest))
    (tmp_path / key).write_text('{"snapshot_id": "s1"}')
    with pytest.raises(BadInputError, match=r"manifest .* is invalid"):
        repo.latest()


def test_locations() -> None:
    with pytest.raises(BadInputError, match="has no bucket"):
        open_location("s3:///x")
    with pytest.raises(BadInputError, match="unsupported location"):
        open_location("gs://bucket/x")
    with pytest.raises(BadInputError, match="empty"):
        open_location(" ")


def test_a_file_is_not_a_folder(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(StorageError, match="is a file, not a folder"):
        LocalStore(target).check_writable()


def test_a_stream_is_written_file_by_file_and_its_manifest_counted_at_the_end(tmp_path: Path) -> None:
    """Memory holds one items file, not the whole snapshot: each file is put as soon as it fills."""
    complete = make("s-stream", T0, groups=5)
    yielded: list[str] = []
    put_after: list[int] = []

    class Watching(LocalStore):
        def create_file(self, key: str, data: IO[bytes], content_type: str = "application/octet-stream") -> None:
            put_after.append(len(yielded))
            super().create_file(key, data, content_type)

    stream = SnapshotStream(manifest=complete.manifest.model_copy(update={"counts": count_groups([])}), groups=iter(()))

    def groups() -> Iterator[GroupSnapshot]:
        for group in complete.groups:
            yielded.append(group.group)
            yield group
        stream.manifest = complete.manifest  # final counts arrive when the last group is made

    stream.groups = groups()
    repo = SnapshotRepository(Watching(tmp_path), groups_per_file=2)
    key = repo.write(stream)
    assert put_after == [2, 4, 5, 5]  # three items files as they filled, then the manifest
    found_key, manifest = repo.latest("prod")
    assert found_key == key and manifest.counts.groups == 5 and manifest.counts.group_partitions == 10
    assert [g.group for g in repo.groups(found_key, manifest)] == yielded


@pytest.mark.parametrize(
    ("cluster_id", "name"),
    [
        ("MkU3OEVBNTcwNTJENDM2Qk", "MkU3OEVBNTcwNTJENDM2Qk"),
        ("__cE23qISUqIrMmhKfrv6Q", "cluster-__cE23qISUqIrMmhKfrv6Q"),  # seen from Apache Kafka's StorageTool
        ("-x", "cluster--x"),
        ("a b/c", "a-b-c"),
        ("", "unknown-cluster"),
    ],
)
def test_a_cluster_id_becomes_a_valid_default_name(cluster_id: str, name: str) -> None:
    assert default_cluster_name(cluster_id) == name
    assert validate_name(name, "cluster name") == name


def test_a_snapshot_written_under_the_same_id_meanwhile_stops_this_one_before_its_manifest(tmp_path: Path) -> None:
    """Two runs given one --snapshot-id: the id is free when this one starts, and the other writes its first
    items file meanwhile. This run stops at that file, naming it, and writes no manifest over the other's."""

    class Raced(LocalStore):
        def create_file(self, key: str, data: IO[bytes], content_type: str = "application/octet-stream") -> None:
            if key.endswith("items-00000.jsonl.gz") and not self.exists(key):
                super().create_file(key, io.BytesIO(b"the other run's"), content_type)
            super().create_file(key, data, content_type)

    store = Raced(tmp_path)
    with pytest.raises(SnapshotExistsError, match="another snapshot with this id is being written"):
        SnapshotRepository(store, groups_per_file=2).write(make("s1", T0, groups=5))
    written = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert written == ["items-00000.jsonl.gz"], written
