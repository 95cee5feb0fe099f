"""``AWS_MSK_IAM`` signs as the identity a ``client.properties`` names (``IAMLoginModule``'s options,
as aws-msk-iam-auth reads them): a profile's credentials, a role assumed with the default ones (and
refreshed), at the STS region asked for; what is not honoured is refused by name, before any broker
is connected to."""

from __future__ import annotations

import io
import json
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import botocore.credentials
import pytest
from botocore.stub import Stubber
from kafka.net.compat import KafkaNetClient
from kafka.net.connection import KafkaConnection
from kafka.net.sasl import get_sasl_mechanism
from moto import mock_aws
from offset_restore.cli.main import main
from offset_restore.errors import BadInputError, OffsetRestoreError
from offset_restore.kafka import msk_iam
from offset_restore.kafka.client_properties import read_client_properties
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.connection import ConnectionSettings, MskIamIdentity

DR_HOST = "b-1.dr.def456.c3.kafka.eu-central-1.amazonaws.com"
DEFAULT_KEY = "AKIADEFAULT000000000"
PROFILE_KEY = "AKIADROPERATOR000001"
ROLE = "arn:aws:iam::123456789012:role/msk-dr-operator"
STS = mock_aws(config={"core": {"mock_credentials": False}})
"""moto's STS, without the fake credentials it would put in the environment: the files' sign."""
IAM_FILE = """security.protocol=SASL_SSL
sasl.mechanism=AWS_MSK_IAM
sasl.jaas.config=software.amazon.msk.auth.iam.IAMLoginModule required {options};
sasl.client.callback.handler.class=software.amazon.msk.auth.iam.IAMClientCallbackHandler
"""


@pytest.fixture(autouse=True)
def aws_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Default credentials and a ``dr-operator`` profile (another key) in files of this test only."""
    config, credentials = tmp_path / "aws-config", tmp_path / "aws-credentials"
    config.write_text("[default]\nregion = eu-west-1\n[profile dr-operator]\nregion = eu-central-1\n[profile empty]\n")
    credentials.write_text(
        f"[default]\naws_access_key_id = {DEFAULT_KEY}\naws_secret_access_key = default-secret\n"
        f"[dr-operator]\naws_access_key_id = {PROFILE_KEY}\naws_secret_access_key = dr-operator-secret\n"
    )
    for name in (
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance credentials either
    msk_iam.credentials_for.cache_clear()
    yield
    msk_iam.credentials_for.cache_clear()


@pytest.fixture
def sts_clients(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every STS client the signer makes: its endpoint, region, credentials and AssumeRole calls."""
    made: list[dict[str, Any]] = []
    real = msk_iam._session

    def recording(profile: str | None) -> Any:
        session = real(profile)
        create = session.client

        def client(service: str, **kwargs: Any) -> Any:
            made_client = create(service, **kwargs)
            record = {"endpoint": made_client.meta.endpoint_url, "client": made_client, "calls": [], **kwargs}
            made_client.meta.events.register(
                "provide-client-params.sts.AssumeRole", lambda params, **_: record["calls"].append(dict(params))
            )
            made.append(record)
            return made_client

        session.client = client
        return session

    monkeypatch.setattr(msk_iam, "_session", recording)
    return made


def settings_from(tmp_path: Path, options: str, bootstrap: str = f"{DR_HOST}:9098") -> ConnectionSettings:
    path = tmp_path / "client.properties"
    path.write_text(IAM_FILE.format(options=options), encoding="latin-1")
    properties = read_client_properties(str(path))
    assert properties.warnings == []  # no "awsProfileName is not used" any more
    return ConnectionSettings(bootstrap_servers=bootstrap, **properties.values)


def token(settings: ConnectionSettings) -> dict[str, str]:
    """The token the mechanism sends to the broker, built as kafka-python builds it per connection."""
    config = {"security_protocol": "SASL_SSL", **msk_iam.client_config(settings)}
    return json.loads(msk_iam.RegionalMskIam(host=DR_HOST, **config).auth_bytes())


