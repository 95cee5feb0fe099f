"""What a live group may read again (translate/exposure.py): its commit rate between the last two
snapshots times the time from T to the plan; unknown, never a made-up 0, where the history cannot say."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from offset_restore.snapshot.model import GroupSnapshot, PartitionSnapshot
from offset_restore.translate.exposure import History, motion_of

T = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)


def group(state: str = "Empty", members: int = 0, **offsets: int) -> GroupSnapshot:
    partitions = [
        PartitionSnapshot(topic=key.rsplit("_", 1)[0], partition=int(key.rsplit("_", 1)[1]), committed_offset=o)
        for key, o in offsets.items()
    ]
    return GroupSnapshot(group="g", state=state, members=members, partitions=partitions)


def test_a_group_that_moved_between_the_snapshots_is_live_and_its_rate_times_the_gap_is_its_exposure() -> None:
    history = History(T - timedelta(seconds=10), {"g": {"orders/0": 1_000, "orders/1": 500}})
    motion = motion_of(group(orders_0=3_000, orders_1=500), T, history)
    assert motion.live is True
    assert motion.exposure("orders/0", T, T + timedelta(seconds=30)) == 6_000  # 200 a second for 30 s
    assert motion.exposure("orders/1", T, T + timedelta(seconds=30)) == 0  # did not move


def test_an_idle_group_is_not_live_and_reads_nothing_again() -> None:
    history = History(T - timedelta(minutes=5), {"g": {"orders/0": 7}})
    motion = motion_of(group(orders_0=7), T, history)
    assert motion.live is False and motion.exposure("orders/0", T, T + timedelta(hours=1)) == 0


def test_what_the_history_cannot_say_is_unknown_not_zero() -> None:
    """A partition new since the previous snapshot, one rewound by hand, a group the previous snapshot
    lacks: no rate. Live by its state, or not known to be idle: exposure None."""
    history = History(T - timedelta(seconds=10), {"g": {"orders/0": 100, "orders/1": 900}})
    motion = motion_of(group(orders_0=100, orders_1=50, orders_2=5_000), T, history)  # 1 rewound, 2 new
    assert motion.live is None
    assert [motion.exposure(p, T, T + timedelta(seconds=5)) for p in ("orders/0", "orders/1", "orders/2")] == [
        0,
        None,
        None,
    ]
    unseen = motion_of(group(orders_0=1), T, History(T - timedelta(seconds=10), {}))
    assert unseen.live is None and unseen.exposure("orders/0", T, T) is None
    stable = motion_of(group("Stable", 3, orders_0=1), T, None)
    assert stable.live is True and stable.exposure("orders/0", T, T) is None


def test_the_snapshots_own_offset_is_the_rate_when_a_newer_checkpoint_moved_the_group() -> None:
    history = History(T - timedelta(seconds=10), {"g": {"orders/0": 1_000}})
    moved = group(orders_0=9_000)  # the checkpoint's position, after T
    motion = motion_of(moved, T, history, {"orders/0": 2_000})
    assert motion.exposure("orders/0", T, T + timedelta(seconds=10)) == 1_000


def test_times_without_a_zone_are_read_as_utc() -> None:
    naive = T.replace(tzinfo=None)
    history = History(naive - timedelta(seconds=10), {"g": {"orders/0": 0}})
    motion = motion_of(group(orders_0=100), naive, history)
    assert motion.exposure("orders/0", naive, T + timedelta(seconds=10)) == 100
