"""Applications whose committed offsets span topics: a Kafka Streams application commits, under its
``application.id`` as the group, on its input topics and on its own repartition topics
(``<application.id>-<name>-repartition``). A record it consumed from an input topic may still wait in a
repartition topic, not yet processed by the next sub-topology: written without that topic's position,
the application resumes its input past records it never finished — lost to it. So such a group is one
unit: written whole or not at all (docs/design.md §6)."""

from __future__ import annotations

from offset_restore.formats.plan import PlanEntry
from offset_restore.formats.streams import internal_topic

__all__ = ["hold_application"]


def hold_application(group: str, entries: list[PlanEntry]) -> list[PlanEntry]:
    """``entries`` (one group's), with every entry of its repartition topics that is not mapped holding
    the group, its reason saying what that costs and what would end it."""
    internal = [e for e in entries if internal_topic(group, e.topic)]
    short = [e for e in internal if e.status in ("pending", "unmapped")]
    if not short:
        return entries
    inputs = sorted({e.topic for e in entries if not internal_topic(group, e.topic)})
    named = ", ".join(sorted({f"{e.topic}/{e.partition}" for e in short}))
    held = (
        f"group {group} is a Kafka Streams application: it commits on its repartition topics as on its input "
        f"topics ({', '.join(inputs) or 'none planned'}), and its position on {named} is not on the target. Written "
        "without it, the application would resume its inputs past records it consumed but had not yet processed "
        "through the repartition topic (lost to it): the whole group is held. To end it, restore the application's "
        "internal topics and plan again, or reset the application (kafka-streams-application-reset) and let it "
        f"start from its inputs. Its state stores' changelog topics ({group}-…-changelog) are never committed on: "
        "the application rebuilds its state from them on start, so restore them with the other internal topics, or "
        "its state starts from what they hold"
    )
    for entry in short:
        entry.holds_group = True
        entry.reason = f"{entry.reason}; {held}" if entry.reason else held
    return entries
