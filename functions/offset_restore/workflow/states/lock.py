"""The AcquireLock and ReleaseLock states: the target cluster's single-writer lock of a run, and with it the
cluster's write fence (its lanes are the acquire's output, which the run's commit steps write under)."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from offset_restore.apply.locks import TargetLock, release_ended, workflow_lock_ttl
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.workflow.approval import close_question
from offset_restore.workflow.executions import last_state
from offset_restore.workflow.settings import LockSettings, read_secret

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["LockStep", "acquire_lock", "release_lock"]


@dataclass(frozen=True)
class LockStep:
    """One lock step of a run. ``owner``: the execution (its ARN) holding the lock: two executions of one
    restore id are two writers. ``ended``: a release for an execution that ended without reaching its
    ReleaseLock (the stop rule's)."""

    restore_id: str
    owner: str
    interval_seconds: float
    ended: bool = False


def acquire_lock(step: LockStep, settings: LockSettings, dynamodb: DynamoDBClient) -> dict[str, Any]:
    """Take the lock, then the fence: the lock says who runs; the fence, taken once the lock is held, makes
    any older writer's later write harmless (kafka/fence.py). The lock is the deployment's own target's,
    whatever name the input gave (a typo must not make a second lock), keyed by the id its brokers report
    (two names for one cluster are one lock)."""
    name = settings.target.name
    with KafkaCluster(settings.target.connection(read_secret)) as target:
        ttl = workflow_lock_ttl(step.interval_seconds)
        lock = TargetLock(settings.table, dynamodb, target.cluster_id, step.owner, ttl_s=ttl, name=name)
        lock.acquire()
        lanes = target.take_cluster_fence()
    fence = [dataclasses.asdict(lane) for lane in lanes] or None  # None: the deployment writes unfenced
    return {"lock": "acquire", "target_cluster": name, "cluster_id": lock.cluster, "fence": fence}


def release_lock(
    step: LockStep, settings: LockSettings, dynamodb: DynamoDBClient, stepfunctions: Any
) -> dict[str, Any]:
    """Release the lock, or, for an execution that ended while writing, fence it instead
    (``apply.locks.release_ended``); either way the run's approval question is closed (an answer would
    reach no one). Needs no brokers (it must work while the target is down): the id the acquire recorded."""
    name = settings.target.name
    lock = TargetLock.named(settings.table, dynamodb, name, step.owner, ttl_s=workflow_lock_ttl(step.interval_seconds))
    if step.ended:
        ended_in = last_state(stepfunctions, step.owner)
        done = release_ended(lock, ended_in, cluster_fenced=not settings.target.unfenced)
        where = ended_in or "a state its history does not show"
        why = f"it failed, was stopped or timed out in {where}; nothing was written"
        close_question(settings.table, dynamodb, step.restore_id, step.owner, why, time.time())
        return {"lock": done, "target_cluster": name}
    why = "the run went on without it: its gate timed out, or was answered from the console"
    close_question(settings.table, dynamodb, step.restore_id, step.owner, why, time.time(), waiting=False)
    lock.release()
    return {"lock": "release", "target_cluster": name}
