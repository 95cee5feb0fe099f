"""What the benches of a source and a target share: the two brokers and their clients, a producer that
writes as a real one does (a codec, a batch size), and the results file.

One helper for each loop the benches would otherwise write again (bench.shape_bench, bench.codec_bench).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kafka import KafkaProducer
from offset_restore.devtools.brokers import KINDS
from offset_restore.devtools.brokers import started as started_brokers
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.connection import ConnectionSettings

__all__ = ["RESULTS", "Row", "TwoClusters", "bench_parser", "produce", "two_clusters", "write_results"]

RESULTS = Path(__file__).parent / "results"
Row = tuple[int, bytes, bytes, list[tuple[str, bytes]], int]
"""A record to produce: partition, key, value, headers, timestamp."""


@dataclass(frozen=True)
class TwoClusters:
    source: KafkaCluster
    target: KafkaCluster
    boots: tuple[str, str]
    """Their bootstrap servers, for the producers."""


@contextmanager
def two_clusters(kind: str) -> Iterator[TwoClusters]:
    """A source and a target broker of ``kind``, started, with a client each; stopped on the way out."""
    with started_brokers(kind, "source", "target") as (src_broker, tgt_broker):
        boots = (src_broker.bootstrap_servers, tgt_broker.bootstrap_servers)
        with (
            KafkaCluster(ConnectionSettings(bootstrap_servers=boots[0])) as source,
            KafkaCluster(ConnectionSettings(bootstrap_servers=boots[1])) as target,
        ):
            yield TwoClusters(source, target, boots)


def produce(bootstrap: str, topic: str, rows: Sequence[Row], *, codec: str | None = None, batch: int = 16_384) -> None:
    """``rows`` as kafka-python's producer writes them: ``codec`` (None: uncompressed), batches of
    ``batch`` bytes at most, in order (one request in flight)."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=codec,
        batch_size=batch,
        linger_ms=50,
        acks=1,
        max_request_size=2 * 1024 * 1024,
        max_in_flight_requests_per_connection=1,
    )
    try:
        for partition, key, value, headers, stamp in rows:
            producer.send(topic, key=key, value=value, headers=headers, partition=partition, timestamp_ms=stamp)
        producer.flush(timeout=600)
    finally:
        producer.close()


def bench_parser(doc: str | None) -> argparse.ArgumentParser:
    """A bench's options, starting with ``--broker`` (Apache Kafka by default) and ``--output``."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--broker", choices=KINDS, default="apache", help="apache (default) or local")
    parser.add_argument("--output", default=None, help="results file (default: bench/results/<bench>-<broker>.md)")
    return parser


def write_results(lines: Sequence[str], output: str | None, default: str) -> None:
    """The results table to ``output`` (default ``bench/results/<default>``), and on stdout."""
    text = "\n".join(lines) + "\n"
    (Path(output) if output else RESULTS / default).write_text(text)
    print(text)
