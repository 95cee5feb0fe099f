"""The workflow's first state: the execution input (docs/design.md §5.3) validated, defaults filled in.

A bad input fails here, with every problem named, before anything else happens.
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from offset_restore.workflow.observability import logger, tracer
from offset_restore.workflow.settings import ValidateSettings
from offset_restore.workflow.states.validate import validated_run


@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = ValidateSettings.from_env()
    run = validated_run(event if isinstance(event, dict) else {}, settings, time.time())
    logger.append_keys(restore_id=run["restore_id"])
    logger.info("run validated", extra={"mode": run["mode"], "approval": run["approval"]["required"]})
    return run
