"""The names of a Kafka Streams application's internal topics: it commits, under its ``application.id``
as the group, on its input topics and on its own repartition topics (``<application.id>-<name>-repartition``).
Planning holds such a group whole (``translate/applications.py``); apply and the report name the topics
the same way."""

from __future__ import annotations

__all__ = ["REPARTITION_SUFFIX", "internal_topic"]

REPARTITION_SUFFIX = "-repartition"


def internal_topic(group: str, topic: str) -> bool:
    """Whether ``topic`` is a repartition topic of the Kafka Streams application whose id is ``group``."""
    return topic.startswith(f"{group}-") and topic.endswith(REPARTITION_SUFFIX)
