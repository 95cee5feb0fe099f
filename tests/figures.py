"""Figures for docs/reliability.md's tables: tests append what they tried and how it ended.

Recorded only when ``OFFSET_RESTORE_FIGURES`` names a file (``python -m bench.reliability`` sets
it); a plain test run records nothing. Each line is a JSON object with a ``kind``.
"""

from __future__ import annotations

import json
import os
import threading

__all__ = ["record"]

_lock = threading.Lock()


def record(kind: str, **fields: object) -> None:
    path = os.environ.get("OFFSET_RESTORE_FIGURES")
    if not path:
        return
    with _lock, open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps({"kind": kind, **fields}, sort_keys=True) + "\n")
