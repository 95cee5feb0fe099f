"""A one-line progress display on a terminal; silent when the stream is a pipe or a file."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["ProgressLine"]


class ProgressLine:
    def __init__(self, stream: TextIO | None = None, *, enabled: bool | None = None, every_s: float = 0.2) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.every_s = every_s
        self._last = 0.0
        self._shown = False

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < self.every_s and done < total:
            return
        self._last = now
        share = f" ({100 * done // total}%)" if total else ""
        self.stream.write(f"\r\x1b[2K{phase}: {done:,}/{total:,}{share}")
        self.stream.flush()
        self._shown = True

    def finish(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._shown = False
