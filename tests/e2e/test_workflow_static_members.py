"""The workflow's wait on the target and static members: named with what keeps them, and removed only when
the input asks (``remove_static_members``), each removal in the report's timeline."""

from __future__ import annotations

import json

from offset_restore.devtools.local_aws import Workflow
from offset_restore.kafka.cluster import KafkaCluster

from tests.e2e.test_workflow import setup
from tests.helpers import Brokers, unique
from tests.integration.test_static_members import stopped_static_consumer


def test_a_stopped_static_member_fails_the_wait_by_name_unless_the_input_removes_it(
    brokers: Brokers, source: KafkaCluster, target: KafkaCluster, workflow: Workflow
) -> None:
    s = setup(brokers, source, target, workflow)
    a, b, topic, instance = str(s["a"]), str(s["b"]), str(s["topic"]), unique("pod-3")
    stopped_static_consumer(brokers.target.bootstrap_servers, b, topic, instance)
    run_input = {"groups": f"{a}|{b}", "mode": "apply", "wait": {"timeout_seconds": 2, "interval_seconds": 1}}

    refused = workflow.run(run_input, name="static-wait-1")
    assert refused["status"] == "FAILED", refused
    said = json.loads(refused["cause"])["errorMessage"]
    assert f"static, group.instance.id {instance}" in said, said
    assert '"remove_static_members": true in the input removes static members' in said
    assert target.committed_offsets([b])[b] == {}, "a refused wait writes nothing"

    removing = {**run_input, "wait": {"timeout_seconds": 40, "interval_seconds": 1}, "remove_static_members": True}
    result = workflow.run({**removing, "restore_id": "static-wait-2"}, name="static-wait-2")
    assert result["status"] == "SUCCEEDED", result.get("cause")
    assert {tp.partition: c.offset for tp, c in target.committed_offsets([b])[b].items()} == {0: 40}
    waits = [p for p in workflow.report("static-wait-2")["timeline"] if p["phase"] == "waiting for groups"]
    assert waits and waits[0]["static_removed"] == [f"{b}: {instance}"]
