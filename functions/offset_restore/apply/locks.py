"""The single-writer lock per target cluster (docs/design.md §5.4): ``pk=LOCK#<cluster id>``, ``sk=LOCK``,
keyed by the id the cluster's brokers report, so two names for one cluster are one lock.

Taken with a conditional write that succeeds only when no lock exists, the existing one has expired
(a crashed run), or it is already ours (a retry of the same run). Released only by its owner.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from offset_restore.errors import OffsetRestoreError
from offset_restore.stores.conditional import conditional_transaction, conditional_write
from offset_restore.stores.keys import LOCK_SK, lock_name_pk, lock_pk

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = [
    "FENCE_PREFIX",
    "LAMBDA_TIMEOUT_S",
    "WRITING_STATES",
    "Lease",
    "LockHeldError",
    "LockLostError",
    "TargetLock",
    "release_ended",
    "workflow_lock_ttl",
]


FENCE_PREFIX = "fence of "
"""The owner a fence is held under: ``fence of <the ended execution's ARN>``."""
WRITING_STATES = frozenset({"Commit", "CommitBatch", "Rollback"})
"""States whose Lambda writes to the target: an execution that ended in one may still be writing."""
LAMBDA_TIMEOUT_S = 15 * 60
"""The longest a workflow function runs (the Kafka functions' timeout, infra/functions.py)."""


def release_ended(
    lock: TargetLock, last_state: str | None, now: float | None = None, *, cluster_fenced: bool = False
) -> str:
    """The lock of an execution that ended without its own ReleaseLock (stopped, failed, timed out):
    released, unless the execution was in a writing state (or its last state is unknown) on a target
    written unfenced — then fenced until its Lambda must have ended (``LAMBDA_TIMEOUT_S`` and a minute);
    returns what was done. ``cluster_fenced``: the target keeps the write fence (``kafka/fence.py``): the
    next run takes it, and the ended run's Lambdas, still running or not, write nothing after that — so the
    lock goes at once, whatever state the run ended in."""
    now = time.time() if now is None else now
    if cluster_fenced or (last_state is not None and last_state not in WRITING_STATES):
        lock.release()
        return "released"
    until = now + LAMBDA_TIMEOUT_S + 60
    return f"fenced until {int(until)}" if lock.fence(until) else "not this run's lock"


def workflow_lock_ttl(interval_s: float) -> int:
    """The expiry of a workflow's lock: three wait polls, and never less than a Lambda's longest run
    (15 minutes) plus a margin, so a step that runs long is not overtaken; each poll renews it."""
    return int(max(3 * interval_s, 900) + 300)


class LockHeldError(OffsetRestoreError):
    """Another run is writing to this target cluster."""


class LockLostError(OffsetRestoreError):
    """This run's lock was broken or taken over while it ran: it must not write any more."""


