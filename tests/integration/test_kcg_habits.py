"""Issue 38: a session typed with kafka-consumer-groups' habits works, on the real brokers, or is answered
with the right spelling: ``--bootstrap-server``, ``--group G`` (repeatable), ``--all-groups``, and the
offsets as kcg's table (GROUP TOPIC PARTITION CURRENT-OFFSET NEW-OFFSET, then METHOD and EXACT)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from offset_restore.cli.main import main
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP

from tests.helpers import Brokers, active_member, commit, produce, restore, table_rows, unique


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


def offsets(cluster: KafkaCluster, group: str, topic: str) -> dict[int, int]:
    found = cluster.committed_offsets([group])[group]
    return {tp.partition: c.offset for tp, c in found.items() if tp.topic == topic}


def test_kcgs_spellings_from_snapshot_to_rollback(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    topic = unique("kcg")
    source.create_topics({topic: 1})
    records = produce(source, topic, 0, 60)
    base = unique("orders")
    # "orders.eu" is a --group name with a regex metacharacter: "ordersXeu" must not match it.
    names = {"eu": f"{base}.eu", "lookalike": f"{base}Xeu", "us": f"{base}-us", "other": unique("other")}
    for group, at in zip(names.values(), (30, 31, 40, 50), strict=True):
        commit(source, group, {TP(topic, 0): at})
    snaps, plan = str(tmp_path / "snaps"), str(tmp_path / "plan.json")
    src, tgt = brokers.source.bootstrap_servers, brokers.target.bootstrap_servers

    status, _, err = run("snapshot", "--bootstrap-server", src, "--output", snaps,
                         "--group", names["eu"], "--group", names["us"], "--group", names["lookalike"])  # fmt: skip
    assert status == 0, err
    target.create_topics({topic: 1})
    restore(target, topic, 0, [r for r in records if r.offset >= 10])
    status, out, err = run("plan", "--bootstrap-server", tgt, "--snapshot", snaps, "--output", plan, "--all-groups",
                           "--json")  # fmt: skip
    assert status == 0, err
    assert json.loads(out)["summary"]["groups"] == 3  # the snapshot's three; "other" was never read

    # The preview is kcg's table, one row per offset, with how each was found.
    status, out, err = run("apply", "--bootstrap-server", tgt, "--plan", plan, "--group", names["eu"])
    assert status == 0, err
    assert out.splitlines()[1].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET", "METHOD",
                                           "EXACT"], out  # fmt: skip
    assert table_rows(out) == {(names["eu"], topic, 0): ("-", "20", "header", "exact")}, out
    assert "not chosen        2 groups of the plan" in out, out

    # A name of no group of the plan is a typo: refused, nothing written.
    status, _, err = run("apply", "--bootstrap-server", tgt, "--plan", plan, "--group", f"{base}.EU", "--execute")
    assert status == 2 and "--group/--groups names no group of the plan: nothing written" in err, err

    # --group writes that group alone; the others are neither waited for nor touched.
    status, out, err = run("apply", "--bootstrap-server", tgt, "--plan", plan, "--group", names["eu"], "--execute")
    assert status == 0, out + err
    assert table_rows(out) == {(names["eu"], topic, 0): ("-", "20", "header", "exact")}, out
    assert offsets(target, names["eu"], topic) == {0: 20}
    assert offsets(target, names["lookalike"], topic) == {} and offsets(target, names["us"], topic) == {}

    status, out, err = run("apply", "--bootstrap-server", tgt, "--plan", plan, "--all-groups", "--execute")
    assert status == 0, out + err
    assert set(table_rows(out)) == {(names["lookalike"], topic, 0), (names["us"], topic, 0)}, out  # eu was in place
    assert offsets(target, names["us"], topic) == {0: 30}

    # Rollback of one group of the plan file, by kcg's spelling.
    status, out, err = run("rollback", "--bootstrap-server", tgt, "--plan", plan, "--group", names["us"], "--execute")
    assert status == 0, out + err
    assert table_rows(out) == {(names["us"], topic, 0): ("30", "-", "removed (apply created it)", "-")}, out
    assert offsets(target, names["us"], topic) == {} and offsets(target, names["eu"], topic) == {0: 20}


def test_a_wait_in_a_pipe_names_the_groups_and_their_members_in_timestamped_lines(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path
) -> None:
    """Apply's stderr is no terminal here (a pipe, a CI job, an SSM session): the wait is logged as it
    goes, with the group still active and its member's client id and host; the summary says who was
    waited for and how long."""
    topic = unique("waits")
    source.create_topics({topic: 1})
    records = produce(source, topic, 0, 30)
    busy, free = unique("busy"), unique("free")
    commit(source, busy, {TP(topic, 0): 20})
    commit(source, free, {TP(topic, 0): 25})
    snaps, plan = str(tmp_path / "snaps"), str(tmp_path / "plan.json")
    src, tgt = brokers.source.bootstrap_servers, brokers.target.bootstrap_servers
    assert run("snapshot", "--bootstrap-server", src, "--output", snaps, "--group", busy, "--group", free)[0] == 0
    target.create_topics({topic: 1})
    restore(target, topic, 0, records)
    assert run("plan", "--bootstrap-server", tgt, "--snapshot", snaps, "--output", plan)[0] == 0
    with active_member(tgt, busy, topic, client_id="payments-worker-7"):
        status, out, err = run("apply", "--bootstrap-server", tgt, "--plan", plan, "--wait-timeout", "2.5",
                               "--poll-interval", "0.5", "--on-wait-timeout", "commit_empty", "--execute")  # fmt: skip
    assert status == 3, out + err
    logged = [line for line in err.splitlines() if "waiting for groups to be empty" in line]
    assert logged and all(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ", line) for line in logged), err
    assert f"still active: {busy} (Stable, 1 members: payments-worker-7 from /" in logged[0], err
    assert len(logged) < 5, err  # a line per change (and a heartbeat a minute), not one per poll
    waited = next(line for line in out.splitlines() if line.strip().startswith("waited"))
    assert f"for {busy} (Stable, 1 members: payments-worker-7 from /" in waited, out
    assert f"skipped: {busy}: still active on the target (Stable, 1 members: payments-worker-7 from" in out, out
    assert offsets(target, free, topic) == {0: 25} and offsets(target, busy, topic) == {}


def test_a_wrong_spelling_is_answered_with_the_right_one_and_no_value(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's refusals go to the process's stderr (``capsys``), as a shell shows them."""
    status, _, _ = run("snapshot", "--bootstrap-servr", "broker:9092", "--output", "x", "--sasl-pasword=hunter2")
    err = capsys.readouterr().err
    assert status == 2
    assert "--bootstrap-servr: did you mean --bootstrap-server" in err, err
    assert "--sasl-pasword: did you mean --sasl-password-env" in err, err
    assert "hunter2" not in err and "broker:9092" not in err, err
    status, _, _ = run("apply", "--plan", "p.json", "--bootstrap-server", "b:1", "--groups", "a.*", "--group", "b")
    err = capsys.readouterr().err
    assert status == 2 and "argument --group: not allowed with argument --groups" in err, err
    status, _, _ = run("plan", "--snapshot", "s", "--output", "p")
    err = capsys.readouterr().err
    assert status == 2 and "--bootstrap-servers/--bootstrap-server" in err, err
