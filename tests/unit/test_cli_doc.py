"""docs/cli.md is the reference of every command as the parser has it, checked so that it cannot drift.

The parser is ``offset_restore.cli.main.build_parser()``, built in-process; a command is one of its
subcommands, and a command's options are the long option strings its parser defines (aliases such as
``--bootstrap-server`` included, ``--help`` left out: every command has it).

The rules the document is read by:

- Its sections are its ``## `` headings, each up to the next one (its ``###`` subsections included). A
  command's section is headed ``## offset-restore COMMAND`` (backticks around it allowed); every command
  has one, and no such heading names a command the parser does not have.
- The map: the text before the first section links every command to its section
  (``[`COMMAND`](#offset-restore-COMMAND)``).
- A command's section opens with its synopsis, its first fenced block: the usage ``COMMAND --help`` prints,
  without ``usage:``, compared with whitespace normalized (line breaks fall where the terminal's width
  puts them). Its second fenced block is one example: a single ``offset-restore COMMAND ...`` command
  (``\\`` continues a line), which the real parser accepts.
- Every option of the command appears in a table row (a line beginning ``|``) of its section.
- Every link to a place in the page (``](#anchor)``) names a heading's anchor, made as GitHub makes it
  (lower case; punctuation but ``-`` and ``_`` dropped; each space a ``-``).
- Every option token (``--name``) in the document is one the parser has, read in its context: in a line
  of a fenced block, the command the line starts (an indented line continues the line above it); in an
  inline code span, the command the span starts with (``offset-restore apply ...``, or ``apply --plan``);
  elsewhere, the section's command, or, outside a command's section, any command. A line or span that
  starts with another tool (``kafka-consumer-groups``, ``aws``) holds that tool's options, named below;
  those may also appear in prose, and nothing else outside the parser may.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from offset_restore.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cli.md"

OTHER_TOOLS: dict[str, frozenset[str]] = {
    # Apache Kafka's own tool, which the document compares with (its --export file, its --from-file CSV).
    "kafka-consumer-groups": frozenset(
        {
            "--bootstrap-server", "--command-config", "--group", "--all-groups", "--all-topics", "--reset-offsets",
            "--to-current", "--dry-run", "--execute", "--export", "--from-file", "--describe",
        }
    ),
    # The AWS CLI, in the example that writes a restore-progress checkpoint.
    "aws": frozenset({"--stack-name", "--query", "--output", "--table-name", "--item"}),
}  # fmt: skip
TOOL_NAMES = {"kafka-consumer-groups": "kafka-consumer-groups", "kafka-consumer-groups.sh": "kafka-consumer-groups",
              "aws": "aws"}  # fmt: skip
ANY_TOOL = frozenset().union(*OTHER_TOOLS.values())
# An option typed wrong on purpose: the document shows how an unknown option is refused.
TYPOS = frozenset({"--bootstrap-servr"})

OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
COMMAND_HEADING = re.compile(r"^## `?offset-restore ([a-z-]+)`?\s*$")


def subcommands() -> dict[str, argparse.ArgumentParser]:
    """Every command of the parser, by name, in the order ``--help`` lists them."""
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("offset-restore's parser has no subcommands")


def options(parser: argparse.ArgumentParser) -> set[str]:
    """The long option strings a parser defines, but ``--help``."""
    return {
        name
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction)
        for name in action.option_strings
        if name.startswith("--")
    }


COMMANDS = subcommands()
TOP_LEVEL = options(build_parser()) | {"--help"}
EVERY_OPTION = set().union(*(options(p) for p in COMMANDS.values())) | TOP_LEVEL


def sections() -> tuple[str, dict[str, str]]:
    """The text before the first section, and each section's text by its title (``## `` stripped)."""
    text = DOC.read_text(encoding="utf-8")
    parts = re.split(r"^## (.+)\n", text, flags=re.MULTILINE)
    titles = parts[1::2]
    assert len(set(titles)) == len(titles), f"docs/cli.md has a section title twice: {sorted(titles)}"
    return parts[0], dict(zip(titles, parts[2::2], strict=True))


def command_sections() -> dict[str, str]:
    """Each command's section, by the command its heading names."""
    found = {}
    for title, body in sections()[1].items():
        match = COMMAND_HEADING.match(f"## {title}")
        if match:
            found[match.group(1)] = body
    return found


