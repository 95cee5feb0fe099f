"""Documents created and never replaced (a plan, a snapshot's files): a local file is linked into place, an S3
object written with If-None-Match, so a second writer is refused by the file system or by S3 itself, and the
first document stays as it was."""

from __future__ import annotations

import io
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from offset_restore.errors import AlreadyExistsError
from offset_restore.stores.storage import LocalStore, S3Store


def test_a_local_file_is_created_once_and_never_replaced(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "plans")
    store.create_file("a/plan.json", io.BytesIO(b"first"))
    with pytest.raises(AlreadyExistsError, match=r"plan\.json already exists"):
        store.create_file("a/plan.json", io.BytesIO(b"second"))
    assert (tmp_path / "plans" / "a" / "plan.json").read_bytes() == b"first"
    assert sorted(p.name for p in (tmp_path / "plans" / "a").iterdir()) == ["plan.json"]  # no temporary left


def test_a_symbolic_link_is_followed_never_replaced(tmp_path: Path) -> None:
    """A plan path that is a link to a file not yet written: the file it names is created, the link stays; a
    link to a file that exists is refused like the file."""
    (tmp_path / "real").mkdir()
    link = tmp_path / "plan.json"
    link.symlink_to(tmp_path / "real" / "plan.json")
    store = LocalStore(tmp_path)
    store.create_file("plan.json", io.BytesIO(b"through the link"))
    assert link.is_symlink() and (tmp_path / "real" / "plan.json").read_bytes() == b"through the link"
    with pytest.raises(AlreadyExistsError):
        store.create_file("plan.json", io.BytesIO(b"again"))
    assert (tmp_path / "real" / "plan.json").read_bytes() == b"through the link"


def test_an_s3_object_is_created_once_by_a_conditional_put() -> None:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="plans")
        store = S3Store("plans", "dr", client)
        store.create_file("plan.json", io.BytesIO(b"first"))
        with pytest.raises(AlreadyExistsError, match=r"s3://plans/dr/plan\.json already exists"):
            store.create_file("plan.json", io.BytesIO(b"second"))
        assert client.get_object(Bucket="plans", Key="dr/plan.json")["Body"].read() == b"first"
