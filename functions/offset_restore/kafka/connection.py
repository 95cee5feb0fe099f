"""How to reach a Kafka cluster: a typed model shared by the CLI, the handlers and the adapter."""

from __future__ import annotations

import os
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from offset_restore.errors import BadInputError
from offset_restore.kafka.log_safety import register_secret

__all__ = [
    "FETCH_MAX_BYTES",
    "ConnectionSettings",
    "MskIamIdentity",
    "SaslMechanism",
    "SecurityProtocol",
    "password_from_env",
]

FETCH_MAX_BYTES = 8 * 1024 * 1024
"""The default most a broker puts in one fetch response. A round over many partitions goes out as several
requests, all in flight at once: each answer is decoded as it arrives while the broker sends the next, and
a few megabytes decode while they are still in the processor's cache. One response of 50 MiB (Kafka's own
``fetch.max.bytes``) is decoded only once all of it is in, and reading a topic whole took longer."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_SSL"]
SaslMechanism = Literal["AWS_MSK_IAM", "SCRAM-SHA-512", "PLAIN"]


class MskIamIdentity(BaseModel):
    """Whose credentials sign an ``AWS_MSK_IAM`` token: the ``IAMLoginModule`` options of a
    ``client.properties`` (``kafka.client_properties``), as aws-msk-iam-auth reads them, so this tool
    acts as the identity kafka-consumer-groups acts as with the same file (``kafka.msk_iam``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    profile: str | None = None
    """``awsProfileName``: the AWS profile whose credentials sign (its own ``role_arn`` is honoured too)."""
    role_arn: str | None = None
    """``awsRoleArn``: the role assumed, with the default credentials, whose credentials then sign."""
    role_session_name: str = Field(default="aws-msk-iam-auth", min_length=2, max_length=64)
    """``awsRoleSessionName``; the default is aws-msk-iam-auth's, so the broker sees the same principal."""
    role_external_id: str | None = None
    """``awsRoleExternalId``: the external id the role's trust policy asks for."""
    sts_region: str | None = None
    """``awsStsRegion``: the regional STS endpoint to assume the role at; default: the global one."""
    max_retries: int = Field(default=3, ge=0, le=20)
    """``awsMaxRetries``: attempts after the first when credentials cannot be loaded (not on a refusal)."""
    max_backoff_ms: int = Field(default=5000, ge=1, le=600_000)
    """``awsMaxBackOffTimeMs``: the longest back-off between those attempts (0.5 s doubling, full jitter)."""
    debug_creds: bool = False
    """``awsDebugCreds``: a warning names the principal that signs (STS GetCallerIdentity)."""


class ConnectionSettings(BaseModel):
    """Connection to one cluster. The password is a ``SecretStr`` so it never prints."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bootstrap_servers: str = Field(min_length=1)
    security_protocol: SecurityProtocol = "PLAINTEXT"
    sasl_mechanism: SaslMechanism | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    """The client certificate (PEM: the certificate, then its chain) for mutual TLS."""
    ssl_keyfile: str | None = None
    """Its private key (PEM); default: the certificate file (a PEM keystore holds both)."""
    ssl_password: SecretStr | None = None
    """The private key's password, when it is encrypted."""
    connect_timeout_s: float = Field(default=30.0, gt=0, le=3600, allow_inf_nan=False)
    request_timeout_s: float = Field(default=30.0, gt=0, le=3600, allow_inf_nan=False)
    client_id: str = "offset-restore"
    retries: int = Field(default=4, ge=0, le=20)
    """Attempts after the first, for a request that failed on a reset connection, a timeout or a
    coordinator move. Every retried request is idempotent (reads; commits of the same offsets)."""
    retry_backoff_s: float = Field(default=0.5, gt=0, le=60, allow_inf_nan=False)
    """The first back-off; it doubles per attempt up to ``retry_backoff_max_s``, with full jitter."""
    retry_backoff_max_s: float = Field(default=8.0, gt=0, le=600, allow_inf_nan=False)
    aws_msk_iam: MskIamIdentity | None = None
    """The identity ``AWS_MSK_IAM`` signs as, when a ``--command-config`` names one; default: the
    default AWS credential chain."""
    fetch_max_bytes: int = Field(default=FETCH_MAX_BYTES, ge=1024)
    """The most a broker puts in one fetch response (Kafka's ``fetch.max.bytes``): fetch rounds ask
    for no more partitions per request than fit. The local broker answers at most ~5 MB."""
    unfenced: bool = False
    """Write group offsets without the cluster's fence (``kafka/fence.py``): only for a cluster that does not
    apply transactional offset commits (Tansu), and only where no other writer can run."""

    @field_validator("bootstrap_servers")
    @classmethod
    def _servers_have_ports(cls, value: str) -> str:
        for server in value.split(","):
            host, _, port = server.strip().rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"bootstrap server {server.strip()!r} is not host:port")
        return value

    @model_validator(mode="after")
    def _sasl_is_complete(self) -> ConnectionSettings:
        if self.sasl_mechanism and self.security_protocol != "SASL_SSL":
            raise ValueError(f"--sasl-mechanism {self.sasl_mechanism} needs --security-protocol SASL_SSL")
        if self.security_protocol == "SASL_SSL" and not self.sasl_mechanism:
            raise ValueError("--security-protocol SASL_SSL needs --sasl-mechanism")
        if self.sasl_mechanism in ("SCRAM-SHA-512", "PLAIN") and not (self.sasl_username and self.sasl_password):
            raise ValueError(f"{self.sasl_mechanism} needs a username and a password (--sasl-password-env)")
        if self.aws_msk_iam is not None and self.sasl_mechanism != "AWS_MSK_IAM":
            raise ValueError(
                f"an AWS identity (awsProfileName, awsRoleArn) needs AWS_MSK_IAM, not {self.sasl_mechanism}"
            )
        if self.sasl_password is not None:
            register_secret(self.sasl_password.get_secret_value())  # kafka-python logs it at DEBUG
        return self

    @model_validator(mode="after")
    def _client_certificate_is_complete(self) -> ConnectionSettings:
        if (self.ssl_certfile or self.ssl_keyfile) and self.security_protocol == "PLAINTEXT":
            raise ValueError("a client certificate (--ssl-certfile) needs --security-protocol SSL or SASL_SSL")
        if self.ssl_keyfile and not self.ssl_certfile:
            raise ValueError("--ssl-keyfile needs --ssl-certfile (the certificate it is the key of)")
        if self.ssl_password is not None:
            register_secret(self.ssl_password.get_secret_value())
        return self


def password_from_env(name: str | None, option: str = "--sasl-password-env") -> SecretStr | None:
    """Read a password from the environment variable ``name`` (never from the command line)."""
    if not name:
        return None
    if not _ENV_NAME.fullmatch(name):  # most likely a password typed in its place: never echo it
        raise BadInputError(f"{option} takes the NAME of an environment variable holding the password")
    value = os.environ.get(name)
    if value is None:
        raise BadInputError(f"environment variable {name} (named by {option}) is not set")
    return SecretStr(value)
