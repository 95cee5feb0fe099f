"""The ``--allow-rewind`` a run prints is safe to paste: through a real shell it reaches the command as
one argument, whatever the group ids hold, and it names exactly those groups (cases of issue 31)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from offset_restore.cli.main import build_parser
from offset_restore.snapshot.filters import NameFilter, compile_pattern, rewind_option

HOSTILE = [
    "orders(1)",
    "a|.*",
    "it's",
    "x'; touch /tmp/offset-restore-pwned; echo '",
    "$(touch /tmp/offset-restore-pwned)",
    "`id`",
    'say "hi"',
    "semi;colon",
    "new\nline",
    "tab\there",
    "back\\slash",
    "star*",
    "[brackets]",
    "{braces}",
    "dollar$",
    "^caret",
    "plus+",
    "quest?",
    "dot.",
    "-dz1.dash",
    "--execute",
]


def argv_through_a_shell(command_tail: str) -> list[str]:
    """What a POSIX shell hands a program for ``PROGRAM <command_tail>``, pasted as printed."""
    program = f"{sys.executable} -c 'import json, sys; print(json.dumps(sys.argv[1:]))'"
    done = subprocess.run(["sh", "-c", f"{program} {command_tail}"], capture_output=True, text=True, check=True)
    return list(json.loads(done.stdout))


def parsed_pattern(argv: list[str]) -> str:
    """The pattern ``offset-restore apply`` takes from ``argv`` (its own parser): a value that begins with
    ``-`` (a group id may) must reach it as the option's value, not as another option."""
    args = build_parser().parse_args(["apply", "--plan", "p.json", "--bootstrap-servers", "k:9092", *argv])
    return str(args.allow_rewind)


@pytest.mark.parametrize("name", HOSTILE)
def test_the_printed_option_names_exactly_its_group_through_a_real_shell(name: str) -> None:
    argv = argv_through_a_shell(rewind_option([name]))
    assert len(argv) == 1 and argv[0].startswith("--allow-rewind="), argv
    chosen = NameFilter(compile_pattern(parsed_pattern(argv), "--allow-rewind"))
    assert [n for n in HOSTILE if chosen(n)] == [name]
    assert not Path("/tmp/offset-restore-pwned").exists()  # nothing the name holds was run


def test_several_groups_in_one_option_name_those_groups_only() -> None:
    names = ["a|.*", "orders(1)", "it's", "new\nline"]
    argv = argv_through_a_shell(rewind_option(names))
    chosen = NameFilter(compile_pattern(parsed_pattern(argv), "--allow-rewind"))
    assert sorted(n for n in [*HOSTILE, "a", "orders1", "anything"] if chosen(n)) == sorted(names)
