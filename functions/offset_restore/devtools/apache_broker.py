"""Start and stop real Apache Kafka brokers (single-node KRaft) from Maven Central's jars.

For tests, benchmarks and the demo: what CI proves is proven on the broker our users run (MSK is
Apache Kafka). The jars are collected once by Maven from ``apache_kafka.pom.xml`` into a cache folder
named by the POM's hash, so a second run downloads nothing and a changed POM gets a fresh folder. Each
broker formats its own storage in a fresh folder, listens on free loopback ports, and is stopped by
PID (SIGTERM, then SIGKILL) with its folder removed.

Sizes are kept small for 2-core test machines: a 384 MB heap (the log cleaner's dedupe buffer, 128 MB
on the heap by default, is cut to 8 MB), two network and two I/O threads, three offsets-topic
partitions, no group rebalance delay (the default 3 s would slow every group a test starts), and a
1 s floor on consumers' session timeouts (the default 6 s would make every test of a dead member wait).
Time retention is off: the tests restore records with their 2023 source timestamps, and a broker
with the default seven days deletes them at its first retention check (5 minutes after start, seen
here as logs emptied mid-session). A real restore meets the same rule: see the runbook. The log
cleaner looks for work every 250 ms (15 s by default), so a compaction test waits seconds, not minutes.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import hashlib
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from offset_restore.devtools.local_broker import free_ports
from offset_restore.devtools.processes import end_process
from offset_restore.errors import OffsetRestoreError
from offset_restore.kafka.connection import ConnectionSettings

__all__ = ["DEFAULT_VERSION", "VERSIONS", "ApacheBroker", "java_tool", "kafka_classpath"]

POM = Path(__file__).with_name("apache_kafka.pom.xml")
DEFAULT_VERSION = "4.1.1"
"""The version the whole suite, the demo and the benchmarks run on (with MirrorMaker 2 and the tools)."""
VERSIONS = ("3.9.1", DEFAULT_VERSION, "4.4.0")
"""The versions the promise-bearing tests run on: the last 3.x line (still common on managed services), the
default, and the newest Maven Central serves here."""
HEAP = ("-Xms64m", "-Xmx384m")
JVM = ("-XX:+UseSerialGC", "-Djava.awt.headless=true")
LOG4J = """name=quiet
appender.console.type=Console
appender.console.name=STDERR
appender.console.target=SYSTEM_ERR
appender.console.layout.type=PatternLayout
appender.console.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=WARN
rootLogger.appenderRef.stderr.ref=STDERR
logger.started.name=kafka.server.KafkaRaftServer
logger.started.level=INFO
"""
LOG4J_1 = """log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
"""
"""Kafka 3.x logs through reload4j, which reads this format (``-Dlog4j.configuration``); 4.x reads LOG4J."""
SCRAM_USER, SCRAM_PASSWORD = "offset-restore", "throw-away-test-secret"
SASL_SSL = """sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.client.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PEM
ssl.keystore.location={keystore}
connection.failed.authentication.delay.ms=1000
"""
"""The SCRAM-over-TLS listener. A broker closes a connection that failed authentication after
``connection.failed.authentication.delay.ms`` (100 ms by default); on a loaded machine kafka-python
then sometimes reads the close before the broker's answer and reports only "socket disconnected"
(seen in 2 of 4 full suite runs): a second keeps the answer first."""
MUTUAL_TLS = """ssl.keystore.type=PEM
ssl.keystore.location={keystore}
ssl.truststore.type=PEM
ssl.truststore.location={ca}
ssl.client.auth=required
"""
"""The mutual-TLS listener (MSK's TLS with client authentication): the client must present a certificate
of the throw-away CA."""
CLIENT_PKCS12_PASSWORD = "throw-away-keystore-password"
"""The password of the test client's PKCS12 keystore (``client.p12`` in the broker's folder)."""
SERVER = """process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:{controller}
listeners=CLIENT://127.0.0.1:{port},INTERNAL://127.0.0.1:{internal},CONTROLLER://127.0.0.1:{controller}
advertised.listeners=CLIENT://127.0.0.1:{advertised},INTERNAL://127.0.0.1:{internal},CONTROLLER://127.0.0.1:{controller}
inter.broker.listener.name=INTERNAL
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,CLIENT:{protocol}
log.dirs={data}
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=3
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
group.min.session.timeout.ms=1000
log.retention.ms=-1
log.cleaner.dedupe.buffer.size=8388608
log.cleaner.backoff.ms=250
num.network.threads=2
num.io.threads=2
"""


def _cache_root() -> Path:
    configured = os.environ.get("OFFSET_RESTORE_KAFKA_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "offset-restore" / "apache-kafka"


def _require(command: str, version_flag: str, hint: str) -> str:
    """The tool's version text, or a refusal that says what to install."""
    if shutil.which(command) is None:
        raise OffsetRestoreError(f"Apache Kafka needs {hint}: `{command}` is not on PATH")
    done = subprocess.run([command, version_flag], capture_output=True, text=True, check=False)
    return done.stdout + done.stderr


