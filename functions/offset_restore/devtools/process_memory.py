"""This process's resident memory, and its peak since a reset, as Lambda would count it (Linux only).

Lambda reports a function's maximum resident set; here several handlers share one process, so a
benchmark resets the kernel's peak (``/proc/self/clear_refs``) before a step and reads it after.
Elsewhere every figure is ``None``: the benchmarks say so rather than guess.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["peak_mb", "reset_peak", "resident_mb"]

_STATUS = Path("/proc/self/status")


def _field(name: str) -> float | None:
    try:
        found = re.search(rf"^{name}:\s+(\d+) kB", _STATUS.read_text(), re.MULTILINE)
    except OSError:
        return None
    return int(found.group(1)) / 1024 if found else None


def resident_mb() -> float | None:
    return _field("VmRSS")


def peak_mb() -> float | None:
    """The highest resident memory since the process started or since the last ``reset_peak``."""
    return _field("VmHWM")


def reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True
