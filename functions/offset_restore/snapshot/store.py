"""Write snapshots and find them again (docs/design.md §5.5).

Layout under a location: ``snapshots/<cluster>/<YYYY>/<MM>/<DD>/<snapshot_id>/`` holding
``items-NNNNN.jsonl.gz`` files (one JSON line per group) and ``manifest.json``, written last: a folder
without a manifest is a snapshot that did not finish, and every reader ignores it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from offset_restore.errors import AlreadyExistsError, BadInputError, SnapshotExistsError, SnapshotNotFoundError
from offset_restore.files import gzip_lines
from offset_restore.snapshot.live import Snapshot, SnapshotStream
from offset_restore.snapshot.model import GroupPositions, GroupSnapshot, ItemsFile, SnapshotManifest
from offset_restore.stores.storage import BlobStore
from offset_restore.validation import describe

__all__ = ["MANIFEST", "SnapshotRepository", "StoredGroups"]

_Line = TypeVar("_Line", bound=BaseModel)
"""What a group's line of an items file is read as (``GroupSnapshot``, or its positions alone)."""

MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
"""The largest manifest read: it names each items file (5,000 groups each) and each topic; ten million groups
take a few megabytes."""
MAX_ITEMS_BYTES = 1024 * 1024 * 1024
"""The largest items file read (compressed): 5,000 groups, each under ``MAX_GROUP_LINE`` decompressed, take
far less; one planted larger is refused before it fills memory."""
MAX_GROUP_LINE = 256 * 1024 * 1024
"""The longest line of an items file: one group's document, its positions and their evidence, about a
kilobyte a partition, so a group of over 200,000 partitions (more than a cluster holds) fits; past it the
file is not one this tool wrote, and reading on would only fill memory."""
ROOT = "snapshots"


