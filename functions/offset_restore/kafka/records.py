"""Whole partitions read and records produced: for restore tools, the demo and tests.

Nothing in a restore run produces, and a restore reads what a position needs (``fetches.py`` and
``rounds.py``), never a whole partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kafka import KafkaProducer

from offset_restore.kafka.offsets import Offsets

__all__ = ["ProducedRecord", "Records"]

ProducedRecord = tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes]], int | None]
"""(key, value, headers, timestamp_ms or None) for ``KafkaCluster.produce``."""


class Records(Offsets):
    """Mixin of ``KafkaCluster``: producing. The producer is opened
    on first use and closed by ``KafkaCluster.close``."""

    _producer: KafkaProducer | None

    def produce(self, topic: str, partition: int, records: Iterable[ProducedRecord]) -> int:
        """Append records to one partition and wait until all are acknowledged; returns the count.

        For restore tools, the demo and tests; nothing in a restore run produces.
        """
        if self._producer is None:
            self._producer = self._call(
                "connecting a producer",
                KafkaProducer,
                retry=False,
                **self._client_config(),
                linger_ms=5,
                acks=1,
                # acks=1 turns kafka-python's idempotence off, and a retried batch could then land
                # after the next one: records out of order (met writing 200 partitions to Apache
                # Kafka). One request in flight keeps the order through retries.
                max_in_flight_requests_per_connection=1,
                max_block_ms=self._connect_ms,
            )
        producer = self._producer
        futures = [
            producer.send(
                topic, key=key, value=value, partition=partition, headers=list(headers), timestamp_ms=timestamp
            )
            for key, value, headers, timestamp in records
        ]
        # Not retried: producing is not idempotent here.
        self._call("producing records", producer.flush, timeout=self.settings.request_timeout_s, retry=False)
        for future in futures:
            self._call("producing records", future.get, timeout=self.settings.request_timeout_s, retry=False)
        return len(futures)
