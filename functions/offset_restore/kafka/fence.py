"""The one fence every write of group offsets passes, kept by the target cluster itself (docs/design.md,
"The fence").

A writer takes the fence when its run becomes the writer: InitProducerId under the target's transactional
id (``fence_id``: one per cluster, whatever deployment or process writes) bumps that id's epoch and aborts
whatever an older writer left open. Each write is then one transaction of that epoch: AddOffsetsToTxn for
each group, TxnOffsetCommit to each group's coordinator, EndTxn. A writer whose epoch was bumped since —
another process, another stack, a Lambda that slept past its lease, a run whose lock was broken — is
refused by the brokers (PRODUCER_FENCED) and writes nothing: its open transaction, if any, was aborted by
the newer writer's InitProducerId. The fence is three numbers (``Fence``), so a run's later steps in other
processes write under the epoch its first step took.

A transaction's offsets are readable once its markers are written, shortly after EndTxn: a write returns
when an OffsetFetch that requires stable offsets answers for every group, so a read-back sees them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from offset_restore.errors import ClusterError, CommitInterruptedError, WriterFencedError
from offset_restore.kafka import internals, protocol
from offset_restore.kafka.calls import pipelined
from offset_restore.kafka.commits import Commits
from offset_restore.kafka.model import TP, CommittedOffset

__all__ = ["MEMBER_JOINED", "TRANSACTION_TIMEOUT_MS", "Fence", "Fences", "fence_id"]

TRANSACTION_TIMEOUT_MS = 60_000
"""How long the cluster keeps a writer's transaction open before aborting it: a writer that died in the
middle of a write leaves nothing behind after a minute (a write's transaction lasts a few seconds)."""
_FENCED = {"ProducerFencedError", "InvalidProducerEpochError", "InvalidProducerIdMappingError"}
_AGAIN = {"ConcurrentTransactionsError", "CoordinatorLoadInProgressError"}
_MOVED = {"NotCoordinatorError", "CoordinatorNotAvailableError"}
_STABLE_WAIT_S = 0.05
MEMBER_JOINED = "UnknownMemberIdError"
"""The error a group that gained a member during the write gets, per partition: the one the brokers give
an admin commit into a group with members (nothing of the group was written)."""


def fence_id(cluster_id: str) -> str:
    """The transactional id every writer of one cluster shares: the fence is the cluster's, not a
    deployment's (two stacks, or the CLI beside the workflow, fence each other)."""
    return f"offset-restore-{cluster_id}"


@dataclass(frozen=True, slots=True)
class Fence:
    """A writer's hold on the target: the transactional id and the producer id and epoch its
    InitProducerId gave. Any process holding it writes as that writer, until another takes the fence."""

    transactional_id: str
    producer_id: int
    epoch: int


class Fences(Commits):
    """Mixin of ``KafkaCluster``: taking the fence, and writing group offsets under it. Once a connection
    holds the fence (``hold_fence``), every write of group offsets it makes (``alter_offsets_many``) is one
    transaction under it."""

    fence: Fence | None = None

    def hold_fence(self, fence: Fence | None = None) -> Fence:
        """Write under ``fence`` (one a run's earlier step took) or, without one, take this cluster's."""
        self.fence = fence or self.take_fence(fence_id(self.cluster_id))  # type: ignore[attr-defined]
        return self.fence

    def alter_offsets_many(
        self,
        offsets_by_group: Mapping[str, Mapping[TP, CommittedOffset]],
        *,
        before_attempt: Callable[[], float | None] | None = None,
    ) -> dict[str, dict[TP, str | None]]:
        """The write of group offsets (``Commits.alter_offsets_many``): under the fence once one is held."""
        if self.fence is None:
            return super().alter_offsets_many(offsets_by_group, before_attempt=before_attempt)
        return self.fenced_offsets(offsets_by_group, self.fence, before_attempt=before_attempt)

    def take_fence(self, transactional_id: str) -> Fence:
        """Become the cluster's one writer: every older writer's later write is refused from now on."""
        request = partial(protocol.init_producer_id_request, transactional_id, TRANSACTION_TIMEOUT_MS)
        response, error = self._to_transaction_coordinator("taking the write fence", transactional_id, request)
        if error is not None:
            raise ClusterError(_refused(transactional_id, error))
        return Fence(transactional_id, response.producer_id, response.producer_epoch)

    def _to_transaction_coordinator(
        self, operation: str, transactional_id: str, request: Callable[[], Any], *, retry: bool = True
    ) -> tuple[Any, str | None]:
        """One request (built afresh for each attempt) to ``transactional_id``'s coordinator, sent again while
        the coordinator is loading, busy with the last transaction or moved (found again): its answer and error
        name (None: none).
        ``retry``: a request that failed on the way is sent again too (not an EndTxn: its fate is unknown)."""
        admin, manager = self._admin, internals.manager(self._admin)

        async def send() -> Any:
            node = await internals.find_transaction_coordinator(admin, transactional_id)
            return await manager.send(request(), node_id=node, request_timeout_ms=self._request_ms)

        attempts = self.settings.retries + 1
        for attempt in range(1, attempts + 1):
            response = self._call(operation, manager.run, send, retry=retry)
            error = protocol.error_name(response.error_code) if response.error_code else None
            if error is None or error not in _AGAIN | _MOVED or attempt == attempts:
                return response, error
            if error in _MOVED:
                internals.forget_transaction_coordinator(admin, transactional_id)
            self._back_off(operation, ClusterError(error), attempt, attempts)
        raise AssertionError("unreachable")  # pragma: no cover

    def delete_groups(self, group_ids: Sequence[str]) -> dict[str, str | None]:
        """``Groups.delete_groups``, once the fence is confirmed still this writer's (``_confirm``)."""
        if self.fence is not None and group_ids:
            self._confirm(self.fence, group_ids[0])
        return super().delete_groups(group_ids)  # type: ignore[misc]

    def delete_offsets(self, group_id: str, partitions: Sequence[TP]) -> dict[TP, str | None]:
        """``Offsets.delete_offsets``, once the fence is confirmed still this writer's (``_confirm``)."""
        if self.fence is not None and partitions:
            self._confirm(self.fence, group_id)
        return super().delete_offsets(group_id, partitions)  # type: ignore[misc]

    def _confirm(self, fence: Fence, group: str) -> None:
        """A deletion has no transactional form: right before one, an empty transaction of the fence's epoch
        (AddOffsetsToTxn, then aborted) shows the fence is still this writer's, or raises
        ``WriterFencedError``. A writer fenced since is stopped there; one fenced in the moment between the
        check and the deletion is not."""
        try:
            self._add_groups(fence, [group])
        finally:
            self._abort(fence)

    def fenced_offsets(
        self,
        offsets_by_group: Mapping[str, Mapping[TP, CommittedOffset]],
        fence: Fence,
        *,
        before_attempt: Callable[[], float | None] | None = None,
    ) -> dict[str, dict[TP, str | None]]:
        """``alter_offsets_many`` in one transaction under ``fence``: per group and partition the error name
        or None. ``WriterFencedError`` when another writer took the fence since (nothing written);
        ``CommitInterruptedError`` when the cluster stopped answering (nothing written, unless the
        transaction's end was sent and not answered: applying again settles it)."""
        groups = [group for group, offsets in offsets_by_group.items() if offsets]
        joined: dict[str, dict[TP, str | None]] = {}
        while groups:
            if before_attempt is not None:
                before_attempt()  # the writer's lock still held: raised, nothing was sent
            try:
                self._add_groups(fence, groups)
                answers = self._txn_commits(fence, groups, offsets_by_group)
                busy = self._with_members(groups)
            except (ClusterError, CommitInterruptedError) as error:
                self._abort(fence)
                if isinstance(error, WriterFencedError):
                    raise
                said = f"{error}; the write's transaction was aborted: nothing written"
                raise CommitInterruptedError(said, {}, []) from None
            if not busy:
                self._end(fence, groups)
                self._until_stable({g: list(offsets_by_group[g]) for g in groups})
                return {**answers, **joined}
            self._abort(fence)  # written again without them, in a transaction of its own
            joined.update({g: dict.fromkeys(offsets_by_group[g], MEMBER_JOINED) for g in busy})
            groups = [g for g in groups if g not in busy]
        return joined

    def _with_members(self, groups: Sequence[str]) -> list[str]:
        """The groups that have members now, inside the write's transaction: the brokers refuse an admin
        commit into such a group but accept a transactional one, so the write checks them itself. A
        consumer that joins after this check and asks for stable offsets (KIP-447) waits for the
        transaction's end and reads what it wrote."""
        described = self.describe_groups(groups)  # type: ignore[attr-defined]
        return [g for g in groups if (info := described.get(g)) is not None and info.members > 0]

    def _add_groups(self, fence: Fence, groups: Sequence[str]) -> None:
        """AddOffsetsToTxn for every group, pipelined to the transaction coordinator (one group a request)."""
        admin, manager = self._admin, internals.manager(self._admin)
        tid, pid, epoch = fence.transactional_id, fence.producer_id, fence.epoch

        async def send(batch: Sequence[str]) -> list[tuple[Any, Any]]:
            node = await internals.find_transaction_coordinator(admin, tid)
            requests = [(g, node, protocol.add_offsets_request(tid, pid, epoch, g)) for g in batch]
            return await pipelined(requests, lambda at, request: manager.send(request, node_id=at))

        remaining = list(groups)
        operation = "adding groups to the write's transaction"
        attempts = self.settings.retries + 1
        for attempt in range(1, attempts + 1):
            answers = self._call(operation, manager.run, send, remaining)
            errors = {g: protocol.error_name(r.error_code) for g, r in answers if r.error_code}
            _raise_if_fenced(tid, errors.values())
            refused = {g: e for g, e in errors.items() if e not in _AGAIN | _MOVED}
            if refused:
                group, error = next(iter(refused.items()))
                raise ClusterError(f"adding group {group} to the write's transaction was refused: {error}")
            remaining = [g for g in remaining if g in errors]
            if not remaining:
                return
            if any(e in _MOVED for e in errors.values()):
                internals.forget_transaction_coordinator(admin, tid)
            if attempt < attempts:
                self._back_off(operation, ClusterError(errors[remaining[0]]), attempt, attempts)
        raise ClusterError(f"{operation} kept failing: {remaining[0]}")

    def _txn_commits(
        self, fence: Fence, groups: Sequence[str], offsets_by_group: Mapping[str, Mapping[TP, CommittedOffset]]
    ) -> dict[str, dict[TP, str | None]]:
        """TxnOffsetCommit of every group to its coordinator, over the commit lanes; a group whose
        coordinator moved is sent again."""
        tid, pid, epoch = fence.transactional_id, fence.producer_id, fence.epoch

        def build(batch: Sequence[str]) -> list[tuple[str, Any]]:
            return [(g, protocol.txn_offset_commit_request(tid, pid, epoch, g, offsets_by_group[g])) for g in batch]

        result: dict[str, dict[TP, str | None]] = {}
        remaining = list(groups)
        attempts = self.settings.retries + 1
        for attempt in range(1, attempts + 1):
            answers, failure = self._commit_round(remaining, build, self._request_ms)
            moved = [group for group, response in answers if protocol.coordinator_moved(response) is not None]
            self._forget_coordinators(moved)
            for group, response in answers:
                if group not in moved:
                    result[group] = protocol.commit_errors(response)
                    _raise_if_fenced(tid, (e for e in result[group].values() if e))
            remaining = [group for group in remaining if group not in result]
            if not remaining:
                return result
            if attempt < attempts:
                why = failure or ClusterError("coordinator moved")
                self._back_off("committing in the write's transaction", why, attempt, attempts)
        raise ClusterError(f"committing group {remaining[0]} in the write's transaction kept failing")

    def _end(self, fence: Fence, groups: Sequence[str]) -> None:
        """EndTxn, committing: the groups' offsets become the ones consumers read."""
        try:
            error = self._end_txn(fence, commit=True)
        except ClusterError as unanswered:  # sent, and no answer: committed or not, the cluster knows
            error = str(unanswered)
        if error is None:
            return
        _raise_if_fenced(fence.transactional_id, [error])
        raise CommitInterruptedError(
            f"ending the write's transaction failed ({error}): its offsets may or may not be written", {}, list(groups)
        )

    def _abort(self, fence: Fence) -> None:
        """EndTxn, aborting, as far as the cluster answers: else the transaction times out
        (``TRANSACTION_TIMEOUT_MS``) and is aborted by the cluster all the same."""
        with contextlib.suppress(ClusterError):
            self._end_txn(fence, commit=False)

    def _end_txn(self, fence: Fence, *, commit: bool) -> str | None:
        tid = fence.transactional_id
        request = partial(protocol.end_txn_request, tid, fence.producer_id, fence.epoch, commit=commit)
        return self._to_transaction_coordinator("ending the write's transaction", tid, request, retry=False)[1]

    def _until_stable(self, partitions_by_group: Mapping[str, list[TP]]) -> None:
        """Wait until every partition written is stable (the transaction's markers written), as far as the
        request timeout: a read-back right after sees the written offsets, not the ones before."""
        version = internals.offset_fetch_version(self._admin)
        if version < 7:
            return  # no stable read to ask for
        deadline = time.monotonic() + self._request_ms / 1000
        waiting = list(partitions_by_group)
        while waiting and time.monotonic() < deadline:
            answers = self._per_coordinator(
                "reading the written offsets",
                waiting,
                250,
                lambda batch: protocol.stable_offset_requests({g: partitions_by_group[g] for g in batch}, version >= 8),
            )
            waiting = [g for tag, response in answers for g in protocol.unstable_groups(tag, response)]
            if waiting:
                time.sleep(_STABLE_WAIT_S)


def _raise_if_fenced(transactional_id: str, errors: Any) -> None:
    fenced = next((e for e in errors if e in _FENCED), None)
    if fenced is not None:
        raise WriterFencedError(
            f"another offset-restore writer took this cluster's write fence (transactional id {transactional_id}) "
            f"after this run did ({fenced}): the cluster refused this run's write, and nothing of it was written; "
            "the group offsets there are the other writer's"
        )


def _refused(transactional_id: str, error: str) -> str:
    if error in ("TransactionalIdAuthorizationFailedError", "ClusterAuthorizationFailedError"):
        return (
            f"taking the write fence was refused ({error}): the credentials need to write with transactional id "
            f"{transactional_id} (on MSK with IAM: kafka-cluster:DescribeTransactionalId and "
            "kafka-cluster:AlterTransactionalId on it)"
        )
    return f"taking the write fence (transactional id {transactional_id}) failed: {error}"
