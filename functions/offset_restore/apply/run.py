"""One apply or rollback run for the CLI: read the plan, check it fits the target, write, save."""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from offset_restore.apply.commit import Hold, apply_plan
from offset_restore.apply.fit import check_plan_fits
from offset_restore.apply.journal import Journal
from offset_restore.apply.locks import Lease, LockLostError, TargetLock
from offset_restore.apply.model import ApplyOptions, ApplyReport, WriteCheck
from offset_restore.apply.rollback import rollback_plan
from offset_restore.apply.seal import (
    PlanKey,
    SealRecord,
    default_key_path,
    seal_plan,
    seal_whole,
    unsealed,
    unsealed_numbers,
    whole_problem,
)
from offset_restore.apply.table import rollback_run
from offset_restore.errors import BadInputError, PlanBusyError
from offset_restore.formats.plan import Plan
from offset_restore.formats.plan_json import json_pieces
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.connection import ConnectionSettings
from offset_restore.snapshot.filters import NameFilter
from offset_restore.snapshot.live import Progress
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import BlobStore, LocalStore, open_location, read_versioned, write_if_unchanged
from offset_restore.validation import describe

__all__ = ["PlanFile", "Sealing", "rollback_workflow_run", "run_apply", "run_rollback"]

log = logging.getLogger(__name__)


MAX_PLAN_BYTES = 2 * 1024 * 1024 * 1024
"""The largest plan read: about two million group-partitions (a kilobyte each); a file larger than this is
no plan this tool wrote, and reading it whole would only fill memory."""


