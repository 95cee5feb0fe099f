"""Positions from ``kafka-consumer-groups --export`` (Apache Kafka's ``ConsumerGroupCommand``): what
an operator saved with ``--reset-offsets --to-current --dry-run --export`` before the source was lost
becomes a snapshot without evidence (docs/cli.md, *snapshot*).

The format is the tool's (``CsvUtils``, Jackson's CSV mapper, no header): ``topic,partition,offset``
when the export named one group, ``group,topic,partition,offset`` for several or ``--all-groups``.
Fields holding a comma or a quote come quoted, as Python's ``csv`` reads them. Anything else — a line
of another shape, a number that is not one, a group-partition twice, the tool's ``Error:`` lines,
which it prints on stdout — stops the snapshot with the line named: a guess would move a group.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator

from offset_restore.errors import BadInputError
from offset_restore.files import lines_of
from offset_restore.snapshot.offsets_topic import OffsetCommit

__all__ = ["parse_export", "read_export"]


MAX_LINE = 64 * 1024
"""The longest line of an export: a group id, a topic name (at most 249 characters) and two numbers. Kafka
bounds no group id, but one of 64 KB is not an operator's; a longer line (``/dev/zero`` given by mistake,
a field of millions of characters) is refused, not read on."""
MAX_LINES = 10_000_000
"""The most lines an export may hold: ten million group-partitions, some forty times the largest
deployment measured (docs/benchmarks.md); past it the file is not an export."""


def read_export(path: str, *, group: str | None) -> list[OffsetCommit]:
    """The commits of the export at ``path`` (``parse_export``), read a bounded line at a time."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            where = f"--from-export {path}"
            return parse_export(lines_of(handle, limit=MAX_LINE, what=where), group=group, source=where)
    except (OSError, UnicodeDecodeError) as error:
        raise BadInputError(f"--from-export {path}: {error}") from None


def parse_export(lines: Iterable[str], *, group: str | None, source: str) -> list[OffsetCommit]:
    """Every line of an export as a commit; ``group`` names the group of a one-group (3-column) export."""
    commits: list[OffsetCommit] = []
    seen: set[tuple[str, str, int]] = set()
    for number, row in enumerate(_rows(lines, source), start=1):
        if number > MAX_LINES:
            raise BadInputError(f"{source} holds more than {MAX_LINES:,} lines: not an export")
        if not row or row == [""]:
            continue  # the tool ends its output with an empty line
        if any("\x00" in field for field in row):
            raise BadInputError(f"{source} line {number} holds NUL bytes: a binary file, not an export")
        commit = _commit(row, group, f"{source} line {number}")
        key = (commit.group, commit.topic, commit.partition)
        if key in seen:
            raise BadInputError(f"{source} line {number}: {commit.group} {commit.topic}/{commit.partition} twice")
        seen.add(key)
        commits.append(commit)
    if not commits:
        raise BadInputError(f"{source} holds no offsets (an export of kafka-consumer-groups is expected)")
    return commits


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
