"""Apply and rollback killed with SIGKILL at each step, on the real broker: every group holds all its
planned offsets or all its previous ones (never a mix), the previous offsets stay on record, and a
rollback afterwards puts back exactly what was there before.

The run under test is a separate process (``tests/crash_runner.py``) that kills itself at the step
named: a real ``kill -9``, with the plan file and the lock file as a crash leaves them.
"""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from offset_restore.apply.run import PlanFile
from offset_restore.cli.main import main
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.live import SnapshotOptions
from offset_restore.snapshot.run import run_snapshot
from offset_restore.stores.storage import open_location
from offset_restore.translate.options import PlanOptions
from offset_restore.translate.run import SnapshotChoice, run_plan

from tests.figures import record
from tests.helpers import Brokers, commit, produce, restore, unique

pytestmark = pytest.mark.integration

GROUPS = 6


def run(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue() + err.getvalue()


class Planned:
    """Six groups restored and planned; half of them held offsets on the target before the apply."""

    def __init__(self, brokers: Brokers, source: KafkaCluster, target: KafkaCluster, folder: Path) -> None:
        self.brokers, self.target = brokers, target
        self.topic = unique("crash")
        source.create_topics({self.topic: 2})
        records = {p: produce(source, self.topic, p, 60) for p in range(2)}
        self.groups = [unique(f"crash-g{i}") for i in range(GROUPS)]
        for i, group in enumerate(self.groups):
            commit(source, group, {TP(self.topic, p): 20 + i * 5 for p in range(2)})
        run_snapshot(
            brokers.source_settings, open_location(str(folder / "snaps")), SnapshotOptions(groups="|".join(self.groups))
        )
        target.create_topics({self.topic: 2})
        for p in range(2):
            restore(target, self.topic, p, [r for r in records[p] if r.offset >= 10])
        for group in self.groups[::2]:
            commit(target, group, {TP(self.topic, p): 3 for p in range(2)})
        self.before = self.offsets()
        self.plan_path = str(folder / "plan.json")
        run_plan(SnapshotChoice(str(folder / "snaps")), brokers.target_settings, self.plan_path, PlanOptions())
        self.planned: dict[str, dict[int, int]] = {g: {} for g in self.groups}  # group -> partition -> offset
        for e in PlanFile(self.plan_path).load().entries:
            assert e.target_offset is not None
            self.planned[e.group][e.partition] = e.target_offset

    def offsets(self) -> dict[str, dict[int, int]]:
        found = self.target.committed_offsets(self.groups)
        return {g: {tp.partition: c.offset for tp, c in found.get(g, {}).items()} for g in self.groups}

    def crash(self, command: str, step: str) -> int:
        """Run apply or rollback in a process that SIGKILLs itself at ``step``; its return code."""
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.crash_runner",
                command,
                step,
                self.plan_path,
                self.brokers.target.bootstrap_servers,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        return done.returncode

    def cli(self, command: str) -> tuple[int, str]:
        writes = ["--execute"]  # apply and rollback write only with it
        return run(
            command, "--plan", self.plan_path, "--bootstrap-servers", self.brokers.target.bootstrap_servers, *writes
        )

    def mixed(self) -> list[str]:
        """Groups holding neither all their planned offsets nor all their previous ones."""
        now = self.offsets()
        return [g for g in self.groups if now[g] != self.planned[g] and now[g] != self.before[g]]

    def previous_on_record(self) -> bool:
        """The plan still knows what was there before the first write (where it recorded it)."""
        for e in PlanFile(self.plan_path).load().entries:
            if e.previous_recorded and e.previous_target_offset != self.before[e.group].get(e.partition):
                return False
        return True


APPLY_STEPS = ["after-saving-previous", "after-first-batch", "before-last-save"]
ROLLBACK_STEPS = ["after-marking", "after-writes"]


@pytest.fixture
def planned(brokers: Brokers, source: KafkaCluster, target: KafkaCluster, tmp_path: Path) -> Callable[[], Planned]:
    return lambda: Planned(brokers, source, target, tmp_path)


def crash_then_roll_back(p: Planned, command: str, step: str) -> None:
    """Kill ``command`` at ``step``; check the invariant; a rollback must restore exactly."""
    assert p.crash(command, step) == -9
    assert not p.mixed() and p.previous_on_record()
    status, out = p.cli("rollback")
    exact = status == 0 and p.offsets() == p.before
    record("crash", step=f"{command} killed {step}", runs=1, mixed=len(p.mixed()), restored_exactly=int(exact))
    assert exact, out


@pytest.mark.parametrize("step", APPLY_STEPS)
def test_apply_killed_at_each_step_leaves_a_way_back(planned: Callable[[], Planned], step: str) -> None:
    crash_then_roll_back(planned(), "apply", step)


@pytest.mark.parametrize("step", ROLLBACK_STEPS)
def test_rollback_killed_at_each_step_is_finished_by_the_next_one(planned: Callable[[], Planned], step: str) -> None:
    p = planned()
    status, out = p.cli("apply")
    assert status == 0 and p.offsets() == p.planned, out
    crash_then_roll_back(p, "rollback", step)
    status, out = p.cli("apply")  # and an apply after all that writes the plan again
    assert status == 0 and p.offsets() == p.planned, out
