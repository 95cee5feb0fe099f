"""The workflow's first state: the execution input (docs/design.md §5.3) validated, defaults filled in.

A bad input fails here, with every problem named, before anything else happens.
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.errors import BadInputError
from offset_restore.workflow.observability import logger, tracer
from offset_restore.workflow.settings import ValidateSettings
from offset_restore.workflow.states.validate import gate, validate_input


@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = ValidateSettings.from_env()
    raw = event.get("input") if isinstance(event, dict) else None
    if not isinstance(raw, dict):
        raise BadInputError("invalid execution input: it must be a JSON object")
    name = event.get("execution_name")
    run = validate_input({**raw, "execution_name": name if isinstance(name, str) else None}, settings.defaults())
    run = gate(run, raw, settings.approval, settings.approval_timeout_s)
    logger.append_keys(restore_id=run.restore_id)
    logger.info("run validated", extra={"mode": run.mode, "approval": run.approval.required})
    # Loop counters the state machine carries from state to state (JSONPath has no variables).
    return {
        **run.model_dump(mode="json"),
        "summary": {"retries_left": run.pending_retries},
        "check": {"started_at": None, "static_removed": []},
        "source_check": {"started_at": None},
        "started_at": time.time(),
    }
