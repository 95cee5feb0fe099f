"""Share groups (KIP-932, queues): their start offsets read, set and removed, to their coordinators.

A share group's position is a start offset per share-partition, which OffsetFetch and OffsetCommit know
nothing of (a commit under a share group's id is refused, or makes a consumer group of that name where the
share group does not exist yet). The connection keeps which group ids are share groups (``share_group_ids``:
each listing adds those it names, and apply adds those its plan says are) and reads, writes and deletes the
positions of those with the share requests (``share_protocol.py``), every other group's with the committed
offset requests: one set of calls (``committed_offsets``, ``alter_offsets_many``, ``delete_offsets``) for
every kind, so each caller, and the fence every write passes, stays the same.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from offset_restore.kafka import share_protocol
from offset_restore.kafka.coordinators import Coordinators, one_request
from offset_restore.kafka.model import TP, CommittedOffset

__all__ = ["ShareGroups"]


class ShareGroups(Coordinators):
    """Mixin of ``KafkaCluster``: share groups' start offsets."""

    share_group_ids: set[str]

    def treat_as_share_groups(self, group_ids: Iterable[str]) -> None:
        """Read and write these groups as share groups from now on (a plan's, whether or not the target
        has them yet: AlterShareGroupOffsets makes an absent share group, empty)."""
        self.share_group_ids.update(group_ids)

    def _of_kind(self, group_ids: Iterable[str]) -> tuple[list[str], list[str]]:
        """The groups whose positions are committed offsets, and the share groups, each in the order given."""
        ids = list(group_ids)
        return [g for g in ids if g not in self.share_group_ids], [g for g in ids if g in self.share_group_ids]

    def _written_by_kind(
        self,
        offsets_by_group: Mapping[str, Mapping[TP, CommittedOffset]],
        commit: Callable[[dict[str, Mapping[TP, CommittedOffset]]], dict[str, dict[TP, str | None]]],
        *,
        before_attempt: Callable[[], float | None] | None,
        check: Callable[[], None] | None = None,
    ) -> dict[str, dict[TP, str | None]]:
        """The groups whose positions are committed offsets written by ``commit`` (fenced or not), then the
        share groups' start offsets (``alter_share_start_offsets``, after ``check``): one split for every
        write, whatever the fence."""
        groups, share = self._of_kind(offsets_by_group)
        result = commit({g: offsets_by_group[g] for g in groups})
        share_offsets = {g: offsets_by_group[g] for g in share}
        return {**result, **self.alter_share_start_offsets(share_offsets, before_attempt=before_attempt, check=check)}

    def share_start_offsets(
        self, group_ids: Sequence[str], batch_size: int = 100
    ) -> dict[str, dict[TP, CommittedOffset]]:
        """Each share group's start offset per share-partition it holds (DescribeShareGroupOffsets)."""
        build = one_request(share_protocol.describe_request)
        result: dict[str, dict[TP, CommittedOffset]] = {}
        for _, response in self._per_coordinator("reading share groups' start offsets", group_ids, batch_size, build):
            result.update(share_protocol.start_offsets(response))
        return result

    def share_delivered_after_start(
        self, group_ids: Sequence[str], ends: Mapping[TP, int], batch_size: int = 100
    ) -> dict[str, dict[TP, int]]:
        """Per share group and share-partition, the records after its start offset whose delivery had
        completed (``share_protocol.delivered_after_start``): what a consumer resuming from the start offset
        is given again. Empty on a broker without the lag (before Kafka 4.2)."""
        build = one_request(share_protocol.describe_request)
        result: dict[str, dict[TP, int]] = {}
        for _, response in self._per_coordinator("reading share groups' lag", group_ids, batch_size, build):
            result.update(share_protocol.delivered_after_start(response, ends))
        return result

    def alter_share_start_offsets(
        self,
        offsets_by_group: Mapping[str, Mapping[TP, CommittedOffset]],
        *,
        before_attempt: Callable[[], float | None] | None = None,
        check: Callable[[], None] | None = None,
    ) -> dict[str, dict[TP, str | None]]:
        """Set each share group's start offsets (AlterShareGroupOffsets, one request a group); per group and
        partition the error name or None. A group with members is refused whole (``share_protocol.NOT_EMPTY``).
        ``before_attempt`` (the writer's lock still held; the seconds its lease has left) and ``check`` (the
        fence still this writer's) run first, either raising to write nothing. Not retried: a lost answer is
        settled by applying again, which reads what the group holds first."""
        groups = [g for g, offsets in offsets_by_group.items() if offsets]
        if not groups:
            return {}
        deadline_s = before_attempt() if before_attempt is not None else None
        if check is not None:
            check()

        def build(batch: Sequence[str]) -> list[tuple[str, Any]]:
            return [(g, share_protocol.alter_request(g, offsets_by_group[g])) for g in batch]

        timeout_ms = None if deadline_s is None else max(1, min(self._request_ms, int(deadline_s * 1000)))
        answers = self._per_coordinator(
            "setting share groups' start offsets", groups, 1, build, retry=False, timeout_ms=timeout_ms
        )
        return {g: share_protocol.alter_errors(response, offsets_by_group[g]) for g, response in answers}

    def delete_share_start_offsets(self, group_id: str, partitions: Collection[TP]) -> dict[TP, str | None]:
        """Remove a share group's start offsets on these partitions (its consumers then start where
        ``share.auto.offset.reset`` says); per partition the error name or None. The request removes a whole
        topic's: partitions of it not asked for are set back to the start offsets they had."""
        topics = sorted({tp.topic for tp in partitions})
        now = self.share_start_offsets([group_id]).get(group_id, {})
        kept = {tp: offset for tp, offset in now.items() if tp.topic in topics and tp not in partitions}
        answers = self._per_coordinator(
            "removing share groups' start offsets",
            [group_id],
            1,
            one_request(lambda batch: share_protocol.delete_request(batch[0], topics)),
            retry=False,
        )
        by_topic = share_protocol.delete_errors(answers[0][1], topics)
        result = {tp: by_topic[tp.topic] for tp in partitions}
        put_back = {tp: offset for tp, offset in kept.items() if by_topic[tp.topic] is None}
        if put_back:
            again = self.alter_share_start_offsets({group_id: put_back}).get(group_id, {})
            failed = {tp: error for tp, error in again.items() if error}
            if failed:  # said on the partitions asked for: the topic's removal took the others with it
                said = "; ".join(f"{tp.topic}/{tp.partition}: {error}" for tp, error in sorted(failed.items()))
                why = f"removed, but setting back the topic's other partitions failed: {said}"
                result = {tp: error or why for tp, error in result.items()}
        return result