class SnapshotRepository:
    def __init__(self, store: BlobStore, groups_per_file: int = 5000) -> None:
        self.store = store
        self.groups_per_file = groups_per_file

    @staticmethod
    def folder(manifest: SnapshotManifest) -> str:
        day = manifest.created_at
        return f"{ROOT}/{manifest.cluster}/{day:%Y/%m/%d}/{manifest.snapshot_id}"

    def _keys_of(self, snapshot_id: str, cluster: str | None = None) -> list[str]:
        prefix = f"{ROOT}/{cluster}/" if cluster else f"{ROOT}/"
        return [key for key in self.store.list(prefix) if f"/{snapshot_id}/" in key]

    def check_new(self, snapshot_id: str, cluster: str) -> None:
        """Refuse an id that is already used (complete or not) before anything is written."""
        self.store.check_writable()
        if self._keys_of(snapshot_id, cluster):
            raise SnapshotExistsError(
                f"{self.store.description} already holds a snapshot with id {snapshot_id} "
                f"for cluster {cluster}; choose another --snapshot-id or location"
            )

    def write(self, snapshot: Snapshot | SnapshotStream) -> str:
        """Items first (each file written as it fills), manifest last; returns the manifest's key.

        A stream's manifest is read after its groups are consumed, when its counts are final.
        """
        first = snapshot.manifest
        self.check_new(first.snapshot_id, first.cluster)
        folder = self.folder(first)
        writer = _ItemsWriter(self.store, folder, self.groups_per_file)
        for group in snapshot.groups:
            writer.add(group)
        final = snapshot.manifest.model_copy(update={"items": writer.close()})
        key = f"{folder}/{MANIFEST}"
        _create(self.store, key, final.model_dump_json(indent=2).encode(), "application/json")
        snapshot.manifest = final
        return key

    # -- reading ----------------------------------------------------------------------------------

    def manifests(self, cluster: str | None = None) -> list[tuple[str, SnapshotManifest]]:
        """Every complete snapshot (newest last), optionally of one cluster."""
        prefix = f"{ROOT}/{cluster}/" if cluster else f"{ROOT}/"
        found = []
        for key in self.store.list(prefix):
            if key.endswith(f"/{MANIFEST}"):
                found.append((key, self.manifest(key)))
        return sorted(found, key=lambda item: (item[1].created_at, item[1].snapshot_id))

    def manifest(self, key: str) -> SnapshotManifest:
        raw = self.store.get(key, limit=MAX_MANIFEST_BYTES)
        try:
            return SnapshotManifest.model_validate_json(raw)
        except ValidationError as error:
            raise BadInputError(
                f"snapshot manifest {self.store.description}/{key} is invalid: {describe(error)}"
            ) from None

    def _one_cluster(self, cluster: str | None) -> list[tuple[str, SnapshotManifest]]:
        found = self.manifests(cluster)
        clusters = {manifest.cluster for _, manifest in found}
        if cluster is None and len(clusters) > 1:
            raise BadInputError(
                f"{self.store.description} holds snapshots of several clusters "
                f"({', '.join(sorted(clusters))}): name one"
            )
        return found

    def latest(self, cluster: str | None = None) -> tuple[str, SnapshotManifest]:
        found = self._one_cluster(cluster)
        if not found:
            where = f" of cluster {cluster}" if cluster else ""
            raise SnapshotNotFoundError(f"no complete snapshot{where} in {self.store.description}")
        return found[-1]

    def as_of(self, when: datetime, cluster: str | None = None) -> tuple[str, SnapshotManifest]:
        """The newest snapshot taken at or before ``when``."""
        found = [item for item in self._one_cluster(cluster) if item[1].created_at <= when]
        if not found:
            raise SnapshotNotFoundError(
                f"no complete snapshot taken at or before {when.isoformat()} in {self.store.description}"
            )
        return found[-1]

    def previous(self, manifest: SnapshotManifest) -> tuple[str, SnapshotManifest] | None:
        """The newest snapshot of the same cluster taken before ``manifest`` (the history a group's
        commit rate is read from), or None."""
        earlier = [item for item in self.manifests(manifest.cluster) if item[1].created_at < manifest.created_at]
        return earlier[-1] if earlier else None

    def by_id(self, snapshot_id: str, cluster: str | None = None) -> tuple[str, SnapshotManifest]:
        keys = [key for key in self._keys_of(snapshot_id, cluster) if key.endswith(f"/{MANIFEST}")]
        if not keys:
            raise SnapshotNotFoundError(
                f"no complete snapshot with id {snapshot_id} in {self.store.description}{self._known(cluster)}"
            )
        return keys[0], self.manifest(keys[0])

    def _known(self, cluster: str | None, shown: int = 5) -> str:
        """The newest snapshot ids there are, for a refusal that names an id that is not (the operator
        copies the right one instead of listing the bucket). From the keys alone — ``<cluster>/<YYYY>/
        <MM>/<DD>/<id>/manifest.json`` sorts by day — so a bucket of months of hourly snapshots costs a
        listing, not a read of every manifest."""
        prefix = f"{ROOT}/{cluster}/" if cluster else f"{ROOT}/"
        manifests = [key for key in self.store.list(prefix) if key.endswith(f"/{MANIFEST}")]
        keys = sorted((key.removeprefix(f"{ROOT}/").split("/") for key in manifests), key=lambda p: (p[1:-2], p[-2]))
        if not keys:
            return ": it holds none"
        newest = [f"{parts[-2]} ({parts[0]})" for parts in keys[::-1][:shown]]
        more = f", and {len(keys) - shown} older (offset-restore snapshots lists them)" if len(keys) > shown else ""
        return f"; the newest there: {', '.join(newest)}{more}"

    def groups(self, manifest_key: str, manifest: SnapshotManifest) -> Iterator[GroupSnapshot]:
        """Stream the groups, checking each items file against the manifest."""
        return self._parsed(manifest_key, manifest, GroupSnapshot)

    def positions(self, manifest_key: str, manifest: SnapshotManifest) -> Iterator[GroupPositions]:
        """``groups``, each with its committed positions alone (``GroupPositions``): the same files, checked
        the same way."""
        return self._parsed(manifest_key, manifest, GroupPositions)

    def _parsed(self, manifest_key: str, manifest: SnapshotManifest, model: type[_Line]) -> Iterator[_Line]:
        """Each group's line of the snapshot's items files read as ``model``, each file checked against the
        manifest (its digest, then its count of groups)."""
        folder = manifest_key.rsplit("/", 1)[0] + "/" if "/" in manifest_key else ""
        for item in manifest.items:
            where = f"{self.store.description}/{folder}{item.name}"
            data = self.store.get(f"{folder}{item.name}", limit=MAX_ITEMS_BYTES)
            if hashlib.sha256(data).hexdigest() != item.sha256:
                raise BadInputError(f"snapshot items file {where} does not match its manifest (sha256)")
            number = 0
            lines = gzip_lines(data, limit=MAX_GROUP_LINE, count=item.groups, what=f"snapshot items file {where}")
            for number, line in enumerate(lines, start=1):
                try:
                    yield model.model_validate_json(line)
                except (ValueError, ValidationError) as error:
                    raise BadInputError(f"{where} line {number} is invalid: {describe(error)}") from None
            if number != item.groups:
                raise BadInputError(f"{where} holds {number} groups, the manifest says {item.groups}")

    def load(self, manifest_key: str, manifest: SnapshotManifest) -> Snapshot:
        return Snapshot(manifest=manifest, groups=list(self.groups(manifest_key, manifest)))


