"""The client certificate, its key and the CAs as the PEM files kafka-python (Python's ``ssl``) reads,
from what a Kafka user has: a PKCS12 keystore or truststore (read with ``cryptography``, the PyCA
library), PEM given inline in a client properties file, or a deployment's secret (the Lambdas).

Each call writes into a private folder of its own (mode 0700, files 0600), removed when the process
exits: a key taken out of a PKCS12 file is written unencrypted, readable by this user alone, for as
long as the process runs. The Lambdas call this on every invocation, so a rotated certificate is used
from the next one.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from offset_restore.errors import BadInputError
from offset_restore.files import read_bounded

if TYPE_CHECKING:
    from offset_restore.kafka.client_properties import ClientProperties, Store

__all__ = ["materialize", "pem_files"]


def _folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="offset-restore-tls-"))  # mode 0700
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.touch(mode=0o600)
    path.write_text(text)
    return str(path)


def pem_files(certificate: str | None, key: str | None, ca: str | None) -> dict[str, str]:
    """``ConnectionSettings`` fields for PEM text: the certificate chain, its key and the CAs, each given."""
    folder, found = _folder(), {}
    if certificate:
        found["ssl_certfile"] = _write(folder, "client.pem", certificate)
    if key:
        found["ssl_keyfile"] = _write(folder, "client.key", key)
    if ca:
        found["ssl_cafile"] = _write(folder, "ca.pem", ca)
    return found


def materialize(properties: ClientProperties) -> dict[str, Any]:
    """The ``ConnectionSettings`` fields of the stores a properties file names (none: nothing)."""
    found: dict[str, Any] = {}
    if properties.keystore is not None:
        certificate, key = _keystore(properties.keystore)
        found |= pem_files(certificate, key, None)
    if properties.truststore is not None:
        found |= pem_files(None, None, _truststore(properties.truststore))
    return found


def _keystore(store: Store) -> tuple[str, str]:
    if store.kind == "PEM":
        return store.text or "", store.key or ""
    key, certificate, chain = _pkcs12(store, "ssl.keystore.location")
    if key is None or certificate is None:
        raise BadInputError(
            f"ssl.keystore.location {store.location}: the PKCS12 file holds no private key and certificate"
        )
    from cryptography.hazmat.primitives import serialization

    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    return "".join(c.public_bytes(pem).decode() for c in (certificate, *chain)), key_pem


def _truststore(store: Store) -> str:
    if store.kind == "PEM":
        return store.text or ""
    _, certificate, chain = _pkcs12(store, "ssl.truststore.location")
    from cryptography.hazmat.primitives import serialization

    found = [c for c in (certificate, *chain) if c is not None]
    if not found:
        raise BadInputError(f"ssl.truststore.location {store.location}: the PKCS12 file holds no certificate")
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in found)


MAX_STORE_BYTES = 1024 * 1024
"""The largest PKCS12 file read: a keystore holds a key and a few certificates, some kilobytes; a truststore
of every public CA is some hundreds. Past it (``/dev/zero`` by mistake) the file is refused, not read on."""


def _pkcs12(store: Store, what: str) -> tuple[Any, Any, list[Any]]:
    """A PKCS12 file's key, certificate and further certificates; a wrong password or a file that is not
    PKCS12 named in one line (``what``: the property that names it)."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    data = read_bounded(store.location or "", limit=MAX_STORE_BYTES, what=what, kind="a PKCS12 file")
    password = store.password.encode() if store.password else None
    try:
        key, certificate, chain = pkcs12.load_key_and_certificates(data, password)
    except ValueError:
        raise BadInputError(
            f"{what} {store.location}: not a PKCS12 file, or its password ({what.replace('location', 'password')}) "
            "does not open it"
        ) from None
    return key, certificate, list(chain)
