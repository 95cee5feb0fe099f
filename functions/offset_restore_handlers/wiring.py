"""Which handler runs each function of the workflow: written once, read by the CDK stack (each
function's ``handler``), the local runner (moto's interpreter) and the tests.

The state machine (``infra/statemachine/offset_restore.asl.json``) names a function by the
placeholder ``${<Name>FunctionArn}``; every name here is one such placeholder, and a test checks that
the two lists agree. No handler imports this module, so the Lambda asset does not carry it.
"""

from __future__ import annotations

__all__ = ["MEMORY_MB", "SNAPSHOT_HANDLER", "TASK_HANDLERS", "arn_placeholder"]

TASK_HANDLERS: dict[str, str] = {
    "Validate": "offset_restore_handlers.validate.handler",
    "Lock": "offset_restore_handlers.lock.handler",
    "Prepare": "offset_restore_handlers.prepare.handler",
    "Translate": "offset_restore_handlers.translate.handler",
    "Summarize": "offset_restore_handlers.summarize.handler",
    "CheckEmpty": "offset_restore_handlers.check_empty.handler",
    "Commit": "offset_restore_handlers.commit.handler",
    "Report": "offset_restore_handlers.report.handler",
    "Source": "offset_restore_handlers.source.handler",
    "Gate": "offset_restore_handlers.gate.handler",
}
"""Function name (as the state machine names it) -> handler, for every Task state."""

SNAPSHOT_HANDLER = "offset_restore_handlers.snapshot.handler"
"""The scheduled snapshot: a function of the deployment, not a state of the workflow."""


ONE_VCPU_MB = 1769
"""Lambda gives a function CPU in proportion to its memory, one whole vCPU at 1,769 MB
(https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html)."""

MEMORY_MB: dict[str, int] = {
    "Validate": 512,
    "Lock": 512,
    "Prepare": ONE_VCPU_MB,
    "Translate": ONE_VCPU_MB,
    "Summarize": ONE_VCPU_MB,
    "CheckEmpty": ONE_VCPU_MB,
    "Commit": ONE_VCPU_MB,
    "Report": ONE_VCPU_MB,
    "Snapshot": ONE_VCPU_MB,
    "Source": ONE_VCPU_MB,
    "Gate": 512,
}
"""Each function's memory. The functions whose work grows with the restore get a whole vCPU: their
work is CPU in Python (decoding records, building documents), and at 1,024 or 512 MB it ran 1.7x or
3.5x longer — the deployed estimate at 120,000 group-partitions (docs/benchmarks.md) went from 178 s
to under 60 s with these and the Maps' widths. Their peak memory stays far below (the scale bound of
512 MB holds); the setting buys CPU, and a shorter run costs about the same GB-seconds."""


def arn_placeholder(name: str) -> str:
    """The definition substitution the state machine uses for function ``name``."""
    return f"{name}FunctionArn"
