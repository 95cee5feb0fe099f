"""Whether anything listens at the bootstrap servers, asked the cheap way before kafka-python is.

kafka-python retries a refused connection until its bootstrap timeout (30 s by default) and then
says ``KafkaTimeoutError``. A typo in a port or a host name is the commonest cause at 3 am, and
the operator should read that at once: one TCP connect per server (stopping at the first that
answers) tells a refused port or an unknown host within a second. A server that does not answer
at all (a firewall dropping packets) is left to the client's own timeout, as before.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable

from offset_restore.errors import ClusterUnreachableError

__all__ = ["PROBE_TIMEOUT_S", "refuse_if_nothing_listens"]

PROBE_TIMEOUT_S = 1.0

Connect = Callable[[tuple[str, int], float], socket.socket]


def refuse_if_nothing_listens(
    bootstrap_servers: str, timeout_s: float = PROBE_TIMEOUT_S, connect: Connect = socket.create_connection
) -> None:
    """Raise ``ClusterUnreachableError`` naming each server when every one refused the connection or
    has a host name that does not resolve; return as soon as one accepts or does not answer."""
    reasons = []
    for server in (s.strip() for s in bootstrap_servers.split(",")):
        host, _, port = server.rpartition(":")
        try:
            connect((host.strip("[]"), int(port)), timeout_s).close()
            return
        except socket.gaierror:
            reasons.append(f"{server}: host {host} does not resolve")
        except ConnectionRefusedError:
            reasons.append(f"{server}: connection refused (nothing listens on that port)")
        except OSError as error:
            if error.errno not in (errno.EHOSTUNREACH, errno.ENETUNREACH):
                return  # no answer yet (timeout, filtered): the client's own timeout decides
            reasons.append(f"{server}: {error.strerror or error}")
    raise ClusterUnreachableError(
        f"cannot reach Kafka: {'; '.join(reasons)} — check --bootstrap-servers (host and port)"
    )
