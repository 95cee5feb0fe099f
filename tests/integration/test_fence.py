"""The fence every write of group offsets passes, kept by Apache Kafka itself (kafka/fence.py): a writer that
took the fence before another did writes nothing afterwards — whether it was about to send, or had sent its
offsets and not yet ended its transaction — and the offsets on the cluster are the newer writer's."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from offset_restore.errors import ClusterError, WriterFencedError
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.fence import FENCE_LANES, Fence, fence_id, fence_ids
from offset_restore.kafka.model import TP, CommittedOffset

from tests.helpers import Brokers, active_member, commit, produce, unique
from tests.integration.test_apply import Restored


def offsets(tp: TP, offset: int, metadata: str | None = None) -> dict[TP, CommittedOffset]:
    return {tp: CommittedOffset(offset, metadata)}


def fresh_id() -> str:
    """A transactional id of this test's own (the cluster's own, ``fence_id``, is what runs use)."""
    return unique("fence")


def test_a_write_is_one_transaction_read_back_at_once_metadata_kept(target: KafkaCluster) -> None:
    topic = unique("fence-basic")
    target.create_topics({topic: 2})
    tp0, tp1 = TP(topic, 0), TP(topic, 1)
    groups = {unique(f"fence-basic-{i}"): {tp0: CommittedOffset(10 + i, f"m{i}"), tp1: CommittedOffset(i, None)}
              for i in range(40)}  # fmt: skip
    fence = target.take_fence(fresh_id())
    answers = target.fenced_offsets(groups, fence)
    assert all(not any(per.values()) for per in answers.values()), answers
    assert target.committed_offsets(list(groups)) == {g: dict(o) for g, o in groups.items()}  # no wait needed
    again = target.fenced_offsets({g: {tp0: CommittedOffset(99, None)} for g in list(groups)[:3]}, fence)
    assert not any(e for per in again.values() for e in per.values())  # one epoch, many transactions
    assert {g: o[tp0].offset for g, o in target.committed_offsets(list(groups)[:3]).items()} == dict.fromkeys(
        list(groups)[:3], 99
    )


def test_a_writer_fenced_before_it_sends_writes_nothing(target: KafkaCluster, brokers: Brokers) -> None:
    """Writer A took the fence; its run stalls (a Lambda frozen after its lease check) while writer B takes
    the fence and writes 5. A wakes and writes 10: refused by the cluster, 5 stays."""
    topic = unique("fence-stall")
    target.create_topics({topic: 1})
    tp, group, tid = TP(topic, 0), unique("fence-stall-g"), fresh_id()
    a = target.take_fence(tid)
    with KafkaCluster(target.settings) as other:
        b = other.take_fence(tid)
        assert (b.producer_id, b.epoch) == (a.producer_id, a.epoch + 1)
        other.fenced_offsets({group: offsets(tp, 5)}, b)
    with pytest.raises(WriterFencedError, match="another offset-restore writer took this cluster's write fence"):
        target.fenced_offsets({group: offsets(tp, 10)}, a)
    assert target.committed_offsets([group])[group][tp].offset == 5


def test_a_writer_fenced_in_the_middle_of_its_transaction_leaves_nothing(
    target: KafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sent its offsets (AddOffsetsToTxn, TxnOffsetCommit) and is paused before EndTxn; B takes the fence
    (its InitProducerId aborts A's open transaction). A's EndTxn is refused, and none of its offsets is ever
    read: the group keeps what it had."""
    topic = unique("fence-middle")
    target.create_topics({topic: 1})
    tp, group, tid = TP(topic, 0), unique("fence-middle-g"), fresh_id()
    commit(target, group, {tp: 3})
    a = target.take_fence(tid)
    taken: list[Fence] = []
    original = target._end

    def paused_before_the_end(fence: Fence, groups: list[str]) -> None:
        with KafkaCluster(target.settings) as other:
            taken.append(other.take_fence(tid))
        original(fence, groups)

    monkeypatch.setattr(target, "_end", paused_before_the_end)
    with pytest.raises(WriterFencedError):
        target.fenced_offsets({group: offsets(tp, 10)}, a)
    assert taken and target.committed_offsets([group])[group][tp].offset == 3


