"""Bundle the Lambda code asset without Docker: pip installs the runtime requirements for Lambda's
platform into the asset folder, then the library and handlers are copied beside them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import ILocalBundling

__all__ = ["LocalPipBundling"]

_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "requirements.txt")


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
                "--requirement",
                str(self.functions_dir / "requirements.txt"),
                "--target",
                output_dir,
                "--platform",
                "manylinux2014_x86_64",
                "--only-binary=:all:",
                "--implementation",
                "cp",
                "--python-version",
                self.python_version,
            ],
            check=True,
        )
        for package in ("offset_restore", "handlers"):
            shutil.copytree(
                self.functions_dir / package, Path(output_dir) / package, ignore=_IGNORE, dirs_exist_ok=True
            )
        return True
