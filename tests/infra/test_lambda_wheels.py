"""The codec libraries (and the CRC-32C one, and MarkupSafe under the report's Jinja2) exist as wheels
for the Lambda runtime the stack deploys: what the asset's pip install asks for, checked with the same
platforms and Python version."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from infra.bundling import LAMBDA_PLATFORMS, runtime_dependencies

ROOT = Path(__file__).resolve().parents[2]
COMPILED = ("lz4", "zstandard", "cramjam", "crc32c", "markupsafe")


def test_the_compiled_dependencies_have_wheels_for_lambdas_python(tmp_path: Path) -> None:
    wanted = [
        d
        for d in runtime_dependencies(ROOT / "pyproject.toml")
        if re.match(r"(lz4|zstandard|python-snappy|crc32c|jinja2)\b", d)
    ]
    assert len(wanted) == 5, wanted
    platforms = [argument for platform in LAMBDA_PLATFORMS for argument in ("--platform", platform)]
    fetched = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(tmp_path), "--only-binary=:all:",
         *platforms, "--implementation", "cp", "--python-version", "3.12", *wanted, "cramjam"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert fetched.returncode == 0, fetched.stderr
    names = [p.name.lower() for p in tmp_path.glob("*.whl")]
    assert any(n.startswith("jinja2-") and n.endswith("-py3-none-any.whl") for n in names), names
    for package in COMPILED:
        assert any(n.startswith(f"{package}-") and "cp312" in n and "x86_64" in n for n in names), (package, names)
