"""``offset-restore plan`` end to end: snapshot on disk, real target broker, plan and CSV files;
refusals exit 2 (1 when the target is unreachable) and write no plan."""

from __future__ import annotations

import gzip
import io
import json
import os
from pathlib import Path
from typing import Any

import boto3
import pytest
from offset_restore.cli.main import main
from offset_restore.devtools.local_broker import free_port
from offset_restore.formats.plan import Plan
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.stores.keys import progress_key, progress_sk

from tests.helpers import Brokers, commit, produce, restore, unique
from tests.offsets_encoding import commit_key, commit_value


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


def snapshot(brokers: Brokers, folder: Path, *options: str) -> tuple[int, str, str]:
    """``offset-restore snapshot`` of the source broker into ``folder/snaps``."""
    return run(
        "snapshot", "--bootstrap-servers", brokers.source.bootstrap_servers, "--output", str(folder / "snaps"), *options
    )


@pytest.fixture
def setup(brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path) -> dict[str, str]:
    """A source topic with two groups, snapshotted to tmp_path/snaps; the target restored from offset 10."""
    topic = unique("cli-plan")
    source.create_topics({topic: 2})
    records = {p: produce(source, topic, p, 50) for p in range(2)}
    early, late = unique("early"), unique("late")
    commit(source, early, {TP(topic, 0): 5, TP(topic, 1): 20})
    commit(source, late, {TP(topic, 0): 40, TP(topic, 1): 50})
    status, _, err = snapshot(
        brokers,
        tmp_path,
        "--groups",
        f"{early}|{late}",
        "--cluster",
        "src",
        "--snapshot-id",
        "s1",
    )
    assert status == 0, err
    target.create_topics({f"dr.{topic}": 2})
    for p in range(2):
        restore(target, f"dr.{topic}", p, records[p], keep=lambda r: r.offset >= 10)
    return {
        "topic": topic,
        "early": early,
        "late": late,
        "snaps": str(tmp_path / "snaps"),
        "target": brokers.target.bootstrap_servers,
    }


def plan_args(setup: dict[str, str], output: Path, *extra: str, rename: bool = True) -> list[str]:
    mapping = ["--topic-map", f"{setup['topic']}=dr.{setup['topic']}"] if rename else []
    return [
        "plan",
        "--snapshot",
        setup["snaps"],
        "--bootstrap-servers",
        setup["target"],
        "--output",
        str(output),
        *mapping,
        *extra,
    ]


def test_plan_and_csv(setup: dict[str, str], tmp_path: Path) -> None:
    status, out, err = run(
        *plan_args(setup, tmp_path / "plan.json", "--csv", str(tmp_path / "plan.csv"), "--restore-id", "r1", "--json")
    )
    assert status == 0, err
    plan = Plan.model_validate_json((tmp_path / "plan.json").read_text())
    assert plan.restore_id == "r1" and plan.snapshot_id == "s1" and plan.source.cluster == "src"
    offsets = {(e.group, e.partition): (e.target_offset, e.method) for e in plan.entries}
    early, late, topic = setup["early"], setup["late"], setup["topic"]
    assert offsets == {
        (early, 0): (0, "earliest"),
        (early, 1): (10, "header"),
        (late, 0): (30, "header"),
        (late, 1): (40, "end"),
    }
    assert sorted((tmp_path / "plan.csv").read_text().splitlines()) == sorted(
        [
            f"{early},dr.{topic},0,0",
            f"{early},dr.{topic},1,10",
            f"{late},dr.{topic},0,30",
            f"{late},dr.{topic},1,40",
        ]
    )
    summary = json.loads(out)["summary"]
    assert summary["mapped"] == summary["exact"] == 4 and summary["by_method"] == {"earliest": 1, "end": 1, "header": 2}
    assert "mapped            4 (1 earliest, 1 end, 2 header); exact 4" in err


def test_unmapped_entries_make_exit_status_3(setup: dict[str, str], tmp_path: Path) -> None:
    status, out, _ = run(*plan_args(setup, tmp_path / "plan.json", rename=False))  # the topic is missing
    assert status == 3
    assert "unmapped          4" in out and "does not exist on the target" in out
    assert (tmp_path / "plan.json").exists()


