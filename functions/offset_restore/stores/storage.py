"""Where documents live: a local folder or an S3 prefix, behind one small interface.

A location is a path or ``s3://bucket/prefix``. The S3 client is injected (created lazily when not
given) so that tests and Lambda handlers decide how it is built.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from tempfile import SpooledTemporaryFile
from typing import IO, TYPE_CHECKING, Any, Protocol

from offset_restore.errors import AlreadyExistsError, BadInputError, StorageError
from offset_restore.files import read_upto

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["BlobStore", "LocalStore", "S3Store", "open_location"]

SPOOL_BYTES = 16 * 1024 * 1024
"""A document written to S3 from pieces is spooled in memory up to this size, on disk beyond."""
_BLOCK = 1024 * 1024


class BlobStore(Protocol):
    description: str

    def check_writable(self) -> None: ...
    def put(self, key: str, data: bytes, content_type: str = ...) -> None: ...
    def put_file(self, key: str, data: IO[bytes], content_type: str = ...) -> None: ...
    def create_file(self, key: str, data: IO[bytes], content_type: str = ...) -> None: ...
    def get(self, key: str, limit: int | None = None) -> bytes: ...
    def exists(self, key: str) -> bool: ...
    def list(self, prefix: str) -> list[str]: ...


class LocalStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.description = str(root)

    def check_writable(self) -> None:
        if self.root.exists() and not self.root.is_dir():
            raise StorageError(f"output location {self.root} is a file, not a folder")
        existing = next((p for p in [self.root, *self.root.parents] if p.exists()), None)
        if existing is not None and not os.access(existing, os.W_OK):
            raise StorageError(f"no permission to write under {existing}")

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*key.split("/"))

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        self.put_file(key, io.BytesIO(data), content_type)

    def put_file(self, key: str, data: IO[bytes], content_type: str = "application/octet-stream") -> None:
        """``put`` from a file (a document too large to hold as one bytes object)."""
        self.put_pieces(key, iter(lambda: data.read(_BLOCK), b""), content_type)

    def put_pieces(self, key: str, pieces: Iterable[bytes], content_type: str = "application/octet-stream") -> str:
        """``put`` from a document's pieces, holding one at a time; the SHA-256 of what was written (its
        version, ``read_versioned``)."""
        path = self._path(key)
        digest = hashlib.sha256()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f".{path.name}.tmp")
            with temporary.open("wb") as out:
                for piece in pieces:
                    digest.update(piece)
                    out.write(piece)
            temporary.replace(path)  # a reader never sees half a file
        except OSError as error:
            raise StorageError(f"cannot write {path}: {error.strerror}") from None
        return digest.hexdigest()

    def digest(self, key: str) -> str:
        """The SHA-256 of the file (its version, ``read_versioned``), read a block at a time."""
        path = self._path(key)
        try:
            with path.open("rb") as handle:
                return hashlib.file_digest(handle, "sha256").hexdigest()
        except OSError as error:
            raise StorageError(f"cannot read {path}: {error.strerror}") from None

    def create_file(self, key: str, data: IO[bytes], content_type: str = "application/octet-stream") -> None:
        """``put_file`` that never replaces: ``AlreadyExistsError`` when the file is there (another run wrote
        it meanwhile), whole or not at all. The file is linked into place (``link`` fails where a name
        exists); a symbolic link is followed to the file it names, never replaced."""
        path = self._path(key)
        final = path.resolve() if path.is_symlink() else path
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            temporary = final.with_name(f".{final.name}.{os.getpid()}.tmp")
            with temporary.open("wb") as out:
                shutil.copyfileobj(data, out)
            try:
                os.link(temporary, final)
            except FileExistsError:
                raise AlreadyExistsError(f"{path} already exists (written by another run meanwhile)") from None
            finally:
                temporary.unlink(missing_ok=True)
        except OSError as error:
            raise StorageError(f"cannot write {path}: {error.strerror}") from None

    def get(self, key: str, limit: int | None = None) -> bytes:
        """The file's bytes; past ``limit`` bytes refused, having read no further."""
        path = self._path(key)
        try:
            with path.open("rb") as handle:
                data = handle.read() if limit is None else read_upto(handle, limit + 1)
            return _within(data, limit, str(path))
        except FileNotFoundError:
            raise StorageError(f"{path} does not exist") from None
        except OSError as error:
            raise StorageError(f"cannot read {path}: {error.strerror}") from None

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def list(self, prefix: str) -> list[str]:
        base = self._path(prefix.rstrip("/")) if prefix else self.root
        if not base.is_dir():
            return []
        return sorted(
            path.relative_to(self.root).as_posix()
            for path in base.rglob("*")
            if path.is_file() and not path.name.startswith(".")
        )


