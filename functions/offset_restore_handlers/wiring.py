"""Which handler runs each function of the workflow: written once, read by the CDK stack (each
function's ``handler``), the local runner (moto's interpreter) and the tests.

The state machine (``infra/statemachine/offset_restore.asl.json``) names a function by the
placeholder ``${<Name>FunctionArn}``; every name here is one such placeholder, and a test checks that
the two lists agree. No handler imports this module, so the Lambda asset does not carry it.
"""

from __future__ import annotations

__all__ = ["SNAPSHOT_HANDLER", "TASK_HANDLERS", "arn_placeholder"]

TASK_HANDLERS: dict[str, str] = {
    "Validate": "offset_restore_handlers.validate.handler",
    "Lock": "offset_restore_handlers.lock.handler",
    "Prepare": "offset_restore_handlers.prepare.handler",
    "Translate": "offset_restore_handlers.translate.handler",
    "Summarize": "offset_restore_handlers.summarize.handler",
    "CheckEmpty": "offset_restore_handlers.check_empty.handler",
    "Commit": "offset_restore_handlers.commit.handler",
    "Report": "offset_restore_handlers.report.handler",
}
"""Function name (as the state machine names it) -> handler, for every Task state."""

SNAPSHOT_HANDLER = "offset_restore_handlers.snapshot.handler"
"""The scheduled snapshot: a function of the deployment, not a state of the workflow."""


def arn_placeholder(name: str) -> str:
    """The definition substitution the state machine uses for function ``name``."""
    return f"{name}FunctionArn"
