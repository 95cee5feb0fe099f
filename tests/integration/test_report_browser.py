"""report.html looked at in a real browser (Debian's headless Chromium, installed by `make browser`):
the page Chromium builds must hold the headline, every card, both charts with a bar per category, the
two lists and the input table — a page that is broken (markup that does not nest, an SVG that does
not parse as SVG, an unescaped name that becomes markup) fails here, not only in someone's screenshot."""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

from offset_restore.workflow.report import render_report
from offset_restore.workflow.report_timeline import phases_of

from tests.unit.test_report_glance import ROWS, row
from tests.unit.test_report_timeline import HISTORY, T0

BROWSER = "chromium-headless-shell"


def browse(page: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which(BROWSER)
    assert binary, f"{BROWSER} is not installed: `make browser` installs it (Debian's package)"
    command = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files", *flags]
    return subprocess.run([*command, page.as_uri()], capture_output=True, text=True, timeout=60, check=False)


def test_the_report_renders_whole_in_chromium(tmp_path: Path) -> None:
    rows = [*ROWS, row("<img src=x onerror=alert(1)>", 0, "committed")]
    timeline = phases_of(HISTORY, until=T0 + timedelta(seconds=127.1))
    files = render_report({"restore_id": "browser-1", "mode": "apply"}, rows, "applied", timeline)
    page = tmp_path / "report.html"
    page.write_bytes(files["report.html"])
    dom = browse(page, "--dump-dom")
    assert dom.returncode == 0, dom.stderr
    text = dom.stdout
    assert "<h1>Restore browser-1: applied, needs attention</h1>" in text
    assert re.search(r"<p class=\"lead\" id=\"headline\">3 of 8 groups restored", text), text[:2000]
    for card in ("groups-restored", "records-at-risk", "card-exact", "card-ahead", "card-pending", "card-lost"):
        assert f'id="{card}"' in text, card
    # Chromium parsed each chart as SVG: its bars are <rect> elements inside <svg>, one per category shown.
    outcomes = re.search(r'<svg id="chart-outcomes".*?</svg>', text, re.S)
    assert outcomes and outcomes.group(0).count("<rect") == 7
    methods = re.search(r'<svg id="chart-methods".*?</svg>', text, re.S)
    assert methods and methods.group(0).count("<rect") == 1
    phases = re.search(r'<svg id="chart-timeline".*?</svg>', text, re.S)
    assert phases and phases.group(0).count("<rect") == 5 and "(billing, ledger)" in phases.group(0)
    assert 'id="safe-to-start"' in text and 'id="do-not-start"' in text and 'id="input"' in text
    assert "<img" not in text  # the group named like markup stayed text
    shot = tmp_path / "report.png"
    picture = browse(page, f"--screenshot={shot}", "--window-size=1280,1600")
    assert picture.returncode == 0 and shot.stat().st_size > 20_000, picture.stderr
