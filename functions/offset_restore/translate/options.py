"""What a plan is asked for (``PlanOptions``) and the strategies it may try, by name: the CLI, the
handlers' work items and the workflow's input take these names; the dispatcher (translate/plan.py)
tries the strategies in the order asked for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from offset_restore.snapshot.fingerprint import DEFAULT_OFFSET_HEADER, DEFAULT_PARTITION_HEADER

__all__ = ["STRATEGIES", "OrderCheck", "PlanOptions", "Strategy"]

Strategy = Literal["header", "fingerprint", "checkpoint", "mm2", "timestamp"]
OrderCheck = Literal["windows", "full"]
STRATEGIES: tuple[Strategy, ...] = ("header", "fingerprint", "checkpoint", "mm2", "timestamp")


@dataclass(frozen=True)
class PlanOptions:
    strategies: tuple[Strategy, ...] = STRATEGIES
    offset_header: str = DEFAULT_OFFSET_HEADER
    partition_header: str = DEFAULT_PARTITION_HEADER
    """The header a restore adds with the source partition: what maps a topic whose shape changed."""
    topic_map: Mapping[str, str] = field(default_factory=dict)
    target_cluster: str | None = None
    """The target's name in checkpoint keys (default: the cluster id the brokers report)."""
    order_check: OrderCheck = "windows"
    """``windows``: the header search checks the order of every window it reads and reads a partition
    whole only when something contradicts order; ``full``: every partition is read whole (proof that
    does not rest on the order of records not read, at the cost of reading everything)."""
    timestamp_margin_ms: int = 1_000
    """The timestamp strategy resumes this much earlier than the skew it saw (clock differences)."""
    mm2_checkpoints_topic: str | None = None
    """MirrorMaker 2's checkpoint topic on the target, for the mm2 strategy (default: the target's only
    ``*.checkpoints.internal``)."""
    whole_when_cheaper: bool = True
    """With ``windows``: read a partition whole, instead of searching it, when that costs fewer bytes
    than a window per position (hundreds of groups on one partition). Off only in tests of the
    windows check itself, on partitions too small for a search to be the cheaper way."""
