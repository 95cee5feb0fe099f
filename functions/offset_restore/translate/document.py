"""The plan document written entry by entry, so a plan of any size needs memory for one entry.

At 240,000 group-partitions the document is about 200 MB of JSON; built as one string (and then as
bytes) it doubled the CLI's peak memory. Entries go to a spooled temporary file as they are made
(in memory up to ``SPOOL_BYTES``, on disk beyond), the summary is counted on the way, and the
document is assembled once the summary is known, byte for byte what ``Plan.model_dump_json(indent=2)``
gives for the same plan (a unit test holds it to that).
"""

from __future__ import annotations

import shutil
from tempfile import SpooledTemporaryFile
from typing import IO

from pydantic import BaseModel

from offset_restore.formats.plan import Plan, PlanEntry, SummaryTally, spreadsheet_formula

__all__ = ["PROBLEMS_KEPT", "PlanDocument", "ProblemKind"]

SPOOL_BYTES = 16 * 1024 * 1024
PROBLEMS_KEPT = 10
"""Kinds of pending and unmapped entries kept to show (all the entries are in the document)."""
GROUPS_NAMED = 3


class ProblemKind(BaseModel):
    """Pending or unmapped entries that share a status and a reason (a topic missing on the target
    is one line for its 42 group-partitions, not 42 lines), with the first groups it touches."""

    status: str
    reason: str | None
    topic: str
    """The source topic of the first such entry (a missing topic's hint names it)."""
    count: int = 0
    groups: list[str] = []


_EMPTY_ENTRIES = b'"entries": []'


class PlanDocument:
    """Collects entries (``add``), then gives the whole document (``finish``) and, on request, the
    ``--csv`` lines beside it. A context manager: its temporary files are closed on the way out."""

    def __init__(self, *, csv: bool = False) -> None:
        # The files outlive this call (they are the object's state): closed by ``finish`` and the caller.
        self._entries: IO[bytes] = _spool()
        self._csv: IO[bytes] | None = _spool() if csv else None
        self._tally = SummaryTally()
        self.count = 0
        self.problems: dict[tuple[str, str | None], ProblemKind] = {}
        """The first ``PROBLEMS_KEPT`` kinds of pending or unmapped entries, counted."""
        self.problem_count = 0
        self.csv_left_out: list[str] = []
        """Groups the CSV leaves out because an entry holds them (the first ``GROUPS_NAMED * 10``)."""
        self.csv_left_out_count = 0
        self.csv_formulas: list[str] = []
        """Groups whose lines begin a cell as a spreadsheet formula does (the first ``GROUPS_NAMED``)."""
        self.csv_formula_count = 0
        self.csv_unmapped_topics: dict[str, int] = {}
        """Target topics whose partitions have no line although their groups' other lines are there (the
        topic is not on the target, or no strategy placed it): as apply, which writes the rest."""
        self._group: tuple[str | None, bool, list[str]] = (None, False, [])
        """The group whose CSV lines wait for its last entry: its name, whether an entry holds it, its lines."""

    def __enter__(self) -> PlanDocument:
        return self

    def __exit__(self, *exc: object) -> None:
        self._entries.close()
        if self._csv is not None:
            self._csv.close()

    def add(self, entry: PlanEntry) -> None:
        text = entry.model_dump_json(indent=2).replace("\n", "\n    ")
        self._entries.write((",\n    " if self.count else "\n    ").encode() + text.encode())
        self.count += 1
        self._tally.add(entry)
        if entry.status in ("pending", "unmapped"):
            self.problem_count += 1
            self._count_problem(entry)
        if self._csv is not None:
            self._add_csv(entry)

    def _add_csv(self, entry: PlanEntry) -> None:
        """A group's lines are written once its entries are all seen (they come together): a group an
        entry holds is left out whole, as apply leaves it."""
        name, held, lines = self._group
        if name != entry.group:
            self._flush_csv()
            name, held, lines = entry.group, False, []
        line = Plan.csv_line(entry)
        if line is not None:
            lines.append(line)
        elif entry.status == "unmapped" and not entry.holds:
            self.csv_unmapped_topics[entry.target_topic] = self.csv_unmapped_topics.get(entry.target_topic, 0) + 1
        self._group = (name, held or entry.holds, lines)

    def _flush_csv(self) -> None:
        name, held, lines = self._group
        assert self._csv is not None
        if held and name is not None:
            self.csv_left_out_count += 1
            if len(self.csv_left_out) < GROUPS_NAMED * 10:
                self.csv_left_out.append(name)
        else:
            self._csv.writelines(line.encode() + b"\n" for line in lines)
            if any(map(spreadsheet_formula, lines)):
                self.csv_formula_count += 1
                if len(self.csv_formulas) < GROUPS_NAMED:
                    self.csv_formulas.append(name or "")
        self._group = (None, False, [])

    def _count_problem(self, entry: PlanEntry) -> None:
        key = (entry.status, entry.reason)
        kind = self.problems.get(key)
        if kind is None:
            if len(self.problems) >= PROBLEMS_KEPT:
                return  # counted in problem_count; the document holds every entry
            kind = self.problems[key] = ProblemKind(status=entry.status, reason=entry.reason, topic=entry.topic)
        kind.count += 1
        if len(kind.groups) < GROUPS_NAMED and entry.group not in kind.groups:
            kind.groups.append(entry.group)

    def finish(self, plan: Plan) -> tuple[Plan, IO[bytes]]:
        """``plan`` (given without entries) with the summary counted, and a file at its start holding
        the whole document (the caller closes it)."""
        plan = plan.model_copy(update={"entries": [], "summary": self._tally.result()})
        head, marker, tail = plan.model_dump_json(indent=2).encode().partition(_EMPTY_ENTRIES)
        assert marker, "a plan document always has its entries field"
        document = _spool()
        document.write(head + b'"entries": [')
        if self.count:
            self._entries.seek(0)
            shutil.copyfileobj(self._entries, document)
            document.write(b"\n  ")
        document.write(b"]" + tail)
        document.seek(0)
        return plan, document

    def csv_file(self) -> IO[bytes]:
        """The ``--csv`` lines of every entry added, from the start."""
        assert self._csv is not None, "made without csv=True"
        self._flush_csv()
        self._csv.seek(0)
        return self._csv


def _spool() -> IO[bytes]:
    return SpooledTemporaryFile(max_size=SPOOL_BYTES)
