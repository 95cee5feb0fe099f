"""Mutual TLS on Apache Kafka (issue 39): a listener that requires client certificates
(``ssl.client.auth=required``) and a CA the test makes. Snapshot, plan and apply go through one client
properties file with a PKCS12 keystore, and Apache Kafka's own kafka-consumer-groups reads the same file.
The PEM flags work too. A missing, foreign or expired certificate is named in one line. A handler
presents the certificate from its Secrets Manager secret, read again on every invocation."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from offset_restore.devtools.apache_broker import CLIENT_PKCS12_PASSWORD, ApacheBroker, java_tool
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.store import SnapshotRepository
from offset_restore.stores.storage import S3Store

from tests.helpers import LambdaContext, commit, produce, unique
from tests.integration.test_apache_kafka import restored_planned_and_applied
from tests.integration.test_apply import run as run_cli


@pytest.fixture(scope="module")
def mtls() -> Iterator[ApacheBroker]:
    broker = ApacheBroker("mtls", protocol="SSL").start()
    try:
        yield broker
    finally:
        broker.stop()


def folder_of(broker: ApacheBroker) -> Path:
    assert broker.folder is not None
    return broker.folder


def committed_group(broker: ApacheBroker, prefix: str) -> str:
    """A group committed at 3 on a topic of five records, made over mutual TLS."""
    group, topic = unique(f"{prefix}-g"), unique(prefix)
    with KafkaCluster(broker.settings()) as cluster:
        cluster.create_topics({topic: 1})
        produce(cluster, topic, 0, 5)
        commit(cluster, group, {TP(topic, 0): 3})
    return group


def certificate(folder: Path, name: str, *, expired: bool = False, own_ca: bool = False) -> tuple[Path, Path]:
    """A client certificate (PEM) and its key: of the broker's CA, already expired, or of a CA of its own."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_key: Any
    if own_ca:
        ca_key, issuer = key, x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "a CA the broker does not know")])
    else:
        ca_key = serialization.load_pem_private_key((folder / "ca.key").read_bytes(), None)
        issuer = x509.load_pem_x509_certificate((folder / "ca.pem").read_bytes()).subject
    now = datetime.datetime.now(datetime.UTC)
    start, end = (now - datetime.timedelta(days=3), now - datetime.timedelta(days=1)) if expired else (now, now)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end if expired else now + datetime.timedelta(days=1))
        .sign(ca_key, hashes.SHA256())
    )
    cert_path, key_path = folder / f"{name}.pem", folder / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def test_snapshot_plan_and_apply_through_a_pkcs12_properties_file_that_kafka_consumer_groups_reads_too(
    mtls: ApacheBroker, tmp_path: Path
) -> None:
    """The client.properties an MSK user with client certificates keeps: a PKCS12 keystore with its
    passwords and a PEM truststore. Before, offset-restore refused it by name ("client certificates are not
    supported"); now snapshot, plan and apply go through it alone, no password is printed, and the real
    kafka-consumer-groups reads the same file and sees the offset apply wrote."""
    folder = folder_of(mtls)
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SSL\n"
        f"ssl.keystore.type=PKCS12\nssl.keystore.location={folder / 'client.p12'}\n"
        f"ssl.keystore.password={CLIENT_PKCS12_PASSWORD}\nssl.key.password={CLIENT_PKCS12_PASSWORD}\n"
        f"ssl.truststore.type=PEM\nssl.truststore.location={folder / 'ca.pem'}\n"
    )
    flags = ["--bootstrap-servers", mtls.bootstrap_servers, "--command-config", str(config)]
    group, restored, output = restored_planned_and_applied(mtls.settings(), flags, tmp_path)
    assert CLIENT_PKCS12_PASSWORD not in output and "not used by offset-restore" not in output
    describe = ["--bootstrap-server", mtls.bootstrap_servers, "--command-config", str(config), "--describe"]
    described = java_tool(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", [*describe, "--group", group], log4j=mtls.log4j
    )
    assert described.returncode == 0, described.stdout + described.stderr
    assert any(line.split()[:4] == [group, restored, "0", "15"] for line in described.stdout.splitlines()), described