def test_the_profile_named_signs_not_the_default_credentials(tmp_path: Path) -> None:
    settings = settings_from(tmp_path, 'awsProfileName="dr-operator"')
    assert settings.aws_msk_iam == MskIamIdentity(profile="dr-operator")
    assert token(settings)["x-amz-credential"].startswith(f"{PROFILE_KEY}/")
    assert token(settings)["x-amz-credential"].endswith("/eu-central-1/kafka-cluster/aws4_request")
    # Without options the default credential chain signs, as before (and as the Java library does).
    plain = settings_from(tmp_path, "")
    assert plain.aws_msk_iam is None and msk_iam.client_config(plain) == {}
    assert token(plain)["x-amz-credential"].startswith(f"{DEFAULT_KEY}/")


def test_the_identity_reaches_the_mechanism_kafka_python_builds_per_connection(tmp_path: Path) -> None:
    """kafka-python gives a mechanism only its own keys: the identity rides through them to the token."""
    settings = settings_from(tmp_path, 'awsProfileName="dr-operator"')
    cluster = KafkaCluster.__new__(KafkaCluster)  # its client configuration, without connecting
    cluster.settings = settings
    client = KafkaNetClient(**cluster._client_config())
    try:
        connection = KafkaConnection(client._net, node_id=1, **client._manager.config)
        mechanism = get_sasl_mechanism(connection.config["sasl_mechanism"])(host=DR_HOST, **connection.config)
        assert json.loads(mechanism.auth_bytes())["x-amz-credential"].startswith(f"{PROFILE_KEY}/")
    finally:
        client.close()


@STS
def test_a_role_is_assumed_with_the_default_credentials_and_its_credentials_sign(
    tmp_path: Path, sts_clients: list[dict[str, Any]]
) -> None:
    settings = settings_from(tmp_path, f'awsRoleArn="{ROLE}" awsRoleSessionName="dr-restore" awsRoleExternalId="x-1"')
    signed = token(settings)
    (sts,) = sts_clients
    assert sts["aws_access_key_id"] == DEFAULT_KEY  # the base: the default chain, as aws-msk-iam-auth's
    assert sts["calls"] == [{"RoleArn": ROLE, "RoleSessionName": "dr-restore", "ExternalId": "x-1"}]
    assert sts["endpoint"] == "https://sts.amazonaws.com"  # no awsStsRegion: the global endpoint
    assumed = msk_iam.credentials_for(settings.aws_msk_iam).frozen()
    assert assumed.access_key != DEFAULT_KEY and assumed.token
    assert signed["x-amz-credential"].startswith(f"{assumed.access_key}/")
    assert signed["x-amz-security-token"] == assumed.token
    caller = msk_iam._session(None).client(
        "sts",
        region_name="eu-west-1",
        aws_access_key_id=assumed.access_key,
        aws_secret_access_key=assumed.secret_key,
        aws_session_token=assumed.token,
    )
    assert caller.get_caller_identity()["Arn"].endswith(":assumed-role/msk-dr-operator/dr-restore")


@STS
def test_the_role_is_assumed_at_the_sts_region_asked_for_with_the_java_default_session_name(
    tmp_path: Path, sts_clients: list[dict[str, Any]]
) -> None:
    settings = settings_from(tmp_path, f'awsRoleArn="{ROLE}" awsStsRegion="eu-central-1"')
    token(settings)
    (sts,) = sts_clients
    assert (sts["endpoint"], sts["region_name"]) == ("https://sts.eu-central-1.amazonaws.com", "eu-central-1")
    assert sts["calls"] == [{"RoleArn": ROLE, "RoleSessionName": "aws-msk-iam-auth"}]


