"""Progress on long work: one line redrawn in place on a terminal; in a pipe, a CI job or an SSM session
(no terminal), timestamped log lines for the phases that wait on people — a wait of up to 900 s for
consumers to stop must not look like a hung command — and silence for the rest."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TextIO

from offset_restore.terminal import printable_line

__all__ = ["HEARTBEAT_S", "WAITS", "ProgressLine"]

WAITS = ("waiting",)
"""The phases logged without a terminal: the waits for groups to empty, for consumers to stop on the
source, for the target to hold every record (their phase text says who is still waited for)."""

HEARTBEAT_S = 60.0
"""Without a terminal, a logged phase says it is still there at least this often, changed or not."""


class ProgressLine:
    """``log``: the phase prefixes written as timestamped lines when the stream is no terminal — one
    each time what they say changes (a group emptied, a member left) and a heartbeat at least every
    ``heartbeat_s``."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        enabled: bool | None = None,
        every_s: float = 0.2,
        log: tuple[str, ...] = WAITS,
        heartbeat_s: float = HEARTBEAT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.every_s, self.log, self.heartbeat_s, self.clock = every_s, log, heartbeat_s, clock
        self._last = float("-inf")
        self._shown = False
        self._logged: tuple[str, float] = ("", float("-inf"))

    def __call__(self, phase: str, done: int, total: int) -> None:
        share = f" ({100 * done // total}%)" if total else ""
        text = printable_line(f"{phase}: {done:,}/{total:,}{share}")
        if self.enabled:
            self._redraw(text, done < total)
        elif phase.startswith(self.log):
            self._log_line(text)

    def _redraw(self, text: str, unfinished: bool) -> None:
        now = self.clock()
        if now - self._last < self.every_s and unfinished:
            return
        self._last = now
        width = shutil.get_terminal_size().columns - 1  # a wrapped line could not be cleared in place
        self.stream.write(f"\r\x1b[2K{text[:width]}")
        self.stream.flush()
        self._shown = True

    def _log_line(self, text: str) -> None:
        now = self.clock()
        said, at = self._logged
        if text == said and now - at < self.heartbeat_s:
            return
        self._logged = (text, now)
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.stream.write(f"{stamp} {text}{' (still)' if text == said else ''}\n")
        self.stream.flush()

    def finish(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._shown = False
