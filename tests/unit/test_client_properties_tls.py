"""Keystores and truststores in a client.properties (issue 39): what is read as it is, what becomes PEM
files, and what is refused with the command that converts it — nothing ignored in silence."""

from __future__ import annotations

import pytest
from offset_restore.errors import BadInputError
from offset_restore.kafka.client_properties import Store, client_properties


def test_a_pem_keystore_is_the_certificate_and_key_file_and_its_key_password_is_kept() -> None:
    found = client_properties(
        {"ssl.keystore.type": "PEM", "ssl.keystore.location": "/k.pem", "ssl.key.password": "pw"}, "c"
    )
    assert found.values == {"ssl_certfile": "/k.pem", "ssl_keyfile": "/k.pem", "ssl_password": "pw"}
    assert found.keystore is None and not found.warnings


def test_pkcs12_and_inline_stores_are_turned_into_pem_files_later() -> None:
    found = client_properties(
        {
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": "/c.p12",
            "ssl.keystore.password": "store",
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": "/t.p12",
            "ssl.truststore.password": "trust",
        },
        "c",
    )
    assert found.keystore == Store("PKCS12", "/c.p12", "store")
    assert found.truststore == Store("PKCS12", "/t.p12", "trust") and not found.warnings
    inline = client_properties({"ssl.keystore.certificate.chain": "CHAIN", "ssl.keystore.key": "KEY"}, "c")
    assert inline.keystore == Store("PEM", text="CHAIN", key="KEY")
    with pytest.raises(BadInputError, match=r"ssl\.keystore\.certificate\.chain needs ssl\.keystore\.key"):
        client_properties({"ssl.keystore.certificate.chain": "CHAIN"}, "c")


def test_a_jks_keystore_is_refused_with_the_keytool_command_that_converts_it() -> None:
    with pytest.raises(BadInputError) as refused:
        client_properties({"ssl.keystore.location": "/etc/kafka/client.jks", "ssl.keystore.password": "s3cret"}, "c")
    said = str(refused.value)
    assert "keytool -importkeystore -srckeystore /etc/kafka/client.jks -srcstoretype JKS" in said
    assert "-deststoretype PKCS12" in said and "ssl.keystore.type=PKCS12" in said and "s3cret" not in said
    with pytest.raises(BadInputError, match=r"ssl\.keystore\.type BKS is not supported"):
        client_properties({"ssl.keystore.location": "/k", "ssl.keystore.type": "BKS"}, "c")


def test_a_jks_truststore_says_the_system_cas_are_used_and_how_to_give_a_private_ca() -> None:
    found = client_properties({"ssl.truststore.location": "/cacerts", "ssl.truststore.password": "changeit"}, "c")
    assert found.truststore is None and "system's CA certificates are used" in found.warnings[0]
    assert "keytool -exportcert -rfc -keystore /cacerts" in found.warnings[0]


def test_a_pkcs12_file_with_a_wrong_password_is_named_in_one_line(tmp_path: object) -> None:
    import datetime
    from pathlib import Path

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import NameOID
    from offset_restore.kafka.client_properties import ClientProperties
    from offset_restore.kafka.tls_files import materialize

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "client")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    path = Path(str(tmp_path)) / "client.p12"
    path.write_bytes(
        pkcs12.serialize_key_and_certificates(b"c", key, cert, None, serialization.BestAvailableEncryption(b"right"))
    )
    files = materialize(ClientProperties(keystore=Store("PKCS12", str(path), "right")))
    written = Path(files["ssl_certfile"]).read_text()
    assert written.startswith("-----BEGIN CERTIFICATE-----") and "PRIVATE KEY" in Path(files["ssl_keyfile"]).read_text()
    assert Path(files["ssl_keyfile"]).stat().st_mode & 0o077 == 0  # readable by this user alone
    with pytest.raises(BadInputError, match=r"not a PKCS12 file, or its password .* does not open it"):
        materialize(ClientProperties(keystore=Store("PKCS12", str(path), "wrong")))
