"""What the apply steps return to the state machine stays far below Step Functions' 256 KB payload
limit at the largest scale (20,000 groups, long names), with whole counts."""

from __future__ import annotations

import json

from offset_restore.workflow.states.check_empty import EmptyCheck
from offset_restore.workflow.states.commit import CommitResult
from offset_restore.workflow.states.output import NAMES_IN_OUTPUT

LIMIT = 256 * 1024
NAMES = [f"payments-settlement-consumer-{'x' * 200}-{i:05d}" for i in range(20_000)]


def test_a_check_of_20000_groups_returns_counts_and_a_sample() -> None:
    check = EmptyCheck(empty=NAMES[:15_000], active=NAMES[15_000:19_000], waiting=NAMES[19_000:], started_at=1.0)
    output = check.output()
    assert len(json.dumps(output)) < LIMIT / 10
    assert output["counts"] == {"empty": 15_000, "active": 4_000, "waiting": 1_000}
    assert output["active"] == NAMES[15_000 : 15_000 + NAMES_IN_OUTPUT] and output["all_empty"] is False


def test_a_commit_batch_returns_counts_and_a_sample() -> None:
    result = CommitResult(
        committed=NAMES[:400],
        unchanged=NAMES[400:450],
        skipped={name: "still active on the target (Stable, 1 members)" for name in NAMES[450:500]},
        failed={},
        offsets_committed=4_800,
        verified=4_800,
        verify_failed=[],
    )
    output = result.output()
    assert len(json.dumps(output)) < LIMIT / 10  # and the Map keeps only the counts of each batch
    assert output["counts"]["committed"] == 400 and output["counts"]["skipped"] == 50
    assert len(output["committed"]) == len(output["skipped"]) == NAMES_IN_OUTPUT