@dataclass(frozen=True)
class StoredGroups:
    """A snapshot's groups, read again from the store (and checked again) each time they are
    iterated: for work that passes over them more than once and should not hold them all (a plan of
    240,000 group-partitions with evidence held 0.9 GB of group documents)."""

    repository: SnapshotRepository
    manifest_key: str
    manifest: SnapshotManifest
    keep: Callable[[str], bool] = lambda group: True

    def __iter__(self) -> Iterator[GroupSnapshot]:
        return (g for g in self.repository.groups(self.manifest_key, self.manifest) if self.keep(g.group))


class _ItemsWriter:
    """Gzip JSONL items files of ``per_file`` groups, each put as soon as it is full."""

    def __init__(self, store: BlobStore, folder: str, per_file: int) -> None:
        self.store, self.folder, self.per_file = store, folder, per_file
        self.lines: list[bytes] = []
        self.group_partitions = 0
        self.items: list[ItemsFile] = []

    def add(self, group: GroupSnapshot) -> None:
        self.lines.append(group.model_dump_json().encode() + b"\n")
        self.group_partitions += len(group.partitions)
        if len(self.lines) >= self.per_file:
            self._flush()

    def close(self) -> list[ItemsFile]:
        if self.lines or not self.items:  # an empty snapshot still has one (empty) items file
            self._flush()
        return self.items

    def _flush(self) -> None:
        data = gzip.compress(b"".join(self.lines), compresslevel=1, mtime=0)
        name = f"items-{len(self.items):05d}.jsonl.gz"
        _create(self.store, f"{self.folder}/{name}", data, "application/gzip")
        self.items.append(
            ItemsFile(
                name=name,
                groups=len(self.lines),
                group_partitions=self.group_partitions,
                sha256=hashlib.sha256(data).hexdigest(),
            )
        )
        self.lines, self.group_partitions = [], 0


def _create(store: BlobStore, key: str, data: bytes, content_type: str) -> None:
    """A snapshot's file, created and never replaced: another snapshot written under the same id meanwhile
    (two runs given one ``--snapshot-id``) stops this one, naming the file, before its manifest is written."""
    try:
        store.create_file(key, io.BytesIO(data), content_type)
    except AlreadyExistsError as error:
        raise SnapshotExistsError(
            f"{error}: another snapshot with this id is being written; choose another --snapshot-id"
        ) from None