class TargetLock:
    """The lock of the target cluster whose brokers report ``cluster`` as their id, whatever name a plan or
    an input gives it (``name``: shown in messages, and where an earlier version kept the lock).

    A lock an earlier version took under the name is read and moved: an acquire is refused while another
    run holds it and moves it when it is this run's; a renewal, release or fence of a run that took it
    under the name (an execution in flight across an upgrade) acts on it there."""

    def __init__(
        self,
        table: str,
        client: DynamoDBClient,
        cluster: str,
        owner: str,
        ttl_s: int = 3600,
        *,
        name: str | None = None,
    ) -> None:
        self.table, self.client, self.cluster, self.owner, self.ttl_s = table, client, cluster, owner, ttl_s
        self.name = name or cluster

    @classmethod
    def named(cls, table: str, client: DynamoDBClient, name: str, owner: str, ttl_s: int = 3600) -> TargetLock:
        """The lock of the cluster last locked under ``name`` (the id each acquire records beside the
        name), for a caller that cannot ask the brokers: a release while the target is down, ``unlock``."""
        item = client.get_item(
            TableName=table, Key={"pk": {"S": lock_name_pk(name)}, "sk": {"S": LOCK_SK}}, ConsistentRead=True
        ).get("Item", {})
        return cls(table, client, item.get("cluster_id", {}).get("S", name), owner, ttl_s, name=name)

    def keyed(self, cluster_id: str) -> TargetLock:
        """This lock for the cluster whose brokers report ``cluster_id`` (a CLI lock is made before it connects)."""
        if cluster_id == self.cluster:
            return self
        return TargetLock(self.table, self.client, cluster_id, self.owner, self.ttl_s, name=self.name)

    @property
    def label(self) -> str:
        return self.cluster if self.name == self.cluster else f"{self.name} (cluster id {self.cluster})"

    def _keys(self) -> list[dict[str, dict[str, str]]]:
        """The lock's key, then the name's (an earlier version's) when that differs."""
        clusters = [self.cluster] + ([self.name] if self.name != self.cluster else [])
        return [{"pk": {"S": lock_pk(cluster)}, "sk": {"S": LOCK_SK}} for cluster in clusters]

    @property
    def _key(self) -> dict[str, dict[str, str]]:
        return self._keys()[0]

    def acquire(self, now: float | None = None) -> None:
        """Record the cluster's id beside its name, take the lock (in one transaction with the check that
        no other run holds it under the name), and move a lock of this run's from the name."""
        now = time.time() if now is None else now
        free = "attribute_not_exists(pk) OR expires_at < :now OR #owner = :me"
        names = {"#owner": "owner"}
        values = {":now": {"N": str(int(now))}, ":me": {"S": self.owner}}
        item = {
            **self._key,
            "owner": {"S": self.owner},
            "cluster_name": {"S": self.name},
            "expires_at": {"N": str(int(now + self.ttl_s))},
            "ttl": {"N": str(int(now + self.ttl_s + 86_400))},
        }
        put = {"Put": {"TableName": self.table, "Item": item, "ConditionExpression": free}}
        checks = [
            {"ConditionCheck": {"TableName": self.table, "Key": key, "ConditionExpression": free}}
            for key in self._keys()[1:]
        ]
        for entry in (put, *checks):
            next(iter(entry.values())).update(ExpressionAttributeNames=names, ExpressionAttributeValues=values)
        # The name's pointer first (a fact about the cluster, whoever holds it): a lock taken is always
        # findable by the name, even when this call fails after the transaction.
        self.client.put_item(
            TableName=self.table,
            Item={"pk": {"S": lock_name_pk(self.name)}, "sk": {"S": LOCK_SK}, "cluster_id": {"S": self.cluster}},
        )
        if not conditional_transaction(self.client, [put, *checks]):
            self._refuse()
        for key in self._keys()[1:]:  # the earlier version's lock, once this run's or expired, is gone
            conditional_write(
                self.client.delete_item,
                TableName=self.table,
                Key=key,
                ConditionExpression="expires_at < :now OR #owner = :me",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )

    def _refuse(self) -> None:
        held = self.holder()
        owner, until = held if held else ("?", 0)
        if owner.startswith(FENCE_PREFIX):
            raise LockHeldError(
                f"target cluster {self.label} is fenced until {until} (epoch s): run "
                f"{owner[len(FENCE_PREFIX) :]} ended while writing, and its Lambda may still be writing until "
                "then; this run waits for it"
            )
        raise LockHeldError(
            f"target cluster {self.label} is locked by run {owner} until {until} (epoch s); wait for it, or "
            "let the lock expire"
        )

    def release(self) -> None:
        """Delete the lock if this run holds it (another holder's lock is left alone)."""
        self.break_lock(self.owner)

    def renew(self, now: float | None = None) -> None:
        """Push the expiry out again (the heartbeat of a run that lives); LockLostError when the lock
        is no longer this run's."""
        now = time.time() if now is None else now
        renewed = self._extend(now + self.ttl_s)
        if not renewed:
            raise LockLostError(
                f"the lock of target cluster {self.label} is no longer run {self.owner}'s (broken with unlock, or "
                "expired and taken): stopping before the next write"
            )

    def fence(self, until: float) -> bool:
        """Turn this run's lock into a fence held until ``until`` (epoch s): a run that ended while one of
        its Lambdas may still be writing (a stopped execution's task keeps running) keeps every new run off
        the target until that Lambda must have ended. False when the lock was not this run's."""
        return self._extend(until, owner=f"{FENCE_PREFIX}{self.owner}")

    def _extend(self, until: float, owner: str | None = None) -> bool:
        """Set the lock's expiry to ``until`` (and its owner to ``owner``: a fence) if this run holds it."""
        values = {
            ":me": {"S": self.owner},
            ":until": {"N": str(int(until))},
            ":ttl": {"N": str(int(until + 86_400))},
        }
        return self._on_any_key(
            self.client.update_item,
            UpdateExpression="SET expires_at = :until, #ttl = :ttl" + (", #owner = :new" if owner else ""),
            ConditionExpression="#owner = :me",
            ExpressionAttributeNames={"#owner": "owner", "#ttl": "ttl"},
            ExpressionAttributeValues={**values, **({":new": {"S": owner}} if owner else {})},
        )

    def holder(self) -> tuple[str, int] | None:
        """(owner, expiry in epoch seconds) of the lock as it stands, or None when there is none."""
        for key in self._keys():
            item = self.client.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")
            if item:
                return item.get("owner", {}).get("S", "?"), int(item.get("expires_at", {}).get("N", "0"))
        return None

    def break_lock(self, owner: str) -> bool:
        """Delete the lock if ``owner`` still holds it (the one the operator was shown); False if not."""
        return self._on_any_key(
            self.client.delete_item,
            ConditionExpression="#owner = :them",
            ExpressionAttributeNames={"#owner": "owner"},
            ExpressionAttributeValues={":them": {"S": owner}},
        )

    def _on_any_key(self, call: Callable[..., Any], **request: Any) -> bool:
        """``call`` on the lock's key, then on the name's (a lock an earlier version took) if that one's
        condition did not hold: True when one was written."""
        return any(conditional_write(call, TableName=self.table, Key=key, **request) for key in self._keys())


class Lease:
    """The lock's lease as this run knows it, by the clock: it holds until ``until`` (the expiry the last
    successful acquire or renewal wrote, counted from before its request was sent). A check is the time,
    not a flag another thread may not have set yet: a run paused past its lease (a frozen VM, a long GC)
    finds it out at its next check, before its next write."""

    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.time) -> None:
        self.ttl_s, self.clock, self.until = ttl_s, clock, 0.0
        self.margin_s = ttl_s / 4
        """A write is sent only with this much of the lease left (the request's own time, a beat's lateness)."""

    def renewed(self, write: Callable[[], None]) -> None:
        sent = self.clock()
        write()
        self.until = sent + self.ttl_s

    def check(self, cluster: str) -> float:
        """The seconds a write sent now may take (it must end half a margin before the lease does); raises
        LockLostError when less than the margin is left."""
        left = self.until - self.clock()
        if left < self.margin_s:
            raise LockLostError(
                f"the lease on target cluster {cluster}'s lock has {max(0.0, left):.1f} s left (it is renewed every "
                f"{self.ttl_s / 3:.0f} s: the run was paused, or could not renew it): not writing; another run may "
                "hold the lock now"
            )
        return left - self.margin_s / 2
