"""``--command-config``: the client.properties files MSK's guides give (IAM, SCRAM, TLS) read as
they are; what this client cannot do refused by name; nothing unused dropped silently."""

from __future__ import annotations

from pathlib import Path

import pytest
from offset_restore.errors import BadInputError
from offset_restore.kafka.client_properties import parse_properties, read_client_properties
from offset_restore.kafka.connection import ConnectionSettings

MSK_IAM = """# MSK's IAM client.properties
security.protocol=SASL_SSL
sasl.mechanism=AWS_MSK_IAM
sasl.jaas.config=software.amazon.msk.auth.iam.IAMLoginModule required;
sasl.client.callback.handler.class=software.amazon.msk.auth.iam.IAMClientCallbackHandler
"""
MSK_SCRAM = """security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
ssl.truststore.location=/tmp/kafka.client.truststore.jks
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
    username="alice" \\
    password="s3cr\\\\"et";
"""


def read(tmp_path: Path, text: str) -> tuple[dict[str, object], list[str]]:
    path = tmp_path / "client.properties"
    path.write_text(text, encoding="latin-1")
    properties = read_client_properties(str(path))
    return properties.values, properties.warnings


def test_msks_iam_file_selects_iam_over_tls_and_warns_of_nothing(tmp_path: Path) -> None:
    values, warnings = read(tmp_path, MSK_IAM)
    assert values == {"security_protocol": "SASL_SSL", "sasl_mechanism": "AWS_MSK_IAM"} and warnings == []
    ConnectionSettings(bootstrap_servers="b-1.x.kafka.eu-west-1.amazonaws.com:9098", **values)  # type: ignore[arg-type]


def test_msks_scram_file_gives_the_user_and_password_and_says_the_jks_truststore_is_not_read(tmp_path: Path) -> None:
    values, warnings = read(tmp_path, MSK_SCRAM)
    assert values == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_username": "alice",
        "sasl_password": 's3cr"et',
    }
    assert len(warnings) == 1 and "kafka.client.truststore.jks (JKS) is not read" in warnings[0]
    assert "--ssl-cafile" in warnings[0] and "s3cr" not in warnings[0]


def test_a_pem_truststore_is_the_ca_file_and_java_only_settings_are_named(tmp_path: Path) -> None:
    values, warnings = read(
        tmp_path,
        "security.protocol: SSL\nssl.truststore.type=PEM\nssl.truststore.location=/etc/ca.pem\n"
        "! a comment\nreconnect.backoff.ms 500\nclient.id=ops\n",
    )
    assert values == {"security_protocol": "SSL", "ssl_cafile": "/etc/ca.pem", "client_id": "ops"}
    assert warnings == [f"--command-config {tmp_path / 'client.properties'}: not used by offset-restore (Java "
                        "client settings): reconnect.backoff.ms"]  # fmt: skip


def test_javas_properties_format() -> None:
    text = "a=1\n  b : 2\nc 3\nd=x\\\n   y\ne\\=f=\\u0041\\t\n# g=7\nh=\n"
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "xy", "e=f": "A\t", "h": ""}


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("security.protocol=SASL_PLAINTEXT\n", "security.protocol SASL_PLAINTEXT is not supported"),
        ("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n", "sasl.mechanism SCRAM-SHA-256 is not supported"),
        ("security.protocol=SSL\nssl.keystore.location=/k.jks\n", "is a JKS keystore, which offset-restore cannot"),
        (
            "sasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
            'required username="alice";\n',
            "needs sasl.jaas.config with a username and a password",
        ),
        ("sasl.mechanism=PLAIN\nsasl.jaas.config=nonsense\n", "sasl.jaas.config is not 'LoginModule required"),
    ],
)
def test_what_cannot_work_is_refused_by_name(tmp_path: Path, text: str, named: str) -> None:
    with pytest.raises(BadInputError, match=r"--command-config .*client\.properties: ") as refused:
        read(tmp_path, text)
    assert named in str(refused.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match=r"--command-config .*nope.properties: No such file or directory"):
        read_client_properties(str(tmp_path / "nope.properties"))


def test_msks_scram_file_without_jaas_takes_the_credentials_from_the_options(tmp_path: Path) -> None:
    """MSK's SCRAM guide keeps the JAAS apart (KAFKA_OPTS): the file names the mechanism only, the
    command line gives the user and the password; without them the connection says what it needs."""
    values, warnings = read(tmp_path, "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n")
    assert values == {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512"} and warnings == []
    with pytest.raises(ValueError, match="SCRAM-SHA-512 needs a username and a password"):
        ConnectionSettings(bootstrap_servers="b-1:9096", **values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("content", "named"),
    [
        (b"sasl.jaas.config=abc\\u12\n", "line 1: a malformed \\uxxxx escape"),
        (b"a=b\nc=\\uZZZZ\n", "line 2: a malformed \\uxxxx escape"),
        (b"security.protocol=SSL\n\x00\x01\x02", "holds NUL bytes"),
        (b"a=" + b"x" * (1024 * 1024 + 10), "larger than 1,048,576 bytes"),
    ],
    ids=["short-escape", "bad-hex-escape", "binary", "too-large"],
)
def test_a_file_that_is_no_client_configuration_is_one_line(tmp_path: Path, content: bytes, named: str) -> None:
    """Bad escapes, binary files and huge ones (``/dev/zero``) ended in a traceback or a MemoryError."""
    path = tmp_path / "client.properties"
    path.write_bytes(content)
    with pytest.raises(BadInputError, match=r"--command-config .*client\.properties: ") as refused:
        read_client_properties(str(path))
    assert named in str(refused.value) and "\n" not in str(refused.value)


def test_dev_zero_is_refused_without_reading_it_all() -> None:
    with pytest.raises(BadInputError, match=r"--command-config /dev/zero: larger than"):
        read_client_properties("/dev/zero")
