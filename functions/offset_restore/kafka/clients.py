"""Opening kafka-python's clients: the configuration they share, and an error that says why not.

The first capability ``KafkaCluster`` is composed of (``cluster.py``): its admin client, each commit
lane and the producer are opened from here, and every request they send is counted.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import kafka.errors as kafka_errors
from kafka import KafkaAdminClient

from offset_restore.errors import BadInputError, ClusterUnreachableError
from offset_restore.kafka import internals, msk_iam
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.kafka.failures import (
    UNREACHABLE,
    certificate_hint,
    connection_errors,
    names_a_cause,
    telling,
    within,
)
from offset_restore.kafka.reachability import PROBE_TIMEOUT_S, refuse_if_nothing_listens
from offset_restore.kafka.tls_check import check_tls_files

__all__ = ["Clients"]


class Clients:
    """Mixin of ``KafkaCluster``: connecting. The attributes are set by ``KafkaCluster.__init__``."""

    settings: ConnectionSettings
    requests_sent: Counter[str]
    _count_lock: threading.Lock

    def _connect(self) -> KafkaAdminClient:
        """An admin client (its own connection), or an error that says why not: the cause
        kafka-python only logs (a wrong password, an untrusted certificate) is added to its timeout."""
        settings = self.settings
        msk_iam.client_config(settings)  # an unusable AWS identity is one line before any broker is connected to
        check_tls_files(settings)  # so is an unusable TLS file
        refuse_if_nothing_listens(settings.bootstrap_servers, min(PROBE_TIMEOUT_S, settings.connect_timeout_s))
        with connection_errors() as lost:
            return self._connect_or_explain(lost)

    def _connect_or_explain(self, lost: list[str]) -> KafkaAdminClient:
        settings = self.settings
        try:
            return within(
                settings.connect_timeout_s * 2 + 5,
                lambda: KafkaAdminClient(
                    **self._client_config(),
                    bootstrap_timeout_ms=self._connect_ms,
                    max_in_flight_requests_per_connection=32,
                    kafka_client=lambda **configs: internals.client_without_metrics(
                        **configs,
                        # A connection whose handshake is not answered counts as unreachable this soon.
                        socket_connection_setup_timeout_ms=self._connect_ms,
                        socket_connection_setup_timeout_max_ms=self._connect_ms,
                    ),
                ),
            )
        except TimeoutError:
            hint = " (a TLS client talking to a plaintext listener?)" if "SSL" in settings.security_protocol else ""
            raise ClusterUnreachableError(
                f"cannot reach Kafka at {settings.bootstrap_servers}: the connection handshake got no answer "
                f"within {settings.connect_timeout_s * 2 + 5:g} s{hint}"
            ) from None
        except UNREACHABLE as error:
            said = f"; the broker's connection ended with: {telling(lost)}" if lost else ""
            said += certificate_hint(lost, presented=settings.ssl_certfile is not None)
            if lost and "SASL" in settings.security_protocol and not names_a_cause(lost):
                said += (
                    "; a broker that refuses SASL credentials ends the connection, and kafka-python may see the "
                    "close before the refusal: check the username and the password"
                )
            raise ClusterUnreachableError(
                f"cannot reach Kafka at {settings.bootstrap_servers} "
                f"within {settings.connect_timeout_s:g} s ({type(error).__name__}){said}"
            ) from None
        except kafka_errors.KafkaConfigurationError as error:
            raise BadInputError(f"Kafka connection settings are not usable: {error}") from None

    @property
    def _connect_ms(self) -> int:
        return int(self.settings.connect_timeout_s * 1000)

    @property
    def _request_ms(self) -> int:
        return int(self.settings.request_timeout_s * 1000)

    def _client_config(self) -> dict[str, Any]:
        s = self.settings
        config: dict[str, Any] = {
            "bootstrap_servers": [server.strip() for server in s.bootstrap_servers.split(",")],
            "client_id": s.client_id,
            "request_timeout_ms": self._request_ms,
            "security_protocol": s.security_protocol,
        }
        if s.ssl_cafile:
            config["ssl_cafile"] = s.ssl_cafile
        if s.ssl_certfile:  # mutual TLS: the client's certificate and key
            config["ssl_certfile"] = s.ssl_certfile
            config["ssl_keyfile"] = s.ssl_keyfile or s.ssl_certfile
            if s.ssl_password is not None:
                config["ssl_password"] = s.ssl_password.get_secret_value()
        if s.sasl_mechanism:
            config["sasl_mechanism"] = s.sasl_mechanism
        config.update(msk_iam.client_config(s))  # AWS_MSK_IAM signs as the identity the settings name
        if s.sasl_mechanism in ("SCRAM-SHA-512", "PLAIN"):
            config["sasl_plain_username"] = s.sasl_username
            config["sasl_plain_password"] = s.sasl_password.get_secret_value() if s.sasl_password else None
        return config

    def _count_requests(self, manager: Any) -> None:
        """Wrap a connection manager's send so benchmarks can report every request by API."""
        send = manager.send
        counter, lock = self.requests_sent, self._count_lock

        def counting_send(request: Any, *args: Any, **kwargs: Any) -> Any:
            with lock:  # commit lanes send from their own I/O threads
                counter[type(request).__name__.removesuffix("Request")] += 1
            return send(request, *args, **kwargs)

        manager.send = counting_send
