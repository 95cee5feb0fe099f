"""What an operator does with a deployed system: start a run and follow it, see a run's status, fetch
its report. AWS clients are passed in."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from offset_restore.errors import BadInputError, OffsetRestoreError
from offset_restore.formats.plan import SummaryTally
from offset_restore.stores.keys import restore_object
from offset_restore.stores.mappings import MappingStore

logger = logging.getLogger(__name__)

__all__ = [
    "CLEAN_OUTCOMES",
    "FAILURE_STATES",
    "STACK_OUTPUTS",
    "fetch_report",
    "follow",
    "last_state",
    "run_ending",
    "run_status",
    "stack_name",
    "stack_outputs",
    "start_run",
]

REPORT_FILES = ("report.html", "report.md", "report.json")
# The outputs every deployed stack has (infra/stack.py `_outputs`).
STACK_OUTPUTS = ("LockTableName", "TargetClusterName", "StateMachineArn", "BucketName")


def stack_name(env_or_stack: str) -> str:
    """``prod`` names the stack ``offset-restore-prod`` (app.py); a full stack name is kept."""
    return env_or_stack if env_or_stack.startswith("offset-restore-") else f"offset-restore-{env_or_stack}"


def stack_outputs(cloudformation: Any, env_or_stack: str) -> dict[str, str]:
    """The deployed stack's outputs by key, so an operator names the environment and nothing else.
    A stack that does not exist, or that predates an output, is refused with what is missing."""
    name = stack_name(env_or_stack)
    try:
        stacks = cloudformation.describe_stacks(StackName=name)["Stacks"]
    except cloudformation.exceptions.ClientError as error:
        raise BadInputError(f"stack {name}: {error.response['Error'].get('Message', error)}") from None
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
    missing = [key for key in STACK_OUTPUTS if key not in outputs]
    if missing:
        raise BadInputError(f"stack {name} has no output {', '.join(missing)}: deploy this version of the stack")
    return outputs


def follow(
    sfn: Any, execution_arn: str, out: TextIO, *, timeout_s: float = 12 * 3600, poll_s: float = 0.5
) -> dict[str, Any]:
    """Print each state as the execution enters it (with the time since the start); return the
    execution's description once it has ended."""
    shown = 0
    started = time.monotonic()
    while True:
        # The status first: when it says the run has ended, the history read next holds every state.
        described: dict[str, Any] = sfn.describe_execution(executionArn=execution_arn)
        pages = sfn.get_paginator("get_execution_history").paginate(executionArn=execution_arn)
        entered = [e for page in pages for e in page["events"] if "stateEnteredEventDetails" in e]
        for event in entered[shown:]:
            out.write(f"  {time.monotonic() - started:6.1f} s  {event['stateEnteredEventDetails']['name']}\n")
            out.flush()
        shown = len(entered)
        if described["status"] != "RUNNING" or time.monotonic() - started > timeout_s:
            return described
        time.sleep(poll_s)


CLEAN_OUTCOMES = ("planned", "applied", "rolled back")
"""Outcomes that leave nothing to do; any other ("applied, needs attention", "rolled back in part (...)")
ends a command that followed the run with exit status 3."""


def run_ending(described: Mapping[str, Any]) -> tuple[int, list[str]]:
    """What a followed run ended as: the exit status (0 done, 1 failed or stopped, 3 done but something
    needs the operator) and the lines that say why — an outcome that needs attention, a report that was
    not written, a lock that was not released (a SUCCEEDED run whose output says so is not a clean one)."""
    status = str(described.get("status"))
    if status != "SUCCEEDED":
        error = described.get("error")
        return 1, [status + (f": {error}: {described.get('cause')}" if error else "")]
    try:
        output = json.loads(described.get("output") or "{}")
    except ValueError:
        output = {}
    report = output.get("report") if isinstance(output.get("report"), dict) else {}
    outcome = str(report.get("outcome") or "")
    lines = [f"SUCCEEDED: {outcome}" if outcome and outcome not in CLEAN_OUTCOMES else "SUCCEEDED"]
    for key, what in (
        ("report_error", "its report or notification was not written (offset-restore status shows its mappings)"),
        ("release_error", "its lock was not released (offset-restore unlock, or wait for it to expire)"),
    ):
        if isinstance(output.get(key), dict):
            lines.append(f"but {what}: {output[key].get('Error')}: {output[key].get('Cause')}")
    return (0 if lines == ["SUCCEEDED"] else 3), lines


