"""Keep credentials out of logs whatever level the root logger or a library logger is given.

Two guards: the libraries whose DEBUG output carries credentials are held at INFO, and every log
record is redacted of the secrets this process knows (SASL passwords it read, the AWS secret key and
session token in its environment) — the second covers a logger an operator turned to DEBUG by hand.
"""

from __future__ import annotations

import logging
import os
from typing import Any

__all__ = ["REDACTED", "keep_secrets_out_of_logs", "register_secret"]

REDACTED = "***"
# botocore logs request headers (the IAM session token) and response bodies (a Secrets Manager
# secret); kafka-python logs its whole configuration (a SASL password) when a client starts.
_LEAKY_LOGGERS = ("botocore", "boto3", "urllib3", "s3transfer", "kafka")
_ENV_SECRETS = ("AWS_SESSION_TOKEN", "AWS_SECRET_ACCESS_KEY")
_secrets: set[str] = set()
_installed = False


def register_secret(value: str | None) -> None:
    """Redact ``value`` from every log record from now on (short values would redact noise)."""
    if value and len(value) >= 6:
        _secrets.add(value)
    _install()


def keep_secrets_out_of_logs() -> None:
    for name in _LEAKY_LOGGERS:
        library = logging.getLogger(name)
        if library.level < logging.INFO:  # NOTSET too: it would follow the root logger down
            library.setLevel(logging.INFO)
    _install()


def _known_secrets() -> list[str]:
    from_env = [os.environ.get(name, "") for name in _ENV_SECRETS]
    return [s for s in (*_secrets, *from_env) if len(s) >= 6]


def _install() -> None:
    global _installed
    if _installed:
        return
    _installed = True
    make_record = logging.getLogRecordFactory()

    def redacting(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make_record(*args, **kwargs)
        secrets = _known_secrets()
        if secrets:
            text = record.getMessage()
            if any(secret in text for secret in secrets):
                for secret in secrets:
                    text = text.replace(secret, REDACTED)
                record.msg, record.args = text, None
        return record

    logging.setLogRecordFactory(redacting)
