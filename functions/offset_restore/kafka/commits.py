"""Committing offsets (admin OffsetCommit), over several connections when there are many groups.

A commit is retried group by group, not as a whole: after a transient failure only the groups
without an answer are sent again, and when the attempts run out ``CommitInterruptedError`` tells
the groups answered from those whose commit may or may not have reached the broker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from kafka import KafkaAdminClient

from offset_restore.errors import ClusterUnreachableError, CommitInterruptedError, OffsetRestoreError
from offset_restore.kafka import internals, protocol
from offset_restore.kafka.model import TP, CommittedOffset
from offset_restore.kafka.share_groups import ShareGroups

__all__ = ["COMMIT_LANES", "LANE_MIN_GROUPS", "Commits"]

COMMIT_LANES = 4
"""Connections a large commit is spread over. A broker serves one connection's requests one at a
time, and Kafka 4's group coordinator holds each write up to ``group.coordinator.append.linger.ms``
(5 ms) to batch it: on one connection 2,000 commits took 13.6 s; commits arriving together on several
connections share those appends."""
LANE_MIN_GROUPS = 64
"""Groups per extra connection: a small commit stays on the one connection it has."""


class Commits(ShareGroups):
    """Mixin of ``KafkaCluster``: committing offsets over commit lanes (a share group's start offsets
    with AlterShareGroupOffsets, ``share_groups.py``)."""

    def _commit_lanes(self, groups: int) -> list[KafkaAdminClient]:
        """This client and up to ``COMMIT_LANES - 1`` more (opened once, kept until close), one per
        ``LANE_MIN_GROUPS`` groups to commit."""
        wanted = max(1, min(COMMIT_LANES, groups // LANE_MIN_GROUPS))
        while len(self._lanes) < wanted - 1:
            lane = self._connect()
            self._count_requests(internals.manager(lane))
            self._lanes.append(lane)
        return [self._admin, *self._lanes[: wanted - 1]]

    def alter_offsets(self, group_id: str, offsets: Mapping[TP, CommittedOffset]) -> dict[TP, str | None]:
        """Admin OffsetCommit for a group without members; per partition the error name or None.

        A broker rejects it with UNKNOWN_MEMBER_ID while the group has members.
        """
        return self.alter_offsets_many({group_id: offsets}).get(group_id, {})

    def alter_offsets_many(
        self,
        offsets_by_group: Mapping[str, Mapping[TP, CommittedOffset]],
        *,
        before_attempt: Callable[[], float | None] | None = None,
    ) -> dict[str, dict[TP, str | None]]:
        """``commit_offsets_many`` for the groups whose positions are committed offsets, then the share groups'
        start offsets (``ShareGroups.alter_share_start_offsets``, after ``before_attempt``)."""
        commit = partial(self.commit_offsets_many, before_attempt=before_attempt)
        return self._written_by_kind(offsets_by_group, commit, before_attempt=before_attempt)

    def commit_offsets_many(
        self,
        offsets_by_group: Mapping[str, Mapping[TP, CommittedOffset]],
        *,
        before_attempt: Callable[[], float | None] | None = None,
    ) -> dict[str, dict[TP, str | None]]:
        """Admin OffsetCommits for many groups, pipelined per coordinator; per group and partition the
        error name or None. Each group is one request, so the broker accepts or rejects it whole.

        After a transient failure only the groups without an answer are sent again (the same
        offsets: a commit that reached the broker before the answer was lost changes nothing the
        second time). When the attempts run out, ``CommitInterruptedError`` carries what was answered.
        ``before_attempt`` runs before each attempt (the writer's fence: its lock still held) and may
        return the seconds the attempt may take (its lease's deadline): the attempt's requests then time
        out by then, if that is sooner than the request timeout; when it raises after an attempt was sent,
        ``CommitInterruptedError`` carries what was answered then.
        """

        def build(batch: Sequence[str]) -> list[tuple[str, Any]]:
            return [(group, protocol.offset_commit_request(group, offsets_by_group[group])) for group in batch]

        result: dict[str, dict[TP, str | None]] = {}
        remaining = [group for group, offsets in offsets_by_group.items() if offsets]
        attempts = self.settings.retries + 1
        for attempt in range(1, attempts + 1):
            deadline_s = _fence(before_attempt, attempt, result, remaining)
            timeout_ms = self._request_ms if deadline_s is None else min(self._request_ms, int(deadline_s * 1000))
            answers, failure = self._commit_round(remaining, build, max(1, timeout_ms))
            moved = protocol.moved_groups(answers)
            if moved:  # not committed: sent again with the unanswered ones
                self._forget_coordinators(moved)
                failure = failure or ClusterUnreachableError(f"committing offsets: {protocol.moved_reason(moved)}")
            for group, response in answers:
                if group in moved:
                    continue
                result[group] = protocol.commit_errors(response)
            remaining = [group for group in remaining if group not in result]
            if failure is None or not remaining:
                return result
            if attempt == attempts:
                raise CommitInterruptedError(f"{failure} (after {attempts} attempts)", result, remaining)
            self._back_off("committing offsets", failure, attempt, attempts)
        return result

    def _commit_round(
        self, groups: Sequence[str], build: Any, timeout_ms: int
    ) -> tuple[list[tuple[Any, Any]], ClusterUnreachableError | None]:
        """One attempt at every group, spread over the commit lanes (each its own connection, sent
        together): what was answered, and the first failure if a lane failed."""
        lanes = self._commit_lanes(len(groups))
        shares = [list(groups[i :: len(lanes)]) for i in range(len(lanes))]
        answered: list[list[tuple[Any, Any]]] = [[] for _ in lanes]

        def send(i: int) -> ClusterUnreachableError | None:
            try:
                self._per_coordinator(
                    "committing offsets",
                    shares[i],
                    1,
                    build,
                    answers=answered[i],
                    retry=False,
                    lane=lanes[i],
                    timeout_ms=timeout_ms,
                )
            except ClusterUnreachableError as error:
                return error
            return None

        if len(lanes) == 1:
            failures = [send(0)]
        else:
            with ThreadPoolExecutor(max_workers=len(lanes), thread_name_prefix="commit-lane") as pool:
                failures = list(pool.map(send, range(len(lanes))))
        return [pair for share in answered for pair in share], next((f for f in failures if f), None)


def _fence(
    before_attempt: Callable[[], float | None] | None, attempt: int, answered: dict[str, Any], rest: list[str]
) -> float | None:
    """The writer's check before an attempt, and the deadline it gives; raised after a first attempt, it
    carries what was answered and which groups may or may not have been written (as a cluster that
    stopped answering does)."""
    if before_attempt is None:
        return None
    try:
        return before_attempt()
    except OffsetRestoreError as error:
        if attempt == 1:
            raise
        raise CommitInterruptedError(f"committing stopped before attempt {attempt}: {error}", answered, rest) from error
