"""``offset-restore snapshot`` end to end: real brokers, local folders and moto S3; every refusal
names the problem, exits with docs/design.md §5.1's status and writes nothing."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.core import enable_iam_authentication
from offset_restore.cli.main import main
from offset_restore.devtools.local_broker import free_port
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.model import default_cluster_name
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.storage import LocalStore, S3Store

from tests.helpers import Brokers, commit, new_broker, produce, unique
from tests.offsets_encoding import commit_key, commit_value, group_metadata_key


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), out, err)
    return status, out.getvalue(), err.getvalue()


def snap(servers: str, output: str | Path, *extra: str) -> tuple[int, str, str]:
    return run("snapshot", "--bootstrap-servers", servers, "--output", str(output), *extra)


def files_under(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file()] if path.exists() else []


@pytest.fixture
def group_on_source(source: KafkaCluster) -> str:
    topic, group = unique("cli"), unique("cli-group")
    source.create_topics({topic: 2})
    produce(source, topic, 0, 10)
    commit(source, group, {TP(topic, 0): 4})
    return group


def test_snapshot_to_a_folder_then_list_it(brokers: Brokers, group_on_source: str, tmp_path: Path) -> None:
    status, out, err = snap(
        brokers.source.bootstrap_servers,
        str(tmp_path),
        "--groups",
        group_on_source,
        "--cluster",
        "src",
        "--snapshot-id",
        "first",
        "--json",
    )
    assert status == 0, err
    document = json.loads(out)
    assert document["snapshot_id"] == "first" and document["counts"]["group_partitions"] == 1
    assert document["requests"]["OffsetFetch"] >= 1
    assert "Snapshot first of cluster src" in err and "1 group-partitions" not in err
    manifest_key, manifest = SnapshotRepository(LocalStore(tmp_path)).by_id("first")
    assert manifest.counts.groups == 1 and manifest_key.startswith("snapshots/src/")
    status, listing, _ = run("snapshots", "--location", str(tmp_path))
    assert status == 0 and "first" in listing and "groups=1" in listing


def test_snapshot_to_s3(brokers: Brokers, group_on_source: str, s3: Any) -> None:
    status, out, err = snap(
        brokers.source.bootstrap_servers, "s3://snapshots/daily", "--groups", group_on_source, "--cluster", "src"
    )
    assert status == 0, err
    repo = SnapshotRepository(S3Store("snapshots", "daily", s3))
    key, manifest = repo.latest("src")
    groups = list(repo.groups(key, manifest))
    assert [(g.group, g.partitions[0].committed_offset, g.partitions[0].lag) for g in groups] == [
        (group_on_source, 4, 6)
    ]
    assert "written to        s3://snapshots/daily/snapshots/src/" in out


def test_an_unreachable_cluster_fails_within_the_timeout_and_writes_nothing(tmp_path: Path) -> None:
    port = free_port()
    status, _, err = snap(f"127.0.0.1:{port}", str(tmp_path / "out"), "--connect-timeout", "1")
    assert status == 1
    assert f"cannot reach Kafka: 127.0.0.1:{port}: connection refused (nothing listens on that port)" in err
    assert files_under(tmp_path / "out") == []


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--groups", "orders-("], "invalid --groups regex 'orders-('"),
        (["--exclude-groups", "[a-"], "invalid --exclude-groups regex"),
        (["--topics", "*"], "invalid --topics regex '*'"),
        (["--snapshot-id", "../escape"], "snapshot id '../escape' must be"),
        (["--cluster", "a/b"], "cluster name 'a/b' must be"),
        (["--as-of", "2026-11-01T00:00:00Z"], "--as-of goes with --from-offsets-topic or --from-export"),
        (["--sasl-mechanism", "PLAIN"], "needs --security-protocol SASL_SSL"),
        (
            [
                "--security-protocol",
                "SASL_SSL",
                "--sasl-mechanism",
                "SCRAM-SHA-512",
                "--sasl-username",
                "u",
                "--sasl-password-env",
                "NO_SUCH_VARIABLE_X",
            ],
            "NO_SUCH_VARIABLE_X",
        ),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(brokers: Brokers, tmp_path: Path, extra: list[str], message: str) -> None:
    status, _, err = snap(brokers.source.bootstrap_servers, str(tmp_path / "out"), *extra)
    assert status == 2 and message in err, err
    assert files_under(tmp_path / "out") == []


def test_bad_usage_exits_2() -> None:
    assert run("snapshot", "--output", "x")[0] == 2
    assert snap("b:1", "x", "--evidence-records", "-1")[0] == 2
    assert snap("b:1", "x", "--as-of", "yesterday")[0] == 2


def test_an_existing_snapshot_id_is_refused_before_connecting(
    brokers: Brokers, group_on_source: str, tmp_path: Path
) -> None:
    args = ["--groups", group_on_source, "--cluster", "src", "--snapshot-id", "same"]
    assert snap(brokers.source.bootstrap_servers, tmp_path, *args)[0] == 0
    before = sorted(files_under(tmp_path))
    status, _, err = snap(brokers.source.bootstrap_servers, tmp_path, *args)
    assert status == 2 and "already holds a snapshot with id same for cluster src" in err
    assert sorted(files_under(tmp_path)) == before


def test_an_unknown_bucket_is_named(brokers: Brokers, s3: Any) -> None:
    status, _, err = snap(brokers.source.bootstrap_servers, "s3://no-such-bucket/x")
    assert status == 2 and "S3 bucket no-such-bucket does not exist" in err


def test_no_permission_on_the_bucket_is_named_and_nothing_is_written(
    brokers: Brokers, s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iam = boto3.client("iam", region_name="us-east-1")
    iam.create_user(UserName="nobody")
    key = iam.create_access_key(UserName="nobody")["AccessKey"]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key["AccessKeyId"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", key["SecretAccessKey"])
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # the CLI resolves credentials afresh
    with enable_iam_authentication():  # moto now checks IAM: a user without policies may do nothing
        status, _, err = snap(brokers.source.bootstrap_servers, "s3://snapshots/x")
    assert status == 2 and "no permission to use s3://snapshots" in err, err
    assert s3.list_objects_v2(Bucket="snapshots").get("KeyCount", 0) == 0


def test_an_empty_cluster_gives_a_valid_empty_snapshot(tmp_path: Path) -> None:
    with new_broker("empty") as broker:
        status, out, err = snap(broker.bootstrap_servers, str(tmp_path), "--json")
    assert status == 3 and "no group to snapshot" in err, err  # written, but a restore from it restores nothing
    assert json.loads(out)["counts"]["groups"] == 0
    _, manifest = SnapshotRepository(LocalStore(tmp_path)).latest()
    # Named by the cluster's id: "empty" on the local broker, Kafka's generated id made a valid name on Apache Kafka.
    assert manifest.cluster == default_cluster_name(broker.cluster_id) and manifest.counts.groups == 0
    assert len(manifest.items) == 1


def test_from_a_restored_offsets_topic(brokers: Brokers, source: KafkaCluster, tmp_path: Path) -> None:
    topic = unique("offsets-copy")
    source.create_topics({topic: 2})
    t = 1_764_000_000_000
    source.produce(
        topic,
        0,
        [
            (commit_key("billing", "orders", 0), commit_value(100, "m", t, version=3), [], t),
            (commit_key("billing", "orders", 0), commit_value(150, "m", t + 60_000, version=1), [], t + 60_000),
            (commit_key("billing", "orders", 0), commit_value(999, "m", t + 3_600_000, version=2), [], t + 3_600_000),
            (group_metadata_key("billing"), b"\x00\x03opaque", [], t),
            (b"\x00\x01\x00", b"garbage", [], t),
        ],
    )
    source.produce(
        topic,
        1,
        [
            (commit_key("search", "clicks", 3, version=0), commit_value(7, "", t, version=0), [], t),
            (commit_key("search", "clicks", 4), commit_value(9, "", t), [], t),
            (commit_key("search", "clicks", 4), None, [], t + 1000),
            (commit_key("console-consumer-1", "clicks", 0), commit_value(1, "", t), [], t),
        ],
    )
    as_of = datetime.fromtimestamp((t + 120_000) / 1000, UTC).isoformat()
    status, out, err = snap(
        brokers.source.bootstrap_servers,
        str(tmp_path),
        "--from-offsets-topic",
        topic,
        "--as-of",
        as_of,
        "--cluster",
        "backup",
        "--json",
    )
    assert status == 0, err
    document = json.loads(out)
    assert document["counts"]["offsets_topic_records"] == 9
    assert document["counts"]["offsets_topic_corrupt"] == 1
    assert "1 corrupt skipped" in err
    repo = SnapshotRepository(LocalStore(tmp_path))
    key, manifest = repo.latest("backup")
    assert manifest.source == "offsets-topic" and manifest.as_of is not None
    positions = {
        (g.group, p.topic, p.partition): p.committed_offset for g in repo.groups(key, manifest) for p in g.partitions
    }
    assert positions == {("billing", "orders", 0): 150, ("search", "clicks", 3): 7}


def test_a_missing_offsets_topic_is_named(brokers: Brokers, tmp_path: Path) -> None:
    name = unique("missing")
    status, _, err = snap(brokers.source.bootstrap_servers, str(tmp_path / "o"), "--from-offsets-topic", name)
    assert status == 2 and f"topic {name} (--from-offsets-topic) does not exist" in err
    assert files_under(tmp_path / "o") == []
