"""The CheckEmpty state: which of the run's groups still have members on the target (the state machine
waits and asks again), static members removed when the input asks for it."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from offset_restore.apply.commit_index import read_groups, writable_and_waiting
from offset_restore.apply.locks import TargetLock, workflow_lock_ttl
from offset_restore.apply.model import ApplyTarget
from offset_restore.apply.waiting import (
    WaitTimeoutError,
    active_groups,
    remove_static_members,
    static_hint,
    still_active,
)
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.stores.mappings import MappingStore
from offset_restore.stores.storage import BlobStore
from offset_restore.workflow.settings import ApplySettings, read_secret
from offset_restore.workflow.states.output import first_names

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

__all__ = ["EmptyCheck", "EmptyPoll", "check_empty", "poll_target"]


STATIC_REMOVED_KEPT = 500
"""Static members removed that the state carries from poll to poll (each removed once): a few hundred
names stay far inside Step Functions' 256 KB state; past them a member may be removed once more."""
WORKFLOW_STATIC_OPTION = '"remove_static_members": true in the input'
"""How a timed-out wait names the workflow's way to end a wait on static members (the CLI names its option)."""


class EmptyCheck(BaseModel):
    empty: list[str]
    active: list[str]
    waiting: list[str]
    """Groups with pending entries: they wait whole until the restore reaches them."""
    started_at: float | None = None
    """When the wait began (epoch seconds): the workflow passes it back on every poll."""
    timed_out: bool = False
    static_removed: list[str] = []
    """Every static member the wait removed so far (``remove_static_members``): passed back on every poll, so
    each is removed once, and reported."""

    @property
    def all_empty(self) -> bool:
        return not self.active

    def output(self) -> dict[str, Any]:
        """What the step returns to the state machine: bounded whatever the number of groups."""
        return {
            "empty": first_names(self.empty),
            "active": first_names(self.active),
            "waiting": first_names(self.waiting),
            "counts": {"empty": len(self.empty), "active": len(self.active), "waiting": len(self.waiting)},
            "started_at": self.started_at,
            "timed_out": self.timed_out,
            "all_empty": self.all_empty,
            "static_removed": self.static_removed[:STATIC_REMOVED_KEPT],
        }


def check_empty(
    restore_id: str,
    target: ApplyTarget,
    mappings: MappingStore,
    *,
    started_at: float | None = None,
    timeout_s: float | None = None,
    fail_on_timeout: bool = False,
    now: float | None = None,
    index: BlobStore | None = None,
    remove_static: bool = False,
    static_removed: Sequence[str] = (),
) -> EmptyCheck:
    """Which groups are still active. With a wait start and timeout, also whether the wait is over;
    ``fail_on_timeout`` raises ``WaitTimeoutError`` then, naming the active groups and their members. With the
    restore's commit ``index`` the groups come from it, not from every mapping in the table. ``remove_static``:
    the static members of active groups are removed, each once (``static_removed`` lists the earlier polls')."""
    now = time.time() if now is None else now
    started_at = now if started_at is None else started_at
    if index is not None:
        listed = read_groups(index)
        waiting, writable = listed.waiting, listed.writable
    else:
        writable, waiting = writable_and_waiting(mappings.iter_entries(restore_id))
    infos = target.describe_groups(writable) if writable else {}
    found = active_groups(writable, infos)
    removed = [*static_removed, *(remove_static_members(target, found, static_removed) if remove_static else ())]
    active = list(found)
    timed_out = bool(active) and timeout_s is not None and now - started_at >= timeout_s
    if timed_out and fail_on_timeout:
        raise WaitTimeoutError(
            f"{len(active)} groups still have members after {timeout_s:g} s: {still_active(found, limit=10)}; "
            f"nothing was written{static_hint(found, WORKFLOW_STATIC_OPTION)}"
        )
    return EmptyCheck(
        empty=[g for g in writable if g not in active],
        active=active,
        waiting=waiting,
        started_at=started_at,
        timed_out=timed_out,
        static_removed=removed,
    )


@dataclass(frozen=True)
class EmptyPoll:
    """One poll of the CheckEmpty state, as its input gives it: the wait's start and timeout, what a timeout
    does, the static members to remove and those removed by earlier polls, and the run's lock (``owner``:
    the execution holding it; None: a call outside the state machine, which renews none)."""

    restore_id: str
    started_at: float | None = None
    timeout_s: float | None = None
    fail_on_timeout: bool = False
    remove_static: bool = False
    static_removed: Sequence[str] = ()
    owner: str | None = None
    interval_seconds: float = 15


def poll_target(
    poll: EmptyPoll,
    settings: ApplySettings,
    dynamodb: DynamoDBClient,
    s3: S3Client,
    secret_reader: Callable[[str], str] = read_secret,
) -> EmptyCheck:
    """One CheckEmpty state: the run's lock renewed first (every poll: a long wait never lets it lapse),
    then ``check_empty`` over the restore's commit index."""
    with KafkaCluster(settings.target.connection(secret_reader)) as target:
        if poll.owner:
            ttl = workflow_lock_ttl(poll.interval_seconds)
            name = settings.target.name
            TargetLock(settings.table, dynamodb, target.cluster_id, poll.owner, ttl_s=ttl, name=name).renew()
        return check_empty(
            poll.restore_id,
            target,
            MappingStore(settings.table, dynamodb),
            started_at=poll.started_at,
            timeout_s=poll.timeout_s,
            fail_on_timeout=poll.fail_on_timeout,
            index=settings.restore_folder(poll.restore_id, s3),
            remove_static=poll.remove_static,
            static_removed=poll.static_removed,
        )
