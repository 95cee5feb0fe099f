"""TLS files checked before any broker is connected to (kafka/tls_check.py): each problem one line naming the
file, at once — they used to wait the whole connect timeout (31 s) and then say "cannot reach Kafka"."""

from __future__ import annotations

import datetime
import io
import time
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from offset_restore.cli.main import main
from offset_restore.errors import BadInputError
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.kafka.tls_check import check_tls_files
from pydantic import SecretStr

NOW = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)


def _pair(folder: Path, name: str, password: bytes | None = None) -> tuple[str, str]:
    """A self-signed certificate and its key as PEM files (the key encrypted with ``password`` if given)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW)
        .not_valid_after(NOW + datetime.timedelta(days=3650))
        .sign(key, hashes.SHA256())
    )
    encryption = serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
    (folder / f"{name}.pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    (folder / f"{name}.key").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    )
    return str(folder / f"{name}.pem"), str(folder / f"{name}.key")


def _settings(**files: str | SecretStr) -> ConnectionSettings:
    return ConnectionSettings(bootstrap_servers="127.0.0.1:1", security_protocol="SSL", **files)  # type: ignore[arg-type]


def test_usable_files_pass_and_a_connection_without_tls_checks_nothing(tmp_path: Path) -> None:
    certificate, key = _pair(tmp_path, "client")
    check_tls_files(_settings(ssl_cafile=certificate, ssl_certfile=certificate, ssl_keyfile=key))
    locked_certificate, locked_key = _pair(tmp_path, "locked", b"s3cret")
    password = SecretStr("s3cret")
    check_tls_files(_settings(ssl_certfile=locked_certificate, ssl_keyfile=locked_key, ssl_password=password))
    check_tls_files(ConnectionSettings(bootstrap_servers="127.0.0.1:1", ssl_cafile="/dev/zero"))


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("key of another certificate", r"^the client key .*other\.key is not the key of the client certificate"),
        ("encrypted key, no password", r"other-locked\.key: the key is encrypted and no password was given"),
        ("encrypted key, wrong password", r"other-locked\.key: not a usable PEM key, or the password given"),
        ("empty certificate", r"^the client certificate.*empty: holds no PEM certificate"),
        ("garbage key", r"^the client key.*garbage: holds no PEM private key"),
        ("garbage CA", r"^the CA file \(--ssl-cafile or ssl\.truststore\.\*\).*garbage: holds no PEM certificate"),
        ("CA from /dev/zero", r"^the CA file .*/dev/zero: larger than 1,048,576 bytes"),
        ("missing certificate", r"^the client certificate.*missing\.pem: No such file or directory"),
    ],
)
def test_each_problem_is_one_line_naming_the_file(tmp_path: Path, case: str, said: str) -> None:
    certificate, _ = _pair(tmp_path, "client")
    _, other_key = _pair(tmp_path, "other")
    _, locked_key = _pair(tmp_path, "other-locked", b"s3cret")
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "garbage").write_bytes(b"not PEM at all\n")
    settings = {
        "key of another certificate": _settings(ssl_certfile=certificate, ssl_keyfile=other_key),
        "encrypted key, no password": _settings(ssl_certfile=certificate, ssl_keyfile=locked_key),
        "encrypted key, wrong password": _settings(
            ssl_certfile=certificate, ssl_keyfile=locked_key, ssl_password=SecretStr("wrong")
        ),
        "empty certificate": _settings(ssl_certfile=str(tmp_path / "empty"), ssl_keyfile=other_key),
        "garbage key": _settings(ssl_certfile=certificate, ssl_keyfile=str(tmp_path / "garbage")),
        "garbage CA": _settings(ssl_cafile=str(tmp_path / "garbage")),
        "CA from /dev/zero": _settings(ssl_cafile="/dev/zero"),
        "missing certificate": _settings(ssl_certfile=str(tmp_path / "missing.pem")),
    }[case]
    with pytest.raises(BadInputError, match=said) as refused:
        check_tls_files(settings)
    assert "\n" not in str(refused.value)


def test_the_cli_says_so_at_once_not_after_the_connect_timeout(tmp_path: Path) -> None:
    """A certificate and a key that do not match, on a command with a 30 s connect timeout: exit 2 at once."""
    certificate, _ = _pair(tmp_path, "client")
    _, other_key = _pair(tmp_path, "other")
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    status = main(
        ["snapshot", "--bootstrap-servers", "127.0.0.1:9", "--security-protocol", "SSL", "--ssl-certfile", certificate,
         "--ssl-keyfile", other_key, "--output", str(tmp_path / "snaps"), "--connect-timeout", "30"],
        out, err,
    )  # fmt: skip
    assert status == 2, err.getvalue()
    assert "is not the key of the client certificate" in err.getvalue(), err.getvalue()
    assert time.monotonic() - started < 20  # not the 30 s connect timeout (nor twice it and 5 s)
    assert not (tmp_path / "snaps").exists()
