"""Whether a plan still fits the target it is about to write (docs/design.md §6): the same cluster, its
topics and partitions there, every mapped offset inside its log — checked before anything is written."""

from __future__ import annotations

from collections.abc import Sequence

from offset_restore.apply.model import ApplyTarget
from offset_restore.errors import BadInputError
from offset_restore.formats.plan import Plan, PlanEntry
from offset_restore.kafka.model import topic_ids
from offset_restore.snapshot.model import default_cluster_name

__all__ = ["check_entries_fit", "check_plan_fits", "check_same_topics"]


def check_plan_fits(plan: Plan, target: ApplyTarget, target_name: str | None, *, mapped_must_fit: bool = True) -> None:
    """Refuse a plan made for another cluster, or (``mapped_must_fit``: before an apply) one the
    target no longer fits: a topic or partition gone, or a mapped offset outside the partition's log
    now (a broker that restarted empty, a restore run again, retention that deleted the records) —
    nothing is written then. A rollback only puts back previous offsets: it checks the cluster."""
    if plan.target.cluster_id is not None and plan.target.cluster_id != target.cluster_id:
        raise BadInputError(
            f"the plan was made against the brokers of cluster id {plan.target.cluster_id} (named "
            f"{plan.target.cluster}), but these brokers report cluster id {target.cluster_id}: another cluster, "
            "whatever its name; nothing was written"
        )
    # The plan names the target as the user did, or by the name its id makes (an id may start with
    # '_', which a name may not: ``default_cluster_name`` adds a prefix then).
    names = {target.cluster_id, default_cluster_name(target.cluster_id), *([target_name] if target_name else [])}
    if plan.target.cluster not in names:
        raise BadInputError(
            f"the plan is for target cluster {plan.target.cluster}, but these brokers are cluster "
            f"{target.cluster_id}; plan again against this cluster"
        )
    if mapped_must_fit:
        check_entries_fit([e for e in plan.entries if e.status == "mapped"], target)


def check_entries_fit(entries: Sequence[PlanEntry], target: ApplyTarget) -> None:
    """The fit check of ``check_plan_fits`` for some mapped entries (a workflow's commit batch)."""
    if not entries:
        return
    check_same_topics(entries, target, "nothing was written; plan again")
    topics = target.topic_partitions()
    for entry in entries:
        if topics.get(entry.target_topic, 0) <= entry.target.partition:
            raise BadInputError(
                f"the plan maps {entry.group} to {entry.target}, which the target no "
                "longer has: the target changed since the plan was made (restarted empty?); plan again"
            )
    bounds = target.log_bounds({e.target for e in entries})
    outside = [
        e
        for e in entries
        if e.target_offset is not None and not bounds[e.target].start <= e.target_offset <= bounds[e.target].end
    ]
    if outside:
        e = outside[0]
        log = bounds[e.target]
        raise BadInputError(
            f"{len(outside)} mapped offsets lie outside the target's logs now, e.g. {e.group} "
            f"{e.target} is mapped to {e.target_offset} but the log holds {log.start}-{log.end}: "
            "the target changed since the plan was made (restarted empty, restored again, or records deleted); "
            "nothing was written; plan again"
        )


def check_same_topics(entries: Sequence[PlanEntry], target: ApplyTarget, then: str) -> None:
    """Refuse, before anything is written, entries whose target topic was deleted and created again since
    the plan read it (its topic id is another now): their offsets are positions in another log, and
    writing them would move a group past the new topic's records. ``then`` ends the message (what was
    not done, what to do). Entries without a recorded id (an older plan, a broker without topic ids) and
    topics the broker gives no id for now are not compared."""
    planned = {e.target_topic: e.target_topic_id for e in entries if e.target_topic_id}
    if not planned:
        return
    now = topic_ids(target.partition_identities({e.target for e in entries if e.target_topic_id}))
    changed = sorted(
        (topic, then_id, now[topic]) for topic, then_id in planned.items() if now.get(topic, then_id) != then_id
    )
    if changed:
        named = "; ".join(f"{topic} (topic id {was} in the plan, {now_id} now)" for topic, was, now_id in changed)
        raise BadInputError(
            f"target topic {named} was deleted and created again since the plan: its offsets belong to the "
            f"old topic's log; {then}"
        )
