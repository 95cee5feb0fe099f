"""MSK IAM authentication signed for the cluster's region, not the process's.

kafka-python's ``AWS_MSK_IAM`` mechanism signs its SigV4 token with the region of the botocore
session (``AWS_REGION``/``AWS_DEFAULT_REGION``, the Lambda's own region). A token signed for
eu-west-1 is refused by a broker in eu-central-1, so a function (or an operator's CLI) reaching a
cluster in another region could not authenticate. The region is in every MSK broker host name
(``b-1.NAME.ID.c3.kafka.REGION.amazonaws.com``, ``...kafka-serverless.REGION.amazonaws.com``) and
in the cluster ARN: ``signing_region`` takes it from the host (or an ARN, for a caller that has one);
the mechanism, which knows only the host, falls back to the process's region for a host that names
none (a custom DNS name in front of the brokers: set AWS_REGION to the cluster's region then).
"""

from __future__ import annotations

import re
from typing import Any

from kafka.errors import KafkaConfigurationError
from kafka.net.sasl import register_sasl_mechanism
from kafka.net.sasl.msk import AwsMskIamClient, SaslMechanismAwsMskIam

__all__ = ["MECHANISM", "RegionalMskIam", "msk_arn_region", "msk_host_region", "register", "signing_region"]

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


class RegionalMskIam(SaslMechanismAwsMskIam):
    """kafka-python's mechanism with one change: the token is signed for the broker's own region."""

    def _build_client(self) -> Any:
        session = self._boto_session_cls()
        region = signing_region(self.host, fallback=session.get_config_variable("region"))
        if not region:
            raise KafkaConfigurationError(
                f"cannot tell the AWS region of broker {self.host}: it is not an MSK host name; set AWS_REGION"
            )
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
