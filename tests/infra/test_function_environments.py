"""Every variable a function's settings read is one the stack sets on that function (or one of the few
left to their defaults, ``workflow.environment.LEFT_TO_DEFAULTS``): read from the synthesized template,
through the settings model the function's handler uses, so a name typed differently on either side,
or a variable a model starts to read that the stack never sets, fails here and not once deployed."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Annotated, Any

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Template
from offset_restore.errors import BadInputError
from offset_restore.workflow import environment
from offset_restore.workflow.settings import FunctionSettings, LockSettings, Variable
from offset_restore_handlers.wiring import SNAPSHOT_HANDLER, TASK_HANDLERS

from infra.config import ClusterConfig

HANDLERS = {**TASK_HANDLERS, "Snapshot": SNAPSHOT_HANDLER}


class Reads(Mapping[str, str]):
    """An environment that records every name it is asked for."""

    def __init__(self, variables: Mapping[str, str]) -> None:
        self.variables, self.read = dict(variables), set[str]()

    def __getitem__(self, name: str) -> str:
        self.read.add(name)
        return self.variables[name]

    def get(self, name: str, default: Any = None) -> Any:
        self.read.add(name)
        return self.variables.get(name, default)

    def __contains__(self, name: object) -> bool:
        self.read.add(str(name))
        return name in self.variables

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("a settings model reads its variables by name, never the whole environment")

    def __len__(self) -> int:
        return len(self.variables)


@pytest.fixture(scope="module")
def environments(app: App) -> dict[str, dict[str, dict[str, Any]]]:
    """Each environment's functions' variables in the template, by the function's wiring name (a value
    the template computes, a bucket's name or a topic's ARN, is a reference to the resource)."""
    return {env: _variables(app, env) for env in ("dev", "prod")}


def _variables(app: App, env: str) -> dict[str, dict[str, Any]]:
    stack = app.node.find_child(f"offset-restore-{env}")
    assert isinstance(stack, Stack)
    found: dict[str, dict[str, Any]] = {}
    for function in Template.from_stack(stack).find_resources("AWS::Lambda::Function").values():
        properties = function["Properties"]
        names = [name for name, handler in HANDLERS.items() if handler == properties.get("Handler")]
        if names:
            found[names[0]] = properties.get("Environment", {}).get("Variables", {})
    assert set(found) == set(HANDLERS), "every function of the wiring is in the stack"
    return found


def settings_model(handler: str) -> type[FunctionSettings]:
    """The settings model the handler's module uses: the one it imports (exactly one)."""
    module = importlib.import_module(handler.rsplit(".", 1)[0])
    models = {
        value
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, FunctionSettings) and value is not FunctionSettings
    }
    assert len(models) == 1, f"{module.__name__} should read its settings through one model, not {models}"
    return models.pop()


def unset_reads(model: type[FunctionSettings], variables: Mapping[str, str]) -> set[str]:
    """Parse ``model`` from ``variables`` (raises, naming them, if any it needs is missing) and return
    the variables it read that are not among them and not left to their defaults."""
    env = Reads(variables)
    model.from_env(env)
    assert env.read, f"{model.__name__} read no variable at all"
    return env.read - set(variables) - environment.LEFT_TO_DEFAULTS


@pytest.mark.parametrize("env", ["dev", "prod"])
@pytest.mark.parametrize("name", sorted(HANDLERS))
def test_every_variable_a_function_reads_is_one_the_stack_sets(
    environments: dict[str, dict[str, dict[str, Any]]], env: str, name: str
) -> None:
    # A reference stands as a placeholder string: it will be a string once deployed.
    variables = {k: v if isinstance(v, str) else f"<{k}>" for k, v in environments[env][name].items()}
    assert unset_reads(settings_model(HANDLERS[name]), variables) == set()


def test_the_check_fails_on_a_variable_the_stack_does_not_set() -> None:
    """The check above can fail: a required variable missing is named; an optional one read but
    neither set by the stack nor left to its default is reported."""
    target = {
        environment.TARGET.name: "dr",
        environment.TARGET.bootstrap_servers: "b-1:9098",
        environment.TARGET.security_protocol: "SASL_SSL",
        environment.TARGET.sasl_mechanism: "AWS_MSK_IAM",
    }
    with pytest.raises(BadInputError, match="TABLE_NAME not set"):
        unset_reads(LockSettings, target)

    class Extra(LockSettings):
        retention: Annotated[str | None, Variable("LOCK_RETENTION")] = None

    assert unset_reads(Extra, {environment.TABLE_NAME: "t", **target}) == {"LOCK_RETENTION"}


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_prepare_reads_snapshots_where_the_snapshot_function_writes_them(
    environments: dict[str, dict[str, dict[str, Any]]], env: str
) -> None:
    """Two functions, two names for one place: the Snapshot function's bucket and prefix are where
    Prepare looks (its restore bucket, the same prefix); a prefix set on one only would lose every
    snapshot to the workflow."""
    found = environments[env]
    snapshot, prepare = found["Snapshot"], found["Prepare"]
    assert snapshot[environment.SNAPSHOT_BUCKET] == prepare[environment.RESTORE_BUCKET]
    assert snapshot.get(environment.SNAPSHOT_PREFIX) == prepare.get(environment.SNAPSHOT_PREFIX)


def test_a_scram_cluster_sets_the_secret_its_settings_read() -> None:
    """The SASL secret is left unset only for a cluster without SCRAM: with SCRAM the stack sets it,
    under the name the settings read."""
    arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:AmazonMSK_dr-AbCdEf"
    cluster = ClusterConfig.model_validate(
        {"name": "dr", "bootstrapServers": "10.0.2.10:9096", "auth": "scram", "scramSecretArn": arn}
    )
    variables = cluster.environment(environment.TARGET)
    assert variables[environment.TARGET.sasl_secret_arn] == arn
    assert unset_reads(LockSettings, {**variables, environment.TABLE_NAME: "t"}) == set()
