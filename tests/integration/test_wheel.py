"""The package as a user installs it: the built wheel into a fresh virtualenv with its declared
dependencies (pyproject.toml, the one list), then the CLI against a real broker."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

from kafka import KafkaProducer
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP

from tests.helpers import Brokers, commit, unique

ROOT = Path(__file__).resolve().parents[2]
IGNORED = (".git", ".venv", "build", "cdk.out", "node_modules", "demo-output", "*.egg-info", "__pycache__", ".*_cache")


def test_the_wheel_installs_with_its_dependencies_and_its_cli_snapshots_a_real_cluster(
    brokers: Brokers, source: KafkaCluster, tmp_path: Path
) -> None:
    dist, source_copy = tmp_path / "dist", tmp_path / "source"
    # Built from a copy: setuptools reuses a checkout's build/ folder, with whatever it held before.
    shutil.copytree(ROOT, source_copy, ignore=shutil.ignore_patterns(*IGNORED))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(dist), str(source_copy)],
        check=True,
        capture_output=True,
    )
    wheel = next(dist.glob("offset_restore-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names if ".dist-info/" not in name} == {
        "offset_restore",
        "offset_restore_handlers",
    }  # no top-level package with a common name ("handlers")
    assert "offset_restore/kafka/schemas/ConsumerGroupDescribeResponse.json" in names
    assert "offset_restore/devtools/apache_kafka.pom.xml" in names

    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    cli = tmp_path / "venv" / "bin" / "offset-restore"
    shown = subprocess.run([str(cli), "--help"], capture_output=True, text=True, check=False)
    assert shown.returncode == 0 and "snapshot" in shown.stdout, shown.stderr

    version = subprocess.run([str(cli), "--version"], capture_output=True, text=True, check=False)
    assert "codecs: gzip, snappy, lz4, zstd" in version.stdout and "missing" not in version.stdout, version.stdout

    group = unique("wheel-g")  # on an lz4 and a zstd topic: the snapshot reads their records as evidence
    for codec in ("lz4", "zstd"):
        topic = unique(f"wheel-{codec}")
        source.create_topics({topic: 1})
        producer = KafkaProducer(bootstrap_servers=brokers.source.bootstrap_servers, compression_type=codec)
        for i in range(5):
            producer.send(topic, key=f"k{i}".encode(), value=b"v" * 100, partition=0)
        producer.flush()
        producer.close()
        commit(source, group, {TP(topic, 0): 3})
    snapshot = subprocess.run(
        [
            str(cli),
            "snapshot",
            "--bootstrap-servers",
            brokers.source.bootstrap_servers,
            "--groups",
            group,
            "--output",
            str(tmp_path / "snaps"),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert snapshot.returncode == 0, snapshot.stderr
    counts = json.loads(snapshot.stdout)["counts"]
    assert counts["groups"] == 1 and counts["with_evidence"] == 2 and counts["evidence_incomplete"] == 0, counts

    demo = subprocess.run([str(cli), "demo"], capture_output=True, text=True, check=False)
    assert demo.returncode == 2 and "pip install 'offset-restore[demo]'" in demo.stderr, demo.stderr
