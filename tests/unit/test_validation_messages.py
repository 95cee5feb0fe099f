"""Bad documents are named in one line of plain words: where, and what is wrong — never pydantic's
own wording (``Value error, ``, its URL, the input echoed back)."""

from __future__ import annotations

import pytest
from offset_restore.errors import BadInputError
from offset_restore.formats.plan import Plan
from offset_restore.validation import describe
from offset_restore.workflow.states.validate import validate_input
from pydantic import ValidationError


def problems(text: str) -> str:
    with pytest.raises(ValidationError) as raised:
        Plan.model_validate_json(text)
    return describe(raised.value)


def test_not_json_and_not_an_object() -> None:
    assert problems('{"a":') == "not valid JSON (EOF while parsing a value at line 1 column 5)"
    assert problems("[1]") == "not a JSON object"


def test_fields_are_named_by_their_path_and_more_are_counted() -> None:
    said = problems('{"restore_id": 1}')
    assert said.startswith("restore_id: input should be a valid string; ") and "(and 3 more)" in said
    assert "https://" not in said and "input_value" not in said and "\n" not in said


def test_a_validators_own_message_loses_pydantics_prefix() -> None:
    with pytest.raises(BadInputError) as refused:
        validate_input({"groups": "(", "mode": "sideways"}, {"source_cluster": "s", "target_cluster": "t"})
    message = str(refused.value)
    assert message.startswith("invalid execution input: ") and "Value error" not in message
    assert "mode: input should be 'plan', 'apply', 'rollback' or 'migrate'" in message
    assert "invalid groups regex" in message


def test_another_error_keeps_its_message() -> None:
    assert describe(ValueError("line 3: not JSON")) == "line 3: not JSON"


def test_a_target_that_is_not_the_deployments_is_refused_before_anything() -> None:
    with pytest.raises(BadInputError, match=r"target_cluster 'prod-dr' is not this deployment's target \('dr'\)"):
        validate_input(
            {"target_cluster": "prod-dr", "restore_id": "r"}, {"source_cluster": "src", "target_cluster": "dr"}
        )
    assert validate_input({"target_cluster": "dr", "restore_id": "r"}, {"target_cluster": "dr", "source_cluster": "s"})


def test_when_the_source_stopped_is_a_time_with_its_zone_and_reaches_the_plan_settings() -> None:
    """The failover alarm's input carries its time (``source_stopped_at``): it reaches every work item's plan
    settings as it reaches the CLI's; a time without a zone, or not a time, is named."""
    defaults = {"source_cluster": "s", "target_cluster": "t"}
    run = validate_input({"restore_id": "r", "source_stopped_at": "2026-12-06T01:02:03Z"}, defaults)
    stopped = run.plan_settings().source_stopped_at
    assert stopped is not None and stopped.isoformat() == "2026-12-06T01:02:03+00:00"
    for bad in ("2026-12-06T01:02:03", "yesterday"):
        with pytest.raises(BadInputError, match="source_stopped_at: "):
            validate_input({"restore_id": "r", "source_stopped_at": bad}, defaults)