def test_the_cluster_fence_id_is_the_clusters(target: KafkaCluster) -> None:
    """One transactional id per cluster, whatever deployment writes: the CLI and two stacks fence each other."""
    assert fence_id(target.cluster_id) == f"offset-restore-{target.cluster_id}"
    fence = target.take_fence(fence_id(target.cluster_id))
    assert fence.transactional_id == f"offset-restore-{target.cluster_id}" and fence.producer_id >= 0


def test_a_writer_takes_every_lane_so_the_cli_fences_a_workflow_lane(target: KafkaCluster) -> None:
    """The workflow writes from many functions at once, each under a lane of the fence; the CLI writes under
    the first. Whichever takes the fence last is the one writer: a workflow lane taken before the CLI's
    take is refused, on every lane, and the CLI's write stands."""
    topic = unique("fence-lanes")
    target.create_topics({topic: 1})
    tp, group = TP(topic, 0), unique("fence-lanes-g")
    ids = fence_ids(target.cluster_id)
    assert len(set(ids)) == FENCE_LANES and ids[0] == fence_id(target.cluster_id)
    lanes = target.take_fences(ids)
    assert [lane.transactional_id for lane in lanes] == ids
    with KafkaCluster(target.settings) as cli:
        cli.hold_fence()
        cli.alter_offsets_many({group: offsets(tp, 5)})
    for lane in (lanes[0], lanes[7], lanes[-1]):
        with pytest.raises(WriterFencedError):
            target.fenced_offsets({group: offsets(tp, 10)}, lane)
    assert target.committed_offsets([group])[group][tp].offset == 5


def test_the_lanes_of_one_writer_write_at_once(target: KafkaCluster) -> None:
    """Two functions of one run write at the same time, each under its own lane: both land."""
    topic = unique("fence-parallel")
    target.create_topics({topic: 1})
    tp = TP(topic, 0)
    lanes = target.take_fences([f"{fresh_id()}-{k}" for k in range(2)])
    groups = [[unique(f"fence-parallel-{k}-{i}") for i in range(30)] for k in range(2)]

    def write(k: int) -> dict[str, dict[TP, str | None]]:
        with KafkaCluster(target.settings) as own:
            return own.fenced_offsets({g: offsets(tp, 40 + k) for g in groups[k]}, lanes[k])

    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(write, range(2)))
    assert not any(e for answer in answers for per in answer.values() for e in per.values())
    read = target.committed_offsets(groups[0] + groups[1])
    assert {g: read[g][tp].offset for g in read} == {g: 40 + k for k in range(2) for g in groups[k]}


def test_two_writers_taking_the_fence_at_once_never_both_write(target: KafkaCluster) -> None:
    """A has taken its lanes and not yet confirmed them when B takes the whole fence: A's confirmation finds
    a lane no longer its own and A stops there, having written nothing; B, the last to take, writes."""
    topic = unique("fence-race")
    target.create_topics({topic: 1})
    tp, group = TP(topic, 0), unique("fence-race-g")
    ids = [f"{fresh_id()}-{k}" for k in range(4)]
    original = target._to_transaction_coordinators
    b: list[Fence] = []

    def b_takes_before_a_confirms(operation: str, requests: Any, **kwargs: Any) -> Any:
        if operation.startswith("confirming") and not b:
            with KafkaCluster(target.settings) as other:
                b.extend(other.take_fences(ids))
        return original(operation, requests, **kwargs)

    target._to_transaction_coordinators = b_takes_before_a_confirms  # type: ignore[method-assign]
    with pytest.raises(WriterFencedError, match="took part of this cluster's write fence"):
        target.take_fences(ids)
    target._to_transaction_coordinators = original  # type: ignore[method-assign]
    assert not target.committed_offsets([group]).get(group)
    assert not any(e for per in target.fenced_offsets({group: offsets(tp, 7)}, b[2]).values() for e in per.values())
    assert target.committed_offsets([group])[group][tp].offset == 7