def test_pem_flags_work_and_a_missing_foreign_or_expired_certificate_is_named_in_one_line(
    mtls: ApacheBroker, tmp_path: Path
) -> None:
    folder, group = folder_of(mtls), committed_group(mtls, "mtls")
    base = ["snapshot", "--bootstrap-servers", mtls.bootstrap_servers, "--security-protocol", "SSL"]
    base += ["--ssl-cafile", str(folder / "ca.pem"), "--groups", group, "--connect-timeout", "1"]
    status, out, err = run_cli(*base, "--ssl-certfile", str(folder / "client.pem"), "--ssl-keyfile",
                               str(folder / "client.pk8"), "--output", str(tmp_path / "ok"))  # fmt: skip
    assert status == 0 and "groups            1" in out, out + err

    foreign, foreign_key = certificate(folder, "foreign", own_ca=True)
    expired, expired_key = certificate(folder, "expired", expired=True)
    for flags in ([], ["--ssl-certfile", str(foreign), "--ssl-keyfile", str(foreign_key)],
                  ["--ssl-certfile", str(expired), "--ssl-keyfile", str(expired_key)]):  # fmt: skip
        status, _, err = run_cli(*base, *flags, "--output", str(tmp_path / "refused"))
        assert status == 1 and len(err.strip().splitlines()) == 1, err
        assert "client certificate" in err and "cannot reach Kafka" in err, err
        assert "(_ssl.c:" not in err or ")" in err.split("(_ssl.c:", 1)[1].split(";")[0], err  # whole, not cut
    assert not (tmp_path / "refused").exists()

    status, _, err = run_cli(*base[:5], "--ssl-keyfile", str(folder / "client.pk8"), "--output", str(tmp_path / "x"))
    assert status == 2 and "--ssl-keyfile needs --ssl-certfile" in err


def test_a_handler_presents_the_certificate_of_its_secret_read_again_on_every_invocation(
    mtls: ApacheBroker, aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot function with the deployment's mutual TLS (SSL, no SASL, the secret's ARN): it
    snapshots through the certificate in Secrets Manager; the secret rotated to a certificate of another
    CA is used from the next invocation, which fails naming it."""
    from offset_restore_handlers.snapshot import handler

    folder, group = folder_of(mtls), committed_group(mtls, "mtls-lambda")
    region = "eu-west-1"
    s3 = boto3.client("s3", region_name=region)
    s3.create_bucket(Bucket="snapshots", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    secrets = boto3.client("secretsmanager", region_name=region)

    def secret(cert: Path, key: Path) -> str:
        return json.dumps(
            {"certificate": cert.read_text(), "private_key": key.read_text(), "ca": (folder / "ca.pem").read_text()}
        )

    arn = secrets.create_secret(Name="mtls-client", SecretString=secret(folder / "client.pem", folder / "client.pk8"))
    env: dict[str, Any] = {
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "SOURCE_CLUSTER_NAME": "primary",
        "SOURCE_BOOTSTRAP_SERVERS": mtls.bootstrap_servers,
        "SOURCE_SECURITY_PROTOCOL": "SSL",
        "SOURCE_SASL_MECHANISM": "NONE",
        "SOURCE_TLS_SECRET_ARN": arn["ARN"],
        "SNAPSHOT_BUCKET": "snapshots",
        "KAFKA_CONNECT_TIMEOUT_S": "2",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = handler({"groups": group}, LambdaContext())
    repo = SnapshotRepository(S3Store("snapshots", "", s3))
    key, manifest = repo.by_id(result["snapshot_id"])
    assert [g.group for g in repo.groups(key, manifest)] == [group]

    foreign, foreign_key = certificate(folder, "rotated-wrong", own_ca=True)
    secrets.put_secret_value(SecretId=arn["ARN"], SecretString=secret(foreign, foreign_key))
    with pytest.raises(Exception, match="client certificate"):
        handler({"groups": group}, LambdaContext())
