"""The e2e fixture: the workflow of ``offset_restore.devtools.local_aws`` against the session's two brokers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from offset_restore.devtools.local_aws import Workflow, local_workflow

from tests.helpers import Brokers


@pytest.fixture
def workflow(brokers: Brokers) -> Iterator[Workflow]:
    with local_workflow(brokers.source.bootstrap_servers, brokers.target.bootstrap_servers) as flow:
        yield flow
