"""MSK IAM tokens are signed for the cluster's region, whatever region the process runs in."""

from __future__ import annotations

import json

import pytest
from kafka.net.sasl import get_sasl_mechanism
from offset_restore.kafka import cluster  # noqa: F401  # registers the mechanism, as every client does
from offset_restore.kafka.msk_iam import RegionalMskIam, msk_host_region, signing_region

DR_HOST = "b-1.dr.def456.c3.kafka.eu-central-1.amazonaws.com"


@pytest.mark.parametrize(
    ("host", "region"),
    [
        (DR_HOST, "eu-central-1"),
        ("b-2.primary.abc123.c2.kafka.eu-west-1.amazonaws.com:9098", "eu-west-1"),
        ("boot-abcd1234.c1.kafka-serverless.us-east-1.amazonaws.com:9098", "us-east-1"),
        ("b-1.x.y.c4.kafka.ap-southeast-2.amazonaws.com", "ap-southeast-2"),
        ("B-1.X.Y.C4.KAFKA.US-GOV-WEST-1.AMAZONAWS.COM", "us-gov-west-1"),
        ("b-1.x.y.c1.kafka.cn-north-1.amazonaws.com.cn:9098", "cn-north-1"),
    ],
)
def test_the_region_is_read_from_msk_broker_host_names(host: str, region: str) -> None:
    assert msk_host_region(host) == region
    assert signing_region(host, fallback="xx-nowhere-1") == region


@pytest.mark.parametrize(
    "host", ["kafka.internal.example.com", "10.0.1.10:9092", "kafka.eu-west-1.example.com", "localhost"]
)
def test_a_host_that_is_not_msk_names_no_region(host: str) -> None:
    assert msk_host_region(host) is None
    assert signing_region(host) is None
    assert signing_region(host, fallback="eu-west-1") == "eu-west-1"


def test_the_cluster_arn_is_used_when_the_host_names_no_region() -> None:
    arn = "arn:aws:kafka:eu-central-1:222222222222:cluster/dr/66666666-7777-8888-9999-000000000000-3"
    assert signing_region("kafka.internal.example.com", arn=arn, fallback="eu-west-1") == "eu-central-1"
    # The broker host wins over an ARN that names another region (the synth refuses that pair).
    assert signing_region("b-1.p.q.c2.kafka.eu-west-1.amazonaws.com", arn=arn) == "eu-west-1"
    assert signing_region("kafka.internal.example.com", arn="not-an-arn", fallback="us-east-1") == "us-east-1"


@pytest.fixture
def process_in_eu_west_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and a process region other than the cluster's, as a Lambda in eu-west-1 has."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake/secret/key/for/signing/only/00000000")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")


def test_aws_msk_iam_is_the_regional_mechanism_once_the_adapter_is_imported() -> None:
    assert get_sasl_mechanism("AWS_MSK_IAM") is RegionalMskIam


@pytest.mark.usefixtures("process_in_eu_west_1")
def test_the_token_is_signed_for_the_cluster_region_not_the_process_region() -> None:
    mechanism = get_sasl_mechanism("AWS_MSK_IAM")(host=DR_HOST, security_protocol="SASL_SSL")
    client = mechanism._build_client()
    assert client.region == "eu-central-1"
    assert client._scope.endswith("/eu-central-1/kafka-cluster/aws4_request")
    token = json.loads(mechanism.auth_bytes())
    assert "/eu-central-1/kafka-cluster/aws4_request" in token["x-amz-credential"]
    assert token["host"] == DR_HOST


@pytest.mark.usefixtures("process_in_eu_west_1")
def test_a_host_without_a_region_is_signed_for_the_process_region() -> None:
    client = RegionalMskIam(host="kafka.internal.example.com", security_protocol="SASL_SSL")._build_client()
    assert client.region == "eu-west-1"


def test_a_host_without_a_region_and_no_process_region_is_refused_with_the_fix(
    process_in_eu_west_1: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    monkeypatch.delenv("AWS_REGION")
    from kafka.errors import KafkaConfigurationError

    with pytest.raises(KafkaConfigurationError, match="set AWS_REGION"):
        RegionalMskIam(host="kafka.internal.example.com", security_protocol="SASL_SSL")._build_client()
