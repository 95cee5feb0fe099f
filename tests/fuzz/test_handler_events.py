"""Every Lambda handler fed fuzzed events, in the deployed setting (moto, the session's brokers): each
answers, or fails with one of our named errors — the class name the state machine routes on — and a
refused event writes nothing to the bucket."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from offset_restore.devtools.local_aws import FUNCTIONS, Workflow, local_workflow
from offset_restore.errors import OffsetRestoreError
from offset_restore_handlers.wiring import SNAPSHOT_HANDLER

from tests.figures import record
from tests.fuzz.test_hostile_input import FUZZ, json_values
from tests.helpers import Brokers, LambdaContext

pytestmark = pytest.mark.integration

HANDLER_EXAMPLES = max(20, int(os.environ.get("FUZZ_EXAMPLES", "150")) // 20)
KEYS = [
    "input",
    "execution_name",
    "restore_id",
    "groups",
    "batches",
    "lane",
    "fence",
    "action",
    "target_cluster",
    "started_at",
    "timeout_seconds",
    "mode",
    "item",
    "key",
    "outcome",
    "error",
    "summary",
    "work",
    "snapshot",
    "execution",
]


@pytest.fixture(scope="module")
def deployed(brokers: Brokers) -> Iterator[Workflow]:
    with local_workflow(brokers.source.bootstrap_servers, brokers.target.bootstrap_servers) as flow:
        yield flow


def _objects(flow: Workflow) -> int:
    return int(flow.s3.list_objects_v2(Bucket="offset-restore").get("KeyCount", 0))


HANDLERS = {**FUNCTIONS, "Snapshot": SNAPSHOT_HANDLER}


@pytest.mark.parametrize("name", sorted(HANDLERS))
def test_a_handler_answers_or_names_the_problem(deployed: Workflow, name: str) -> None:
    module, function = HANDLERS[name].rsplit(".", 1)
    handler = getattr(importlib.import_module(module), function)
    tried = 0
    events = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=5) | json_values

    @FUZZ.__class__(FUZZ, max_examples=HANDLER_EXAMPLES)
    @given(events)
    def run(event: Any) -> None:
        nonlocal tried
        tried += 1
        before = _objects(deployed)
        try:
            handler(event, LambdaContext())
        except OffsetRestoreError as error:
            assert str(error)
            assert _objects(deployed) == before, "a refused event wrote to the bucket"

    try:
        run()
    except BaseException:
        record("fuzz", input=f"{name} handler events", cases=tried, failures=1)
        raise
    record("fuzz", input=f"{name} handler events", cases=tried, failures=0)
