"""Run the real MirrorMaker 2 (Apache Kafka 4.1's ``connect-mirror``, dedicated mode) from one harness
broker to one or more others: for the comparison (``make compare``) and the tests of the ``mm2`` strategy.

Each flow, ``source -> replica``, has group offset sync on, as an MSK user running MM2 for DR would
configure it: every topic and group, the identity replication policy (topics keep their names on the
target, so a group's offsets carry over without a topic map), checkpoints and group syncs every
second (60 s by default: a test would wait minutes), topic and group refresh every 2 s (600 s by
default: a group created after MM2 starts would not be seen). ``offset.lag.max`` is the setting the
comparison varies per flow: 100 (MM2's default) or 0 (a sync for every record). Several flows run in
one process (one JVM on a 2-core machine), all seeing the same source at the same moments.

MM2 logs "Kafka MirrorMaker started" before its connectors are configured, so readiness is not a log
line: callers wait for what they need on the target (``wait_for``).
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from offset_restore.devtools.apache_broker import JVM, ApacheBroker, kafka_classpath
from offset_restore.devtools.processes import end_process
from offset_restore.errors import OffsetRestoreError

__all__ = ["Flow", "MirrorMaker", "properties"]

MAIN_CLASS = "org.apache.kafka.connect.mirror.MirrorMaker"
HEAP = ("-Xms64m", "-Xmx512m")
LOG4J = """name=mm2
appender.file.type=Console
appender.file.name=OUT
appender.file.target=SYSTEM_OUT
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=WARN
rootLogger.appenderRef.out.ref=OUT
logger.mirror.name=org.apache.kafka.connect.mirror
logger.mirror.level=INFO
"""
"""MirrorMaker's own INFO lines (what it synced, what it skipped) and everyone's warnings, to its log."""
COMMON = """emit.heartbeats.enabled = false
replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy
emit.checkpoints.enabled = true
emit.checkpoints.interval.seconds = 1
sync.group.offsets.enabled = true
sync.group.offsets.interval.seconds = 1
refresh.topics.interval.seconds = 2
refresh.groups.interval.seconds = 2
sync.topic.acls.enabled = false
sync.topic.configs.enabled = false
replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
offset-syncs.topic.replication.factor = 1
offset.storage.replication.factor = 1
status.storage.replication.factor = 1
config.storage.replication.factor = 1
offset.storage.partitions = 1
status.storage.partitions = 1
"""


@dataclass(frozen=True)
class Flow:
    """One replica MM2 writes: its cluster, alias and ``offset.lag.max``."""

    target: ApacheBroker
    lag_max: int = 100
    alias: str = "target"


def properties(source: ApacheBroker, source_alias: str, flows: Sequence[Flow]) -> str:
    """``mm2.properties`` for ``source -> each flow's target``: per-flow settings (``A->B.offset.lag.max``)
    override the global ones, and each target's worker flushes its offsets every second (the syncs
    still in flight go out at that flush; 60 s by default)."""
    lines = [f"clusters = {', '.join([source_alias, *(f.alias for f in flows)])}"]
    lines.append(f"{source_alias}.bootstrap.servers = {source.bootstrap_servers}")
    for f in flows:
        lines += [
            f"{f.alias}.bootstrap.servers = {f.target.bootstrap_servers}",
            f"{source_alias}->{f.alias}.enabled = true",
            f"{source_alias}->{f.alias}.topics = .*",
            f"{source_alias}->{f.alias}.groups = .*",
            f"{source_alias}->{f.alias}.offset.lag.max = {f.lag_max}",
            f"{f.alias}->{source_alias}.enabled = false",
            f"{f.alias}.offset.flush.interval.ms = 1000",
        ]
    return "\n".join(lines) + "\n" + COMMON


@dataclass
class MirrorMaker:
    """One dedicated MirrorMaker 2 process replicating ``source`` to one replica or several."""

    source: ApacheBroker
    flows: Sequence[Flow]
    source_alias: str = "source"
    config: Mapping[str, str] = field(default_factory=dict)
    """Extra or overriding ``mm2.properties`` lines (e.g. ``source->target.topics``)."""
    folder: Path | None = None
    process: subprocess.Popen[bytes] | None = None

    @property
    def checkpoints_topic(self) -> str:
        """Where MM2 writes its checkpoints, on each replica (``<source alias>.checkpoints.internal``)."""
        return f"{self.source_alias}.checkpoints.internal"

    @property
    def log_file(self) -> Path:
        assert self.folder is not None
        return self.folder / "mm2.log"

    def log(self) -> str:
        return self.log_file.read_text(errors="replace") if self.folder else ""

    def start(self) -> MirrorMaker:
        classpath = kafka_classpath()
        self.folder = Path(tempfile.mkdtemp(prefix="mm2-"))
        (self.folder / "log4j2.properties").write_text(LOG4J)
        text = properties(self.source, self.source_alias, self.flows)
        settings = self.folder / "mm2.properties"
        settings.write_text(text + "".join(f"{key} = {value}\n" for key, value in self.config.items()))
        command = [
            "java", *HEAP, *JVM, f"-Dlog4j2.configurationFile={self.folder / 'log4j2.properties'}",
            "-cp", classpath, MAIN_CLASS, str(settings),
        ]  # fmt: skip
        with self.log_file.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True)
        atexit.register(self.stop)
        return self

    def wait_for(self, what: str, ready: Callable[[], bool], timeout_s: float = 120.0) -> None:
        """Poll ``ready`` until it holds; a MirrorMaker that exits, or a timeout, is reported with its log."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                raise OffsetRestoreError(f"MirrorMaker 2 exited while waiting for {what}:\n{self.log()[-4000:]}")
            if ready():
                return
            time.sleep(0.5)
        raise OffsetRestoreError(f"MirrorMaker 2 did not reach {what} in {timeout_s} s:\n{self.log()[-4000:]}")

    def stop(self) -> None:
        """MM2 stops its connectors and commits on SIGTERM (the failover, as a clean stop)."""
        process, self.process = self.process, None
        end_process(process)

    def remove(self) -> None:
        self.stop()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __enter__(self) -> MirrorMaker:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.remove()
