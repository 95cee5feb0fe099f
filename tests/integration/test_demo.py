"""`make demo` runs in CI in a small size: it must tell the whole story without failing."""

from __future__ import annotations

import io
from pathlib import Path

from offset_restore.cli import main
from offset_restore.snapshot_store import SnapshotRepository
from offset_restore.storage import LocalStore


def test_demo_snapshots_every_group_it_placed(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["demo", "--groups", "8", "--output", str(tmp_path)], out, err) == 0, err.getvalue()
    text = out.getvalue()
    assert "created 3 topics, 2,200 records, 8 groups" in text
    assert "read back the latest snapshot: 8 groups" in text
    _, manifest = SnapshotRepository(LocalStore(tmp_path)).latest("demo-source")
    # Two "caught up" groups, two "part of the topic" groups (odd partitions never committed).
    assert manifest.counts.groups == 8 and manifest.counts.with_evidence == manifest.counts.group_partitions
    assert "caught up" in text and "- (caught up)" in text
