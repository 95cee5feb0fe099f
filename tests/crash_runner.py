"""Apply or rollback in a process that kills itself with SIGKILL at a named step
(tests/reliability/test_crashes.py): a real crash, with the plan and lock files as it leaves them.

    python -m tests.crash_runner apply|rollback STEP PLAN BOOTSTRAP_SERVERS

Apply's steps: ``after-saving-previous`` (the previous offsets are saved, nothing written),
``after-first-batch`` (one batch of groups committed, the next not begun; batches of 2 groups),
``before-last-save`` (every commit answered, the plan not yet told). Rollback's: ``after-marking``
(entries marked, nothing written), ``after-writes`` (every write answered, the plan not yet told).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence

import offset_restore.apply.commit as apply_module
from offset_restore.apply.commit import apply_plan
from offset_restore.apply.model import ApplyOptions
from offset_restore.apply.rollback import rollback_plan
from offset_restore.apply.run import PlanFile, Sealing
from offset_restore.formats.plan import Plan
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.connection import ConnectionSettings

# (command, step) -> (the save call after which to die, or before which; None: not at a save)
DIE_AT_SAVE = {
    ("apply", "after-saving-previous"): (1, "after"),
    ("apply", "before-last-save"): (2, "before"),
    ("rollback", "after-marking"): (1, "after"),
    ("rollback", "after-writes"): (2, "before"),
}


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main(argv: Sequence[str]) -> int:
    command, step, plan_path, servers = argv
    plan_file = PlanFile(plan_path)
    sealed_save = Sealing(enabled=True, create=True).saver(plan_file)  # as the CLI saves the plan
    at_save = DIE_AT_SAVE.get((command, step))
    saves = batches = 0

    def save(plan: Plan) -> None:
        nonlocal saves
        saves += 1
        if at_save == (saves, "before"):
            die()
        sealed_save(plan)
        if at_save == (saves, "after"):
            die()

    def before_commit() -> None:
        nonlocal batches
        batches += 1
        if step == "after-first-batch" and batches == 2:
            die()

    apply_module.BATCH = 2  # several batches, so a crash can fall between two
    with plan_file.locked(), KafkaCluster(ConnectionSettings(bootstrap_servers=servers)) as target:
        plan = plan_file.load()
        if command == "apply":
            apply_plan(plan, target, ApplyOptions(wait_timeout_s=0), save, before_write=before_commit)
        else:
            rollback_plan(plan, target, save)
    return 0  # reached only when the step named never came


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