class PlanFile:
    """A plan document at a location, read and saved back in place (atomically for local files).

    One writer at a time: ``locked()`` holds an exclusive lock file beside a local plan (the operating
    system releases it when the process ends, however it ends). Every save is checked against the
    version this run read or last saved: a plan that changed in between (another apply or rollback)
    is not overwritten, so the previous offsets the first run recorded are never lost.
    """

    def __init__(self, location: str, open_store: Callable[[str], BlobStore] = open_location) -> None:
        folder, _, name = location.rstrip("/").rpartition("/")
        if not name:
            raise BadInputError(f"{location!r} names no plan file")
        self.location = location
        self.store, self.key = open_store(folder or "."), name
        self.version: str | None = None

    def load(self) -> Plan:
        if not self.store.exists(self.key):
            raise BadInputError(f"no plan at {self.location}")
        data, version = read_versioned(self.store, self.key, MAX_PLAN_BYTES)
        try:
            plan = Plan.model_validate_json(data)
        except ValidationError as error:
            raise BadInputError(f"plan {self.location} is not a usable plan: {describe(error)}") from None
        problems = plan.problems()
        if problems:
            more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
            raise BadInputError(
                f"plan {self.location} cannot be applied as it is: {'; '.join(problems[:5])}{more}; nothing was "
                "written (plan again rather than editing a plan)"
            )
        self.version = version
        return plan

    def save(self, plan: Plan) -> None:
        # Compact, and in pieces: a plan of 100,000s of entries is saved at every safe point of an apply, on
        # the critical path, and its whole JSON at once would be apply's peak memory.
        version = write_if_unchanged(self.store, self.key, json_pieces(plan), "application/json", self.version)
        if version is None:
            raise PlanBusyError(
                f"plan {self.location} changed since this run read it (another apply or rollback?): not "
                "overwritten, so the offsets it recorded stay; read it again before going on (the target's "
                "offsets are the truth: rollback works from them)"
            )
        self.version = version

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the plan's lock file (local plans; an S3 plan relies on the DynamoDB lock and the
        version check)."""
        if not isinstance(self.store, LocalStore):
            yield
            return
        import fcntl

        path = self.store.root / f".{self.key}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                raise PlanBusyError(
                    f"plan {self.location} is in use by {holder}: one apply or rollback at a time; nothing was "
                    "written (wait for it to end; the lock goes with its process)"
                ) from None
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {datetime.now(UTC).isoformat()}")
            handle.flush()
            try:
                yield
            finally:
                handle.truncate(0)
                fcntl.flock(handle, fcntl.LOCK_UN)


def _fenced(target: KafkaCluster, writes: bool) -> None:
    """A run that writes takes the target's fence once its lock is held (``kafka/fence.py``): every write
    it makes from here on is refused by the cluster if another writer takes the fence after it."""
    if writes:
        target.hold_fence()


def _keyed(lock: TargetLock | None, target: KafkaCluster) -> TargetLock | None:
    """The lock of the cluster these brokers are, by the id they report (a plan's name for it may differ)."""
    return lock.keyed(target.cluster_id) if lock else None


@contextmanager
def _locked(lock: TargetLock | None) -> Iterator[WriteCheck]:
    """Hold the target's lock for the block, renewed by a heartbeat every third of its expiry; yields
    a check to call before each write, which raises LockLostError once the lock is no longer ours."""
    if lock is None:
        yield lambda: None
        return
    lease = Lease(lock.ttl_s)
    lease.renewed(lock.acquire)
    stop = threading.Event()
    lost: list[LockLostError] = []

    def heartbeat() -> None:
        while not stop.wait(max(1.0, lock.ttl_s / 3)):
            try:
                lease.renewed(lock.renew)
            except LockLostError as error:
                lost.append(error)
                return
            except Exception as error:  # a missed beat is retried; the expiry is three beats away
                log.warning("renewing the lock of %s failed: %s", lock.label, error)

    beat = threading.Thread(target=heartbeat, name="lock-heartbeat", daemon=True)
    beat.start()

    def still_ours() -> float:
        """Raises once the lock is lost or its lease too short; else the seconds a write sent now may take."""
        if lost:
            raise lost[0]
        return lease.check(lock.label)

    try:
        yield still_ours
    finally:
        stop.set()
        beat.join(timeout=5)
        if not lost:
            lock.release()


@dataclass
class Sealing:
    """How a plan file is sealed (apply/seal.py): when ``enabled``, its recorded previous offsets and the
    plan as a whole are checked when it is read, and sealed when it is saved, with the key at ``key_path``
    (default ``default_key_path()``; made on the first save when ``create``). ``trust`` (the operator
    checked them): previous offsets that do not match their seals are used as they are, and not sealed
    again unless this run reads them anew from the cluster. The key is read only when a plan holds a
    previous offset or a seal."""

    enabled: bool = False
    key_path: Path | None = None
    create: bool = False
    trust: bool = False
    _key: PlanKey | None = None
    _distrusted: dict[int, tuple[object, object]] = field(default_factory=dict)

    def key(self) -> PlanKey:
        if self._key is None:
            self._key = PlanKey.load(self.key_path, create=self.create)
        return self._key

    def check(self, plan: Plan) -> None:
        if not self.enabled:
            return
        fresh = plan.seal is None and not any(e.previous_recorded for e in plan.entries)
        if fresh and not self._recorded(plan):
            return  # nothing recorded or sealed yet, here or in the plan: a plan no apply has saved
        key = self.key()
        whole = whole_problem(plan, key, SealRecord.of(key, plan))
        if whole is not None:
            raise BadInputError(f"the plan is not as apply or rollback last saved it: {whole}; nothing was written")
        if self.trust:
            entries = plan.entries
            self._distrusted = {
                n: (entries[n].previous_target_offset, entries[n].previous_metadata)
                for n in unsealed_numbers(plan, key)
            }
            return
        problems = unsealed(plan, key)
        if problems:
            raise BadInputError(
                f"{len(problems)} previous offsets in the plan are not as apply recorded them (the plan was edited "
                f"or damaged, or sealed with another key than {key.path}): {'; '.join(problems[:5])}; nothing was "
                "written (--plan-key for the key of the machine that applied it; --trust-previous-offsets to use "
                "them as they are, once checked)"
            )

    def _recorded(self, plan: Plan) -> bool:
        """Whether this machine sealed this restore's plan before (its record is beside the default key)."""
        where = self.key_path or default_key_path()
        return where.exists() and SealRecord.of(self.key(), plan).read() is not None

    def seal_new(self, plan_file: PlanFile) -> None:
        """Seal a plan just written (``plan``'s, ``migrate``'s): its first generation, so that an edit made
        before its first apply is refused as one made after."""
        if not self.enabled:
            return
        if self._key is None:  # a new plan makes the key on first use, whatever the run then does with it
            self._key = PlanKey.load(self.key_path, create=True)
        self._sealed_save(plan_file, plan_file.load(), self._key)

    def saver(self, plan_file: PlanFile) -> Callable[[Plan], None]:
        def save(plan: Plan) -> None:
            sealed = self.enabled and any(e.previous_recorded or e.previous_seal for e in plan.entries)
            if sealed or (self.enabled and plan.seal is not None):
                self._sealed_save(plan_file, plan, self.key())
            else:
                plan_file.save(plan)

        return save

    def journal(self, plan_file: PlanFile) -> Journal:
        """The journal beside the plan (apply/journal.py), sealed with the plan key when plans are."""
        return Journal(plan_file.store, plan_file.key, self.key if self.enabled else None)

    def _sealed_save(self, plan_file: PlanFile, plan: Plan, key: PlanKey) -> None:
        """Seal the previous offsets (not the distrusted ones) and the plan whole, save it, then record its
        generation beside the key."""
        seal_plan(plan, key, self._distrusted)
        seal_whole(plan, key)
        plan_file.save(plan)
        SealRecord.of(key, plan).write(plan, plan_file.location)


def run_apply(
    plan_location: str,
    connection: ConnectionSettings,
    options: ApplyOptions,
    *,
    target_name: str | None = None,
    lock: TargetLock | None = None,
    progress: Progress | None = None,
    connect: Callable[[ConnectionSettings], KafkaCluster] = KafkaCluster,
    sealing: Sealing | None = None,
    hold: Hold | None = None,
) -> tuple[Plan, ApplyReport]:
    """Apply a plan file (``apply_plan``) under the plan's and the target's locks and the target's fence.
    ``hold``: ``apply_plan``'s last look before each write."""
    plan_file = PlanFile(plan_location)
    writes = not options.dry_run
    # One writer, then read: the locks come before the plan is read, so no run works from a stale plan;
    # the target's lock is keyed by the id its brokers report, so the run connects first.
    with (
        plan_file.locked() if writes else nullcontext(),
        connect(connection) as target,
        _locked(_keyed(lock, target) if writes else None) as still_ours,
    ):
        _fenced(target, writes)
        plan = plan_file.load()
        sealing = sealing or Sealing()
        sealing.check(plan)
        check_plan_fits(plan, target, target_name)
        journal = sealing.journal(plan_file)
        report = apply_plan(
            plan,
            target,
            options,
            sealing.saver(plan_file),
            progress=progress,
            before_write=still_ours,
            hold=hold,
            journal=lambda entries: journal.append(plan, entries),
        )
    return plan, report


def run_rollback(
    plan_location: str,
    connection: ConnectionSettings,
    *,
    target_name: str | None = None,
    lock: TargetLock | None = None,
    wait: ApplyOptions | None = None,
    connect: Callable[[ConnectionSettings], KafkaCluster] = KafkaCluster,
    sealing: Sealing | None = None,
    progress: Progress | None = None,
) -> tuple[Plan, ApplyReport]:
    """``wait``: how long to wait for active groups (default: not at all), ``allow_rewind`` and
    ``dry_run`` (a preview takes no lock and saves nothing); ``sealing``: the previous offsets are
    checked against their seals before any offset is read from the cluster."""
    plan_file = PlanFile(plan_location)
    options = wait or ApplyOptions(wait_timeout_s=0, on_wait_timeout="commit_empty")
    writes = not options.dry_run
    with (
        plan_file.locked() if writes else nullcontext(),
        connect(connection) as target,
        _locked(_keyed(lock, target) if writes else None) as still_ours,
    ):
        _fenced(target, writes)
        plan = plan_file.load()
        sealing = sealing or Sealing()
        sealing.check(plan)
        corrected = sealing.journal(plan_file).correct(plan)
        check_plan_fits(plan, target, target_name, mapped_must_fit=False)
        saver = sealing.saver(plan_file)
        report = rollback_plan(plan, target, saver, wait=options, before_write=still_ours, progress=progress)
    report.journal_corrections = corrected
    return plan, report


def rollback_workflow_run(
    restore_id: str,
    mappings: MappingStore,
    connection: ConnectionSettings,
    *,
    lock: TargetLock | None = None,
    wait: ApplyOptions,
    groups: NameFilter | None = None,
    cluster_id: str | None = None,
    connect: Callable[[ConnectionSettings], KafkaCluster] = KafkaCluster,
    progress: Progress | None = None,
) -> tuple[Plan, ApplyReport]:
    """``run_rollback`` for a run the deployed workflow applied: the previous offsets come from the
    mappings in DynamoDB (``apply.table.rollback_run``), under the target's lock (a preview takes none),
    on the cluster the run committed to (``cluster_id``, as recorded)."""
    with connect(connection) as target, _locked(None if wait.dry_run else _keyed(lock, target)) as still_ours:
        _fenced(target, not wait.dry_run)
        return rollback_run(
            restore_id,
            target,
            mappings,
            wait,
            groups,
            cluster_id=cluster_id,
            before_write=still_ours,
            progress=progress,
        )
