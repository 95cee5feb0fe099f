"""`make demo` runs in CI in a small size: the whole story, and its proof must hold."""

from __future__ import annotations

import io
import re
from pathlib import Path

from offset_restore.cli import main
from offset_restore.plan_model import Plan


def test_demo_plans_every_group_and_proves_it(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["demo", "--groups", "8", "--output", str(tmp_path)], out, err) == 0, err.getvalue() + out.getvalue()
    text = out.getvalue()
    assert "created 3 topics, 2,200 records, 8 groups" in text
    plan = Plan.model_validate_json((tmp_path / "plan.json").read_text())
    assert plan.summary.mapped == plan.summary.entries > 0 and plan.summary.exact == plan.summary.entries
    assert {"header", "fingerprint", "end"} <= set(plan.summary.by_method)
    proved = sum(int(n) for n in re.findall(r"^\s+(\d+)\s+(?:same record|next restored record)", text, re.M))
    assert proved == plan.summary.entries
    assert "WRONG" not in text and "not mapped" not in text