class S3Store:
    def __init__(self, bucket: str, prefix: str, client: S3Client) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = client
        self.description = f"s3://{bucket}/{self.prefix}".rstrip("/")

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def _fail(self, action: str, key: str, error: Any) -> StorageError:
        code = str(error.response.get("Error", {}).get("Code", "")) if hasattr(error, "response") else ""
        where = f"s3://{self.bucket}/{self._key(key)}" if key else f"s3://{self.bucket}"
        if code == "NoSuchBucket" or (code == "404" and not key):
            return StorageError(f"S3 bucket {self.bucket} does not exist")
        if code in ("AccessDenied", "403", "AllAccessDisabled"):
            return StorageError(f"no permission to {action} {where}")
        if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken"):
            return StorageError(f"AWS credentials were refused for {where} ({code})")
        if code in ("NoSuchKey", "404"):
            return StorageError(f"{where} does not exist")
        return StorageError(f"cannot {action} {where}: {error}")

    def check_writable(self) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.head_bucket(Bucket=self.bucket)
        except ClientError as error:
            raise self._fail("use", "", error) from None
        except BotoCoreError as error:
            raise StorageError(f"cannot reach S3 bucket {self.bucket}: {error}") from None

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data, ContentType=content_type)
        except (ClientError, BotoCoreError) as error:
            raise self._fail("write", key, error) from None

    def put_file(self, key: str, data: IO[bytes], content_type: str = "application/octet-stream") -> None:
        """``put`` from a (seekable) file, streamed in one PutObject: no copy in memory, and the same
        permissions as ``put`` (a multipart upload to a KMS-encrypted bucket also needs kms:Decrypt)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data, ContentType=content_type)
        except (ClientError, BotoCoreError) as error:
            raise self._fail("write", key, error) from None

    def create_file(self, key: str, data: IO[bytes], content_type: str = "application/octet-stream") -> None:
        """``put_file`` that never replaces: a conditional PutObject (If-None-Match: *), refused by S3 itself
        when the key exists (``AlreadyExistsError``), even when another writer got there a moment before."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.put_object(
                Bucket=self.bucket, Key=self._key(key), Body=data, ContentType=content_type, IfNoneMatch="*"
            )
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            if code in ("PreconditionFailed", "412", "ConditionalRequestConflict", "409"):
                where = f"s3://{self.bucket}/{self._key(key)}"
                raise AlreadyExistsError(f"{where} already exists (written by another run meanwhile)") from None
            raise self._fail("write", key, error) from None
        except BotoCoreError as error:
            raise self._fail("write", key, error) from None

    def get(self, key: str, limit: int | None = None) -> bytes:
        """The object's bytes; past ``limit`` bytes refused, having asked for no more (a ranged GET)."""
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, name = self.bucket, self._key(key)
        try:
            if limit is None:
                data = self.client.get_object(Bucket=bucket, Key=name)["Body"].read()
            else:
                data = self.client.get_object(Bucket=bucket, Key=name, Range=f"bytes=0-{limit}")["Body"].read()
        except (ClientError, BotoCoreError) as error:
            raise self._fail("read", key, error) from None
        return _within(data, limit, f"s3://{self.bucket}/{self._key(key)}")

    def exists(self, key: str) -> bool:
        return key in self.list(key)

    def get_versioned(self, key: str, limit: int | None = None) -> tuple[bytes, str]:
        """The object's bytes and its ETag (a ranged GET's is the whole object's); past ``limit`` refused."""
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, name = self.bucket, self._key(key)
        try:
            if limit is None:
                answer = self.client.get_object(Bucket=bucket, Key=name)
            else:
                answer = self.client.get_object(Bucket=bucket, Key=name, Range=f"bytes=0-{limit}")
            data = answer["Body"].read()
        except (ClientError, BotoCoreError) as error:
            raise self._fail("read", key, error) from None
        return _within(data, limit, f"s3://{self.bucket}/{name}"), answer["ETag"]

    def put_if_match(self, key: str, data: bytes | IO[bytes], content_type: str, etag: str | None) -> str | None:
        """PutObject only while the object is at ``etag`` (None: whatever is there); the new ETag, or None
        when it changed meanwhile."""
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, name = self.bucket, self._key(key)
        try:
            if etag is None:
                answer = self.client.put_object(Bucket=bucket, Key=name, Body=data, ContentType=content_type)
            else:
                answer = self.client.put_object(
                    Bucket=bucket, Key=name, Body=data, ContentType=content_type, IfMatch=etag
                )
        except ClientError as error:
            if str(error.response.get("Error", {}).get("Code", "")) in ("PreconditionFailed", "412"):
                return None
            raise self._fail("write", key, error) from None
        except BotoCoreError as error:
            raise self._fail("write", key, error) from None
        return str(answer["ETag"])

    def list(self, prefix: str) -> list[str]:
        from botocore.exceptions import BotoCoreError, ClientError

        full = self._key(prefix)
        strip = len(self.prefix) + 1 if self.prefix else 0
        keys: list[str] = []
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=full):
                keys.extend(item["Key"][strip:] for item in page.get("Contents", []))
        except (ClientError, BotoCoreError) as error:
            raise self._fail("list", prefix, error) from None
        return sorted(keys)


