"""Settings of the Lambda functions, parsed from their environment when a handler runs (never at
import), so that tests and each invocation see the environment as it is.

One model per function (or per group of functions that read the same), each field marked with the
variable it is read from (``Variable``) or the cluster whose variables it is (``Cluster``): the
model reads nothing else, a missing or bad variable is named, and the names are those of
``workflow.environment``, the ones the stack sets.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError
from pydantic.fields import FieldInfo

from offset_restore.errors import BadInputError
from offset_restore.kafka.connection import ConnectionSettings, SaslMechanism, SecurityProtocol
from offset_restore.stores.keys import restore_folder
from offset_restore.stores.storage import BlobStore, S3Store
from offset_restore.workflow.environment import (
    APPROVAL,
    APPROVAL_TIMEOUT_S,
    DEFAULT_MODE,
    KAFKA_CONNECT_TIMEOUT_S,
    KAFKA_RETRIES,
    RESTORE_BUCKET,
    SNAPSHOT_BUCKET,
    SNAPSHOT_PREFIX,
    SOURCE,
    STACK_NAME,
    TABLE_NAME,
    TARGET,
    TOPIC_ARN,
    ClusterVariables,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = [
    "ApplySettings",
    "Cluster",
    "ClusterSettings",
    "FunctionSettings",
    "GateSettings",
    "LockSettings",
    "PrepareSettings",
    "ReportSettings",
    "SnapshotSettings",
    "SourceSettings",
    "SummarizeSettings",
    "TranslateSettings",
    "ValidateSettings",
    "Variable",
    "cluster_from_env",
    "read_secret",
]

INCOMPLETE = "the function's environment is incomplete or invalid"


class ClusterSettings(BaseModel):
    """One cluster as the deployment configured it. SCRAM credentials come from Secrets Manager
    (a secret holding ``{"username": ..., "password": ...}``, the format MSK uses)."""

    model_config = ConfigDict(frozen=True)

    name: str
    bootstrap_servers: str
    security_protocol: SecurityProtocol = "SASL_SSL"
    sasl_mechanism: SaslMechanism | None = "AWS_MSK_IAM"
    sasl_secret_arn: str | None = None
    tls_secret_arn: str | None = None
    """Mutual TLS: ``{"certificate": PEM chain, "private_key": PEM, "ca": PEM (optional),
    "private_key_password": str (optional)}``, read on every invocation (a rotated certificate is used
    from the next one)."""
    connect_timeout_s: float = Field(default=30.0, gt=0)
    retries: int = Field(default=4, ge=0, le=20)
    unfenced: bool = False
    """Write without the cluster's fence (``ConnectionSettings.unfenced``)."""

    def connection(self, secret_reader: Callable[[str], str] | None = None) -> ConnectionSettings:
        username: str | None = None
        password: SecretStr | None = None
        if self.sasl_secret_arn:
            secret = _secret(self.sasl_secret_arn, secret_reader, ("username", "password"))
            username, password = secret["username"], SecretStr(secret["password"])
        return ConnectionSettings(
            **self._client_certificate(secret_reader),
            bootstrap_servers=self.bootstrap_servers,
            security_protocol=self.security_protocol,
            sasl_mechanism=self.sasl_mechanism if self.security_protocol == "SASL_SSL" else None,
            sasl_username=username,
            sasl_password=password,
            connect_timeout_s=self.connect_timeout_s,
            request_timeout_s=self.connect_timeout_s,
            retries=self.retries,
            unfenced=self.unfenced,
        )

    def _client_certificate(self, secret_reader: Callable[[str], str] | None) -> dict[str, Any]:
        """The client certificate's PEM files from the TLS secret (none configured: no fields)."""
        if not self.tls_secret_arn:
            return {}
        from offset_restore.kafka.tls_files import pem_files

        secret = _secret(self.tls_secret_arn, secret_reader, ("certificate", "private_key"))
        found: dict[str, Any] = pem_files(secret["certificate"], secret["private_key"], secret.get("ca"))
        if secret.get("private_key_password"):
            found["ssl_password"] = SecretStr(secret["private_key_password"])
        return found


def _secret(arn: str, secret_reader: Callable[[str], str] | None, keys: tuple[str, ...]) -> dict[str, Any]:
    """A JSON secret with ``keys`` (strings), or a BadInputError naming the secret and the keys (never a value)."""
    if secret_reader is None:
        raise BadInputError(f"secret {arn} is configured but no Secrets Manager reader was given")
    try:
        secret = json.loads(secret_reader(arn))
        if not all(isinstance(secret[key], str) and secret[key] for key in keys):
            raise TypeError(arn)
    except (ValueError, KeyError, TypeError):
        raise BadInputError(f"secret {arn} must be JSON with {' and '.join(repr(k) for k in keys)}") from None
    return dict(secret)