def _check_java() -> None:
    text = _require("java", "-version", "Java 17 or newer (e.g. apt-get install openjdk-17-jre-headless)")
    quoted = text.split('"')
    major = quoted[1].split(".")[0] if len(quoted) > 1 else ""
    if not major.isdigit() or int(major) < 17:
        raise OffsetRestoreError(f"Apache Kafka 4 needs Java 17 or newer; `java -version` says: {text.strip()}")


def kafka_classpath(version: str = DEFAULT_VERSION) -> str:
    """``<folder>/*`` holding Apache Kafka ``version``'s jars, collected by Maven on first use."""
    _check_java()
    digest = hashlib.sha256(POM.read_bytes() + version.encode()).hexdigest()[:12]
    lib = _cache_root() / digest / "lib"
    if not (lib / ".complete").exists():
        _require("mvn", "-v", "Maven to fetch its jars from Maven Central (e.g. apt-get install maven)")
        lib.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix="lib-", dir=lib.parent))
        only = [] if version == DEFAULT_VERSION else [f"-Dkafka.version={version}", "-Dbroker.only"]
        command = [
            "mvn", "-q", "-B", "-f", str(POM), *only,
            "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies",
            "-DincludeScope=runtime", f"-DoutputDirectory={partial}",
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            shutil.rmtree(partial, ignore_errors=True)
            raise OffsetRestoreError(f"Maven could not fetch Apache Kafka's jars ({' '.join(command)}):\n{done.stdout}")
        (partial / ".complete").touch()
        with contextlib.suppress(OSError):  # another process finished first: keep its folder
            partial.rename(lib)
        shutil.rmtree(partial, ignore_errors=True)
    return f"{lib}/*"


def java_tool(
    main_class: str,
    args: Sequence[str],
    *,
    log4j: Path,
    timeout_s: float = 120,
    heap: str = "-Xmx256m",
    version: str = DEFAULT_VERSION,
) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's command-line tools (StorageTool, ConsumerGroupCommand, the console consumer)
    as its script would, and return what it printed."""
    command = ["java", heap, *JVM, *_logging(log4j), "-cp", kafka_classpath(version), main_class]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout_s, check=False)


def _throwaway_tls(folder: Path) -> Path:
    """A CA (``ca.pem``, what clients trust) and a server certificate for 127.0.0.1 signed by it, as a
    PEM keystore the broker reads (unencrypted PKCS#8 key, then the certificate). Lives two days."""

    def openssl(*args: str) -> None:
        done = subprocess.run(["openssl", *args], cwd=folder, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise OffsetRestoreError(f"openssl {' '.join(args)} failed: {done.stderr}")

    _require("openssl", "version", "openssl to make a throw-away CA for the TLS test broker")
    days = ("-days", "2")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", *days,
            "-subj", "/CN=offset-restore throw-away test CA")  # fmt: skip
    openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"
    )
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", *days, "-extfile", "san.ext")  # fmt: skip
    openssl("pkcs8", "-topk8", "-nocrypt", "-in", "server.key", "-out", "server.pk8")
    keystore = folder / "keystore.pem"
    keystore.write_text((folder / "server.pk8").read_text() + (folder / "server.pem").read_text())
    return keystore


def _client_certificate(folder: Path) -> None:
    """A client certificate of the throw-away CA (``_throwaway_tls`` first): ``client.pem`` and its key
    ``client.pk8`` (PEM), and the same as the PKCS12 keystore ``client.p12`` (``CLIENT_PKCS12_PASSWORD``)."""

    def openssl(*args: str) -> None:
        done = subprocess.run(["openssl", *args], cwd=folder, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise OffsetRestoreError(f"openssl {' '.join(args)} failed: {done.stderr}")

    days = ("-days", "2")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "client.key", "-out", "client.csr", "-subj",
            "/CN=offset-restore test client")  # fmt: skip
    openssl("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "client.pem", *days)  # fmt: skip
    openssl("pkcs8", "-topk8", "-nocrypt", "-in", "client.key", "-out", "client.pk8")
    openssl("pkcs12", "-export", "-inkey", "client.key", "-in", "client.pem", "-certfile", "ca.pem",
            "-out", "client.p12", "-passout", f"pass:{CLIENT_PKCS12_PASSWORD}")  # fmt: skip


def _logging(log4j: Path) -> list[str]:
    """Both logging systems' settings: Kafka 4 reads the log4j2 file, Kafka 3 the reload4j one beside it."""
    return [f"-Dlog4j2.configurationFile={log4j}", f"-Dlog4j.configuration=file:{log4j.with_suffix('.v1.properties')}"]


def _cluster_id() -> str:
    """Kafka's ``Uuid.toString()`` shape (22 URL-safe base64 characters), never starting with '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


@dataclass
class ApacheBroker:
    """One single-node KRaft cluster. ``config`` adds or overrides server properties (e.g.
    ``group.coordinator.append.linger.ms`` to measure its cost)."""

    name: str
    config: Mapping[str, str] = field(default_factory=dict)
    version: str = DEFAULT_VERSION
    """The Apache Kafka version the broker runs (``VERSIONS``), from its own jars."""
    protocol: str = "PLAINTEXT"
    """The client listener's: ``PLAINTEXT``; ``SASL_SSL`` (SCRAM-SHA-512, as MSK offers it) with a
    throw-away CA and a user added at format time; or ``SSL`` with client authentication required (mutual
    TLS, MSK's port 9094), the client's certificate in the broker's folder. The broker talks to itself on
    a plaintext listener of its own."""
    port: int = 0
    controller_port: int = 0
    cluster_id: str = ""
    """Kept across a stop and start: a restarted broker is the same cluster, emptied (its storage is
    formatted afresh), as a cluster restored in place would be."""
    advertised_port: int = 0
    """Where clients are told to connect, when not ``port`` (a fault proxy in front of the broker)."""
    folder: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    started_s: float = 0.0
    """Seconds from launching the JVM until the client port answered."""

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.advertised_port or self.port}"

    @property
    def log4j(self) -> Path:
        assert self.folder is not None
        return self.folder / "log4j2.properties"

    @property
    def log_file(self) -> Path:
        assert self.folder is not None
        return self.folder / "broker.log"

    def settings(self, **overrides: object) -> ConnectionSettings:
        values: dict[str, object] = {"bootstrap_servers": self.bootstrap_servers, "connect_timeout_s": 10}
        if self.protocol == "SASL_SSL":
            assert self.folder is not None
            values |= {
                "security_protocol": "SASL_SSL",
                "sasl_mechanism": "SCRAM-SHA-512",
                "sasl_username": SCRAM_USER,
                "sasl_password": SCRAM_PASSWORD,
                "ssl_cafile": str(self.folder / "ca.pem"),
            }
        if self.protocol == "SSL":
            assert self.folder is not None
            values |= {
                "security_protocol": "SSL",
                "ssl_cafile": str(self.folder / "ca.pem"),
                "ssl_certfile": str(self.folder / "client.pem"),
                "ssl_keyfile": str(self.folder / "client.pk8"),
            }
        return ConnectionSettings.model_validate({**values, **overrides})

    def launch(self) -> ApacheBroker:
        """Format storage and start the JVM; :meth:`wait_ready` waits for it (two brokers start together)."""
        classpath = kafka_classpath(self.version)
        # Three ports none of which is a port already given (5 picked: at most 2 can be among those).
        port, controller, internal = [p for p in free_ports(5) if p not in (self.port, self.controller_port)][:3]
        self.port, self.controller_port = self.port or port, self.controller_port or controller
        self.cluster_id = self.cluster_id or _cluster_id()
        self.folder = Path(tempfile.mkdtemp(prefix=f"kafka-{self.name}-"))
        self.log4j.write_text(LOG4J)
        self.log4j.with_suffix(".v1.properties").write_text(LOG4J_1)
        properties = self.folder / "server.properties"
        text = SERVER.format(
            controller=self.controller_port,
            port=self.port,
            internal=internal,
            advertised=self.advertised_port or self.port,
            data=self.folder / "data",
            protocol=self.protocol,
        )
        extra_format: list[str] = []
        if self.protocol == "SASL_SSL":
            text += SASL_SSL.format(keystore=_throwaway_tls(self.folder))
            extra_format = ["--add-scram", f"SCRAM-SHA-512=[name={SCRAM_USER},password={SCRAM_PASSWORD}]"]
        elif self.protocol == "SSL":
            text += MUTUAL_TLS.format(keystore=_throwaway_tls(self.folder), ca=self.folder / "ca.pem")
            _client_certificate(self.folder)
        elif self.protocol != "PLAINTEXT":
            raise OffsetRestoreError(f"the test broker speaks PLAINTEXT, SASL_SSL or SSL, not {self.protocol}")
        properties.write_text(text + "".join(f"{key}={value}\n" for key, value in self.config.items()))
        formatted = java_tool(
            "kafka.tools.StorageTool",
            ["format", "--standalone", "-t", self.cluster_id, "-c", str(properties), *extra_format],
            log4j=self.log4j,
            version=self.version,
        )
        if formatted.returncode != 0:
            raise OffsetRestoreError(f"formatting Kafka storage for {self.name} failed:\n{formatted.stderr}")
        command = ["java", *HEAP, *JVM, *_logging(self.log4j), "-cp", classpath]
        with self.log_file.open("wb") as log:
            self.process = subprocess.Popen(
                [*command, "kafka.Kafka", str(properties)], stdout=log, stderr=log, start_new_session=True
            )
        self.started_s = time.monotonic()
        atexit.register(self.stop)
        return self

    def wait_ready(self, timeout_s: float = 120.0) -> ApacheBroker:
        """The client port opens only once the broker is unfenced (Kafka's SocketServer), so a connect
        is the readiness signal; a process that exits (a bind failure is fatal) is reported with its log."""
        assert self.process is not None
        launched, deadline = self.started_s, time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = self.log_file.read_text(errors="replace")[-4000:]
                self.stop()
                raise OffsetRestoreError(f"Apache Kafka broker {self.name} exited at start:\n{log}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                self._wait_for_groups()
                self.started_s = time.monotonic() - launched
                return self
            time.sleep(0.05)
        self.stop()
        raise OffsetRestoreError(f"Apache Kafka broker {self.name} did not listen on {self.port} in {timeout_s} s")

    def _wait_for_groups(self) -> None:
        """The first group call creates ``__consumer_offsets`` and its partitions then load: until
        they have, every group call answers COORDINATOR_NOT_AVAILABLE or LOAD_IN_PROGRESS. Asked here
        once, with patience, so that a test with short retries does not meet a broker still starting."""
        from offset_restore.kafka.cluster import KafkaCluster

        patient = self.settings(retries=20, retry_backoff_s=0.2, retry_backoff_max_s=1.0)
        adapter_log = logging.getLogger("offset_restore.kafka.cluster")
        level = adapter_log.level
        adapter_log.setLevel(logging.ERROR)  # the retries here are expected, not news
        try:
            with KafkaCluster(patient) as cluster:
                cluster.describe_groups(["offset-restore-harness-ready"])
        finally:
            adapter_log.setLevel(level)

    def start(self) -> ApacheBroker:
        return self.launch().wait_ready()

    def stop(self) -> None:
        process, self.process = self.process, None
        end_process(process)
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __enter__(self) -> ApacheBroker:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


if __name__ == "__main__":  # `make kafka`: fetch every version's jars now, and say where they are
    for each in VERSIONS:
        print(f"Apache Kafka {each}: {kafka_classpath(each)}")
