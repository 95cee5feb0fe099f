"""The benchmarks' brokers: the local broker (default) or Apache Kafka 4.1, chosen by ``--broker``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from offset_restore.devtools.apache_broker import ApacheBroker
from offset_restore.devtools.local_broker import LocalBroker

__all__ = ["BROKERS", "BROKER_NAMES", "started"]

BROKERS = ("local", "apache")
BROKER_NAMES = {"local": "local brokers (Tansu)", "apache": "Apache Kafka 4.1.1 brokers (single-node KRaft)"}


@contextmanager
def started(kind: str, *names: str) -> Iterator[list[LocalBroker | ApacheBroker]]:
    """Brokers of one kind, started together (Apache Kafka's JVMs launch in parallel), stopped on exit."""
    with ExitStack() as stack:
        brokers: list[LocalBroker | ApacheBroker] = []
        for name in names:
            broker: LocalBroker | ApacheBroker = LocalBroker(name) if kind == "local" else ApacheBroker(name)
            stack.callback(broker.stop)
            if isinstance(broker, ApacheBroker):
                broker.launch()
            else:
                broker.start()
            brokers.append(broker)
        for broker in brokers:
            if isinstance(broker, ApacheBroker):
                broker.wait_ready()
        yield brokers