def _env_names(variables: ClusterVariables) -> dict[str, str]:
    return {
        "name": variables.name,
        "bootstrap_servers": variables.bootstrap_servers,
        "security_protocol": variables.security_protocol,
        "sasl_mechanism": variables.sasl_mechanism,
        "sasl_secret_arn": variables.sasl_secret_arn,
        "tls_secret_arn": variables.tls_secret_arn,
        "unfenced": variables.unfenced,
        "connect_timeout_s": KAFKA_CONNECT_TIMEOUT_S,
        "retries": KAFKA_RETRIES,
    }


def _problems(error: ValidationError, names: Mapping[str, str]) -> list[str]:
    """Each error by the variable it came from, not the field's name (which the operator never sees)."""
    return [f"{names.get(str(e['loc'][0]), e['loc'][0])}: {e['msg']}" if e["loc"] else e["msg"] for e in error.errors()]


def _cluster(variables: ClusterVariables, env: Mapping[str, str]) -> tuple[ClusterSettings | None, list[str]]:
    names = _env_names(variables)
    values: dict[str, Any] = {key: env[name] for key, name in names.items() if env.get(name)}
    if env.get(names["sasl_mechanism"]) == "NONE":
        values["sasl_mechanism"] = None
    try:
        return ClusterSettings.model_validate(values), []
    except ValidationError as error:
        return None, _problems(error, names)


def cluster_from_env(prefix: str, env: Mapping[str, str]) -> ClusterSettings:
    """``<PREFIX>_BOOTSTRAP_SERVERS`` and friends; ``<PREFIX>_SASL_MECHANISM=NONE`` turns SASL off."""
    cluster, problems = _cluster(ClusterVariables(prefix), env)
    if cluster is None:
        raise BadInputError(f"{INCOMPLETE}: {'; '.join(problems)}")
    return cluster


@dataclass(frozen=True)
class Variable:
    """In a settings field's annotation: the environment variable the field is read from."""

    name: str


@dataclass(frozen=True)
class Cluster:
    """In a ``ClusterSettings`` field's annotation: the cluster whose variables the field is read from."""

    variables: ClusterVariables


def _marker(name: str, field: FieldInfo) -> Variable | Cluster:
    markers = [m for m in field.metadata if isinstance(m, Variable | Cluster)]
    if len(markers) != 1:
        raise TypeError(f"settings field {name} must say where it is read from: one Variable(...) or Cluster(...)")
    return markers[0]


class FunctionSettings(BaseModel):
    """The base of every function's settings. A field without its variable is refused when the class is
    defined: what a function reads is always written on its model."""

    model_config = ConfigDict(frozen=True)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        for name, field in cls.model_fields.items():
            _marker(name, field)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        """The settings from ``env`` (the process's environment by default); every variable that is
        required and not set, or set and invalid, is named in one ``BadInputError``. An empty variable
        counts as not set."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        missing: list[str] = []
        problems: list[str] = []
        names: dict[str, str] = {}
        for name, field in cls.model_fields.items():
            marker = _marker(name, field)
            if isinstance(marker, Cluster):
                cluster, wrong = _cluster(marker.variables, env)
                values[name] = cluster
                problems += wrong
            elif env.get(marker.name):
                values[name], names[name] = env[marker.name], marker.name
            elif field.is_required():
                missing.append(marker.name)
        if missing:
            problems.insert(0, f"{', '.join(missing)} not set")
        if not problems:
            try:
                return cls.model_validate(values)
            except ValidationError as error:
                problems = _problems(error, names)
        raise BadInputError(f"{INCOMPLETE}: {'; '.join(problems)}")


def _folder(bucket: str | None, restore_id: str, s3: S3Client) -> BlobStore | None:
    return S3Store(bucket, restore_folder(restore_id), s3) if bucket else None


class SnapshotSettings(FunctionSettings):
    """The scheduled snapshot: the source cluster, and where its snapshots go."""

    source: Annotated[ClusterSettings, Cluster(SOURCE)]
    bucket: Annotated[str, Variable(SNAPSHOT_BUCKET)]
    prefix: Annotated[str, Variable(SNAPSHOT_PREFIX)] = ""


class SourceSettings(FunctionSettings):
    """A migration's steps on the source: the source cluster, where its snapshots go (the Snapshot
    function's bucket and prefix), the lock's table and target (each look renews the run's lock), and the
    restore's folder (the last look's held groups)."""

    source: Annotated[ClusterSettings, Cluster(SOURCE)]
    bucket: Annotated[str, Variable(SNAPSHOT_BUCKET)]
    table: Annotated[str, Variable(TABLE_NAME)]
    target_cluster: Annotated[str, Variable(TARGET.name)]
    prefix: Annotated[str, Variable(SNAPSHOT_PREFIX)] = ""
    restore_bucket: Annotated[str, Variable(RESTORE_BUCKET)]
    """Where the restore's commit index is: the last look before the commit writes the groups it holds there."""

    def restore_folder(self, restore_id: str, s3: S3Client) -> BlobStore:
        return S3Store(self.restore_bucket, restore_folder(restore_id), s3)


