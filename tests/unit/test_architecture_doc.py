"""docs/architecture.md names every module and draws the layers as the import-linter contract has them.

Modules: every ``.py`` file under ``functions/offset_restore/`` and ``functions/offset_restore_handlers/``
but ``__init__.py``, and every ``infra/*.py`` but ``infra/__init__.py``.

The rule a module is named by: in the tree of the document's *Layout* section (its first fenced block),
a line whose first word ends in ``/`` opens a folder nested in the folders above it that are indented
less (``  offset_restore/`` under ``functions/``, ``      strategies/`` under ``    translate/``); every
other line belongs to the innermost folder open above it that is indented less than the line (so the
continuation lines of a folder's description stay in that folder, and ``    errors.py`` at a package's
indentation returns to the package). A module is named when its file name appears as a word on a line
of its own folder — ``header.py`` on a line of ``functions/offset_restore/translate/strategies/`` —
not after a ``/`` and not in another folder's lines, so ``translate/mm2.py`` written among the
strategies names neither ``mm2.py``.

Layers: the *Layers* section's first fenced block has one line per layer of the contract, top to
bottom, each the layer's modules without ``offset_restore.`` (the handlers' package as it is), joined by
``|`` as the contract joins them; whatever follows two spaces on a line is a comment.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = (ROOT / "functions" / "offset_restore", ROOT / "functions" / "offset_restore_handlers")


def modules() -> list[Path]:
    """Every module the document must name, relative to the repository's root."""
    found = [p for package in PACKAGES for p in package.rglob("*.py")] + list((ROOT / "infra").glob("*.py"))
    return sorted(p.relative_to(ROOT) for p in found if p.name != "__init__.py")


def section(text: str, title: str) -> str:
    """The text of the ``## title`` section, up to the next ``## `` heading."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, f"docs/architecture.md has no section '## {title}'"
    return match.group(1)


def first_block(text: str, title: str) -> list[str]:
    """The lines of the first fenced block of a section."""
    match = re.search(r"^```[^\n]*\n(.*?)^```", section(text, title), re.MULTILINE | re.DOTALL)
    assert match, f"docs/architecture.md's section '## {title}' has no fenced block"
    return match.group(1).splitlines()


def folder_lines(tree: list[str]) -> Iterator[tuple[str, str]]:
    """Each line of the tree with the folder it belongs to (``functions/offset_restore/kafka/``; ``""``
    for the repository's root), by the rule of the module's docstring."""
    open_folders: list[tuple[int, str]] = []  # (indentation, folder path), innermost last
    for line in tree:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        while open_folders and open_folders[-1][0] >= indent:
            open_folders.pop()
        first = line.split()[0]
        if first.endswith("/"):
            parent = open_folders[-1][1] if open_folders else ""
            open_folders.append((indent, parent + first))
        yield (open_folders[-1][1] if open_folders else ""), line


def named(tree: list[str]) -> set[Path]:
    """The files the tree names, each as its folder's path joined with its name."""
    names: set[Path] = set()
    for folder, line in folder_lines(tree):
        names.update(Path(folder) / name for name in re.findall(r"(?<![\w/.])(\w+\.py)\b", line))
    return names


def test_every_module_is_named_in_its_folder() -> None:
    tree = first_block(DOC.read_text(encoding="utf-8"), "Layout")
    missing = [str(m) for m in modules() if m not in named(tree)]
    assert not missing, "docs/architecture.md's Layout tree does not name " + ", ".join(missing)


def test_every_module_named_in_the_code_folders_exists() -> None:
    tree = first_block(DOC.read_text(encoding="utf-8"), "Layout")
    stale = sorted(str(n) for n in named(tree) if n.parts[0] in ("functions", "infra") and not (ROOT / n).is_file())
    assert not stale, "docs/architecture.md's Layout tree names modules that do not exist: " + ", ".join(stale)


def contract_layers() -> list[str]:
    """The layers of pyproject.toml's import-linter layers contract, as the document writes them."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    assert len(contracts) == 1, "expected one import-linter layers contract"
    return [re.sub(r"\boffset_restore\.", "", layer) for layer in contracts[0]["layers"]]


def test_the_layers_are_drawn_as_the_contract_has_them() -> None:
    drawn = [re.split(r"\s{2,}", line.strip())[0] for line in first_block(DOC.read_text(encoding="utf-8"), "Layers")]
    wanted = contract_layers()
    missing = [layer for layer in wanted if layer not in drawn]
    assert not missing, "docs/architecture.md's Layers block lacks " + "; ".join(missing)
    assert drawn == wanted, f"docs/architecture.md draws the layers as {drawn}, the contract has {wanted}"


def test_the_rule_reads_folders_by_indentation() -> None:
    tree = [
        "functions/",
        "  offset_restore/",
        "    translate/        plan.py  the dispatcher; translation.py",
        "                      run.py  one run",
        "      strategies/     header.py; whole_read.py  and translate/mm2.py",
        "    errors.py         the errors",
    ]
    assert named(tree) == {
        Path("functions/offset_restore/translate/plan.py"),
        Path("functions/offset_restore/translate/translation.py"),
        Path("functions/offset_restore/translate/run.py"),
        Path("functions/offset_restore/translate/strategies/header.py"),
        Path("functions/offset_restore/translate/strategies/whole_read.py"),
        Path("functions/offset_restore/errors.py"),
    }
