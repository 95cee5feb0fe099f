"""`make demo` runs in CI in a small size: the whole story through the real workflow, and its proof
must hold for every group-partition."""

from __future__ import annotations

import io
import json
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from offset_restore.devtools.demo import run_demo


@pytest.mark.parametrize("broker", ["local", "apache"])
def test_demo_runs_the_workflow_and_proves_every_group_partition(tmp_path: Path, broker: str) -> None:
    out = io.StringIO()
    # The application stays 10 s after joining: the workflow must meet it active even on a loaded machine.
    status = run_demo(groups=8, output=str(tmp_path), keep_running=False, out=out, hold_s=10, broker=broker)
    assert status == 0, out.getvalue()
    text = out.getvalue()
    assert "created 3 topics, 2,200 records, 8 groups" in text
    states = re.findall(r"^\s+[\d.]+ s  (\w+)$", text, re.M)
    assert states[0] == "ValidateInput" and states[-1] == "Done"
    assert "WaitForEmpty" in states and "Commit" in states  # the connected application was waited for
    # The incident's story: plan first (the restore still running: groups pending), then apply (one group
    # ahead on the target is a decision), the operator's rewind, and the way back shown on one group.
    assert "1. plan first (mode plan): nothing is written" in text and "yet: pending -> run again" in text
    ahead = re.search(r"and leaves (\S+) for a decision", text)
    assert ahead and f"do not start {ahead.group(1)} yet: ahead -> " in text
    assert f"3. the operator decides: {ahead.group(1)} must reread" in text
    rolled = re.search(r"4\. roll back one group \(mode rollback\): (\S+)", text)
    assert rolled and "Rollback" in states and f"{rolled.group(1)} on the target now: " in text
    report = json.loads((tmp_path / "3-rewind" / "report.json").read_text())
    assert report["outcome"] == "applied" and report["statuses"] == {"committed": report["summary"]["entries"]}
    # The files tell the whole story: each run's report in its folder, the rollback's last, and it does
    # not call the group it rolled back safe to start (issue 38: the one saved before it did).
    assert rolled.group(1) in report["safe_to_start"]
    last = json.loads((tmp_path / "4-rollback" / "report.json").read_text())
    assert last["outcome"] == "rolled back" and rolled.group(1) in last["do_not_start_yet"]
    assert rolled.group(1) not in last["safe_to_start"]
    assert json.loads((tmp_path / "1-plan" / "report.json").read_text())["outcome"] != "applied"
    assert {"header", "fingerprint", "end"} <= set(report["summary"]["by_method"])
    proved = sum(int(n) for n in re.findall(r"^\s+(\d+)\s+(?:same record|next restored record)", text, re.M))
    assert proved == report["summary"]["entries"] > 0
    assert "WRONG" not in text
    for run in ("1-plan", "2-apply", "3-rewind", "4-rollback"):
        assert (tmp_path / run / "report.html").read_text().startswith("<!doctype html>")


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_stops_everything_the_demo_started(tmp_path: Path, stop: signal.Signals) -> None:
    """Interrupted while the workflow waits for the connected application (Ctrl-C, or ``kill``):
    exit 130, brokers gone."""
    # A process started in the background by a non-interactive shell ignores SIGINT, and a child
    # inherits that: the demo must be started able to take Ctrl-C whatever started this test.
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        demo = subprocess.Popen(
            [sys.executable, "-m", "offset_restore", "demo", "--groups", "4", "--output", str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, ignored)
    assert demo.stdout is not None
    lines = []
    deadline = time.monotonic() + 60
    for line in demo.stdout:
        lines.append(line)
        if "WaitForEmpty" in line or time.monotonic() > deadline:
            break
    demo.send_signal(stop)
    rest, errors = demo.communicate(timeout=60)
    assert demo.returncode == 130, "".join(lines) + rest + errors
    assert "interrupted" in errors
    ports = [int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", lines[0])]
    assert len(ports) == 2
    for port in ports:
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", port)) != 0, f"a broker still listens on {port}"
