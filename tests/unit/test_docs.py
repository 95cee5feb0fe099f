"""What a user reads stays reference: no internal ticket numbers, links that arrive, a README that is
read in minutes.

Internal issue numbers mean nothing outside the team, so none may appear in the README, docs/, the
changelog or any ``--help``; a link whose file or heading was renamed is caught here, not by a reader
at 3 am.
"""

from __future__ import annotations

import argparse
import re
import unicodedata
from pathlib import Path

import pytest
from offset_restore.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")])
ISSUE_NUMBER = re.compile(r"\bissues? ?#?\d+|(?<![\w&/(])#\d{1,4}\b", re.IGNORECASE)
LINK = re.compile(r"\]\(([^)\s]+)\)")
README_BYTES = 10 * 1024
BENCHMARKS_BYTES = 20 * 1024


def _helps() -> dict[str, str]:
    """Every command's ``--help`` as argparse prints it, the top level included."""
    parser = build_parser()
    helps = {"offset-restore": parser.format_help()}
    for action in parser._actions:  # argparse keeps subcommands only here
        if isinstance(action, argparse._SubParsersAction):
            helps.update({f"offset-restore {name}": sub.format_help() for name, sub in action.choices.items()})
    return helps


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings (outside fenced blocks), GitHub's numbering of repeats included."""
    seen: dict[str, int] = {}
    found = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6} (.*)", line)):
            base = slug(re.sub(r"[`*]", "", match[1]))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_issue_numbers_where_users_read(page: Path) -> None:
    found = [m[0] for m in ISSUE_NUMBER.finditer(page.read_text(encoding="utf-8"))]
    assert not found, f"{page.relative_to(ROOT)} names internal issues: {found[:5]}"


def test_no_issue_numbers_in_any_help() -> None:
    found = {name: m[0] for name, text in _helps().items() if (m := ISSUE_NUMBER.search(text))}
    assert not found, f"--help names internal issues: {found}"


def broken_links(page: Path) -> list[str]:
    """The relative links of a page whose file or heading does not exist."""
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto: — not ours to check offline
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target} (no heading with that anchor)")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_arrives(page: Path) -> None:
    broken = broken_links(page)
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_a_renamed_file_or_heading_is_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Title\n\n## Two `words`\n\n```\n# not a heading\n```\n")
    page = tmp_path / "page.md"
    links = "[a](other.md#two-words) [b](other.md#gone) [c](missing.md) [d](#title) [e](other.md#not-a-heading)"
    page.write_text(links + "\n")
    assert broken_links(page) == [
        "other.md#gone (no heading with that anchor)",
        "missing.md (no such file)",
        "#title (no heading with that anchor)",
        "other.md#not-a-heading (no heading with that anchor)",
    ]


def test_the_readme_and_the_benchmarks_page_stay_short() -> None:
    readme = len((ROOT / "README.md").read_bytes())
    benchmarks = len((ROOT / "docs" / "benchmarks.md").read_bytes())
    assert readme <= README_BYTES, f"README.md is {readme:,} bytes, over {README_BYTES:,}"
    assert benchmarks <= BENCHMARKS_BYTES, f"docs/benchmarks.md is {benchmarks:,} bytes, over {BENCHMARKS_BYTES:,}"


def test_the_anchor_rule_is_githubs() -> None:
    assert slug("A topic whose shape changed") == "a-topic-whose-shape-changed"
    assert slug("5.1 CLI (console script offset-restore, also python -m offset_restore)") == (
        "51-cli-console-script-offset-restore-also-python--m-offset_restore"
    )
