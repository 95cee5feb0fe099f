"""The Lambda asset bundled twice, as a deploy does (a CDK synth with bundling, the functions' own
``lambda_code``), is one artefact: the same bytes in every file and the same asset hash in the template;
it installs exactly the lock's pins, its compiled packages are wheels for Lambda's Python 3.12 on
x86_64, and nothing in it names the machine or the folder that built it (so CI and a laptop agree).
PyPI is asked once (pip's cache serves the second bundling)."""

from __future__ import annotations

import hashlib
import shutil
import sys
import time
from email.parser import HeaderParser
from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_lambda as lambda_
from packaging.utils import canonicalize_name

from infra.bundling import lambda_code
from infra.functions import FUNCTIONS_DIR, RUNTIME
from tests.infra.test_bundling_lock import LOCK, pins

ROOT = Path(__file__).resolve().parents[2]
COMPILED = ("aiokafka", "cramjam", "markupsafe")  # the record reader, its codecs, Jinja2's escaping


def tree_hash(folder: Path) -> str:
    """SHA-256 over every file's path (relative, sorted) and bytes: what makes two folders one artefact."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def synthesized_asset(functions_dir: Path, outdir: Path) -> tuple[str, Path]:
    """The code asset's hash in a synthesized template, and its staged folder, bundled as a deploy
    bundles it."""
    app = App(outdir=str(outdir))
    stack = Stack(app, "Bundled")
    lambda_.Function(
        stack,
        "Handler",
        runtime=RUNTIME,
        handler="offset_restore_handlers.lock.handler",
        code=lambda_code(functions_dir, RUNTIME.name.removeprefix("python")),
    )
    assembly = app.synth()
    resources = assembly.get_stack_by_name("Bundled").template["Resources"].values()
    (function,) = [r for r in resources if r["Type"] == "AWS::Lambda::Function"]
    asset_hash = function["Properties"]["Code"]["S3Key"].removesuffix(".zip")
    return asset_hash, Path(assembly.directory) / f"asset.{asset_hash}"


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Path]]:
    """Two bundlings of one commit's sources: a copy of ``functions/`` taken once, so an edit made in the
    work tree while the test runs is not a difference between them."""
    commit = tmp_path_factory.mktemp("commit") / "functions"
    shutil.copytree(FUNCTIONS_DIR, commit, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    found = []
    for run in ("first", "second"):
        started = time.monotonic()
        found.append(synthesized_asset(commit, tmp_path_factory.mktemp(run)))
        print(f"{run} bundling: {time.monotonic() - started:.1f} s, asset {found[-1][0]}")
    return found


def dists(asset: Path) -> dict[str, Path]:
    """The installed distributions by canonical name: their ``.dist-info`` folders."""
    return {
        canonicalize_name(HeaderParser().parsestr(m.read_text())["Name"]): m.parent
        for m in asset.glob("*.dist-info/METADATA")
    }


def test_two_bundlings_of_one_commit_are_one_artefact(bundles: list[tuple[str, Path]]) -> None:
    (first_hash, first), (second_hash, second) = bundles
    assert first != second  # two synths, two folders: not one cached bundle read twice
    assert tree_hash(first) == tree_hash(second), "the two bundlings differ"
    assert first_hash == second_hash, "the template's asset hash differs between two bundlings"
    print(f"asset hash {first_hash}; files {tree_hash(first)}")


def test_the_asset_installs_exactly_the_locks_pins_beside_the_handlers(bundles: list[tuple[str, Path]]) -> None:
    asset = bundles[0][1]
    installed = {
        name: HeaderParser().parsestr((info / "METADATA").read_text())["Version"] for name, info in dists(asset).items()
    }
    assert installed == pins(LOCK)
    assert (asset / "offset_restore_handlers" / "lock.py").is_file()
    assert not (asset / "offset_restore" / "cli").exists()


def test_the_compiled_packages_are_wheels_for_lambdas_python_on_x86_64(bundles: list[tuple[str, Path]]) -> None:
    """Every wheel that is not pure Python is built for CPython 3.12 (or its stable ABI) on x86_64
    manylinux: what Lambda's ``python3.12`` x86_64 runtime loads."""
    compiled: dict[str, list[str]] = {}
    for name, info in dists(bundles[0][1]).items():
        wheel = HeaderParser().parsestr((info / "WHEEL").read_text())
        if wheel["Root-Is-Purelib"] == "false":
            compiled[name] = wheel.get_all("Tag") or []
    assert set(COMPILED) <= set(compiled), compiled.keys()
    for name, wheel_tags in compiled.items():
        for tag in wheel_tags:
            python, abi, platform = tag.split("-")
            assert platform.startswith("manylinux") and platform.endswith("_x86_64"), (name, tag)
            assert (python, abi) == ("cp312", "cp312") or (abi == "abi3" and int(python[3:]) <= 12), (name, tag)
        if name in COMPILED:
            assert any(tag.startswith("cp312-cp312-") for tag in wheel_tags), (name, wheel_tags)


def test_nothing_in_the_asset_names_the_machine_that_built_it(bundles: list[tuple[str, Path]]) -> None:
    """No bytecode (the bundling interpreter's), no console scripts (their first line is its path), no
    file holding the checkout's, the interpreter's or the bundling folder's path."""
    asset = bundles[0][1]
    assert not (asset / "bin").exists()
    assert not [p for p in asset.rglob("*") if p.name == "__pycache__" or p.suffix == ".pyc"]
    here = [str(ROOT).encode(), sys.prefix.encode(), str(asset.parent).encode()]
    naming = [p for p in asset.rglob("*") if p.is_file() and any(path in p.read_bytes() for path in here)]
    assert not naming, naming
    assert not [p for p in asset.glob("*.dist-info/RECORD") if "\n../" in "\n" + p.read_text()]
