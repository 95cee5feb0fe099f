"""Positions from ``kafka-consumer-groups`` (Apache Kafka's ``ConsumerGroupCommand``) saved to a file before the
source was lost: a snapshot without evidence (docs/cli.md, *snapshot*).

Two forms, told apart by the first line that is not the tool's chatter:

- ``--describe`` (``--all-groups --describe``): the tables the tool prints, one per group, headed
  ``GROUP TOPIC PARTITION CURRENT-OFFSET ...``. It holds every group, those with members included, so it
  is the form to save on a busy cluster. Its columns are padded to the widest value, so a group name is
  read by the header's column position (names with spaces survive; a name ending in a space cannot be
  told from the padding). A partition without a committed offset (``-``) is no position and is left out.
- ``--reset-offsets --to-current --dry-run --export``: ``topic,partition,offset`` for one group,
  ``group,topic,partition,offset`` for several (``CsvUtils``, Jackson's CSV mapper, no header; fields
  holding a comma or a quote come quoted, as Python's ``csv`` reads them). The tool leaves out every group
  with members ("Assignments can only be reset if the group ... is inactive") and prints that as an
  ``Error:`` line among the offsets.

The tool's own lines — ``Error:`` on stdout, and the notes it prints on stderr should they be redirected
into the file — are passed over and each group they name is reported as left out: the snapshot says which
groups it lacks, and a plan never guesses them. Anything else (a line of another shape, a number that is
not one, a group-partition twice) stops the snapshot with the line named: a guess would move a group.
"""

from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from offset_restore.errors import BadInputError
from offset_restore.files import lines_of
from offset_restore.snapshot.offsets_topic import OffsetCommit

__all__ = ["Export", "parse_export", "read_export"]

T = TypeVar("T")


MAX_LINE = 64 * 1024
"""The longest line of an export: a group id, a topic name (at most 249 characters) and two numbers. Kafka
bounds no group id, but one of 64 KB is not an operator's; a longer line (``/dev/zero`` given by mistake,
a field of millions of characters) is refused, not read on."""
MAX_LINES = 10_000_000
"""The most lines an export may hold: ten million group-partitions, some forty times the largest
deployment measured (docs/benchmarks.md); past it the file is not an export."""


DESCRIBE_HEADER = re.compile(r"GROUP +TOPIC +PARTITION +CURRENT-OFFSET(?: +[A-Z-]+)* *")
"""The header of each group's table in ``--describe``'s output (the columns after CURRENT-OFFSET are not read)."""
_TOOL_ERROR = "Error: "
_LEFT_OUT = re.compile(
    r"Error: Assignments can only be reset if the group '(?P<group>.*)' is inactive, "
    r"but the current state is (?P<state>\S+)\."
)
_NOT_FOUND = re.compile(r"(?:Error: )?Consumer group '(?P<group>.*)' does not exist\.")
_CHATTER = re.compile(r"(?:Warning: )?Consumer group '.*' (?:has no active members|is rebalancing)\.")
"""What the tool prints about a group on stderr and leaves its positions in the file: passed over."""


@dataclass
class Export:
    """What a file held: the commits, the groups the tool said it left out, and the form it was in."""

    commits: list[OffsetCommit] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    """Each group the tool left out, with why (``busy (Stable: it has members)``), or a tool line quoted."""
    described: bool = False
    """The ``--describe`` form (else the ``--export`` CSV)."""
    without_offset: int = 0
    """``--describe`` rows without a committed offset (``-``): partitions a member holds, no position."""


def read_export(path: str, *, group: str | None) -> Export:
    """What the export at ``path`` holds (``parse_export``), read a bounded line at a time."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            where = f"--from-export {path}"
            return parse_export(lines_of(handle, limit=MAX_LINE, what=where), group=group, source=where)
    except (OSError, UnicodeDecodeError) as error:
        raise BadInputError(f"--from-export {path}: {error}") from None


def parse_export(lines: Iterable[str], *, group: str | None, source: str) -> Export:
    """Every position of a file of either form; ``group`` names the group of a one-group (3-column) export."""
    lines = iter(lines)
    head: list[str] = []
    for line in lines:
        head.append(line)
        if line.strip() and _tool_line(line.rstrip("\r\n")) is None:
            break
    found = Export(described=bool(head) and bool(DESCRIBE_HEADER.fullmatch(head[-1].rstrip("\r\n"))))
    stream = itertools.chain(head, lines)
    if found.described:
        if group is not None:
            raise BadInputError(
                f"{source} is kafka-consumer-groups --describe output, which names its groups: leave out --export-group"
            )
        _read_described(stream, source, found)
    else:
        _read_csv(stream, group, source, found)
    if not found.commits:
        left = f" (the tool left out: {', '.join(found.left_out[:5])})" if found.left_out else ""
        raise BadInputError(
            f"{source} holds no offsets{left} (kafka-consumer-groups --describe or --export output is expected)"
        )
    return found


def _tool_line(line: str, *, in_table: bool = False) -> str | None:
    """What a line the tool printed about a group says was left out ('' for chatter); None for any other line.
    Inside a ``--describe`` table only the tool's exact sentences count: a group may be named ``Error: x``."""
    if match := _LEFT_OUT.fullmatch(line):
        return f"{match['group']} ({match['state']}: it has members)"
    if match := _NOT_FOUND.fullmatch(line):
        return f"{match['group']} (does not exist)"
    if _CHATTER.fullmatch(line):
        return ""
    if line.startswith(_TOOL_ERROR) and not in_table:
        return repr(line[:200])
    return None


