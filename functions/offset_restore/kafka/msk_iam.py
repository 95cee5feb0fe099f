"""MSK IAM authentication signed for the cluster's region, not the process's.

kafka-python's ``AWS_MSK_IAM`` mechanism signs its SigV4 token with the region of the botocore
session (``AWS_REGION``/``AWS_DEFAULT_REGION``, the Lambda's own region). A token signed for
eu-west-1 is refused by a broker in eu-central-1, so a function (or an operator's CLI) reaching a
cluster in another region could not authenticate. The region is in every MSK broker host name
(``b-1.NAME.ID.c3.kafka.REGION.amazonaws.com``, ``...kafka-serverless.REGION.amazonaws.com``) and
in the cluster ARN: ``signing_region`` takes it from the host (or an ARN, for a caller that has one);
the mechanism, which knows only the host, falls back to the process's region for a host that names
none (a custom DNS name in front of the brokers: set AWS_REGION to the cluster's region then).

Whose credentials sign is the second change: kafka-python always signs with the default credential
chain, while a ``client.properties`` may name an identity in ``IAMLoginModule``'s options
(``awsProfileName``, ``awsRoleArn`` ...; ``ConnectionSettings.aws_msk_iam``). ``IamCredentials``
resolves them as aws-msk-iam-auth's ``MSKCredentialProvider`` does (the profile's credentials; a role
assumed with the default credentials, refreshed before it expires, so a run of hours keeps signing),
so this tool acts as the identity kafka-consumer-groups acts as with the same file. kafka-python hands
a mechanism only its own configuration keys: the identity rides in ``sasl_oauth_token_provider``, the
one key that holds an object, which nothing but OAUTHBEARER reads (``client_config``).
"""

from __future__ import annotations

import functools
import logging
import random
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from botocore.credentials import (
    AssumeRoleCredentialFetcher,
    Credentials,
    DeferredRefreshableCredentials,
    ReadOnlyCredentials,
)
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    NoCredentialsError,
    PartialCredentialsError,
    ProfileNotFound,
)
from kafka.errors import KafkaConfigurationError
from kafka.net.sasl import register_sasl_mechanism
from kafka.net.sasl.msk import AwsMskIamClient, SaslMechanismAwsMskIam

from offset_restore.errors import BadInputError, OffsetRestoreError
from offset_restore.kafka.connection import ConnectionSettings, MskIamIdentity

__all__ = [
    "MECHANISM",
    "IamCredentials",
    "RegionalMskIam",
    "backoff_s",
    "client_config",
    "credentials_for",
    "msk_arn_region",
    "msk_host_region",
    "register",
    "signing_region",
]

log = logging.getLogger(__name__)

MECHANISM = "AWS_MSK_IAM"
_REGION = r"([a-z]{2}(?:-[a-z]+)+-\d)"
_MSK_HOST = re.compile(rf"(?:^|\.)kafka(?:-serverless)?\.{_REGION}\.amazonaws\.com(?:\.cn)?\.?$", re.IGNORECASE)
_MSK_ARN = re.compile(rf"^arn:aws[a-z-]*:kafka:{_REGION}:")


def msk_host_region(host: str) -> str | None:
    """The region an MSK broker host name is in (``host`` may carry a ``:port``); None for another host."""
    name = host.strip()
    if name.rsplit(":", 1)[-1].isdigit():
        name = name.rsplit(":", 1)[0]
    match = _MSK_HOST.search(name)
    return match.group(1).lower() if match else None


def msk_arn_region(arn: str | None) -> str | None:
    """The region an MSK cluster ARN names; None for no ARN or another kind."""
    match = _MSK_ARN.match(arn) if arn else None
    return match.group(1) if match else None


def signing_region(host: str, arn: str | None = None, fallback: str | None = None) -> str | None:
    """The region to sign an MSK IAM token for: the broker host's, else the cluster ARN's, else ``fallback``."""
    return msk_host_region(host) or msk_arn_region(arn) or fallback


GLOBAL_STS = "aws-global"
"""aws-msk-iam-auth's STS region when ``awsStsRegion`` is absent: botocore's name for the global
endpoint, https://sts.amazonaws.com."""
_BASE_DELAY_S = 0.5
"""aws-msk-iam-auth's first back-off between attempts to load credentials."""


def backoff_s(retry: int, max_backoff_ms: int, draw: float) -> float:
    """Full jitter, as aws-msk-iam-auth's ``FullJitterBackoffStrategy``: a ``draw`` in [0, 1) of 0.5 s
    doubling per retry, capped at ``max_backoff_ms``."""
    return draw * min(max_backoff_ms / 1000, _BASE_DELAY_S * 2**retry)


def who(identity: MskIamIdentity) -> str:
    """The identity as the file names it, for an error's line."""
    if identity.role_arn:
        return f"awsRoleArn {identity.role_arn} (session {identity.role_session_name})"
    if identity.profile:
        return f"awsProfileName {identity.profile}"
    return "the default AWS credentials"


def refusal(identity: MskIamIdentity, error: ClientError) -> str:
    """AWS's refusal (of AssumeRole, most likely) in one line, naming the identity asked for."""
    details = error.response.get("Error", {})
    code, message = details.get("Code", "Error"), " ".join(str(details.get("Message", "")).split())
    return f"cannot sign as {who(identity)}: AWS refused {error.operation_name}: {code}: {message}".rstrip(": ")