def test_checkpoints_from_dynamodb(setup: dict[str, str], tmp_path: Path, table: str, target: KafkaCluster) -> None:
    client = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"])
    for source_offset in (10, 20, 30, 40, 49):
        for p in range(2):
            client.put_item(
                TableName=table,
                Item={
                    "pk": {"S": progress_key("dr", f"dr.{setup['topic']}", p)},
                    "sk": {"S": progress_sk(source_offset)},
                    "target_offset": {"N": str(source_offset - 10)},
                },
            )
    status, _, err = run(
        *plan_args(
            setup,
            tmp_path / "plan.json",
            "--strategies",
            "checkpoint",
            "--checkpoint-table",
            table,
            "--target-cluster",
            "dr",
        )
    )
    assert status == 3, err  # the early group's partition 0 (at 5) lies before the first checkpoint
    plan = Plan.model_validate_json((tmp_path / "plan.json").read_text())
    found = {(e.group, e.partition): (e.target_offset, e.exact, e.max_duplicates) for e in plan.entries}
    assert found[(setup["late"], 0)] == (30, True, 0)
    assert found[(setup["early"], 1)] == (10, True, 0)
    assert found[(setup["late"], 1)] == (39, False, 1)  # caught up at 50: last pair 49 -> 39
    unmapped = next(e for e in plan.entries if e.status == "unmapped")
    assert (unmapped.group, unmapped.partition) == (setup["early"], 0)
    assert "the first checkpoint of dr." in (unmapped.reason or "") and "is past 5" in (unmapped.reason or "")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--strategies", "header,guess"], "choose from header,origin,fingerprint,checkpoint,mm2,timestamp"),
        (["--topic-map", "a"], "is not SRC_TOPIC=TGT_TOPIC"),
        (["--topic-map", "a=x", "--topic-map", "b=x"], "maps both a and b to x"),
        (["--snapshot-id", "nope"], "no complete snapshot with id nope"),
        (["--groups", "("], "invalid --groups regex"),
        (["--restore-id", "a/b"], "restore id 'a/b' must be"),
    ],
)
def test_bad_input_exits_2_and_writes_no_plan(
    setup: dict[str, str], tmp_path: Path, extra: list[str], message: str
) -> None:
    status, _, err = run(*plan_args(setup, tmp_path / "plan.json", *extra))
    assert status == 2 and message in err, err
    assert not (tmp_path / "plan.json").exists()


def test_a_corrupt_snapshot_says_where(setup: dict[str, str], tmp_path: Path) -> None:
    items = next(Path(setup["snaps"]).rglob("items-00000.jsonl.gz"))
    items.write_bytes(gzip.compress(b'{"group": "x", "state": "Empty", "partitions": [{"topic": 1}]}\n'))
    status, _, err = run(*plan_args(setup, tmp_path / "plan.json"))
    assert status == 2 and "items-00000.jsonl.gz does not match its manifest" in err
    items.write_bytes(items.read_bytes()[:10])  # truncated
    assert run(*plan_args(setup, tmp_path / "plan.json"))[0] == 2
    assert not (tmp_path / "plan.json").exists()


def test_a_corrupt_snapshot_is_refused_before_any_kafka_request(setup: dict[str, str], tmp_path: Path) -> None:
    """The whole snapshot is read and checked before the target is contacted: with nothing listening
    at the bootstrap address, the refusal still names the snapshot (exit 2), not the connection."""
    items = next(Path(setup["snaps"]).rglob("items-00000.jsonl.gz"))
    items.write_bytes(items.read_bytes()[:10])
    unreachable = {**setup, "target": f"127.0.0.1:{free_port()}"}
    status, _, err = run(*plan_args(unreachable, tmp_path / "plan.json", "--connect-timeout", "1"))
    assert status == 2 and "items-00000.jsonl.gz" in err and "cannot reach Kafka" not in err, err
    assert not (tmp_path / "plan.json").exists()


def test_an_existing_plan_is_never_overwritten(setup: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "plan.json").write_text("{}")
    status, _, err = run(*plan_args(setup, tmp_path / "plan.json"))
    assert status == 2 and "already exists" in err and (tmp_path / "plan.json").read_text() == "{}"


def test_an_unreachable_target_fails_and_writes_no_plan(setup: dict[str, str], tmp_path: Path) -> None:
    setup = {**setup, "target": f"127.0.0.1:{free_port()}"}
    status, _, err = run(*plan_args(setup, tmp_path / "plan.json", "--connect-timeout", "1"))
    assert status == 1 and "cannot reach Kafka" in err
    assert not (tmp_path / "plan.json").exists()


def test_a_garbage_header_stops_the_plan_and_names_the_record(
    setup: dict[str, str], tmp_path: Path, target: KafkaCluster
) -> None:
    """The garbage is the partition's last record, which every plan of a caught-up group reads (a record
    the search never reads cannot stop it: on Apache Kafka this group's reads of partition 0 stop before
    record 40, where the local broker's larger fetch answers read on to it)."""
    topic = f"dr.{setup['topic']}"
    target.produce(topic, 1, [(b"k", b"v", [("x-source-offset", b"12-ish")], None)])
    status, _, err = run(*plan_args(setup, tmp_path / "plan.json", "--groups", setup["late"]))
    assert status == 2, err
    assert f"record 40 of {topic}/1 has header x-source-offset = 0x31322d697368" in err
    assert not (tmp_path / "plan.json").exists()


def read_like_kafka_consumer_groups(text: str) -> list[list[str]]:
    """How kafka-consumer-groups --reset-offsets --from-file reads a plan: the file split on "\\n",
    each line on "," (its CSV reader sees one line at a time)."""
    return [line.split(",") for line in text.split("\n") if line]


