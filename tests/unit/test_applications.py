"""A Kafka Streams application's group is one unit: an entry of its repartition topics that is not mapped
holds the whole group (translate/applications.py)."""

from __future__ import annotations

from offset_restore.formats.plan import PlanEntry, Status
from offset_restore.formats.streams import internal_topic
from offset_restore.translate.applications import hold_application


def entry(group: str, topic: str, status: Status) -> PlanEntry:
    mapped = status == "mapped"
    return PlanEntry(
        group=group,
        topic=topic,
        partition=0,
        target_topic=topic,
        source_offset=5,
        target_offset=5 if mapped else None,
        method="header" if mapped else None,
        status=status,
        reason=None if mapped else "topic missing on the target",
    )


def test_the_application_id_names_its_repartition_topics() -> None:
    assert internal_topic("app", "app-KSTREAM-AGGREGATE-0000000003-repartition")
    assert internal_topic("app", "app-counts-repartition")
    assert not internal_topic("app", "apple-counts-repartition")  # another application's
    assert not internal_topic("app", "app-counts-changelog")  # state it rebuilds: never committed on
    assert not internal_topic("app", "orders")


def test_an_unmapped_repartition_entry_holds_the_whole_group() -> None:
    entries = [entry("app", "orders", "mapped"), entry("app", "app-x-repartition", "unmapped")]
    held = hold_application("app", entries)
    assert [e.holds for e in held] == [False, True]
    reason = held[1].reason or ""
    assert reason.startswith("topic missing on the target; group app is a Kafka Streams application")
    assert "orders" in reason and "app-x-repartition/0" in reason and "kafka-streams-application-reset" in reason


def test_a_mapped_application_and_other_groups_are_left_as_they_are() -> None:
    mapped = [entry("app", "orders", "mapped"), entry("app", "app-x-repartition", "mapped")]
    assert not any(e.holds for e in hold_application("app", mapped))
    # A group that merely reads a topic named like another application's internal topic.
    other = [entry("reader", "orders", "mapped"), entry("reader", "app-x-repartition", "unmapped")]
    assert not any(e.holds for e in hold_application("reader", other))
