"""The TLS files a connection names, loaded and checked before any broker is connected to.

kafka-python loads the CA file, the client certificate and its key only when it opens a connection, and a
file it cannot use then ends that connection: the tool waited its whole connect timeout and said "cannot
reach Kafka". Loaded here first, as Python's ``ssl`` will load them, each problem is one line naming the
file at once: a file that is missing, unreadable or too large, one that holds no certificate, a key that is
not the certificate's, an encrypted key without its password (OpenSSL would ask for it on the terminal).
"""

from __future__ import annotations

import ssl

from offset_restore.errors import BadInputError
from offset_restore.files import read_bounded
from offset_restore.kafka.connection import ConnectionSettings

__all__ = ["check_tls_files"]

MAX_PEM_BYTES = 1024 * 1024
"""The largest PEM file read: a CA bundle of every public CA is about 200 KB."""
CA = "the CA file (--ssl-cafile or ssl.truststore.*)"
CERTIFICATE = "the client certificate (--ssl-certfile or ssl.keystore.*)"
KEY = "the client key (--ssl-keyfile or ssl.keystore.*)"


class _NoPassword(Exception):
    """The key is encrypted and no password was given."""


def check_tls_files(settings: ConnectionSettings) -> None:
    """Refuse, naming the file, what kafka-python could not load; nothing for a connection without TLS."""
    if settings.security_protocol not in ("SSL", "SASL_SSL"):
        return
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if settings.ssl_cafile:
        if "-----BEGIN CERTIFICATE-----" not in _text(settings.ssl_cafile, CA):  # read within its bound first
            raise BadInputError(f"{CA} {settings.ssl_cafile}: holds no PEM certificate")
        try:
            context.load_verify_locations(cafile=settings.ssl_cafile)
        except (ssl.SSLError, ValueError, OSError) as error:
            raise BadInputError(f"{CA} {settings.ssl_cafile}: not usable PEM ({_reason(error)})") from None
    if settings.ssl_certfile:
        _check_pair(context, settings)


def _check_pair(context: ssl.SSLContext, settings: ConnectionSettings) -> None:
    certfile = settings.ssl_certfile or ""
    keyfile = settings.ssl_keyfile or certfile
    if "-----BEGIN CERTIFICATE-----" not in _text(certfile, CERTIFICATE):
        raise BadInputError(f"{CERTIFICATE} {certfile}: holds no PEM certificate")
    key_text = _text(keyfile, KEY)
    if "PRIVATE KEY-----" not in key_text:
        raise BadInputError(f"{KEY} {keyfile}: holds no PEM private key")
    password = settings.ssl_password.get_secret_value() if settings.ssl_password is not None else None

    def no_password() -> str:
        raise _NoPassword

    try:
        context.load_cert_chain(certfile, keyfile, password=password if password is not None else no_password)
    except _NoPassword:
        raise BadInputError(
            f"{KEY} {keyfile}: the key is encrypted and no password was given (--ssl-key-password-env, or "
            "ssl.key.password)"
        ) from None
    except (ssl.SSLError, ValueError, OSError) as error:
        raise BadInputError(_why(error, certfile, keyfile, password is not None)) from None


def _why(error: Exception, certfile: str, keyfile: str, password: bool) -> str:
    if "KEY_VALUES_MISMATCH" in str(error):
        return f"{KEY} {keyfile} is not the key of {CERTIFICATE} {certfile}"
    if password:
        return f"{KEY} {keyfile}: not a usable PEM key, or the password given does not open it ({_reason(error)})"
    return f"{CERTIFICATE} {certfile} or its key {keyfile}: not usable PEM ({_reason(error)})"


def _reason(error: Exception) -> str:
    said = getattr(error, "reason", None) or getattr(error, "strerror", None) or str(error)
    return " ".join(str(said).split())


def _text(path: str, what: str) -> str:
    data = read_bounded(path, limit=MAX_PEM_BYTES, what=what, kind="a PEM file")
    return data.decode("latin-1")