class ValidateSettings(FunctionSettings):
    """The defaults of an execution input: the deployment's clusters, and a mode if one is configured;
    and the approval gate's policy (which runs wait for a person before they write, and how long)."""

    source_cluster: Annotated[str | None, Variable(SOURCE.name)] = None
    target_cluster: Annotated[str | None, Variable(TARGET.name)] = None
    mode: Annotated[str | None, Variable(DEFAULT_MODE)] = None
    approval: Annotated[Literal["never", "alarm", "always"], Variable(APPROVAL)] = "never"
    approval_timeout_s: Annotated[int, Variable(APPROVAL_TIMEOUT_S), Field(ge=60, le=7 * 86_400)] = 3_600

    def defaults(self) -> dict[str, str]:
        """The input fields these fill in where the input gives none (only the ones that are set)."""
        fields = ("source_cluster", "target_cluster", "mode")
        return {key: value for key, value in self.model_dump(include=set(fields)).items() if value}


class LockSettings(FunctionSettings):
    """The table of the lock, and the deployment's target: the lock is keyed on the cluster id its
    brokers report (the acquire connects), shown under the deployment's name for it, whatever name the
    input gave (a typo must not make a second lock)."""

    table: Annotated[str, Variable(TABLE_NAME)]
    target: Annotated[ClusterSettings, Cluster(TARGET)]


class PrepareSettings(FunctionSettings):
    """Where the snapshots are (the Snapshot function's bucket and prefix) and the work items go."""

    bucket: Annotated[str, Variable(RESTORE_BUCKET)]
    table: Annotated[str, Variable(TABLE_NAME)]
    snapshot_prefix: Annotated[str, Variable(SNAPSHOT_PREFIX)] = ""


class TranslateSettings(FunctionSettings):
    """The target cluster, ``RESTORE_BUCKET`` (work items) and ``TABLE_NAME``."""

    target: Annotated[ClusterSettings, Cluster(TARGET)]
    bucket: Annotated[str, Variable(RESTORE_BUCKET)]
    table: Annotated[str, Variable(TABLE_NAME)]


class SummarizeSettings(FunctionSettings):
    """The table of the mappings; with the bucket, the commit index is written to the restore's folder."""

    table: Annotated[str, Variable(TABLE_NAME)]
    bucket: Annotated[str | None, Variable(RESTORE_BUCKET)] = None

    def restore_folder(self, restore_id: str, s3: S3Client) -> BlobStore | None:
        """The restore's folder (its commit index), or None when the function has no bucket."""
        return _folder(self.bucket, restore_id, s3)

    def work_items(self, s3: S3Client) -> BlobStore | None:
        """The bucket where Prepare wrote the work items (their keys name the restore's folder)."""
        return S3Store(self.bucket, "", s3) if self.bucket else None


class ApplySettings(FunctionSettings):
    """The target cluster and the table; with the bucket, batches are read from the commit index."""

    target: Annotated[ClusterSettings, Cluster(TARGET)]
    table: Annotated[str, Variable(TABLE_NAME)]
    bucket: Annotated[str | None, Variable(RESTORE_BUCKET)] = None

    def restore_folder(self, restore_id: str, s3: S3Client) -> BlobStore | None:
        """The restore's folder (its commit index), or None when the function has no bucket."""
        return _folder(self.bucket, restore_id, s3)


class GateSettings(FunctionSettings):
    """The approval gate: the table of its question and of the lock it holds while it waits, the
    deployment's target (the lock's name), the topic it asks on and the stack an answer names."""

    table: Annotated[str, Variable(TABLE_NAME)]
    target_cluster: Annotated[str, Variable(TARGET.name)]
    topic_arn: Annotated[str | None, Variable(TOPIC_ARN)] = None
    stack_name: Annotated[str | None, Variable(STACK_NAME)] = None


class ReportSettings(FunctionSettings):
    """Where the report goes, the table it reads the mappings from, and the topic of its summary
    (none: the summary is only returned)."""

    bucket: Annotated[str, Variable(RESTORE_BUCKET)]
    table: Annotated[str, Variable(TABLE_NAME)]
    topic_arn: Annotated[str | None, Variable(TOPIC_ARN)] = None


def read_secret(arn: str) -> str:
    """A Secrets Manager secret's string, with the default AWS credentials."""
    import boto3

    return str(boto3.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"])
