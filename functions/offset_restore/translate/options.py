"""What a plan is asked for, declared once: ``PlanSettings`` are the choices a person makes (the CLI's
options take their defaults from it, the workflow's execution input and its work items are it), and
``PlanOptions`` adds what one run knows of its target. The dispatcher (translate/plan.py) tries the
strategies in the order asked for."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

from offset_restore.kafka.model import TP
from offset_restore.snapshot.fingerprint import DEFAULT_OFFSET_HEADER, DEFAULT_PARTITION_HEADER

__all__ = ["PLAN_DEFAULTS", "STRATEGIES", "OrderCheck", "PlanOptions", "PlanSettings", "Strategy"]

Strategy = Literal["header", "origin", "fingerprint", "checkpoint", "mm2", "timestamp"]
OrderCheck = Literal["windows", "full"]
STRATEGIES: tuple[Strategy, ...] = ("header", "origin", "fingerprint", "checkpoint", "mm2", "timestamp")


_SCOPE = re.compile(r"[a-zA-Z0-9._-]{1,249}(/(0|[1-9][0-9]{0,8}))?")
"""A topic (Kafka's alphabet: no '/'), or a topic and one partition: ``payments``, ``payments/2``."""

MAX_TIMESTAMP_MARGIN_MS = 86_400_000
"""A day: a larger margin is a typo, not a margin."""


class PlanSettings(BaseModel):
    """The plan's settings as a person gives them: on the command line, in the execution input
    (docs/design.md §5.3), carried by each work item to the translate step. One declaration, so the
    two paths cannot drift apart on a default or a check."""

    model_config = ConfigDict(extra="forbid")

    strategies: tuple[Strategy, ...] = STRATEGIES
    offset_header: str = Field(default=DEFAULT_OFFSET_HEADER, min_length=1)
    partition_header: str = Field(default=DEFAULT_PARTITION_HEADER, min_length=1)
    """The header a restore adds with the source partition: what maps a topic whose shape changed."""
    topic_map: dict[str, str] = Field(default_factory=dict)
    """Source topic -> target topic, for topics renamed in the restore."""
    order_check: OrderCheck = "windows"
    """``windows``: the header search checks the order of every window it reads and reads a partition
    whole only when something contradicts order; ``full``: every partition is read whole (proof that
    does not rest on the order of records not read, at the cost of reading everything)."""
    timestamp_margin_ms: int = Field(default=1_000, ge=0, le=MAX_TIMESTAMP_MARGIN_MS)
    """The timestamp strategy resumes this much earlier than the skew it saw (clock differences)."""
    restore_complete: StrictBool | tuple[str, ...] = False
    """The operator's word that the restore will bring nothing more: ``True`` for all of it, or the
    source topics (``payments``) and partitions (``payments/2``) that are finished. A group waiting
    there for records the restore never brought resumes at the end of the restored log instead of
    staying pending, and the records it will never read are counted (translate/strategies/outcomes.py)."""

    source_stopped_at: AwareDatetime | None = None
    """When the source stopped serving its consumers (its failure, the alarm's time): a live group's
    exposure counts what it processed after the snapshot up to then, not up to the plan, however late
    the plan comes. None: up to the plan (an upper bound that grows with the clock)."""

    @field_validator("restore_complete")
    @classmethod
    def _scopes(cls, value: bool | tuple[str, ...]) -> bool | tuple[str, ...]:
        if isinstance(value, bool):
            return value
        bad = [scope for scope in value if not _SCOPE.fullmatch(scope)]
        if bad:
            raise ValueError(f"restore_complete: {bad[0]!r} is not a topic or topic/partition (e.g. payments/2)")
        return tuple(sorted(set(value)))

    def unknown_scopes(self, source_topics: Mapping[str, int]) -> list[str]:
        """The ``restore_complete`` scopes that name no source topic (or partition) of the snapshot, each
        with why: a typo, or the target's name of a renamed topic, would otherwise finish nothing in
        silence. ``source_topics``: topic -> partition count on the source (empty: not known, not checked)."""
        if isinstance(self.restore_complete, bool) or not source_topics:
            return []
        problems = []
        for scope in self.restore_complete:
            topic, _, partition = scope.partition("/")
            if topic not in source_topics:
                renamed = [s for s, t in self.topic_map.items() if t == topic]
                hint = f" (the target's name of {renamed[0]}: give {renamed[0]})" if renamed else ""
                problems.append(f"{scope}: no group of the snapshot commits on topic {topic}{hint}")
            elif partition and int(partition) >= source_topics[topic]:
                problems.append(f"{scope}: {topic} has {source_topics[topic]} partitions on the source")
        return problems

    def completes(self, source: TP) -> bool:
        """Whether the operator declared ``source`` (a source partition) restored to its end."""
        if isinstance(self.restore_complete, bool):
            return self.restore_complete
        return source.topic in self.restore_complete or f"{source.topic}/{source.partition}" in self.restore_complete

    @model_validator(mode="after")
    def _coherent(self) -> PlanSettings:
        if not self.strategies:
            raise ValueError("strategies: name at least one")
        if len(set(self.strategies)) != len(self.strategies):
            raise ValueError("strategies: a strategy is named twice")
        targets = list(self.topic_map.values())
        if len(set(targets)) != len(targets):
            raise ValueError("topic_map maps two source topics to one target topic")
        return self

    def plan_settings(self) -> PlanSettings:
        """These settings alone (from a model that carries more: the execution input, a work item)."""
        return PlanSettings(**{name: getattr(self, name) for name in PlanSettings.model_fields})


PLAN_DEFAULTS = PlanSettings()
"""Every default of a plan, for the CLI's options and their help."""


class PlanOptions(PlanSettings):
    """A plan's settings and what its run knows of the target (the CLI's own options, or tests')."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target_cluster: str | None = None
    """The target's name in checkpoint keys (default: the cluster id the brokers report)."""
    mm2_checkpoints_topic: str | None = None
    """MirrorMaker 2's checkpoint topic on the target, for the mm2 strategy (default: the target's only
    ``*.checkpoints.internal``)."""
    whole_when_cheaper: bool = True
    """With ``windows``: read a partition whole, instead of searching it, when that costs fewer bytes
    than a window per position (hundreds of groups on one partition). Off only in tests of the
    windows check itself, on partitions too small for a search to be the cheaper way."""

    @classmethod
    def of(cls, settings: PlanSettings, **run: object) -> PlanOptions:
        """The options of one run from the settings it was given."""
        return cls.model_validate({**settings.plan_settings().model_dump(), **run})
