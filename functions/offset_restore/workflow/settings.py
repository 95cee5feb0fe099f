"""Settings of the Lambda functions, parsed from their environment when a handler runs (never at
import), so that tests and each invocation see the environment as it is."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from offset_restore.errors import BadInputError
from offset_restore.kafka.connection import ConnectionSettings, SaslMechanism, SecurityProtocol
from offset_restore.stores.keys import restore_folder as restore_folder_key
from offset_restore.stores.storage import BlobStore

__all__ = [
    "ApplySettings",
    "ClusterSettings",
    "SnapshotSettings",
    "TranslateSettings",
    "cluster_from_env",
    "read_secret",
    "restore_folder",
    "table_from_env",
]


class ClusterSettings(BaseModel):
    """One cluster as the deployment configured it. SCRAM credentials come from Secrets Manager
    (a secret holding ``{"username": ..., "password": ...}``, the format MSK uses)."""

    model_config = ConfigDict(frozen=True)

    name: str
    bootstrap_servers: str
    security_protocol: SecurityProtocol = "SASL_SSL"
    sasl_mechanism: SaslMechanism | None = "AWS_MSK_IAM"
    sasl_secret_arn: str | None = None
    connect_timeout_s: float = Field(default=30.0, gt=0)
    retries: int = Field(default=4, ge=0, le=20)

    def connection(self, secret_reader: Callable[[str], str] | None = None) -> ConnectionSettings:
        username: str | None = None
        password: SecretStr | None = None
        if self.sasl_secret_arn:
            if secret_reader is None:
                raise BadInputError("a SASL secret is configured but no Secrets Manager reader was given")
            try:
                secret = json.loads(secret_reader(self.sasl_secret_arn))
                username, password = secret["username"], SecretStr(secret["password"])
            except (ValueError, KeyError, TypeError):
                raise BadInputError(
                    f"secret {self.sasl_secret_arn} must be JSON with 'username' and 'password'"
                ) from None
        return ConnectionSettings(
            bootstrap_servers=self.bootstrap_servers,
            security_protocol=self.security_protocol,
            sasl_mechanism=self.sasl_mechanism if self.security_protocol == "SASL_SSL" else None,
            sasl_username=username,
            sasl_password=password,
            connect_timeout_s=self.connect_timeout_s,
            request_timeout_s=self.connect_timeout_s,
            retries=self.retries,
        )


def _env_names(prefix: str) -> dict[str, str]:
    return {
        "name": f"{prefix}_CLUSTER_NAME",
        "bootstrap_servers": f"{prefix}_BOOTSTRAP_SERVERS",
        "security_protocol": f"{prefix}_SECURITY_PROTOCOL",
        "sasl_mechanism": f"{prefix}_SASL_MECHANISM",
        "sasl_secret_arn": f"{prefix}_SASL_SECRET_ARN",
        "connect_timeout_s": "KAFKA_CONNECT_TIMEOUT_S",
        "retries": "KAFKA_RETRIES",
    }


def cluster_from_env(prefix: str, env: Mapping[str, str]) -> ClusterSettings:
    """``<PREFIX>_BOOTSTRAP_SERVERS`` and friends; ``<PREFIX>_SASL_MECHANISM=NONE`` turns SASL off."""
    names = _env_names(prefix)
    values: dict[str, Any] = {key: env[name] for key, name in names.items() if env.get(name)}
    if env.get(names["sasl_mechanism"]) == "NONE":
        values["sasl_mechanism"] = None
    try:
        return ClusterSettings.model_validate(values)
    except ValidationError as error:
        problems = "; ".join(f"{names.get(str(e['loc'][0]), e['loc'][0])}: {e['msg']}" for e in error.errors())
        raise BadInputError(f"the function's environment is incomplete or invalid: {problems}") from None


class SnapshotSettings(BaseModel):
    """``SOURCE_*`` cluster variables, ``SNAPSHOT_BUCKET`` and optional ``SNAPSHOT_PREFIX``."""

    model_config = ConfigDict(frozen=True)

    source: ClusterSettings
    bucket: str
    prefix: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SnapshotSettings:
        env = os.environ if env is None else env
        if not env.get("SNAPSHOT_BUCKET"):
            raise BadInputError("the function's environment is incomplete or invalid: SNAPSHOT_BUCKET is not set")
        return cls(
            source=cluster_from_env("SOURCE", env), bucket=env["SNAPSHOT_BUCKET"], prefix=env.get("SNAPSHOT_PREFIX", "")
        )


class TranslateSettings(BaseModel):
    """``TARGET_*`` cluster variables, ``RESTORE_BUCKET`` (work items) and ``TABLE_NAME``."""

    model_config = ConfigDict(frozen=True)

    target: ClusterSettings
    bucket: str
    table: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TranslateSettings:
        env = os.environ if env is None else env
        missing = [name for name in ("RESTORE_BUCKET", "TABLE_NAME") if not env.get(name)]
        if missing:
            raise BadInputError(f"the function's environment is incomplete or invalid: {', '.join(missing)} not set")
        return cls(target=cluster_from_env("TARGET", env), bucket=env["RESTORE_BUCKET"], table=env["TABLE_NAME"])


class ApplySettings(BaseModel):
    """``TARGET_*`` cluster variables and ``TABLE_NAME``."""

    model_config = ConfigDict(frozen=True)

    target: ClusterSettings
    table: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ApplySettings:
        env = os.environ if env is None else env
        if not env.get("TABLE_NAME"):
            raise BadInputError("the function's environment is incomplete or invalid: TABLE_NAME not set")
        return cls(target=cluster_from_env("TARGET", env), table=env["TABLE_NAME"])


def read_secret(arn: str) -> str:
    """A Secrets Manager secret's string, with the default AWS credentials."""
    import boto3

    return str(boto3.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"])


def table_from_env(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    if not env.get("TABLE_NAME"):
        raise BadInputError("the function's environment is incomplete or invalid: TABLE_NAME not set")
    return env["TABLE_NAME"]


def restore_folder(restore_id: str, env: Mapping[str, str] | None = None) -> BlobStore | None:
    """The restore's folder in ``RESTORE_BUCKET`` (its work items, commit index and report), or None
    when the function has no bucket."""
    env = os.environ if env is None else env
    if not env.get("RESTORE_BUCKET"):
        return None
    import boto3

    from offset_restore.stores.storage import S3Store

    return S3Store(env["RESTORE_BUCKET"], restore_folder_key(restore_id), boto3.client("s3"))
