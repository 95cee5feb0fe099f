"""Ending the processes the harness starts (brokers, MirrorMaker 2), one way for all of them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["end_process", "terminated_as_interrupt"]


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


@contextlib.contextmanager
def terminated_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP (``kill``, a closed terminal, a CI job cancelled)
    stop the process as Ctrl-C does — through every ``finally`` — instead of ending it on the spot
    and leaving the brokers it started running. Only the main thread can take signals; elsewhere
    this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
