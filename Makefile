# Two commands set up a fresh machine: `make demo` and `make test` (README).
PYTHON ?= python3
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_VERSION_CHECK := 1
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install test checks lint typecheck audit lock kafka browser unit demo bench compare figures clean

# uv installs the requirements (the versions pip would pick, in a tenth of pip's two minutes on a fresh
# machine); pip brings uv itself, at the version requirements-dev.txt pins.
$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip setuptools "$$(grep -E '^uv[<>=]' requirements-dev.txt)"
	$(VENV)/bin/uv pip install --quiet --python $(PY) -r requirements.txt
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports  # the layers (pyproject.toml, [tool.importlinter]; docs/architecture.md)

typecheck: $(STAMP)
	$(VENV)/bin/mypy

audit: $(STAMP)
	$(PY) scripts/audit_dependencies.py

# The Lambda asset's lock, infra/lambda-requirements.lock (its header names this command): pyproject.toml's
# runtime dependencies resolved by uv for Lambda's Python 3.12 on x86_64 manylinux_2_28, every file's hash.
# The lock's pins are kept (only what pyproject.toml changed is resolved again); UPGRADE=--upgrade moves
# every pin to the newest its range allows, UPGRADE="--upgrade-package boto3" one of them.
UPGRADE ?=
lock: $(STAMP)
	$(VENV)/bin/uv pip compile pyproject.toml --python-version 3.12 --python-platform x86_64-manylinux_2_28 \
	  --only-binary :all: --generate-hashes --quiet $(UPGRADE) --output-file infra/lambda-requirements.lock

# Apache Kafka's own jars from Maven Central (cached in ~/.cache/offset-restore and ~/.m2): 4.1, the broker
# the integration, end-to-end and reliability tests run on, and 3.9 and 4.4, which the promise-bearing tests
# (tests/integration/test_kafka_versions.py) run on as well (OFFSET_RESTORE_TEST_BROKER=tansu runs the suite
# on the zero-dependency local broker instead).
kafka: $(STAMP)
	$(PY) -m offset_restore.devtools.apache_broker

# Debian's headless Chromium, for the test that looks at report.html as a browser builds it.
browser:
	@command -v chromium-headless-shell >/dev/null || { \
	  command -v apt-get >/dev/null || { echo "install Chromium's headless shell (Debian: chromium-headless-shell)"; exit 1; }; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium-headless-shell >/dev/null; }

# The suite in TEST_WORKERS processes, a test file to each (its module fixtures kept in one process); each
# process starts its own brokers. TEST_WORKERS=0 runs it in this process alone. Three on two cores ran
# pytest in 630 s against 700-745 s, but the extra load moved a byte count of the local broker in one
# run of three: two, the number the suite is proven with.
TEST_WORKERS ?= 2
# The checks and the downloads before the suite, side by side (most of them wait on the network).
checks: lint typecheck audit kafka browser

test: $(STAMP)
	$(MAKE) --no-print-directory -j4 --output-sync=target checks
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

unit: $(STAMP)
	$(PY) -m pytest tests/unit

# BROKER=apache runs the same story on Apache Kafka 4.1 (Java 17+ and Maven); the default needs nothing.
BROKER ?= local
demo: $(STAMP)
	$(PY) -m offset_restore demo --broker $(BROKER)

# One command: every phase and the whole workflow on one scenario beside the alternatives, the cost
# model, the handlers' memory, and the bytes a position costs on partitions of 100,000 records (sparse)
# and of hundreds of groups (dense) beside a one-pass scan, and the CLI plan's peak memory at 240,000
# group-partitions (always that size: it is the target's), an lz4 topic beside the same data
# uncompressed (the codecs' smoke row), the shapes users have (holed, dense, 1 MB gzip/lz4/zstd batches)
# beside the operator's kafka-python consumer scan; BROKER=apache measures on Apache Kafka 4.1, and the last
# two (make compare) always run on Apache Kafka (Java 17+ and Maven), whatever BROKER says. SCALE=20000 for
# the largest size (groups of 12 partitions); the focused benchmarks (bench.snapshot_bench,
# bench.plan_bench, bench.apply_bench, bench.order_bench, bench.mislead_bench, bench.shape_bench,
# bench.codec_bench with every codec) run on their own.
SCALE ?= 2000
bench: $(STAMP)
	$(PY) -m bench.scale --scale $(SCALE) --broker $(BROKER)
	$(PY) -m bench.workflow_cost
	$(PY) -m bench.handler_memory --groups $(SCALE)
	$(PY) -m bench.bytes_bench --broker $(BROKER)
	$(PY) -m bench.plan_memory --groups 20000 --broker $(BROKER)
	$(PY) -m bench.codec_bench --broker $(BROKER) --codecs none,lz4
	$(PY) -m bench.user_shapes --broker $(BROKER)
	$(PY) -m bench.compare
	$(PY) -m bench.migration_compare

# Side by side with the real tools, on Apache Kafka 4.1 (Java 17+ and Maven): MirrorMaker 2's offset sync
# (offset.lag.max 100 and 0), offset-restore on MM2's replica and on a restore copy, kafka-consumer-groups
# applying offset-restore's CSV; every group-partition against its final source offset
# (bench/results/compare.md and compare.svg, in docs/peers.md); then a migration (the source up: MM2's sync,
# offset-restore migrate and the workflow's mode migrate, live groups included) and a failback to the
# primary (bench/results/migration.md).
compare: $(STAMP)
	$(PY) -m bench.compare
	$(PY) -m bench.migration_compare

figures: $(STAMP)
	$(PY) -m bench.reliability

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache demo-output cdk.out
