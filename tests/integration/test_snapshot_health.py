"""Snapshots that find nothing, and the metrics every snapshot emits: real brokers, local folders,
moto S3. A filter that matches nothing fails (exit 2) and writes nothing; a source without groups is
written and said loudly (exit 3, SnapshotGroups=0)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from offset_restore.cli.main import main
from offset_restore.errors import BadInputError
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.storage import LocalStore

from tests.helpers import Brokers, LambdaContext, commit, new_broker, produce, unique


def snap(servers: str, output: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["snapshot", "--bootstrap-servers", servers, "--output", str(output), *extra], out, err)
    return status, out.getvalue(), err.getvalue()


def files_under(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file()] if path.exists() else []


@pytest.fixture
def lagging(source: KafkaCluster) -> tuple[str, str, str]:
    """Two groups on two topics: ``big`` lags 7 on topic a and 2 on topic b, ``small`` lags 1."""
    a, b, big, small = unique("lag-a"), unique("lag-b"), unique("big"), unique("small")
    source.create_topics({a: 1, b: 1})
    produce(source, a, 0, 10)
    produce(source, b, 0, 4)
    commit(source, big, {TP(a, 0): 3, TP(b, 0): 2})
    commit(source, small, {TP(a, 0): 9})
    return big, small, a


def test_a_groups_filter_that_matches_nothing_fails_and_writes_nothing(brokers: Brokers, tmp_path: Path) -> None:
    nobody = unique("nobody")
    status, _, err = snap(brokers.source.bootstrap_servers, tmp_path / "out", "--groups", nobody)
    assert status == 2, err
    expected = rf"--groups '{nobody}' matched none of the [\d,]+ groups on cluster \S+: nothing written"
    assert re.search(expected, err), err
    assert files_under(tmp_path) == []


def test_a_topics_filter_that_matches_nothing_fails_and_writes_nothing(
    brokers: Brokers, lagging: tuple[str, str, str], tmp_path: Path
) -> None:
    big, _, _ = lagging
    status, _, err = snap(
        brokers.source.bootstrap_servers, tmp_path / "out", "--groups", big, "--topics", "no-such-topic", "--json"
    )
    assert status == 2, err
    assert "--topics 'no-such-topic' matched no topic that the 1 selected groups" in err, err
    assert files_under(tmp_path) == []


def test_a_cluster_without_groups_is_written_and_exits_3(tmp_path: Path) -> None:
    with new_broker("no-groups") as broker:
        status, out, err = snap(broker.bootstrap_servers, tmp_path, "--json")
    assert status == 3, err
    assert "no group to snapshot on cluster" in err and "it has no consumer group at all" in err, err
    assert json.loads(out)["counts"]["groups"] == 0
    _, manifest = SnapshotRepository(LocalStore(tmp_path)).latest()
    assert manifest.counts.groups == 0  # the empty source is recorded


def test_the_summary_and_result_name_the_groups_that_lag_most(
    brokers: Brokers, lagging: tuple[str, str, str], tmp_path: Path
) -> None:
    big, small, a = lagging
    status, out, err = snap(brokers.source.bootstrap_servers, tmp_path, "--groups", f"{big}|{small}", "--json")
    assert status == 0, err
    top = json.loads(out)["top_lag"]
    assert [(g["group"], g["lag"]) for g in top] == [(big, 9), (small, 1)]
    assert top[0]["topics"][a] == 7
    assert f"top lag           {big}: 9" in err


@pytest.fixture
def lambda_env(snapshot_lambda_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The snapshot function's environment (tests/conftest.py), with its metrics printed (EMF on stdout)."""
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")


def emf_blobs(text: str) -> list[dict[str, Any]]:
    blobs = []
    for line in text.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            blobs.append(json.loads(line))
    return blobs


def test_the_handler_emits_totals_and_the_top_groups_lag(
    lambda_env: None, s3: Any, lagging: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    from offset_restore_handlers.snapshot import handler

    big, small, a = lagging
    handler({"groups": f"{big}|{small}", "evidence_records": 1}, LambdaContext())
    blobs = emf_blobs(capsys.readouterr().out)
    print("\n".join(json.dumps(b) for b in blobs))  # shown with -s: what CloudWatch receives
    totals = next(b for b in blobs if "SnapshotsTaken" in b)
    assert totals["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "OffsetRestore"
    assert totals["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]]
    assert totals["service"] == "offset-restore"
    numbers = {name: value(totals, name) for name in ("SnapshotsTaken", "SnapshotGroups", "SnapshotGroupPartitions")}
    assert numbers == {"SnapshotsTaken": 1, "SnapshotGroups": 2, "SnapshotGroupPartitions": 3}
    assert (value(totals, "SnapshotTotalLag"), value(totals, "SnapshotWithEvidence")) == (10, 3)
    per_group = {(b["group"], b.get("topic")): b for b in blobs if "group" in b}
    assert value(per_group[(big, None)], "GroupLag") == 9 and value(per_group[(small, None)], "GroupLag") == 1
    assert value(per_group[(big, a)], "GroupTopicLag") == 7
    assert sorted(per_group[(big, a)]["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0]) == ["group", "service", "topic"]


def value(blob: dict[str, Any], name: str) -> float:
    """An EMF value: powertools writes a list of the values added."""
    (number,) = blob[name]
    return float(number)


def test_the_handler_refuses_a_filter_that_matches_nothing_and_writes_nothing(lambda_env: None, s3: Any) -> None:
    from offset_restore_handlers.snapshot import handler

    with pytest.raises(BadInputError, match=r"matched none of the [\d,]+ groups on cluster prod-source"):
        handler({"groups": unique("nobody")}, LambdaContext())
    assert s3.list_objects_v2(Bucket="snapshots").get("KeyCount", 0) == 0


def test_the_plan_summary_says_how_old_its_snapshot_is(
    brokers: Brokers, lagging: tuple[str, str, str], tmp_path: Path
) -> None:
    big, _, _ = lagging
    status, _, err = snap(brokers.source.bootstrap_servers, tmp_path / "snaps", "--groups", big, "--cluster", "src")
    assert status == 0, err
    out, err_text = io.StringIO(), io.StringIO()
    plan = ["plan", "--snapshot", str(tmp_path / "snaps"), "--bootstrap-servers", brokers.target.bootstrap_servers]
    status = main([*plan, "--output", str(tmp_path / "plan.json"), "--json"], out, err_text)
    assert status in (0, 3), err_text.getvalue()  # the topics are not on the target: unmapped, done in part
    assert re.search(r"\n  snapshot age      offsets as of \d+ s before this run\n", err_text.getvalue())
    document = json.loads(out.getvalue())
    assert 0 <= document["snapshot_age_seconds"] < 120 and document["snapshot_positions_at"]
