"""One apply or rollback run for the CLI: read the plan, check it fits the target, write, save."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pydantic import ValidationError

from offset_restore.apply import ApplyOptions, ApplyReport, apply_plan, check_plan_fits
from offset_restore.connection import ConnectionSettings
from offset_restore.errors import BadInputError
from offset_restore.kafka_adapter import KafkaCluster
from offset_restore.locks import TargetLock
from offset_restore.plan_model import Plan
from offset_restore.rollback import rollback_plan
from offset_restore.snapshot import Progress
from offset_restore.storage import BlobStore, open_location

__all__ = ["PlanFile", "run_apply", "run_rollback"]


class PlanFile:
    """A plan document at a location, read and saved back in place (atomically for local files)."""

    def __init__(self, location: str, open_store: Callable[[str], BlobStore] = open_location) -> None:
        folder, _, name = location.rstrip("/").rpartition("/")
        if not name:
            raise BadInputError(f"{location!r} names no plan file")
        self.location = location
        self.store, self.key = open_store(folder or "."), name

    def load(self) -> Plan:
        if not self.store.exists(self.key):
            raise BadInputError(f"no plan at {self.location}")
        try:
            plan = Plan.model_validate_json(self.store.get(self.key))
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise BadInputError(f"plan {self.location} is invalid at {where}: {first['msg']}") from None
        problems = plan.problems()
        if problems:
            more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
            raise BadInputError(
                f"plan {self.location} cannot be applied as it is: {'; '.join(problems[:5])}{more}; nothing was "
                "written (plan again rather than editing a plan)"
            )
        return plan

    def save(self, plan: Plan) -> None:
        # Compact: a plan of 100,000s of entries is saved twice per apply, on the critical path.
        self.store.put(self.key, plan.model_dump_json().encode(), "application/json")


@contextmanager
def _locked(lock: TargetLock | None) -> Iterator[None]:
    """Hold the target's lock for the block, when there is one."""
    if lock is None:
        yield
        return
    lock.acquire()
    try:
        yield
    finally:
        lock.release()


def run_apply(
    plan_location: str,
    connection: ConnectionSettings,
    options: ApplyOptions,
    *,
    target_name: str | None = None,
    lock: TargetLock | None = None,
    progress: Progress | None = None,
    connect: Callable[[ConnectionSettings], KafkaCluster] = KafkaCluster,
) -> tuple[Plan, ApplyReport]:
    plan_file = PlanFile(plan_location)
    plan = plan_file.load()
    with connect(connection) as target, _locked(None if options.dry_run else lock):
        check_plan_fits(plan, target, target_name)
        report = apply_plan(plan, target, options, plan_file.save, progress=progress)
    return plan, report


def run_rollback(
    plan_location: str,
    connection: ConnectionSettings,
    *,
    target_name: str | None = None,
    lock: TargetLock | None = None,
    allow_rewind: bool = False,
    connect: Callable[[ConnectionSettings], KafkaCluster] = KafkaCluster,
) -> tuple[Plan, ApplyReport]:
    plan_file = PlanFile(plan_location)
    plan = plan_file.load()
    options = ApplyOptions(wait_timeout_s=0, on_wait_timeout="commit_empty", allow_rewind=allow_rewind)
    with connect(connection) as target, _locked(lock):
        check_plan_fits(plan, target, target_name, mapped_must_fit=False)
        report = rollback_plan(plan, target, plan_file.save, wait=options)
    return plan, report