def _read_csv(lines: Iterable[str], group: str | None, source: str, found: Export) -> None:
    seen: set[tuple[str, str, int]] = set()
    for number, row in _numbered(_rows(lines, source), source):
        if not row or row == [""]:
            continue  # the tool begins and ends its output with an empty line
        if any("\x00" in value for value in row):
            raise BadInputError(f"{source} line {number} holds NUL bytes: a binary file, not an export")
        if len(row) not in (3, 4) and (said := _tool_line(",".join(row))) is not None:
            found.left_out += [said] if said else []
            continue
        _add(found, seen, _commit(row, group, f"{source} line {number}"), f"{source} line {number}")


def _read_described(lines: Iterable[str], source: str, found: Export) -> None:
    """The tables of ``--describe``: each group's header gives where its columns start. A blank line does not
    end a table: the tool's stderr, redirected into the file, may cut one anywhere with its own blank lines."""
    seen: set[tuple[str, str, int]] = set()
    columns: tuple[int, int, int] | None = None
    for number, raw in _numbered(lines, source):
        line = raw.rstrip("\r\n")
        if "\x00" in line:
            raise BadInputError(f"{source} line {number} holds NUL bytes: a binary file, not an export")
        if DESCRIBE_HEADER.fullmatch(line):
            columns = (line.index("TOPIC"), line.index("PARTITION"), line.index("CURRENT-OFFSET"))
        elif not line.strip():
            continue
        elif (said := _tool_line(line, in_table=columns is not None)) is not None:
            found.left_out += [said] if said else []
        elif columns is None:
            raise BadInputError(f"{source} line {number} is outside a --describe table: {line[:120]!r}")
        elif (commit := _described_row(line, columns, f"{source} line {number}")) is None:
            found.without_offset += 1
        else:
            _add(found, seen, commit, f"{source} line {number}")


def _described_row(line: str, columns: tuple[int, int, int], where: str) -> OffsetCommit | None:
    """One row of a table, read at its header's columns (None for a partition without a committed offset, or a
    member without partitions). GROUP, TOPIC and PARTITION are padded to their widest value, so they never
    spill; CURRENT-OFFSET may (an offset of 16 digits or more), so it is the first word from its column on."""
    topic_at, partition_at, offset_at = columns
    group, topic = line[: topic_at - 1].rstrip(" "), line[topic_at : partition_at - 1].strip()
    partition, rest = line[partition_at : offset_at - 1].strip(), line[offset_at:].split()
    # Left-justified columns: each value starts at its column, right after a space.
    separated = all(line[at - 1 : at] == " " and line[at : at + 1] not in ("", " ") for at in columns)
    if not (group and topic and partition and rest and separated) or " " in topic or " " in partition:
        raise BadInputError(f"{where} is not a row of its --describe table: {line[:120]!r}")
    if rest[0] == "-" or topic == "-":
        return None
    return OffsetCommit(
        group, topic, _number(partition, "partition", where), _number(rest[0], "offset", where), None, 0
    )


def _add(found: Export, seen: set[tuple[str, str, int]], commit: OffsetCommit, where: str) -> None:
    key = (commit.group, commit.topic, commit.partition)
    if key in seen:
        raise BadInputError(f"{where}: {commit.group} {commit.topic}/{commit.partition} twice")
    seen.add(key)
    found.commits.append(commit)


def _numbered(items: Iterable[T], source: str) -> Iterator[tuple[int, T]]:
    """Each line (or CSV row) with its number from 1, refused past ``MAX_LINES``: both forms' one bound."""
    for number, item in enumerate(items, start=1):
        if number > MAX_LINES:
            raise BadInputError(f"{source} holds more than {MAX_LINES:,} lines: not an export")
        yield number, item


def _rows(lines: Iterable[str], source: str) -> Iterator[list[str]]:
    reader = csv.reader(lines)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:  # a quote never closed, or a field past the line bound
            raise BadInputError(f"{source} line {reader.line_num}: {error}") from None
        yield row


def _commit(row: list[str], group: str | None, where: str) -> OffsetCommit:
    if len(row) == 3:
        if group is None:
            raise BadInputError(
                f"{where} has 3 columns (topic,partition,offset: an export of one group): name the group with "
                "--export-group"
            )
        topic, partition, offset = row
    elif len(row) == 4:
        if group is not None:
            raise BadInputError(f"{where} has 4 columns (group,topic,partition,offset): leave out --export-group")
        group, topic, partition, offset = row
    else:
        shown = ",".join(row)[:120]
        raise BadInputError(f"{where} is not group,topic,partition,offset nor topic,partition,offset: {shown!r}")
    if not group or not topic:
        raise BadInputError(f"{where} has an empty group or topic")
    return OffsetCommit(group, topic, _number(partition, "partition", where), _number(offset, "offset", where), None, 0)


def _number(text: str, what: str, where: str) -> int:
    if not re.fullmatch(r"[0-9]{1,19}", text.strip()):
        raise BadInputError(f"{where}: {what} {text!r} is not a number at or above 0")
    number = int(text.strip())
    if number > (2**31 - 1 if what == "partition" else 2**63 - 1):
        raise BadInputError(f"{where}: {what} {text!r} is out of range")
    return number
