"""Bundle the Lambda code asset without Docker: pip installs the runtime requirements for Lambda's
platform into the asset folder, then the modules the handlers import are copied beside them — and
nothing else: the CLI, the demo, local AWS and the test brokers stay out of the functions' code."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import ILocalBundling
from offset_restore_handlers.wiring import SNAPSHOT_HANDLER, TASK_HANDLERS

__all__ = ["LAMBDA_PLATFORMS", "PACKAGE_DATA", "LocalPipBundling", "handler_sources", "runtime_dependencies"]

_OURS = ("offset_restore", "offset_restore_handlers")
PACKAGE_DATA = ("*.json", "templates/*.j2")
"""What a package of ours reads beside its modules, not imports: wire schemas (``kafka/schemas``) and
the report's templates (``workflow/templates``), as pyproject.toml's package-data has them for the wheel."""
LAMBDA_PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_28_x86_64")
"""The wheels Lambda's x86_64 Python runtime runs (Amazon Linux 2023, glibc 2.34): cramjam, which
decodes snappy, ships only ``manylinux_2_28`` wheels."""


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


@jsii.implements(ILocalBundling)
class LocalPipBundling:
    def __init__(self, functions_dir: Path, python_version: str = "3.12") -> None:
        self.functions_dir = functions_dir
        self.python_version = python_version

    def try_bundle(self, output_dir: str, *_: Any, **__: Any) -> bool:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-compile",
                *runtime_dependencies(self.functions_dir.parent / "pyproject.toml"),
                "--target",
                output_dir,
                *(argument for platform in LAMBDA_PLATFORMS for argument in ("--platform", platform)),
                "--only-binary=:all:",
                "--implementation",
                "cp",
                "--python-version",
                self.python_version,
            ],
            check=True,
        )
        self.copy_sources(Path(output_dir))
        return True

    def copy_sources(self, output_dir: Path) -> list[Path]:
        """Copy what the handlers import into ``output_dir``; returns the files copied."""
        sources = handler_sources(self.functions_dir)
        for relative in sources:
            (output_dir / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(self.functions_dir / relative, output_dir / relative)
        return sources