def fenced_blocks(text: str) -> list[str]:
    return re.findall(r"^```[^\n]*\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


def normalized(text: str) -> str:
    return " ".join(text.split())


def usage(command: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """What ``offset-restore COMMAND --help`` prints as its usage, without ``usage:``."""
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps at the terminal's width; the doc's block at 100
    return normalized(COMMANDS[command].format_usage()).removeprefix("usage: ")


def context_of(words: str) -> str | None:
    """The command (or tool, or ``offset-restore`` alone) a line or code span starts with; None when it
    starts with none. ``VAR=$(aws ...`` starts with ``aws``."""
    parts = re.sub(r"^\w+=\$\(", "", words.strip()).split()
    if not parts:
        return None
    if parts[0] == "offset-restore":
        return parts[1] if len(parts) > 1 and parts[1] in COMMANDS else "offset-restore"
    if parts[0] in TOOL_NAMES:
        return TOOL_NAMES[parts[0]]
    if parts[0] in COMMANDS and len(parts) > 1:
        return parts[0]
    return None


def allowed(context: str | None, default: set[str]) -> set[str]:
    """The options a token may be in ``context`` (``default``: those of the section's command)."""
    if context == "offset-restore":
        return TOP_LEVEL
    if context in COMMANDS:
        return options(COMMANDS[context]) | {"--help"}
    if context in OTHER_TOOLS:
        return set(OTHER_TOOLS[context])
    return default | ANY_TOOL | TYPOS | {"--help"}


def tokens(section: str, default: set[str]) -> Iterator[tuple[str, str, set[str]]]:
    """Each option token of a section with where it stands (a line or span, for a failure message) and
    the options it may be there."""
    prose: list[str] = []
    line_context: str | None = None
    fenced = False
    for line in section.splitlines():
        if line.startswith("```"):
            fenced, line_context = not fenced, None
            continue
        if not fenced:
            prose.append(line)
            continue
        if line and not line[0].isspace():
            line_context = context_of(line)
        for token in OPTION.findall(line):
            yield token, line.strip(), allowed(line_context, default)
    text = "\n".join(prose)
    for span in re.findall(r"`([^`]+)`", text):
        for token in OPTION.findall(span):
            yield token, f"`{span}`", allowed(context_of(span), default)
    for token in OPTION.findall(re.sub(r"`[^`]+`", " ", text)):
        yield token, "prose", allowed(None, default)


def test_every_command_has_a_section_and_no_section_names_another() -> None:
    found = command_sections()
    missing = [c for c in COMMANDS if c not in found]
    assert not missing, f"docs/cli.md has no '## offset-restore COMMAND' section for: {missing}"
    unknown = [c for c in found if c not in COMMANDS]
    assert not unknown, f"docs/cli.md has a section for commands the parser does not have: {unknown}"


def test_the_map_links_every_command_to_its_section() -> None:
    preamble = sections()[0]
    for command in COMMANDS:
        link = f"[`{command}`](#offset-restore-{command})"
        assert link in preamble, f"docs/cli.md's map (before the first section) lacks {link}"


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_section_opens_with_the_usage_help_prints(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    section = command_sections().get(command, "")
    blocks = fenced_blocks(section)
    assert blocks, f"{command}: its section in docs/cli.md has no fenced block (the synopsis)"
    opening = section.split("```", 1)[0]
    assert not opening.strip(), f"{command}: its section must open with the synopsis, not {opening.strip()[:60]!r}"
    shown = normalized(blocks[0]).removeprefix("usage: ")
    expected = usage(command, monkeypatch)
    assert shown == expected, f"{command}: the synopsis in docs/cli.md is not --help's usage:\n{shown}\n{expected}"


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_sections_example_is_one_command_the_parser_accepts(command: str) -> None:
    blocks = fenced_blocks(command_sections().get(command, ""))
    assert len(blocks) >= 2, f"{command}: its section in docs/cli.md has no example (its second fenced block)"
    example = blocks[1].replace("\\\n", " ").strip()
    assert "\n" not in example, f"{command}: the example must be a single command:\n{example}"
    words = shlex.split(example)
    assert words[:2] == ["offset-restore", command], f"{command}: the example runs {' '.join(words[:2])!r}"
    try:
        parsed = build_parser().parse_args(words[1:])
    except SystemExit:
        pytest.fail(f"{command}: the parser refuses the example in docs/cli.md (its error is above): {example}")
    assert parsed.command == command


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_option_of_a_command_is_in_its_sections_table(command: str) -> None:
    section = command_sections().get(command, "")
    rows = "\n".join(line for line in section.splitlines() if line.startswith("|"))
    listed = set(OPTION.findall(rows))
    for option in sorted(options(COMMANDS[command])):
        assert option in listed, f"{command}: {option} is not in a table row of its section in docs/cli.md"


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_command_section_names_only_options_the_parser_has(command: str) -> None:
    section = command_sections().get(command, "")
    for token, where, permitted in tokens(section, options(COMMANDS[command])):
        assert token in permitted, (
            f"{command}: docs/cli.md's section names {token}, which the parser does not give it here ({where[:120]})"
        )


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: ``Step 3: the previous offsets`` is ``step-3-the-previous-offsets``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_within_the_page_names_a_heading() -> None:
    text = DOC.read_text(encoding="utf-8")
    outside_code = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    anchors = {anchor(h) for h in re.findall(r"^#+ (.+)$", outside_code, re.MULTILINE)}
    broken = sorted(set(re.findall(r"\]\(#([^)]+)\)", text)) - anchors)
    assert not broken, f"docs/cli.md links to anchors no heading has: {broken}"


def test_the_other_sections_name_only_options_the_parser_has() -> None:
    preamble, by_title = sections()
    others = {"(the map)": preamble} | {t: s for t, s in by_title.items() if not COMMAND_HEADING.match(f"## {t}")}
    for title, section in others.items():
        for token, where, permitted in tokens(section, EVERY_OPTION):
            assert token in permitted, (
                f"docs/cli.md's section {title!r} names {token}, which no command has here ({where[:120]})"
            )
