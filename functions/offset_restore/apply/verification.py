"""After the commits: the offsets read back, and the record at each new offset checked against what the
plan found there (docs/design.md §2.6). An entry that reads back otherwise is ``verified: false``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from offset_restore.apply.anchors import ReadRecords
from offset_restore.apply.model import ApplyReport, ApplyTarget
from offset_restore.formats.plan import Plan, PlanEntry
from offset_restore.kafka.model import TP

__all__ = ["verify_groups"]


def verify_groups(
    plan: Plan, report: ApplyReport, target: ApplyTarget, groups: Sequence[str], read: ReadRecords | None = None
) -> None:
    """Read committed offsets back; check the record at each new offset whose fingerprint is known, and
    each anchor: the check before the commit's records and answers (``read``) reused where the partition
    is still the same log, the records read again elsewhere."""
    if not groups:
        return
    wanted = set(groups)
    back = target.committed_offsets(list(groups))
    checks: dict[TP, list[PlanEntry]] = defaultdict(list)
    for entry in plan.entries:
        if entry.group not in wanted or entry.status != "committed":
            continue
        tp = entry.target
        now = back.get(entry.group, {}).get(tp)
        if now is None or now.offset != entry.target_offset:
            entry.verified = False
            report.verify_failed.append(f"{entry.group} {tp}: reads back {now.offset if now else 'nothing'}")
            continue
        if entry.expected_fingerprint or entry.anchor_offset is not None:
            checks[tp].append(entry)
        else:
            entry.verified = True
            report.verified += 1
    for entry, problem in (read or ReadRecords()).problems(target, checks, plan.offset_header):
        entry.verified = problem is None
        if problem is None:
            report.verified += 1
        else:
            report.verify_failed.append(f"{entry.group} {entry.target}@{entry.target_offset}: {problem}")
