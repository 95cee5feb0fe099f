"""The single-writer lock against moto DynamoDB: one holder at a time, expiry for crashed runs."""

from __future__ import annotations

import os

import boto3
import pytest
from offset_restore.locks import LockHeldError, TargetLock


def test_one_writer_at_a_time_and_a_crashed_run_expires(table: str) -> None:
    client = boto3.client("dynamodb", region_name=os.environ["AWS_DEFAULT_REGION"])
    first = TargetLock(table, client, "prod-dr", "run-1", ttl_s=60)
    second = TargetLock(table, client, "prod-dr", "run-2", ttl_s=60)
    other_cluster = TargetLock(table, client, "staging-dr", "run-2", ttl_s=60)
    first.acquire(now=1_000)
    first.acquire(now=1_010)  # the same run retrying keeps its lock
    other_cluster.acquire(now=1_010)  # locks are per target cluster
    with pytest.raises(LockHeldError, match="target cluster prod-dr is locked by run run-1"):
        second.acquire(now=1_020)
    second.release()  # not the owner: nothing happens
    with pytest.raises(LockHeldError):
        second.acquire(now=1_030)
    second.acquire(now=1_071)  # run-1 (last renewed at 1,010 for 60 s) crashed: its lock expired
    with pytest.raises(LockHeldError, match="locked by run run-2"):
        first.acquire(now=1_072)
    second.release()
    first.acquire(now=1_073)
