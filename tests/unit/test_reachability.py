"""Nothing listening at the bootstrap servers is said at once, by name (a refused port, a host that
does not resolve), instead of kafka-python's KafkaTimeoutError after its whole bootstrap timeout."""

from __future__ import annotations

import io
import socket

import pytest
from offset_restore.cli.main import main
from offset_restore.errors import ClusterUnreachableError
from offset_restore.kafka.reachability import refuse_if_nothing_listens


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_every_server_refused_or_unknown_is_named() -> None:
    port = closed_port()
    with pytest.raises(ClusterUnreachableError) as refused:
        refuse_if_nothing_listens(f"127.0.0.1:{port}, no-such-broker.invalid:9092")
    message = str(refused.value)
    assert f"127.0.0.1:{port}: connection refused (nothing listens on that port)" in message
    assert "no-such-broker.invalid:9092: host no-such-broker.invalid does not resolve" in message
    assert message.endswith("check --bootstrap-servers (host and port)")


def test_one_listening_server_is_enough() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        refuse_if_nothing_listens(f"127.0.0.1:{closed_port()},127.0.0.1:{listening.getsockname()[1]}")


def test_a_server_that_does_not_answer_is_left_to_the_clients_timeout() -> None:
    def silent(address: tuple[str, int], timeout: float) -> socket.socket:
        raise TimeoutError("timed out")

    refuse_if_nothing_listens("10.255.255.1:9092", connect=silent)  # no error: the client waits as before


def test_the_cli_says_connection_refused_with_exit_1_and_writes_nothing(tmp_path: object) -> None:
    out, err = io.StringIO(), io.StringIO()
    output = f"{tmp_path}/snaps"
    status = main(["snapshot", "--bootstrap-servers", f"127.0.0.1:{closed_port()}", "--output", output], out, err)
    assert status == 1 and "connection refused (nothing listens on that port)" in err.getvalue()
    assert err.getvalue().count("\n") == 1 and "KafkaTimeoutError" not in err.getvalue()