def test_the_csv_reads_back_the_same_under_the_tools_splitting_rules(setup: dict[str, str], tmp_path: Path) -> None:
    status, _, err = run(*plan_args(setup, tmp_path / "plan.json", "--csv", str(tmp_path / "plan.csv")))
    assert status == 0, err
    plan = Plan.model_validate_json((tmp_path / "plan.json").read_text())
    rows = read_like_kafka_consumer_groups((tmp_path / "plan.csv").read_text())
    assert all(len(row) == 4 for row in rows)
    assert sorted((g, t, int(p), int(o)) for g, t, p, o in rows) == sorted(
        (e.group, e.target_topic, e.partition, e.target_offset) for e in plan.entries
    )


@pytest.mark.parametrize(
    ("suffix", "why"),
    [
        (",other-group", "contains ','"),
        ("\nother-group", "contains '\\n'"),
        ('"quoted"', "contains '\"'"),
        (" ", "starts or ends with white space"),
    ],
    ids=["comma", "newline", "quote", "trailing-space"],
)
def test_csv_refuses_a_group_id_the_tool_would_split_and_writes_nothing(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path, suffix: str, why: str
) -> None:
    """Group ids may hold any character; read from a restored __consumer_offsets they reach the plan
    as they are. One that the tool's line and comma splitting would turn into another group's line is
    refused by name, and nothing is written."""
    topic, offsets_copy = unique("hostile"), unique("offsets-copy")
    source.create_topics({topic: 1, offsets_copy: 1})
    records = produce(source, topic, 0, 10)
    hostile = unique("pay") + suffix
    source.produce(offsets_copy, 0, [(commit_key(hostile, topic, 0), commit_value(5, "", 1_700_000_000_000), [], None)])
    status, _, err = snapshot(
        brokers,
        tmp_path,
        "--from-offsets-topic",
        offsets_copy,
        "--exclude-groups",
        "",
    )
    assert status == 0, err
    target.create_topics({topic: 1})
    restore(target, topic, 0, records)
    plan = ["plan", "--snapshot", str(tmp_path / "snaps"), "--bootstrap-servers", brokers.target.bootstrap_servers]
    status, _, err = run(*plan, "--output", str(tmp_path / "plan.json"), "--csv", str(tmp_path / "plan.csv"))
    assert status == 2
    assert "--csv: group" in err and why in err and repr(hostile) in err
    assert not (tmp_path / "plan.json").exists() and not (tmp_path / "plan.csv").exists()
    # Without --csv the plan is made: the plan document (JSON) carries any group id safely.
    status, _, err = run(*plan, "--output", str(tmp_path / "plan.json"))
    assert status == 0, err
    entries = Plan.model_validate_json((tmp_path / "plan.json").read_text()).entries
    assert [(e.group, e.target_offset) for e in entries] == [(hostile, 5)]


def test_plan_and_csv_to_s3_are_the_same_documents_as_on_disk(setup: dict[str, str], tmp_path: Path, s3: Any) -> None:
    """The plan and CSV are uploaded from files (a large plan is never one bytes object)."""
    local = plan_args(setup, tmp_path / "plan.json", "--csv", str(tmp_path / "plan.csv"), "--restore-id", "r1")
    assert run(*local)[0] == 0
    remote = plan_args(setup, tmp_path / "unused", "--restore-id", "r1")
    remote[remote.index("--output") + 1] = "s3://snapshots/plans/r1.json"
    status, _, err = run(*remote, "--csv", "s3://snapshots/plans/r1.csv")
    assert status == 0, err
    stored = s3.get_object(Bucket="snapshots", Key="plans/r1.json")
    assert stored["ContentType"] == "application/json"
    on_disk = Plan.model_validate_json((tmp_path / "plan.json").read_text())
    in_s3 = Plan.model_validate_json(stored["Body"].read())
    assert in_s3.entries == on_disk.entries and in_s3.summary == on_disk.summary
    assert s3.get_object(Bucket="snapshots", Key="plans/r1.csv")["Body"].read() == (tmp_path / "plan.csv").read_bytes()


def test_a_plan_written_by_another_run_meanwhile_is_kept_and_this_one_refused(
    setup: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two plans to one path: the place is free when this run starts, and another run writes its plan there
    while this one reads the target. This run's plan is refused at the end as at the start (exit 2, the path
    named), and the other plan — into which its apply may already have recorded previous offsets — is kept
    byte for byte."""
    from offset_restore.translate import run as run_module

    path = tmp_path / "plan.json"
    original = run_module.translation

    def while_another_writes(*args: Any, **kwargs: Any) -> Any:
        done = original(*args, **kwargs)
        path.write_text('{"another": "run"}')
        return done

    monkeypatch.setattr(run_module, "translation", while_another_writes)
    status, _, err = run(*plan_args(setup, path))
    assert status == 2, err
    assert "was written by another run while this one planned: this plan was not written" in err, err
    assert path.read_text() == '{"another": "run"}'
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left
