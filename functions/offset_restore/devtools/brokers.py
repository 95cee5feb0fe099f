"""Brokers for tests, benchmarks and the demo, of either kind: the zero-dependency local broker or
Apache Kafka. Several start together (Apache Kafka's JVMs launch in parallel, then each is waited for)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager

from offset_restore.devtools.apache_broker import ApacheBroker
from offset_restore.devtools.local_broker import LocalBroker
from offset_restore.devtools.processes import terminated_as_interrupt

__all__ = ["BROKER_NAMES", "KINDS", "Broker", "new_broker", "start_all", "started"]

Broker = LocalBroker | ApacheBroker
KINDS = ("local", "apache")
BROKER_NAMES = {"local": "local brokers (Tansu)", "apache": "Apache Kafka 4.1.1 brokers (single-node KRaft)"}


def new_broker(kind: str, name: str, *, port: int = 0, advertised_port: int = 0) -> Broker:
    """A broker of ``kind``, not yet started."""
    if kind == "local":
        return LocalBroker(name, port=port, advertised_port=advertised_port)
    if kind == "apache":
        return ApacheBroker(name, port=port, advertised_port=advertised_port)
    raise ValueError(f"broker kind {kind!r}: choose {' or '.join(KINDS)}")


@contextmanager
def started(kind: str, *names: str) -> Iterator[list[Broker]]:
    """Brokers of one kind, started together, stopped on exit (also when a start fails, and on
    SIGTERM or SIGHUP as on Ctrl-C)."""
    with terminated_as_interrupt(), ExitStack() as stack:
        brokers = [new_broker(kind, name) for name in names]
        start_all(brokers, stack)
        yield brokers


def start_all(brokers: Sequence[Broker], stack: ExitStack) -> None:
    """Start brokers together (Apache Kafka's JVMs launched at once, then waited for: their start-ups
    overlap), each stopped when ``stack`` closes."""
    for broker in brokers:
        stack.callback(broker.stop)
        if isinstance(broker, ApacheBroker):
            broker.launch()
        else:
            broker.start()
    for broker in brokers:
        if isinstance(broker, ApacheBroker):
            broker.wait_ready()
