"""A fault-injecting TCP proxy between our Kafka clients and a local broker.

It reads the Kafka framing (a 4-byte length, then the request, whose first two bytes are the API
key), so a fault hits exactly the n-th request of a kind — deterministic, unlike random packet loss:

- ``reset``: the connection is reset (RST) before the request reaches the broker;
- ``reset_after``: the request reaches the broker, then the connection is reset before the answer
  comes back (the broker did the work; the client cannot know);
- ``blackhole``: from that request on, nothing is forwarded on any connection, old or new, until
  ``heal()`` (a broker that stops answering);
- ``corrupt``: the answer to the request comes back with one bit flipped near its end — inside the
  last record batch of a Fetch answer that ends with one (a flaw on a disk or on the wire; the batch's
  CRC-32C no longer matches);
- ``latency_s``: every request is held this long before it is forwarded.

The broker behind it must advertise the proxy's address, so that every connection comes through.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["API", "Fault", "FaultProxy"]

API = {
    "Fetch": 1, "ListOffsets": 2, "Metadata": 3, "OffsetCommit": 8, "OffsetFetch": 9, "DescribeGroups": 15,
    "AddOffsetsToTxn": 25, "EndTxn": 26, "TxnOffsetCommit": 28,
}  # fmt: skip
Action = Literal["reset", "reset_after", "blackhole", "corrupt"]
CORRUPT_FROM_END = 12
"""Where ``corrupt`` flips a bit: this many bytes before the answer's end, past the tagged fields that
close a flexible Fetch answer, inside the last record of its last batch."""


@dataclass
class Fault:
    api: str
    nth: int
    """The n-th request of this API (counted from when the fault was added), 1-based."""
    action: Action
    seen: int = 0
    fired: bool = False


@dataclass
class FaultProxy:
    upstream_port: int
    port: int = 0
    latency_s: float = 0.0
    faults: list[Fault] = field(default_factory=list)
    requests: Counter[str] = field(default_factory=Counter)
    injected: Counter[str] = field(default_factory=Counter)
    commits_forwarded: Counter[str] = field(default_factory=Counter)
    """OffsetCommit requests that reached the broker, per group."""
    _blackholed: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: socket.socket | None = None
    _sockets: set[socket.socket] = field(default_factory=set)

    def start(self) -> FaultProxy:
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen(64)
        self.port = server.getsockname()[1]
        self._server = server
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            with contextlib.suppress(OSError):
                self._server.close()
            self._server = None
        self.heal()
        for sock in list(self._sockets):
            _close(sock)

    # -- configuring faults ---------------------------------------------------------------------

    def inject(self, api: str, nth: int, action: Action) -> Fault:
        fault = Fault(api, nth, action)
        with self._lock:
            self.faults.append(fault)
        return fault

    def heal(self) -> None:
        """Remove every fault, let traffic through again, and start counting afresh."""
        with self._lock:
            self.faults.clear()
            self.requests.clear()
            self.injected.clear()
            self.commits_forwarded.clear()
        self.latency_s = 0.0
        self._blackholed.clear()

    @property
    def blackholed(self) -> bool:
        return self._blackholed.is_set()

    # -- plumbing -------------------------------------------------------------------------------

    def _accept(self) -> None:
        while self._server is not None:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            except OSError:
                _close(client, reset=True)
                continue
            upstream.settimeout(None)
            self._sockets.update((client, upstream))
            corrupt: set[bytes] = set()  # correlation ids count per connection: the marks are the connection's
            threading.Thread(target=self._requests, args=(client, upstream, corrupt), daemon=True).start()
            threading.Thread(target=self._responses, args=(upstream, client, corrupt), daemon=True).start()

    def _match(self, api_key: int) -> Action | None:
        names = [name for name, key in API.items() if key == api_key]
        name = names[0] if names else str(api_key)
        with self._lock:
            self.requests[name] += 1
            for fault in self.faults:
                if fault.fired or fault.api != name:
                    continue
                fault.seen += 1
                if fault.seen == fault.nth:
                    fault.fired = True
                    self.injected[fault.action] += 1
                    return fault.action
        return None

    def _requests(self, client: socket.socket, upstream: socket.socket, corrupt: set[bytes]) -> None:
        try:
            while True:
                header = _read_exactly(client, 4)
                if header is None:
                    break
                body = _read_exactly(client, struct.unpack(">i", header)[0])
                if body is None:
                    break
                action = self._match(struct.unpack(">h", body[:2])[0])
                if action == "blackhole":
                    self._blackholed.set()
                if self._blackholed.is_set():
                    continue  # swallowed: the broker never hears of it
                if action == "reset":
                    break
                if self.latency_s:
                    time.sleep(self.latency_s)
                if action == "corrupt":
                    with self._lock:
                        corrupt.add(body[4:8])  # after the API key and version: the correlation id
                upstream.sendall(header + body)
                if body[:2] == struct.pack(">h", API["OffsetCommit"]):
                    with self._lock:
                        self.commits_forwarded[_group_of_commit(body)] += 1
                if action == "reset_after":
                    time.sleep(0.2)  # let the broker act on it, then lose the answer
                    break
        except OSError:
            pass
        _close(client, reset=True)
        _close(upstream)
        self._sockets.difference_update((client, upstream))

    def _responses(self, upstream: socket.socket, client: socket.socket, corrupt: set[bytes]) -> None:
        """Answers, one frame at a time (a 4-byte length, then the correlation id first)."""
        try:
            while (header := _read_exactly(upstream, 4)) is not None:
                body = _read_exactly(upstream, struct.unpack(">i", header)[0])
                if body is None:
                    break
                with self._lock:
                    marked = body[:4] in corrupt
                    corrupt.discard(body[:4])
                if marked and len(body) > CORRUPT_FROM_END:
                    flipped = bytearray(body)
                    flipped[-CORRUPT_FROM_END] ^= 0x01
                    body = bytes(flipped)
                if not self._blackholed.is_set():
                    client.sendall(header + body)
        except OSError:
            pass
        _close(client, reset=True)


def _group_of_commit(body: bytes) -> str:
    """The group id of an OffsetCommit: after the request header (v1 up to version 7; v2, with
    tagged fields, from 8 on, where the group id is a compact string)."""
    version = struct.unpack(">h", body[2:4])[0]
    client_id_length = struct.unpack(">h", body[8:10])[0]
    at = 10 + max(0, client_id_length)
    if version < 8:
        length = struct.unpack(">h", body[at : at + 2])[0]
        return body[at + 2 : at + 2 + length].decode(errors="replace")
    at += 1  # no tagged fields in our clients' headers
    length, shift = 0, 0
    while True:  # unsigned varint: length + 1
        byte = body[at]
        at += 1
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    return body[at : at + length - 1].decode(errors="replace")


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _close(sock: socket.socket, *, reset: bool = False) -> None:
    with contextlib.suppress(OSError):
        if reset:  # linger 0: the peer sees a connection reset, not an orderly close
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
