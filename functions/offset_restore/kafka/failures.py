"""What a failed Kafka call means: whether another attempt may succeed, and why a connection ended.

kafka-python reports a lost connection as a timeout and logs the cause (a SASL authentication
failure, a certificate it does not trust) instead of raising it; the helpers here collect that cause
so the error an operator reads names it. No request is sent here: the cluster's connections and
calls use these.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import kafka.errors as kafka_errors

__all__ = [
    "CLIENT_CERTIFICATE_REFUSED",
    "TELLING",
    "UNREACHABLE",
    "certificate_hint",
    "connection_errors",
    "names_a_cause",
    "telling",
    "transient",
    "within",
]

UNREACHABLE = (kafka_errors.KafkaTimeoutError, kafka_errors.KafkaConnectionError, kafka_errors.NodeNotReadyError)


@contextmanager
def connection_errors() -> Iterator[list[str]]:
    """Collect why kafka-python lost connections while this lasts: it logs the cause (a SASL
    authentication failure, a certificate it does not trust) and then only times out."""
    lost: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = record.getMessage()
            for marker in ("Connection lost:", "Connection failed:", "Abort ("):
                if marker in text:
                    cause = text.split(marker, 1)[1].strip()
                    # Only "Abort (...)" wraps its cause: elsewhere the last ")" is the cause's own (_ssl.c:2580).
                    lost.append(cause.removesuffix(")") if marker == "Abort (" else cause)

    # The transport logs the broker's answer (an authentication failure) where the connection may
    # report only that the socket closed: both are collected, and the most telling is named.
    names = ("kafka.net.connection", "kafka.net.manager", "kafka.net.transport")
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    handler = Collect(logging.ERROR)
    for logger in loggers:
        logger.addHandler(handler)
        if logger.getEffectiveLevel() > logging.ERROR:
            logger.setLevel(logging.ERROR)
    try:
        yield lost
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)


def names_a_cause(lost: Sequence[str]) -> bool:
    """Whether a collected cause says more than that the socket closed."""
    return any(words in text for text in lost for words in TELLING)


TELLING = ("Authentication", "SSL", "Handshake")
CLIENT_CERTIFICATE_REFUSED = ("ALERT_BAD_CERTIFICATE", "ALERT_CERTIFICATE_EXPIRED", "ALERT_UNKNOWN_CA",
                              "ALERT_CERTIFICATE_REQUIRED", "ALERT_CERTIFICATE_UNKNOWN")  # fmt: skip
"""What OpenSSL reports when the broker rejects the client's certificate (mutual TLS) during the handshake."""


def certificate_hint(lost: Sequence[str], presented: bool) -> str:
    """Why a mutual-TLS broker ended the handshake, in the operator's words ("" when it was not that)."""
    if not any(alert in text for text in lost for alert in CLIENT_CERTIFICATE_REFUSED):
        return ""
    if not presented:
        return (
            "; the broker requires a client certificate (mutual TLS) and none was given: --ssl-certfile and "
            "--ssl-keyfile, or ssl.keystore.* in --command-config"
        )
    return (
        "; the broker refused the client certificate: it is not of a CA the broker trusts, or it has expired "
        "(openssl x509 -noout -issuer -enddate -in CERTIFICATE)"
    )


def telling(lost: Sequence[str]) -> str:
    """The most telling of the collected causes: an authentication or TLS failure over a bare
    disconnect."""
    for words in TELLING:
        found = [text.strip() for text in lost if words in text]
        if found:
            return found[-1]
    return lost[-1].strip()


def transient(error: BaseException) -> bool:
    """A failure that a later attempt of the same request may not meet: a reset or timed-out
    connection, a coordinator or leader that moved. Not an unknown topic: that stays unknown."""
    if isinstance(error, UNREACHABLE):
        return True
    return (
        isinstance(error, kafka_errors.KafkaError)
        and bool(getattr(error, "retriable", False))
        and not isinstance(error, kafka_errors.UnknownTopicOrPartitionError)
    )


def within(seconds: float, build: Any) -> Any:
    """``build()`` on a daemon thread, or ``TimeoutError`` after ``seconds``.

    kafka-python awaits a TLS handshake without a timeout: a TLS client against a plaintext port
    waits forever. The abandoned thread ends with the process (it is a daemon).
    """
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, build()))
        except BaseException as error:  # handed to the caller below
            outcome.append((False, error))

    worker = threading.Thread(target=run, name="kafka-connect", daemon=True)
    worker.start()
    worker.join(seconds)
    if not outcome:
        raise TimeoutError(f"no answer within {seconds:g} s")
    ok, value = outcome[0]
    if not ok:
        raise value
    return value