FAILURE_STATES = frozenset({"ReleaseOnFailure", "NotifyFailure", "Failed"})
"""The states a failed run passes on its way out: the state it failed in is the one before them."""


def last_state(sfn: Any, execution_arn: str) -> str | None:
    """The name of the last state an execution entered before its failure handling, or None when its
    history cannot be read — the caller then assumes the worst. Asked newest first, but judged by the
    events' ids: a service that ignores ``reverseOrder`` (moto's interpreter does) gives the oldest first,
    and its first state entered (ValidateInput) would free the lock of a run stopped mid-commit."""
    newest: tuple[int, str] | None = None
    try:
        pages = sfn.get_paginator("get_execution_history").paginate(executionArn=execution_arn, reverseOrder=True)
        for page in pages:
            events = page["events"]
            for event in events:
                entered = event.get("stateEnteredEventDetails") or {}
                later = newest is None or int(event["id"]) > newest[0]
                if entered and entered.get("name") not in FAILURE_STATES and later:
                    newest = (int(event["id"]), str(entered.get("name")))
            if newest is not None and len(events) > 1 and int(events[0]["id"]) > int(events[-1]["id"]):
                return newest[1]  # newest first, as asked: the first one found is the last entered
    except Exception as error:
        logger.warning("the history of %s cannot be read: %s", execution_arn, error)
        return None
    return None if newest is None else newest[1]


def start_run(sfn: Any, state_machine_arn: str, run_input: dict[str, Any], name: str | None) -> str:
    """Start an execution (named after the restore id when one is given); returns its ARN."""
    from botocore.exceptions import ClientError

    arguments: dict[str, Any] = {"stateMachineArn": state_machine_arn, "input": json.dumps(run_input)}
    if name:
        arguments["name"] = name
    try:
        return str(sfn.start_execution(**arguments)["executionArn"])
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code in ("StateMachineDoesNotExist", "InvalidArn"):
            raise BadInputError(f"no state machine {state_machine_arn}") from None
        if code == "ExecutionAlreadyExists":
            raise BadInputError(f"an execution named {name} exists already: give another --restore-id") from None
        raise OffsetRestoreError(f"cannot start {state_machine_arn}: {error}") from None


def run_status(mappings: MappingStore, restore_id: str) -> dict[str, Any]:
    tally, attention = SummaryTally(), set()
    for entry in mappings.iter_entries(restore_id):
        tally.add(entry)
        if entry.status in ("pending", "unmapped", "skipped", "failed"):
            attention.add(entry.group)
    if not tally.statuses:
        raise BadInputError(f"no mappings for restore {restore_id} in table {mappings.table}")
    return {
        "restore_id": restore_id,
        "summary": tally.result().model_dump(),
        "statuses": dict(sorted(tally.statuses.items())),
        "attention": sorted(attention),
    }


def fetch_report(s3: Any, bucket: str, restore_id: str, folder: Path) -> list[Path]:
    """Download a run's report files into ``folder``; returns their paths."""
    from botocore.exceptions import ClientError

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in REPORT_FILES:
        try:
            body = s3.get_object(Bucket=bucket, Key=restore_object(restore_id, name))["Body"].read()
        except ClientError:
            raise BadInputError(f"no report for restore {restore_id} in s3://{bucket}/restores/") from None
        path = folder / name
        path.write_bytes(body)
        paths.append(path)
    return paths