def test_the_broker_alone_does_not_refuse_a_transactional_commit_into_a_group_with_a_member(
    target: KafkaCluster, brokers: Brokers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the fence gives up, measured: Apache Kafka refuses an admin OffsetCommit into a group with a live
    member (UNKNOWN_MEMBER_ID), but accepts a TxnOffsetCommit into it. Whatever writes under the fence must
    check the group itself inside the transaction (docs/design.md, "The fence")."""
    topic = unique("fence-member")
    target.create_topics({topic: 1})
    produce(target, topic, 0, 5)
    tp, busy = TP(topic, 0), unique("fence-busy")
    fence = target.take_fence(fresh_id())
    monkeypatch.setattr(target, "_not_writable", lambda groups: {})  # the write's own check left out
    with active_member(brokers.target.bootstrap_servers, busy, topic):
        admin = target.alter_offsets(busy, offsets(tp, 4))
        transactional = target.fenced_offsets({busy: offsets(tp, 2)}, fence)
    assert admin[tp] == "UnknownMemberIdError", admin
    assert transactional[busy] == {tp: None}, transactional


def test_a_connection_holding_the_fence_writes_every_offset_under_it_and_checks_members_itself(
    target: KafkaCluster, brokers: Brokers
) -> None:
    """Once a connection holds the fence, ``alter_offsets_many`` (the one write) is transactional; a group
    that has a member inside the transaction is left out — the error an admin commit gets — and the others
    are written."""
    topic = unique("fence-held")
    target.create_topics({topic: 1})
    produce(target, topic, 0, 5)
    tp, busy, empty = TP(topic, 0), unique("fence-held-busy"), unique("fence-held-empty")
    with KafkaCluster(target.settings) as writer:
        fence = writer.hold_fence()
        assert fence is not None and fence.transactional_id == fence_id(writer.cluster_id)
        with active_member(brokers.target.bootstrap_servers, busy, topic):
            answers = writer.alter_offsets_many({busy: offsets(tp, 4), empty: offsets(tp, 2)})
        assert answers == {busy: {tp: "UnknownMemberIdError"}, empty: {tp: None}}, answers
        committed = writer.committed_offsets([busy, empty])
        assert committed[empty][tp].offset == 2 and tp not in committed.get(busy, {})
        with KafkaCluster(target.settings) as newer:
            newer.hold_fence()
        with pytest.raises(WriterFencedError):
            writer.alter_offsets_many({empty: offsets(tp, 3)})
    assert target.committed_offsets([empty])[empty][tp].offset == 2


def test_an_apply_paused_before_its_write_while_another_writer_takes_the_fence_writes_nothing(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``apply`` holds its lock and the fence, then pauses before its write (a process stopped, a lock broken
    by ``unlock``): another writer — another deployment, with a lock of its own — takes the cluster's fence
    and writes 5. The paused apply resumes: the cluster refuses its write, it exits 1 saying so, and the
    group keeps the other writer's offsets; its plan records nothing as written."""
    s = Restored(brokers, source, target, tmp_path, {"a": {0: 50, 1: 5}})
    group, tp = s.groups["a"], TP(s.topic, 0)
    original = KafkaCluster.alter_offsets_many

    def paused(self: KafkaCluster, offsets_by_group: Any, **kwargs: Any) -> Any:
        """Past every re-check of the apply, right before its write: the other writer goes first."""
        with KafkaCluster(target.settings) as other:
            taken = other.hold_fence()
            assert taken is not None and not any(other.fenced_offsets({group: offsets(tp, 5)}, taken)[group].values())
        return original(self, offsets_by_group, **kwargs)

    monkeypatch.setattr(KafkaCluster, "alter_offsets_many", paused)
    status, out, err = s.apply()
    assert status == 1, out + err
    assert "another offset-restore writer took this cluster's write fence" in out + err
    assert s.offsets("a") == {0: 5}
    assert all(e.status != "committed" for e in s.plan().entries), s.plan().entries


def test_a_fenced_writer_deletes_nothing(target: KafkaCluster) -> None:
    """Rollback removes offsets and groups apply created (OffsetDelete, DeleteGroups: no transactional form).
    Right before either, the writer's fence is confirmed by an empty transaction of its epoch: a writer
    another took the fence from deletes nothing; one that still holds it deletes."""
    topic = unique("fence-delete")
    target.create_topics({topic: 1})
    tp, group, whole = TP(topic, 0), unique("fence-delete-g"), unique("fence-delete-whole")
    commit(target, group, {tp: 3})
    commit(target, whole, {tp: 4})
    with KafkaCluster(target.settings) as writer:
        writer.hold_fence()
        with KafkaCluster(target.settings) as newer:
            newer.hold_fence()
        with pytest.raises(WriterFencedError):
            writer.delete_offsets(group, [tp])
        with pytest.raises(WriterFencedError):
            writer.delete_groups({whole: ()})
    assert target.committed_offsets([group, whole]) == {group: offsets(tp, 3), whole: offsets(tp, 4)}
    with KafkaCluster(target.settings) as holder:
        holder.hold_fence()
        deadline = time.monotonic() + 10  # the group coordinator learns of a topic created a moment ago late
        while (deleted := holder.delete_offsets(group, [tp])) == {tp: "UnknownTopicOrPartitionError"}:
            assert time.monotonic() < deadline, deleted
            time.sleep(0.2)
        assert deleted == {tp: None}
        assert holder.delete_groups({whole: ()}) == {whole: None}
    assert target.committed_offsets([group, whole]).get(group, {}) == {}


def test_a_cluster_that_does_not_apply_transactional_commits_is_refused_by_name_unless_unfenced() -> None:
    """Tansu acknowledges every transactional request and applies none of the offsets. The first fenced
    write reads itself back, finds nothing and refuses by name (nothing written: the cluster shows none of
    it); a connection the operator set ``unfenced`` writes with a plain OffsetCommit."""
    from offset_restore.devtools.brokers import started

    with started("local", "no-transactions") as (broker,), KafkaCluster(broker.settings()) as cluster:
        topic, group = unique("fence-tansu"), unique("fence-tansu-g")
        cluster.create_topics({topic: 1})
        tp = TP(topic, 0)
        cluster.hold_fence()
        with pytest.raises(ClusterError, match="does not apply transactional offset commits, so it cannot keep"):
            cluster.alter_offsets_many({group: offsets(tp, 5)})
        assert not cluster.committed_offsets([group]).get(group)
        with KafkaCluster(broker.settings(unfenced=True)) as unfenced:
            assert unfenced.hold_fence() is None and unfenced.take_cluster_fence() == []
            assert unfenced.alter_offsets_many({group: offsets(tp, 5)}) == {group: {tp: None}}
        assert cluster.committed_offsets([group])[group][tp].offset == 5


def test_the_first_transaction_of_a_cluster_waits_for_its_transaction_log() -> None:
    """A cluster that never ran a transaction creates its transaction log on the first one, and names no
    coordinator until then (seconds on a loaded machine): taking the fence waits for it, whatever the
    retries of one request allow (none here)."""
    from offset_restore.devtools.brokers import started

    with started("apache", "first-transaction") as (broker,), KafkaCluster(broker.settings(retries=0)) as cluster:
        lanes = cluster.take_cluster_fence()
        assert [lane.transactional_id for lane in lanes] == fence_ids(cluster.cluster_id)


@pytest.mark.parametrize("fenced", [True, False], ids=["fenced", "unfenced"])
def test_a_group_whose_coordinator_moved_is_written_again_and_named_in_the_warning(
    target: KafkaCluster, fenced: bool, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A commit's answer for one group says its coordinator is still loading (as a partition of the offsets
    topic moving to another broker answers): that group is sent again, after the coordinators are asked
    anew, the other groups' answers kept; the retry's warning names the group and the error."""
    topic = unique("fence-moved")
    target.create_topics({topic: 1})
    tp = TP(topic, 0)
    groups = {unique(f"fence-moved-{i}"): offsets(tp, 10 + i) for i in range(3)}
    loading = list(groups)[1]
    original, rounds = target._commit_round, []

    def first_answer_loading(batch: Any, build: Any, timeout_ms: int) -> Any:
        answers, failure = original(batch, build, timeout_ms)
        rounds.append(sorted(batch))
        if len(rounds) == 1:
            answers = [(g, SimpleNamespace(error_code=14, topics=[]) if g == loading else r) for g, r in answers]
        return answers, failure

    monkeypatch.setattr(target, "_commit_round", first_answer_loading)
    with caplog.at_level("WARNING", logger="offset_restore.kafka.cluster"):
        if fenced:
            answers = target.fenced_offsets(groups, target.take_fence(fresh_id()))
        else:
            answers = target.alter_offsets_many(groups)
    assert rounds == [sorted(groups), [loading]]
    assert all(not any(per.values()) for per in answers.values()) and set(answers) == set(groups), answers
    assert {g: o[tp].offset for g, o in target.committed_offsets(list(groups)).items()} == {
        g: o[tp].offset for g, o in groups.items()
    }
    assert f"coordinator moved for {loading} (CoordinatorLoadInProgressError)" in caplog.text