class IamCredentials:
    """The credentials ``identity`` signs with, loaded once and shared by every connection of the
    process; an attempt that fails on the client side (no credentials yet, STS unreachable) is tried
    again ``max_retries`` times, a refusal is not (as aws-msk-iam-auth's ``loadCredentialsWithRetry``)."""

    def __init__(
        self,
        identity: MskIamIdentity,
        *,
        sleep: Callable[[float], None] = time.sleep,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self.identity = identity
        self._sleep, self._draw = sleep, draw
        self._source: Credentials | None = None
        self._lock = threading.Lock()
        self._shown: str | None = None
        """The access key whose principal ``awsDebugCreds`` last showed: each new one is shown once."""

    def frozen(self) -> ReadOnlyCredentials:
        """The credentials now (a role's refreshed before they expire), or one line saying why none."""
        identity = self.identity
        retry = 0
        while True:
            try:
                credentials = self._credentials().get_frozen_credentials()
                break
            except ClientError as error:
                raise OffsetRestoreError(refusal(identity, error)) from None
            except BotoCoreError as error:
                if retry >= identity.max_retries:  # none to be had is bad usage (2); STS not answering, a failure (1)
                    missing = isinstance(error, NoCredentialsError | PartialCredentialsError)
                    kind: type[OffsetRestoreError] = BadInputError if missing else OffsetRestoreError
                    raise kind(f"cannot sign as {who(identity)}: {' '.join(str(error).split())}") from None
                self._sleep(backoff_s(retry, identity.max_backoff_ms, self._draw()))
                retry += 1
        if identity.debug_creds and credentials.access_key != self._shown:
            self._shown = credentials.access_key
            self._log_caller(credentials)
        return credentials

    def _credentials(self) -> Credentials:
        with self._lock:
            if self._source is None:
                self._source = source_credentials(self.identity)
            return self._source

    def _log_caller(self, credentials: ReadOnlyCredentials) -> None:
        """``awsDebugCreds``: which principal signs (STS GetCallerIdentity), as aws-msk-iam-auth tells it;
        a failure only warns. Java logs it at DEBUG, which its user turns on in log4j; this CLI has no
        log level to turn on, so it is a warning, on stderr, once per set of credentials."""
        try:
            sts = _session(None).client(
                "sts",
                region_name=self.identity.sts_region or GLOBAL_STS,
                aws_access_key_id=credentials.access_key,
                aws_secret_access_key=credentials.secret_key,
                aws_session_token=credentials.token,
            )
            log.warning("awsDebugCreds: AWS_MSK_IAM signs as %s", sts.get_caller_identity()["Arn"])
        except (BotoCoreError, ClientError) as error:
            log.warning("awsDebugCreds: cannot tell whom the credentials are of: %s", " ".join(str(error).split()))


def source_credentials(identity: MskIamIdentity) -> Credentials:
    """``awsProfileName``'s credentials, or the default chain's; with ``awsRoleArn``, the role assumed
    with those, refreshed by botocore before they expire (deferred: the first use calls AssumeRole)."""
    session = _session(identity.profile)
    base = session.get_credentials()
    if base is None:
        raise NoCredentialsError()
    if not identity.role_arn:
        return base
    extra: dict[str, Any] = {"RoleSessionName": identity.role_session_name}
    if identity.role_external_id:
        extra["ExternalId"] = identity.role_external_id
    region = identity.sts_region or GLOBAL_STS

    def sts_client(service: str, **credentials: Any) -> Any:
        return session.client(service, region_name=region, **credentials)

    fetcher = AssumeRoleCredentialFetcher(sts_client, base, identity.role_arn, extra_args=extra)
    return DeferredRefreshableCredentials(fetcher.fetch_credentials, "assume-role")


def _session(profile: str | None) -> Any:
    import boto3

    try:
        return boto3.Session(profile_name=profile)
    except ProfileNotFound:
        raise BadInputError(
            f"awsProfileName {profile}: no such AWS profile (in the AWS config and credentials files: "
            "AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE, default ~/.aws; aws configure list-profiles)"
        ) from None


@functools.lru_cache(maxsize=16)
def credentials_for(identity: MskIamIdentity) -> IamCredentials:
    """One ``IamCredentials`` per identity in the process: the admin client, the commit lanes and
    the producer share one role session instead of assuming the role each."""
    return IamCredentials(identity)


def client_config(settings: ConnectionSettings) -> dict[str, Any]:
    """kafka-python configuration that makes ``RegionalMskIam`` sign as the settings' identity; the
    credentials are loaded now, so a profile that does not exist or a refused AssumeRole is one line
    before any broker is connected to. Empty for the default credential chain (kafka-python's own way)."""
    if settings.sasl_mechanism != MECHANISM or settings.aws_msk_iam is None:
        return {}
    credentials = credentials_for(settings.aws_msk_iam)
    credentials.frozen()
    return {"sasl_oauth_token_provider": credentials}


class RegionalMskIam(SaslMechanismAwsMskIam):
    """kafka-python's mechanism with two changes: the token is signed for the broker's own region, and
    with the credentials of the identity the settings name (``client_config``), if they name one."""

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        provider = config.get("sasl_oauth_token_provider")
        self._identity = provider if isinstance(provider, IamCredentials) else None

    def _build_client(self) -> Any:
        session = self._boto_session_cls()
        region = signing_region(self.host, fallback=session.get_config_variable("region"))
        if not region:
            raise KafkaConfigurationError(
                f"cannot tell the AWS region of broker {self.host}: it is not an MSK host name; set AWS_REGION"
            )
        if self._identity is not None:
            credentials = self._identity.frozen()
        else:
            credentials = session.get_credentials().get_frozen_credentials()
        return AwsMskIamClient(
            host=self.host,
            access_key=credentials.access_key,
            secret_key=credentials.secret_key,
            region=region,
            token=credentials.token,
        )


def register() -> None:
    """Make ``AWS_MSK_IAM`` mean :class:`RegionalMskIam` for every client created afterwards (idempotent)."""
    register_sasl_mechanism(MECHANISM, RegionalMskIam, overwrite=True)