def read_versioned(store: BlobStore, key: str, limit: int | None = None) -> tuple[bytes, str]:
    """A document and its version: S3's ETag, or elsewhere the SHA-256 of its bytes; past ``limit`` bytes
    refused, having read no further."""
    if isinstance(store, S3Store):
        return store.get_versioned(key, limit)
    data = store.get(key, limit)
    return data, hashlib.sha256(data).hexdigest()


def write_if_unchanged(
    store: BlobStore, key: str, pieces: Iterable[bytes], content_type: str, version: str | None
) -> str | None:
    """Write a document given in pieces only if the stored one is still at ``version`` (None: whatever is
    there); its new version, or None when it changed meanwhile. Holds one piece in memory: a local file is
    written through a temporary file beside it, compared first by its digest (the caller holds its lock
    file, so nobody writes in between); S3 takes a conditional write (If-Match) from a spooled file, which
    gives the request its length."""
    if isinstance(store, S3Store):
        with SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
            spool.writelines(pieces)
            spool.seek(0)
            return store.put_if_match(key, spool, content_type, version)
    if not isinstance(store, LocalStore):
        raise TypeError(f"no conditional write to {store.description}")
    if version is not None and store.exists(key) and store.digest(key) != version:
        return None
    return store.put_pieces(key, pieces, content_type)


def open_location(location: str, s3_client: S3Client | None = None) -> BlobStore:
    """A path or ``s3://bucket[/prefix]``; the S3 client is made with boto3's defaults if not given."""
    if not location or not location.strip():
        raise BadInputError("the location is empty: give a folder or s3://bucket/prefix")
    if location.startswith("s3://"):
        bucket, _, prefix = location.removeprefix("s3://").partition("/")
        if not bucket:
            raise BadInputError(f"S3 location {location!r} has no bucket")
        if s3_client is None:
            import boto3

            s3_client = boto3.client("s3")
        return S3Store(bucket, prefix, s3_client)
    if "://" in location:
        raise BadInputError(f"unsupported location {location!r}: use a folder or s3://bucket/prefix")
    return LocalStore(Path(location).expanduser())


def _within(data: bytes, limit: int | None, where: str) -> bytes:
    if limit is not None and len(data) > limit:
        raise BadInputError(f"{where} is larger than {limit:,} bytes, more than this tool writes there: not read on")
    return data
