"""`make demo` runs in CI in a small size: the whole story through the real workflow, and its proof
must hold for every group-partition."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from offset_restore.demo import run_demo


def test_demo_runs_the_workflow_and_proves_every_group_partition(tmp_path: Path) -> None:
    out = io.StringIO()
    assert run_demo(groups=8, output=str(tmp_path), keep_running=False, out=out, hold_s=3) == 0, out.getvalue()
    text = out.getvalue()
    assert "created 3 topics, 2,200 records, 8 groups" in text
    states = re.findall(r"^\s+[\d.]+ s  (\w+)$", text, re.M)
    assert states[0] == "ValidateInput" and states[-1] == "Done"
    assert "WaitForEmpty" in states and "Commit" in states  # the connected application was waited for
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["outcome"] == "applied" and report["statuses"] == {"committed": report["summary"]["entries"]}
    assert {"header", "fingerprint", "end"} <= set(report["summary"]["by_method"])
    proved = sum(int(n) for n in re.findall(r"^\s+(\d+)\s+(?:same record|next restored record)", text, re.M))
    assert proved == report["summary"]["entries"] > 0
    assert "WRONG" not in text
    assert (tmp_path / "report.html").read_text().startswith("<!doctype html>")
