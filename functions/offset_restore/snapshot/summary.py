"""A snapshot run's result in lines for people: what the CLI prints after ``snapshot`` and the demo
after its own, from one function."""

from __future__ import annotations

from offset_restore.snapshot.run import SnapshotResult

__all__ = ["snapshot_summary"]


def snapshot_summary(result: SnapshotResult) -> list[str]:
    c = result.counts
    states = ", ".join(f"{count} {state}" for state, count in c.states.items()) or "none"
    lines = [
        f"Snapshot {result.snapshot_id} of cluster {result.cluster} ({result.source})",
        f"  groups            {c.groups:,} ({states}); {c.groups_without_commits:,} without commits",
        f"  group-partitions  {c.group_partitions:,} on {c.partitions:,} partitions; total lag {c.total_lag:,}",
    ]
    if result.source == "cluster":
        lines.append(f"  evidence          {c.with_evidence:,} with evidence, {c.evidence_incomplete:,} incomplete")
    else:
        lines.append(
            f"  offsets topic     {c.offsets_topic_records:,} records, {c.offsets_topic_corrupt:,} corrupt skipped"
        )
    requests = sum(result.requests.values())
    lines += [
        f"  took              {result.duration_s:.2f} s, {requests:,} Kafka requests",
        f"  written to        {result.location}/{result.manifest}",
    ]
    lines += [f"  top lag           {g.group}: {g.lag:,}" for g in result.top_lag[:3] if g.lag]
    lines += [f"  note: {note}" for note in result.notes[:10]]
    if len(result.notes) > 10:
        lines.append(f"  ... and {len(result.notes) - 10} more notes in the manifest")
    return lines
