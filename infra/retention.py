"""CloudWatch Logs retention from a number of days in the environment's settings."""

from __future__ import annotations

from aws_cdk import aws_logs as logs

__all__ = ["retention"]

_RETENTION_DAYS = [
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
]


def retention(days: int) -> logs.RetentionDays:
    """The shortest CloudWatch retention that keeps logs at least ``days`` (enum order = day order)."""
    members = [m for m in logs.RetentionDays if m.name != "INFINITE"]
    return next((m for d, m in zip(_RETENTION_DAYS, members, strict=True) if d >= days), members[-1])