@STS
def test_the_role_credentials_are_shared_and_refreshed_before_they_expire(
    tmp_path: Path, sts_clients: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_from(tmp_path, f'awsRoleArn="{ROLE}"')
    first = token(settings)["x-amz-credential"]
    assert token(settings)["x-amz-credential"] == first  # a second connection: the same role session
    assert sum(len(sts["calls"]) for sts in sts_clients) == 1

    def later() -> datetime:  # 50 minutes on: the hour's credentials expire in 10
        return datetime.now(UTC) + timedelta(minutes=50)

    monkeypatch.setattr(botocore.credentials, "_local_now", later)
    msk_iam.credentials_for(settings.aws_msk_iam)._source._time_fetcher = later  # type: ignore[union-attr]
    assert token(settings)["x-amz-credential"] != first  # assumed again (moto's new hour is as near its end)
    assert sum(len(sts["calls"]) for sts in sts_clients) > 1


def test_a_refused_assume_role_is_one_line_naming_the_role(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = msk_iam._session

    def refusing(profile: str | None) -> Any:
        session = real(profile)
        create = session.client

        def client(service: str, **kwargs: Any) -> Any:
            made = create(service, **kwargs)
            stub = Stubber(made)
            stub.add_client_error(
                "assume_role", "AccessDenied", f"User: arn:aws:iam::123456789012:user/ops is not\nauthorized on {ROLE}"
            )
            stub.activate()
            return made

        session.client = client
        return session

    monkeypatch.setattr(msk_iam, "_session", refusing)
    settings = settings_from(tmp_path, f'awsRoleArn="{ROLE}"')
    with pytest.raises(OffsetRestoreError) as refused:
        msk_iam.client_config(settings)
    line = str(refused.value)
    assert "\n" not in line and refused.value.exit_status == 1
    assert line.startswith(f"cannot sign as awsRoleArn {ROLE} (session aws-msk-iam-auth): AWS refused AssumeRole")
    assert "AccessDenied" in line


def listening() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.setblocking(False)
    return server


def test_a_missing_profile_is_refused_by_name_and_nothing_is_connected(tmp_path: Path) -> None:
    server = listening()
    with server:
        port = server.getsockname()[1]
        settings = settings_from(tmp_path, 'awsProfileName="dr-oprator"', bootstrap=f"127.0.0.1:{port}")
        with pytest.raises(BadInputError) as refused:
            KafkaCluster(settings)
        with pytest.raises(BlockingIOError):
            server.accept()  # not even the reachability probe connected
    assert str(refused.value).startswith("awsProfileName dr-oprator: no such AWS profile")
    assert "\n" not in str(refused.value)


def test_the_cli_refuses_a_missing_profile_with_exit_2_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text(IAM_FILE.format(options='awsProfileName="prod-operator"'), encoding="latin-1")
    server, out, err = listening(), io.StringIO(), io.StringIO()
    with server:
        bootstrap = f"127.0.0.1:{server.getsockname()[1]}"
        argv = ["snapshot", "--bootstrap-servers", bootstrap, "--command-config", str(path), "--output", str(tmp_path)]
        status = main(argv, out, err)
        with pytest.raises(BlockingIOError):
            server.accept()
    assert status == 2 and err.getvalue().count("\n") == 1, err.getvalue()
    assert "awsProfileName prod-operator: no such AWS profile" in err.getvalue()
    assert "warning" not in err.getvalue() and not list(tmp_path.glob("*/*.json*"))


def test_a_profile_without_credentials_is_tried_again_then_refused_in_one_line(tmp_path: Path) -> None:
    settings = settings_from(tmp_path, 'awsProfileName="empty" awsMaxRetries="2" awsMaxBackOffTimeMs="700"')
    slept: list[float] = []
    credentials = msk_iam.IamCredentials(settings.aws_msk_iam, sleep=slept.append, draw=lambda: 0.999)  # type: ignore[arg-type]
    with pytest.raises(BadInputError, match=r"^cannot sign as awsProfileName empty: Unable to locate credentials$"):
        credentials.frozen()
    assert slept == pytest.approx([0.4995, 0.6993])  # 0.5 s, then 1 s capped at 0.7 s; full jitter


def test_the_back_off_is_full_jitter_doubling_from_half_a_second_up_to_the_cap() -> None:
    assert [msk_iam.backoff_s(retry, 5000, 1.0) for retry in range(5)] == [0.5, 1.0, 2.0, 4.0, 5.0]
    assert msk_iam.backoff_s(3, 5000, 0.25) == 1.0


@STS
def test_debug_creds_shows_the_principal_that_signs_once(
    tmp_path: Path, sts_clients: list[dict[str, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    settings = settings_from(tmp_path, f'awsRoleArn="{ROLE}" awsRoleSessionName="audit" awsDebugCreds="true"')
    token(settings)
    token(settings)
    shown = [r.getMessage() for r in caplog.records if r.name == msk_iam.__name__]
    assert len(shown) == 1 and shown[0].startswith("awsDebugCreds: AWS_MSK_IAM signs as arn:aws:sts::")
    assert shown[0].endswith(":assumed-role/msk-dr-operator/audit")


@pytest.mark.parametrize(
    ("options", "refusal"),
    [
        (
            'awsRoleArn="' + ROLE + '" awsRoleAccessKeyId="AKIA" awsRoleSecretAccessKey="s"',
            "awsRoleAccessKeyId is not supported: ",
        ),
        ('awsShouldUseFips="true"', "awsShouldUseFips is not supported: set AWS_USE_FIPS_ENDPOINT=true"),
        ('awsMskRegionProvider="com.example.Regions"', "awsMskRegionProvider is not supported: "),
        (
            'awsProfileName="dr-operator" awsAddDefaultProviders="true"',
            "awsAddDefaultProviders=true is not supported: ",
        ),
        (
            f'awsProfileName="dr-operator" awsRoleArn="{ROLE}"',
            "awsProfileName and awsRoleArn together are not supported",
        ),
        ('awsProfilename="dr-operator"', "awsProfilename is not an option of IAMLoginModule"),
        ('awsRoleSessionName="dr"', "awsRoleSessionName needs awsRoleArn"),
        ('awsProfileName="dr-operator" awsStsRegion="eu-central-1"', "awsStsRegion needs awsRoleArn"),
        ('awsRoleArn="msk-dr-operator"', "awsRoleArn 'msk-dr-operator' is not an IAM role ARN"),
        ('awsMaxRetries="many"', "awsMaxRetries takes a whole number"),
        ('awsMaxRetries="99"', "awsMaxRetries '99': input should be less than or equal to 20"),
        ('awsDebugCreds="yes"', "awsDebugCreds takes true or false"),
    ],
)
def test_what_is_not_honoured_is_refused_by_name_in_one_line(tmp_path: Path, options: str, refusal: str) -> None:
    path = tmp_path / "client.properties"
    path.write_text(IAM_FILE.format(options=options), encoding="latin-1")
    with pytest.raises(BadInputError) as refused:
        read_client_properties(str(path))
    line = str(refused.value)
    assert line.startswith(f"--command-config {path}: sasl.jaas.config: {refusal}") and "\n" not in line


def test_no_op_values_of_java_options_are_accepted(tmp_path: Path) -> None:
    settings = settings_from(
        tmp_path, 'awsProfileName="dr-operator" awsAddDefaultProviders="false" awsShouldUseFips="false"'
    )
    assert settings.aws_msk_iam == MskIamIdentity(profile="dr-operator")


def test_an_identity_needs_aws_msk_iam(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs AWS_MSK_IAM, not SCRAM-SHA-512"):
        ConnectionSettings(
            bootstrap_servers="b:9096",
            security_protocol="SASL_SSL",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_username="u",
            sasl_password="p",  # type: ignore[arg-type]
            aws_msk_iam=MskIamIdentity(profile="dr-operator"),
        )
