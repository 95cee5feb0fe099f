"""Ending the processes the harness starts (brokers, MirrorMaker 2), one way for all of them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

__all__ = ["end_process"]


def end_process(process: subprocess.Popen[bytes] | None, *, grace_s: float = 30, group: bool = True) -> None:
    """SIGTERM (a JVM shuts Kafka or MirrorMaker down cleanly on it), SIGKILL after ``grace_s``; to the
    whole process group when the process leads one (``start_new_session``), so a JVM's children go too."""
    if process is None or process.poll() is not None:
        return
    send = (lambda sig: os.killpg(process.pid, sig)) if group else (lambda sig: os.kill(process.pid, sig))
    with contextlib.suppress(ProcessLookupError):
        send(signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            send(signal.SIGKILL)
        process.wait(timeout=10)
