"""Bundle the Lambda code asset without Docker: pip installs the pinned, hashed requirements of
``LOCK`` for Lambda's platform into the asset folder, then the modules the handlers import are copied
beside them — and nothing else: the CLI, the demo, local AWS and the test brokers stay out of the
functions' code. The same commit bundles the same bytes on any machine (the asset is hashed by its
output, ``infra/functions.py``), so two deploys of one commit ship one artefact."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_
from offset_restore_handlers.wiring import SNAPSHOT_HANDLER, TASK_HANDLERS

__all__ = [
    "LAMBDA_PLATFORMS",
    "LOCK",
    "PACKAGE_DATA",
    "LocalPipBundling",
    "forget_the_machine",
    "handler_sources",
    "install_command",
    "lambda_code",
    "runtime_dependencies",
]

_OURS = ("offset_restore", "offset_restore_handlers")
PACKAGE_DATA = ("*.json", "templates/*.j2")
"""What a package of ours reads beside its modules, not imports: wire schemas (``kafka/schemas``) and
the report's templates (``workflow/templates``), as pyproject.toml's package-data has them for the wheel."""
LAMBDA_PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_28_x86_64")
"""The wheels Lambda's x86_64 Python runtime runs (Amazon Linux 2023, glibc 2.34): cramjam, which
decodes snappy, ships only ``manylinux_2_28`` wheels. ``make lock`` resolves for the newer one
(``uv pip compile --python-platform x86_64-manylinux_2_28``), pip's ``--platform`` accepts both."""
LOCK = Path(__file__).resolve().parent / "lambda-requirements.lock"
"""The asset's third-party packages, each pinned with the hashes of its files: ``make lock`` writes it
from pyproject.toml's runtime dependencies (its header names the command); only this file changes
what the asset installs, so a new boto3 on PyPI changes nothing until the lock is regenerated."""


def runtime_dependencies(pyproject: Path) -> list[str]:
    """The package's runtime dependencies, from the one place they are declared."""
    return list(tomllib.loads(pyproject.read_text())["project"]["dependencies"])


def _module_file(functions_dir: Path, name: str) -> Path | None:
    path = functions_dir.joinpath(*name.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _imports(source: Path) -> set[str]:
    """Every module an import statement names, anywhere in the file (imports inside functions too),
    with each ``from m import n`` also as ``m.n`` (n may be a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name.split(".")[0] in _OURS}


def handler_sources(functions_dir: Path) -> list[Path]:
    """The files of ours that the deployed handlers (those ``offset_restore_handlers.wiring`` names)
    import, transitively, with their packages' ``__init__`` files and data (``PACKAGE_DATA``);
    relative to ``functions_dir``."""
    modules = {h.rsplit(".", 1)[0] for h in [*TASK_HANDLERS.values(), SNAPSHOT_HANDLER]}
    found_modules = {name: _module_file(functions_dir, name) for name in modules}
    missing = sorted(name for name, path in found_modules.items() if path is None)
    if missing:  # a misspelt handler would deploy and fail only when invoked
        raise ValueError(f"offset_restore_handlers.wiring names modules that do not exist: {', '.join(missing)}")
    todo = sorted(path for path in found_modules.values() if path is not None)
    found: set[Path] = set()
    while todo:
        source = todo.pop()
        if source in found:
            continue
        found.add(source)
        for name in _imports(source):
            parts = name.split(".")
            for depth in range(1, len(parts) + 1):  # a package's __init__ runs before its modules
                module = _module_file(functions_dir, ".".join(parts[:depth]))
                if module is not None and module not in found:
                    todo.append(module)
    packages = [source.parent for source in found if source.name == "__init__.py"]
    data = {path for package in packages for pattern in PACKAGE_DATA for path in package.glob(pattern)}
    return sorted(path.relative_to(functions_dir) for path in found | data)


def install_command(output_dir: Path, python_version: str = "3.12", lock: Path = LOCK) -> list[str]:
    """pip's install of exactly the lock: every file checked against its hash (a file PyPI gained since
    is not a candidate), no resolution (``--no-deps``: the lock is the whole closure), only wheels for
    Lambda's platform and Python, and no ``.pyc`` (which would differ by the bundling machine's
    interpreter and be rewritten by Lambda's anyway)."""
    platforms = (argument for platform in LAMBDA_PLATFORMS for argument in ("--platform", platform))
    return [
        sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "--require-hashes", "--no-deps", "--no-compile", "--only-binary=:all:", *platforms,
        "--implementation", "cp", "--python-version", python_version,
        "--target", str(output_dir), "--requirement", str(lock),
    ]  # fmt: skip


def forget_the_machine(output_dir: Path) -> None:
    """Remove what names the machine that bundled: pip writes console scripts (``bin/``) whose first line
    is its own interpreter's path, and lists them, with their hashes, in each wheel's ``RECORD``. Lambda
    runs handlers, never those scripts, so the asset drops them and their ``RECORD`` lines (those outside
    the asset, ``../../bin/...``), and a laptop and CI bundle the same bytes."""
    shutil.rmtree(output_dir / "bin", ignore_errors=True)
    for record in output_dir.glob("*.dist-info/RECORD"):
        lines = record.read_text().splitlines(keepends=True)
        record.write_text("".join(line for line in lines if not line.startswith("../")))


@jsii.implements(ILocalBundling)
class LocalPipBundling:
    def __init__(self, functions_dir: Path, python_version: str = "3.12") -> None:
        self.functions_dir = functions_dir
        self.python_version = python_version

    def try_bundle(self, output_dir: str, *_: Any, **__: Any) -> bool:
        """Install the lock, then copy our sources: the CDK's hook for bundling without Docker."""
        subprocess.run(install_command(Path(output_dir), self.python_version), check=True)
        forget_the_machine(Path(output_dir))
        self.copy_sources(Path(output_dir))
        return True

    def copy_sources(self, output_dir: Path) -> list[Path]:
        """Copy what the handlers import into ``output_dir``; returns the files copied."""
        sources = handler_sources(self.functions_dir)
        for relative in sources:
            (output_dir / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(self.functions_dir / relative, output_dir / relative)
        return sources


def lambda_code(functions_dir: Path, python_version: str) -> lambda_.Code:
    """The functions' one code asset, hashed by what it holds (``AssetHashType.OUTPUT``): the hash in
    the template proves the artefact, where a hash of the sources would stay the same while the
    packages beside them changed."""
    return lambda_.Code.from_asset(
        str(functions_dir),
        exclude=["**/__pycache__", "*.egg-info"],
        asset_hash_type=AssetHashType.OUTPUT,
        bundling=BundlingOptions(
            image=DockerImage.from_registry("local-bundling-only"),
            local=LocalPipBundling(functions_dir, python_version),
        ),
    )
