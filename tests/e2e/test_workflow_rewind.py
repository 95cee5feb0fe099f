"""A scoped rewind through the state machine (issue 36): ``"allow_rewind"`` takes a group regex as the
CLI's ``--allow-rewind`` does, so fixing one group that is ahead on the target does not rewind the others;
``true`` stays "every group", and the string "true" is refused (it would be a regex matching no group)."""

from __future__ import annotations

from offset_restore.devtools.local_aws import Workflow
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.kafka.model import TP
from offset_restore.snapshot.filters import pattern_for

from tests.e2e.test_workflow import setup
from tests.helpers import Brokers, commit


def test_allow_rewind_with_a_regex_moves_back_only_the_groups_it_names(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow
) -> None:
    s = setup(brokers, source, target, workflow)
    a, b, topic = str(s["a"]), str(s["b"]), str(s["topic"])
    commit(target, a, {TP(topic, 0): 30, TP(topic, 1): 0})  # consumers ran on the target: both ahead
    commit(target, b, {TP(topic, 0): 45})
    groups = f"{pattern_for([a])}|{pattern_for([b])}"
    result = workflow.run({"groups": groups, "mode": "apply", "allow_rewind": pattern_for([a])}, name="rewind-a")
    assert result["status"] == "SUCCEEDED", result.get("cause")
    committed = target.committed_offsets([a, b])
    assert committed[a][TP(topic, 0)].offset == 10  # a rewound to its mapped offset
    assert committed[b][TP(topic, 0)].offset == 45  # b, not named, left where its consumers are
    report = workflow.report("rewind-a")
    assert (
        b in report["attention"]["skipped"]["groups"]
        and a not in report["attention"].get("skipped", {"groups": []})["groups"]
    )


def test_the_string_true_is_refused_naming_what_to_give(workflow: Workflow) -> None:
    result = workflow.run({"mode": "apply", "allow_rewind": "true"}, name="rewind-true")
    assert result["status"] == "FAILED"
    assert "give true, false or a regex of the groups to rewind" in str(result.get("cause")), result.get("cause")
