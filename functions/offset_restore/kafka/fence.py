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

One transactional id has one transaction open at a time, and the workflow writes from up to
``FENCE_LANES`` functions at once: the cluster's fence is that many ids (``fence_ids``), every writer takes
them all (``take_fences``) and writes each stream of transactions under one of them. A writer takes its
lanes, then confirms it still holds every one (an empty transaction each): two writers taking at once
cannot each end up holding a part; the one that lost a lane stops before its first write.

A transaction's offsets are readable once its markers are written, shortly after EndTxn: a write returns
when an OffsetFetch that requires stable offsets answers for every group, so a read-back sees them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import kafka.errors as kafka_errors

from offset_restore.errors import ClusterError, CommitInterruptedError, WriterFencedError
from offset_restore.kafka import internals, protocol
from offset_restore.kafka.calls import pipelined
from offset_restore.kafka.commits import Commits
from offset_restore.kafka.model import SHARE_GROUP, TP, CommittedOffset

__all__ = [
    "FENCE_LANES",
    "MEMBER_JOINED",
    "SHARE_GROUP_THERE",
    "TRANSACTION_TIMEOUT_MS",
    "Fence",
    "Fences",
    "fence_id",
    "fence_ids",
]

TRANSACTION_TIMEOUT_MS = 60_000
"""How long the cluster keeps a writer's transaction open before aborting it: a writer that died in the
middle of a write leaves nothing behind after a minute (a write's transaction lasts a few seconds)."""
_FENCED = {"ProducerFencedError", "InvalidProducerEpochError", "InvalidProducerIdMappingError"}
_AGAIN = {"ConcurrentTransactionsError", "CoordinatorLoadInProgressError"}
_MOVED = {"NotCoordinatorError", "CoordinatorNotAvailableError"}
_STABLE_WAIT_S = 0.05
FIRST_TRANSACTION_WAIT_S = 60
"""How long taking the fence waits for the cluster to name a transaction coordinator (``_coordinators_ready``)."""
_COORDINATOR_WAIT_S = 0.5
MEMBER_JOINED = "UnknownMemberIdError"
"""The error a group that gained a member during the write gets, per partition: the one the brokers give
an admin commit into a group with members (nothing of the group was written)."""
SHARE_GROUP_THERE = "GroupIdNotFoundError: a share group of that id is on the target, not a consumer group"
"""The error a consumer group's write gets where the target holds a share group of its id: the brokers
acknowledge a transactional commit into it and apply none of it (seen on Kafka 4.4), so the write's check
refuses it by name (nothing of the group was written)."""


FENCE_LANES = 40
"""Transactional ids in the cluster's fence: as many as the workflow's commit steps that run at once (its
Commit Map is 40 wide), each writing its transactions under an id of its own."""


def fence_id(cluster_id: str) -> str:
    """The first of the cluster's fence ids: the one the CLI writes under (``fence_ids``)."""
    return f"offset-restore-{cluster_id}"


