"""A migration and a failback, side by side: every group-partition judged against its true
next record, on Apache Kafka 4.1.1 brokers and the real MirrorMaker 2.

    python -m bench.migration_compare                  # 2 partitions x 20,000 records
    python -m bench.migration_compare --records 5000   # quicker
    python -m bench.migration_compare --per-millisecond 30 --output bench/results/migration-busy.md
                                                       # a bulk producer: 30 records to a millisecond

**The migration** (the source is up): a source topic (the first 1% of partition 0 deleted, so offsets
differ), static groups at many lags (``bench.compare.static_groups``) and live groups, real kafka-python
consumers reading a few records per poll and committing after each, still running when the migrations
start and stopped (closed) a few seconds later. MirrorMaker 2 (one process, group offset sync on,
``offset.lag.max`` 100) replicates the source to three replicas and keeps running throughout:

- ``mm2``: nothing else writes there; its row is the offsets MM2 synced once the consumers stopped and
  its syncs settled;
- ``cli``: ``offset-restore migrate ... --execute --allow-rewind`` (MM2's sync wrote offsets there first;
  without ``--allow-rewind`` apply keeps a group that is already further);
- ``wf``: the workflow (moto's Step Functions interpreter, the real handlers), ``"mode": "migrate"``,
  ``allow_rewind`` as the CLI's. The CLI and the workflow run at the same time, both started while the
  consumers run.

Truth: each group's final committed offset ``c`` on the source (read after the consumers stopped): it must
resume at the replica's copy of source record ``c`` (``bench.compare.placement`` / ``outcomes``). The
replicas' offsets are read after MM2's syncs settled, so a sync that moved a group after a tool committed
counts against that tool (MM2 only moves offsets forward).

**The failback**: a primary with the records; a DR cluster holding a restore copy of them (the
``x-source-offset`` header, the first 1% dropped) and 500 records per partition produced on the DR only
after the failover; groups on the DR inside the restored range, at its end and past DR-born records. The
primary still holds each group's pre-failover offset (behind). ``offset-restore migrate
--source-bootstrap-servers DR --bootstrap-servers PRIMARY --execute`` (the ``origin`` strategy) against
the alternative an operator has without the header's meaning: ``offset-restore plan --strategies
fingerprint,timestamp`` (the plan's mapped offsets, what apply would write). Truth for a group at DR
offset p inside the restored range: the header h of its last processed record, plus 1 (the primary
offset of its next record); for groups that processed DR-born records: the primary's end, counted apart.

Writes ``bench/results/migration.md`` and ``bench/results/migration.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kafka import KafkaConsumer
from offset_restore.devtools.apache_broker import ApacheBroker
from offset_restore.devtools.local_aws import local_workflow
from offset_restore.devtools.mirror_maker import Flow, MirrorMaker
from offset_restore.formats.plan import Plan
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP, CommittedOffset

from bench.compare import (
    BASE_MS,
    KAFKA_VERSION,
    RESULTS,
    TOPIC,
    Key,
    Placed,
    Tool,
    commit_static,
    committed_on,
    methods_of,
    outcomes,
    placement,
    plan_with_cli,
    records_of,
    run_cli,
    static_groups,
    wait_replicated,
    wait_settled,
    write_copy,
    write_source,
)

MIGRATE_GROUPS = "cmp-.*"
FAILBACK_GROUPS = "fb-.*"
DR_BORN = 500


def merged(*parts: dict[str, Any]) -> dict[str, Any]:
    return {k: v for part in parts for k, v in part.items()}


# -- the migration --------------------------------------------------------------------------------


@contextmanager
def consumers(servers: str, groups: list[str], stop: threading.Event, pause_s: float) -> Iterator[list[Exception]]:
    """Real consumers, one per group, a few records per poll, a commit after each non-empty poll, until
    ``stop`` (then closed: the group is empty on the source)."""
    failures: list[Exception] = []

    def work(group: str) -> None:
        consumer = KafkaConsumer(
            TOPIC,
            bootstrap_servers=servers,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=5,
            max_partition_fetch_bytes=4096,  # small fetches: it reads both partitions in turn, not one whole
        )
        try:
            while not stop.is_set():
                if consumer.poll(timeout_ms=300):
                    consumer.commit()
                    stop.wait(pause_s)  # slow: the groups are still mid-topic when the migration starts
        except Exception as error:  # a dying consumer must say why
            failures.append(error)
        finally:
            consumer.close()

    threads = [threading.Thread(target=work, args=(g,), daemon=True) for g in groups]
    for t in threads:
        t.start()
    try:
        yield failures
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)


def migrate_cli(source: ApacheBroker, target: ApacheBroker, work: Path, out: dict[str, Any]) -> None:
    started = time.perf_counter()
    try:
        out["stdout"] = run_cli(
            "migrate", "--source-bootstrap-servers", source.bootstrap_servers,
            "--bootstrap-servers", target.bootstrap_servers, "--snapshots", str(work / "cli-snapshots"),
            "--plan", str(work / "cli-plan.json"), "--groups", MIGRATE_GROUPS, "--wait-timeout", "120",
            "--catch-up-timeout", "120", "--poll-interval", "1", "--execute", "--allow-rewind",
        )  # fmt: skip
    except BaseException as error:  # reported in the row, the run goes on
        out["error"] = str(error)
    out["seconds"] = time.perf_counter() - started


def migrate_workflow(source: ApacheBroker, target: ApacheBroker, out: dict[str, Any]) -> None:
    started = time.perf_counter()
    try:
        with local_workflow(source.bootstrap_servers, target.bootstrap_servers) as flow:
            run_input = {
                "mode": "migrate",
                "restore_id": "mig-workflow",
                "groups": MIGRATE_GROUPS,
                "wait": {"timeout_seconds": 120, "interval_seconds": 1},
                "pending_retries": 30,
                "pending_interval_seconds": 1,
                "allow_rewind": True,
            }
            done = flow.run(run_input, name="mig-workflow", timeout_s=600)
            out["status"], out["states"] = done["status"], done["states"]
            if done["status"] != "SUCCEEDED":
                out["error"] = f"{done['status']}: {done.get('cause')}"
            else:
                summary = flow.report("mig-workflow").get("summary")
                out["summary"] = summary
    except BaseException as error:
        out["error"] = str(error)
    out["seconds"] = time.perf_counter() - started


def migration(args: argparse.Namespace, brokers: dict[str, ApacheBroker], work: Path, facts: dict[str, Any]) -> Any:
    src = brokers["source"]
    with KafkaCluster(src.settings()) as source:
        lost = write_source(source, args)
        statics = static_groups(args, lost)
        commit_static(source, statics)
        live = [f"cmp-live{g}" for g in range(args.live)]
        # live0 resumes mid-topic, the others from the log start (auto.offset.reset earliest)
        commit_static(source, {live[0]: {p: args.records // 2 for p in range(args.partitions)}})
    facts["lost"] = lost
    flows = [Flow(brokers[w], 100, w) for w in ("mm2", "cli", "wf")]
    mm2 = MirrorMaker(src, flows).start()
    try:
        stop = threading.Event()
        cli_out: dict[str, Any] = {}
        wf_out: dict[str, Any] = {}
        with consumers(src.bootstrap_servers, live, stop, args.pause_s) as failures:
            ends = {p: args.records - n for p, n in lost.items()}
            wait_replicated(mm2, [brokers[w] for w in ("mm2", "cli", "wf")], ends)
            with KafkaCluster(src.settings()) as source:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    found = source.committed_offsets(live)
                    if all(len(found[g]) == args.partitions for g in live):
                        break
                    time.sleep(0.2)
                at_start = source.committed_offsets(live)
            facts["live_at_start"] = {
                f"{g}/{tp.partition}": c.offset for g, by_tp in at_start.items() for tp, c in by_tp.items()
            }
            print("MM2 replicated; consumers running; migrations start", file=sys.stderr)
            threading.Timer(args.stop_after_s, stop.set).start()
            threads = [threading.Thread(target=migrate_cli, args=(src, brokers["cli"], work, cli_out))]
            if not args.no_workflow:
                threads.append(threading.Thread(target=migrate_workflow, args=(src, brokers["wf"], wf_out)))
            for t in threads:
                t.start()
            stop.wait()
        if failures:
            raise SystemExit(f"a consumer failed: {failures}")
        for t in threads:
            t.join()
        with KafkaCluster(src.settings()) as source:
            groups = sorted({*statics, *live})
            final = source.committed_offsets(groups)
        truth = {(g, tp.partition): c.offset for g, by_tp in final.items() for tp, c in by_tp.items()}
        live_keys = {k for k in truth if k[0] in live}
        wait_settled(mm2, [brokers[w] for w in ("mm2", "cli", "wf")], groups)
        places = {w: placement(brokers[w], args.partitions) for w in ("mm2", "cli", "wf")}
        tools = [
            Tool("MirrorMaker 2 offset sync (lag.max 100)", committed_on(brokers["mm2"], groups), 0.0, where="mm2"),
            Tool(
                "offset-restore migrate (CLI)",
                committed_on(brokers["cli"], groups),
                cli_out.get("seconds", 0.0),
                note=cli_out.get("error", ""),
                where="cli",
            ),
        ]
        plan_file = work / "cli-plan.json"
        if plan_file.exists():
            entries = Plan.model_validate_json(plan_file.read_text()).entries
            facts["cli_plan"] = {"entries": len(entries), "exact": sum(1 for e in entries if e.exact)}
        if not args.no_workflow:
            tools.append(
                Tool(
                    "offset-restore workflow, mode migrate (Step Functions on moto)",
                    committed_on(brokers["wf"], groups),
                    wf_out.get("seconds", 0.0),
                    note=wf_out.get("error", ""),
                    where="wf",
                )
            )
            facts["workflow"] = {k: v for k, v in wf_out.items() if k != "seconds"}
    finally:
        mm2.stop()
        facts["mm2_log_tail"] = mm2.log()[-2000:]
        mm2.remove()
    results = [(t, outcomes(t, truth, places[t.where])) for t in tools]
    details = {
        f"{g}/{p}": merged(
            {"source_committed": c, "live": (g, p) in live_keys},
            {f"want_{w}": places[w][p].want(c) for w in places},
            {t.name: t.committed.get((g, p)) for t in tools},
        )
        for (g, p), c in sorted(truth.items())
    }
    facts["migration_group_partitions"], facts["migration_live"] = len(truth), len(live_keys)
    facts["live_outcomes"] = {t.name: outcomes(t, {k: truth[k] for k in live_keys}, places[t.where]) for t in tools}
    return results, details


# -- the failback ---------------------------------------------------------------------------------


def failback(args: argparse.Namespace, brokers: dict[str, ApacheBroker], work: Path, facts: dict[str, Any]) -> Any:
    n, parts = args.records, args.partitions
    dropped = {p: n // 100 for p in range(parts)}
    restored = n - n // 100  # records per partition on the DR from the restore
    rng = random.Random(args.seed + 35)
    with KafkaCluster(brokers["primary"].settings()) as primary, KafkaCluster(brokers["dr"].settings()) as dr:
        primary.create_topics({TOPIC: parts})
        for p in range(parts):
            primary.produce(TOPIC, p, records_of(p, n, args.seed, 0, args.per_ms))
        write_copy(dr, args, dropped)
        for p in range(parts):
            dr.produce(
                TOPIC,
                p,
                ((f"{p}:dr{i}".encode(), rng.randbytes(100), [], BASE_MS + n + i) for i in range(DR_BORN)),
            )
        positions = [
            lambda: 0,
            lambda: restored,  # the restored range's end
            lambda: restored - 5,
            lambda: rng.randrange(1, restored),
            lambda: rng.randrange(1, restored),
            lambda: restored + rng.randrange(1, DR_BORN),  # processed DR-born records
            lambda: restored + DR_BORN,  # read everything on the DR
        ]
        on_dr: dict[str, dict[int, int]] = {}
        for i in range(args.groups):
            on_dr[f"fb-g{i:02d}"] = {p: rng.choice(positions)() for p in range(parts)}
        commit_static(dr, on_dr)
        truth: dict[Key, int] = {}
        lacks: set[Key] = set()
        for g, by_p in on_dr.items():
            for p, at in by_p.items():
                if at > restored:
                    truth[(g, p)] = n
                    lacks.add((g, p))
                else:
                    truth[(g, p)] = at + dropped[p]  # the last processed record's header + 1
        # the primary still holds each group's offset from before the failover: behind
        before = {g: {p: max(0, truth[(g, p)] - rng.randrange(0, 3000)) for p in by_p} for g, by_p in on_dr.items()}
        primary.alter_offsets_many(
            {g: {TP(TOPIC, p): CommittedOffset(o, None) for p, o in by_p.items()} for g, by_p in before.items()}
        )
    snapshots = work / "fb-snapshots"
    run_cli("snapshot", "--bootstrap-servers", brokers["dr"].bootstrap_servers, "--groups", FAILBACK_GROUPS,
            "--output", str(snapshots))  # fmt: skip
    alternative, _, _ = plan_with_cli(
        "fb-alt", snapshots, brokers["primary"], work, "--strategies", "fingerprint,timestamp"
    )
    alternative.name = "failback: offset-restore plan --strategies fingerprint,timestamp (no origin)"
    alternative.where = "primary"
    started = time.perf_counter()
    out = run_cli(
        "migrate", "--source-bootstrap-servers", brokers["dr"].bootstrap_servers,
        "--bootstrap-servers", brokers["primary"].bootstrap_servers, "--snapshots", str(work / "fb-final"),
        "--plan", str(work / "fb-plan.json"), "--groups", FAILBACK_GROUPS, "--wait-timeout", "120",
        "--catch-up-timeout", str(args.failback_catch_up_s), "--poll-interval", "1", "--execute",
        "--on-wait-timeout", "commit_empty",
    )  # fmt: skip
    took = time.perf_counter() - started
    facts["failback_migrate_tail"] = out[-1500:]
    groups = sorted(on_dr)
    origin = Tool(
        "failback: offset-restore migrate (origin strategy)",
        committed_on(brokers["primary"], groups),
        took,
        where="primary",
    )
    said = [line.strip() for line in out.splitlines() if "NOT CAUGHT UP" in line]
    origin.note = said[0] if said else ""
    entries = Plan.model_validate_json((work / "fb-plan.json").read_text()).entries
    origin.methods = methods_of(entries)
    # What the operator does next when migrate wrote nothing: apply the plan it wrote (origin's exact
    # entries, the others as the fallback strategies mapped them).
    started = time.perf_counter()
    note = ""
    try:
        run_cli("apply", "--plan", str(work / "fb-plan.json"), "--bootstrap-servers",
                brokers["primary"].bootstrap_servers, "--execute")  # fmt: skip
    except SystemExit as error:
        note = f"apply failed: {error}"[:300]
    then = Tool(
        "failback: then offset-restore apply --execute of migrate's plan",
        committed_on(brokers["primary"], sorted(on_dr)),
        took + time.perf_counter() - started,
        note=note or f"migrate {took:.1f} s + apply",
        where="primary",
    )
    placed = {p: Placed(list(range(n)), list(range(n)), n) for p in range(parts)}  # offsets are source offsets
    results = []
    for tool in (origin, then, alternative):
        inside = {k: c for k, c in truth.items() if k not in lacks}
        row = outcomes(tool, inside, placed)
        beyond = {k: c for k, c in truth.items() if k in lacks}
        row["lacks"] = len(beyond)
        row["lacks_outcomes"] = outcomes(tool, beyond, placed)
        results.append((tool, row))
    details = {
        f"{g}/{p}": merged(
            {"dr_committed": on_dr[g][p], "primary_before": before[g][p], "truth": truth[(g, p)]},
            {"processed_records_the_primary_lacks": (g, p) in lacks},
            {t.name: t.committed.get((g, p)) for t in (origin, then, alternative)},
        )
        for (g, p) in sorted(truth)
    }
    facts["failback_group_partitions"], facts["failback_lacks"] = len(truth), len(lacks)
    return results, details


# -- the run and the report -----------------------------------------------------------------------


def table(rows: list[tuple[Tool, dict[str, Any]]], facts: dict[str, Any], args: argparse.Namespace) -> list[str]:
    lines = [
        f"# A migration and a failback (Apache Kafka {KAFKA_VERSION}, {datetime.now(UTC):%Y-%m-%d})",
        "",
        f"Command: `python -m bench.migration_compare --partitions {args.partitions} --records {args.records}"
        + (f" --per-millisecond {args.per_ms}" if args.per_ms != 1 else "")
        + f"` (ran {facts['duration_s']:.0f} s end to end; {args.per_ms} records to a millisecond). "
        f"Machine: {platform.machine()}, {facts['cpus']} cores, "
        f"Python {platform.python_version()}; brokers and MirrorMaker 2 from Maven Central's {KAFKA_VERSION} "
        "jars, each broker its own single-node KRaft cluster on this machine. MirrorMaker 2: dedicated mode, "
        "one process, three flows (source -> mm2, cli, wf replicas), identity replication policy, "
        "`offset.lag.max` 100, `sync.group.offsets.enabled` true, checkpoints and group syncs every 1 s.",
        "",
        f"Migration: {facts['migration_group_partitions']} group-partitions ({facts['migration_live']} of live "
        f"groups: {args.live} kafka-python consumers, committing after each poll, stopped {args.stop_after_s:.0f} s "
        "after the migrations started). Truth: each group's final committed offset on the source; exact: the "
        "group resumes at the replica's copy of that record. The CLI ran with `--allow-rewind` (MM2's sync had "
        "written offsets on its replica first), the workflow with `allow_rewind`, both at the same time; "
        "every replica's offsets read after MM2's syncs settled.",
        "",
        f"Failback: {facts['failback_group_partitions']} group-partitions on the DR, {facts['failback_lacks']} of "
        "them past records produced on the DR only (the primary lacks them: the truth is the primary's end, "
        "counted apart). The alternative is `offset-restore plan --strategies fingerprint,timestamp` (no "
        "origin), its plan's mapped offsets.",
        "",
        "| tool | group-partitions | exact | early (records read twice) | late (records skipped) "
        "| not committed | processed records the primary lacks: resumed | time |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for tool, o in rows:
        total = o["exact"] + o["early"] + o["late"] + o["missing"]
        seconds = "all along" if tool.where == "mm2" else f"{tool.seconds:.1f} s"
        b = o.get("lacks_outcomes")
        lacks = (
            ""
            if b is None
            else f"{o['lacks']}: {b['exact']} at the end, {b['early']} early ({b['duplicates']:,}), {b['late']} late"
        )
        lines.append(
            f"| {tool.name} | {total} | {o['exact']} | {o['early']} ({o['duplicates']:,}) | "
            f"{o['late']} ({o['skipped']:,}) | {o['missing']} | {lacks} | {seconds} |"
        )
    moved = ", ".join(
        f"{k} {facts['live_at_start'].get(k)} -> {v['source_committed']}"
        for k, v in facts["migration_details"].items()
        if v["live"]
    )
    lines += [
        "",
        "Time: the migrate rows from the command's start, so they include the wait for the consumers to stop "
        f"({args.stop_after_s:.0f} s); a failback whose entries were not all exact would wait its "
        f"`--catch-up-timeout` ({args.failback_catch_up_s:.0f} s) and then move only the exact groups.",
        "",
        f"Live groups' committed offsets when the migrations started -> final on the source: {moved}.",
        "",
        "Live group-partitions only (migration):",
        "",
    ]
    mm2 = "MirrorMaker 2 offset sync (lag.max 100)"
    below = [
        k
        for k, v in facts["migration_details"].items()
        if v[mm2] is None and v["source_committed"] < facts["lost"][int(k.rsplit("/", 1)[1])]
    ]
    missing = sum(1 for v in facts["migration_details"].values() if v[mm2] is None)
    reading = [
        "",
        "Reading:",
        "",
        f"- MirrorMaker 2 left {missing} group-partitions without an offset on its replica, {len(below)} of them "
        "committed below the source's log start (the deleted 1%): it has no offset sync to translate them by. "
        "The rest are exact or early (never late): it translates to the last offset sync at or before the group's "
        "position.",
        "- The failback's migrate maps every group back by the restore's headers (origin): those inside the "
        "restored range after the primary's copy of the last record they processed, those that processed "
        "records produced on the DR after the copy of the DR's last restored record, which the final snapshot's "
        "search found (the records they processed that the primary lacks are counted in each entry's reason). "
        "Each is proven by reading the primary's record there. The next row, `offset-restore apply --execute` "
        "of the same plan, is what an operator would run after a migrate that left groups; here it changes "
        "nothing. Without origin, the fingerprint strategy places the groups inside the restored range and "
        "the timestamp strategy resumes the others early.",
        "- The timestamp strategy resumes at the first record at or after the last processed record's time, less "
        f"a margin and the skew it sees; the records here are {args.per_ms} to a millisecond, so its margin is "
        "many records (read twice, never skipped), and for the DR-born groups it does not reach the primary's end.",
    ]
    for name, o in facts["live_outcomes"].items():
        lines.append(
            f"- {name}: {o['exact']} exact, {o['early']} early ({o['duplicates']:,}), {o['late']} late "
            f"({o['skipped']:,}), {o['missing']} not committed"
        )
    notes = [t for t, _ in rows if t.note or t.methods]
    lines += reading
    if notes:
        lines += ["", "Notes:", ""]
        for t in notes:
            how = ", ".join(f"{n} {m}" for m, n in sorted(t.methods.items()))
            lines.append(f"- {t.name}: " + "; ".join(part for part in (" ".join(t.note.split()), how) if part))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--records", type=int, default=20_000, help="records per partition (default 20,000)")
    parser.add_argument("--groups", type=int, default=12, help="static groups (default 12)")
    parser.add_argument("--live", type=int, default=2, help="live groups (real consumers)")
    parser.add_argument("--pause-s", type=float, default=0.05, help="each consumer's pause after a commit")
    parser.add_argument("--stop-after-s", type=float, default=4.0, help="consumers stop this long into the migration")
    parser.add_argument("--failback-catch-up-s", type=float, default=15.0)
    parser.add_argument("--no-workflow", action="store_true")
    parser.add_argument("--seed", type=int, default=35)
    parser.add_argument(
        "--per-millisecond", dest="per_ms", type=int, default=1,
        help="records a producer puts in one millisecond (default 1; a bulk producer's busy partition: 30)",
    )  # fmt: skip
    parser.add_argument("--output", default=str(RESULTS / "migration.md"))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    facts: dict[str, Any] = {"cpus": os.cpu_count() or 0}
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="migration-") as folder:
        names = ("source", "mm2", "cli", "wf", "primary", "dr")
        brokers = {n: ApacheBroker(f"mig-{n}") for n in names}
        for b in brokers.values():
            stack.callback(b.stop)
            b.launch()
        for b in brokers.values():
            b.wait_ready()
        work = Path(folder)
        mig_rows, mig_details = migration(args, brokers, work, facts)
        facts["migration_details"] = mig_details
        for n in ("source", "mm2", "cli", "wf"):
            brokers[n].stop()
        fb_rows, fb_details = failback(args, brokers, work, facts)
    facts["duration_s"] = time.perf_counter() - started
    lines = table([*mig_rows, *fb_rows], facts, args)
    print("\n".join(lines))
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("\n".join(lines) + "\n")
    rows = {t.name: o for t, o in [*mig_rows, *fb_rows]}
    extra = {k: v for k, v in facts.items() if k not in ("live_outcomes", "migration_details")}
    document = {"rows": rows, "facts": extra, "migration": mig_details, "failback": fb_details}
    output.with_suffix(".json").write_text(json.dumps(document, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
