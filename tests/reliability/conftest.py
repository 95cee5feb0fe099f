"""A broker behind a fault-injecting proxy: every client connection goes through the proxy."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from offset_restore.devtools.local_broker import free_port
from offset_restore.kafka.connection import ConnectionSettings

from tests.fault_proxy import FaultProxy
from tests.helpers import TestBroker, new_broker


@dataclass
class Faulty:
    broker: TestBroker
    proxy: FaultProxy

    def settings(self, **overrides: object) -> ConnectionSettings:
        """Short timeouts and back-offs, so that exhausting the retries takes seconds."""
        values: dict[str, object] = {
            "connect_timeout_s": 3,
            "request_timeout_s": 1.5,
            "retries": 3,
            "retry_backoff_s": 0.05,
            "retry_backoff_max_s": 0.4,
            **overrides,
        }
        return self.broker.settings(**values)


@pytest.fixture(scope="module")
def faulty_broker() -> Iterator[Faulty]:
    proxy = FaultProxy(upstream_port=free_port(), port=free_port())
    broker = new_broker("faulty", port=proxy.upstream_port, advertised_port=proxy.port)
    proxy.start()
    try:
        broker.start()
        yield Faulty(broker, proxy)
    finally:
        broker.stop()
        proxy.stop()


@pytest.fixture
def faulty(faulty_broker: Faulty) -> Iterator[Faulty]:
    faulty_broker.proxy.heal()
    yield faulty_broker
    faulty_broker.proxy.heal()