def fence_ids(cluster_id: str) -> list[str]:
    """The transactional ids every writer of one cluster takes: the fence is the cluster's, not a
    deployment's (two stacks, or the CLI beside the workflow, fence each other)."""
    first = fence_id(cluster_id)
    return [first, *(f"{first}-{lane}" for lane in range(1, FENCE_LANES))]


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
    _applies_transactions = False
    """Whether this cluster was seen to apply a transactional offset commit (checked on the first write)."""

    def hold_fence(self, fence: Fence | None = None) -> Fence | None:
        """Write under ``fence`` (a lane a run's earlier step took) or, without one, take this cluster's
        whole fence and write under its first lane. None: the settings say to write unfenced."""
        if self.settings.unfenced:
            return None
        self.fence = fence or self.take_cluster_fence()[0]
        return self.fence

    def take_cluster_fence(self) -> list[Fence]:
        """Every lane of this cluster's fence (``fence_ids``); none when the settings say to write unfenced."""
        return [] if self.settings.unfenced else self.take_fences(fence_ids(self.cluster_id))  # type: ignore[attr-defined]

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

    def fenced_offsets(
        self,
        offsets_by_group: Mapping[str, Mapping[TP, CommittedOffset]],
        fence: Fence,
        *,
        before_attempt: Callable[[], float | None] | None = None,
    ) -> dict[str, dict[TP, str | None]]:
        """The write under ``fence``: the committed offsets in one transaction (``fenced_commits``), then the
        share groups' start offsets, which have no transactional form: written once the fence is confirmed
        still this writer's (``_confirm``), as a deletion is. A writer fenced since is stopped there, before
        anything of them is written; one fenced in the moment between the check and the write is not."""
        commit = partial(self.fenced_commits, fence=fence, before_attempt=before_attempt)
        confirm = partial(self._confirm, [fence])
        return self._written_by_kind(offsets_by_group, commit, before_attempt=before_attempt, check=confirm)

    def take_fence(self, transactional_id: str) -> Fence:
        """One transactional id's fence (``take_fences``)."""
        return self.take_fences([transactional_id])[0]

    def take_fences(self, transactional_ids: Sequence[str]) -> list[Fence]:
        """Become the one writer of these ids: every older writer's later write under any of them is refused
        from now on. Each id is taken (InitProducerId), then confirmed still held (an empty transaction of
        the epoch it gave, aborted): a writer that lost an id to another taking at the same time raises
        ``WriterFencedError`` here, before any write."""
        self._coordinators_ready(transactional_ids)
        init = {
            tid: partial(protocol.init_producer_id_request, tid, TRANSACTION_TIMEOUT_MS) for tid in transactional_ids
        }
        taken = self._to_transaction_coordinators("taking the write fence", init)
        refused = next(((tid, error) for tid, (_, error) in taken.items() if error is not None), None)
        if refused is not None:
            raise ClusterError(_refused(*refused))
        fences = [Fence(tid, taken[tid][0].producer_id, taken[tid][0].producer_epoch) for tid in transactional_ids]
        self._confirm(fences, while_taking=True)
        return fences

    def _confirm(self, fences: Sequence[Fence], *, while_taking: bool = False) -> None:
        """An empty transaction of each fence's epoch (AddOffsetsToTxn naming a group of the lane's name, then
        aborted): the fences are still this writer's, or ``WriterFencedError``. Right after taking them (two
        writers taking at once), and right before a deletion, which has no transactional form: a writer fenced
        since is stopped there; one fenced in the moment between the check and the deletion is not."""
        confirm = {
            f.transactional_id: partial(protocol.add_offsets_request, *_numbers(f), f.transactional_id) for f in fences
        }
        try:
            confirmed = self._to_transaction_coordinators("confirming the write fence", confirm)
            errors = [error for _, error in confirmed.values()]
            _raise_if_fenced(fences[0].transactional_id, errors, while_taking=while_taking)
            failed = next((error for error in errors if error is not None), None)
            if failed is not None:
                raise ClusterError(f"confirming the write fence failed: {failed}")
        finally:
            self._abort_all(fences)

    def _coordinators_ready(self, transactional_ids: Sequence[str]) -> None:
        """Wait until the cluster names a coordinator for every id: a cluster's first transaction creates its
        transaction log (``__transaction_state``), and until then FindCoordinator answers "not available" —
        for seconds on a loaded cluster, longer than the retries of one request last."""
        admin, manager = self._admin, internals.manager(self._admin)

        async def find(ids: Sequence[str]) -> bool:
            try:
                await internals.find_transaction_coordinators(admin, ids)
            except (kafka_errors.CoordinatorNotAvailableError, kafka_errors.CoordinatorLoadInProgressError):
                return False
            except kafka_errors.TransactionalIdAuthorizationFailedError as error:  # the ids are not ours to use
                raise ClusterError(_refused(ids[0], type(error).__name__)) from None
            return True

        deadline = time.monotonic() + FIRST_TRANSACTION_WAIT_S
        while not self._call("finding the write fence's coordinators", manager.run, find, list(transactional_ids)):
            if time.monotonic() >= deadline:
                raise ClusterError(
                    f"the cluster named no transaction coordinator within {FIRST_TRANSACTION_WAIT_S} s (its "
                    "transaction log, __transaction_state, is created by its first transaction): the write fence "
                    "cannot be taken; nothing was written"
                )
            time.sleep(_COORDINATOR_WAIT_S)

    def _to_transaction_coordinator(
        self, operation: str, transactional_id: str, request: Callable[[], Any], *, retry: bool = True
    ) -> tuple[Any, str | None]:
        """One request to ``transactional_id``'s coordinator (``_to_transaction_coordinators``)."""
        return self._to_transaction_coordinators(operation, {transactional_id: request}, retry=retry)[transactional_id]

    def _to_transaction_coordinators(
        self, operation: str, requests: Mapping[str, Callable[[], Any]], *, retry: bool = True
    ) -> dict[str, tuple[Any, str | None]]:
        """One request per transactional id (each built afresh for each attempt) to its coordinator,
        pipelined; sent again while a coordinator is loading, busy with the id's last transaction or moved
        (found again). Per id its answer and error name (None: none).
        ``retry``: a request that failed on the way is sent again too (not an EndTxn: its fate is unknown)."""
        admin, manager = self._admin, internals.manager(self._admin)

        async def send(ids: Sequence[str]) -> list[tuple[str, Any]]:
            nodes = await internals.find_transaction_coordinators(admin, ids)
            items = [(tid, nodes[tid], requests[tid]()) for tid in ids]
            return await pipelined(
                items, lambda at, req: manager.send(req, node_id=at, request_timeout_ms=self._request_ms)
            )

        answers: dict[str, tuple[Any, str | None]] = {}
        remaining, attempts, attempt = list(requests), self.settings.retries + 1, 0
        patience = time.monotonic() + FIRST_TRANSACTION_WAIT_S
        while True:
            attempt += 1
            for tid, response in self._call(operation, manager.run, send, remaining, retry=retry):
                answers[tid] = (response, protocol.error_name(response.error_code) if response.error_code else None)
            remaining = [tid for tid in remaining if answers[tid][1] in _AGAIN | _MOVED]
            # A coordinator loading its transaction log (a cluster's first transaction) or finishing the last
            # transaction of an id is waited for as long as ``FIRST_TRANSACTION_WAIT_S``; others get the retries.
            waiting = bool(remaining) and all(answers[t][1] in _AGAIN for t in remaining)
            if not remaining or (attempt >= attempts and not (waiting and time.monotonic() < patience)):
                return answers
            for tid in remaining:
                if answers[tid][1] in _MOVED:
                    internals.forget_transaction_coordinator(admin, tid)
            if attempt < attempts:
                self._back_off(operation, ClusterError(str(answers[remaining[0]][1])), attempt, attempts)
            else:
                time.sleep(_COORDINATOR_WAIT_S)

    def delete_groups(
        self, held: Mapping[str, Collection[TP]], before_request: Callable[[], object] | None = None
    ) -> dict[str, str | None]:
        """``Groups.delete_groups``, each request once the fence is confirmed still this writer's (``_confirm``)."""
        fence = self.fence

        def confirmed() -> None:
            if before_request is not None:
                before_request()
            if fence is not None:
                self._confirm([fence])

        return super().delete_groups(held, confirmed)  # type: ignore[misc]

    def delete_offsets(self, group_id: str, partitions: Sequence[TP]) -> dict[TP, str | None]:
        """``Offsets.delete_offsets``, once the fence is confirmed still this writer's (``_confirm``)."""
        if self.fence is not None and partitions:
            self._confirm([self.fence])
        return super().delete_offsets(group_id, partitions)  # type: ignore[misc]

    def fenced_commits(
        self,
        offsets_by_group: Mapping[str, Mapping[TP, CommittedOffset]],
        fence: Fence,
        *,
        before_attempt: Callable[[], float | None] | None = None,
    ) -> dict[str, dict[TP, str | None]]:
        """``commit_offsets_many`` in one transaction under ``fence``: per group and partition the error name
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
                busy = self._not_writable(groups)
            except (ClusterError, CommitInterruptedError) as error:
                self._abort(fence)
                if isinstance(error, WriterFencedError):
                    raise
                said = f"{error}; the write's transaction was aborted: nothing written"
                raise CommitInterruptedError(said, {}, []) from None
            if not busy:
                self._end(fence, groups)
                self._until_stable({g: list(offsets_by_group[g]) for g in groups})
                self._check_applied({g: offsets_by_group[g] for g in groups})
                return {**answers, **joined}
            self._abort(fence)  # written again without them, in a transaction of its own
            joined.update({g: dict.fromkeys(offsets_by_group[g], why) for g, why in busy.items()})
            groups = [g for g in groups if g not in busy]
        return joined

    def _check_applied(self, written: Mapping[str, Mapping[TP, CommittedOffset]]) -> None:
        """On a connection's first fenced write, read it back: a cluster that acknowledges a transactional
        offset commit and shows none of it (Tansu does) cannot keep the fence, and is refused by name."""
        if self._applies_transactions:
            return
        now = self.committed_offsets(list(written))  # type: ignore[attr-defined]
        shown = ((now.get(g, {}).get(tp), offset) for g, offsets in written.items() for tp, offset in offsets.items())
        if any(read is not None and read.offset == offset.offset for read, offset in shown):
            self._applies_transactions = True
            return
        raise ClusterError(
            "this cluster acknowledged the write's transaction and shows none of its offsets: it does not apply "
            'transactional offset commits, so it cannot keep the write fence (docs/design.md, "The fence"); '
            "nothing was written. Write without the fence (--unfenced; TARGET_UNFENCED=true in a deployment) only "
            "where no other writer can run"
        )

    def _not_writable(self, groups: Sequence[str]) -> dict[str, str]:
        """The groups not to write, with the error each partition of theirs gets, as they are now, inside the
        write's transaction: those with members (``MEMBER_JOINED``) and share groups (``SHARE_GROUP_THERE``).
        The brokers refuse an admin commit into either but accept a transactional one (applying none of it
        to a share group), so the write checks them itself. A consumer that joins after this check and asks
        for stable offsets (KIP-447) waits for the transaction's end and reads what it wrote."""
        described = self.describe_groups(groups)  # type: ignore[attr-defined]
        refused: dict[str, str] = {}
        for group in groups:
            info = described.get(group)
            if info is not None and info.error is None and info.protocol_type == SHARE_GROUP:
                refused[group] = SHARE_GROUP_THERE
            elif info is not None and info.occupied:
                refused[group] = MEMBER_JOINED
        return refused

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
            moved = protocol.moved_groups(answers)
            self._forget_coordinators(moved)
            for group, response in answers:
                if group not in moved:
                    result[group] = protocol.commit_errors(response)
                    _raise_if_fenced(tid, (e for e in result[group].values() if e))
            remaining = [group for group in remaining if group not in result]
            if not remaining:
                return result
            if attempt < attempts:
                why = failure or ClusterError(protocol.moved_reason(moved))
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
        """EndTxn, aborting (``_abort_all``)."""
        self._abort_all([fence])

    def _abort_all(self, fences: Sequence[Fence]) -> None:
        """EndTxn, aborting, for each fence as far as the cluster answers: else the transaction times out
        (``TRANSACTION_TIMEOUT_MS``) and is aborted by the cluster all the same."""
        ends = {f.transactional_id: partial(protocol.end_txn_request, *_numbers(f), commit=False) for f in fences}
        with contextlib.suppress(ClusterError):
            self._to_transaction_coordinators("ending the write's transaction", ends, retry=False)

    def _end_txn(self, fence: Fence, *, commit: bool) -> str | None:
        request = partial(protocol.end_txn_request, *_numbers(fence), commit=commit)
        return self._to_transaction_coordinator(
            "ending the write's transaction", fence.transactional_id, request, retry=False
        )[1]

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


def _numbers(fence: Fence) -> tuple[str, int, int]:
    return fence.transactional_id, fence.producer_id, fence.epoch


def _raise_if_fenced(transactional_id: str, errors: Any, *, while_taking: bool = False) -> None:
    fenced = next((e for e in errors if e in _FENCED), None)
    if fenced is not None and while_taking:
        raise WriterFencedError(
            f"another offset-restore writer took part of this cluster's write fence (transactional ids "
            f"{transactional_id} and the ones after it) while this run was taking it ({fenced}): this run "
            "wrote nothing; the other writer may stop too — start this run again once no other run writes"
        )
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
