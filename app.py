#!/usr/bin/env python3
"""CDK app: one stack per environment from ``cdk.json`` context.

    npx aws-cdk@2 synth -c env=dev        # one environment
    npx aws-cdk@2 synth                   # every environment in the context
    -c skipBundling=true                  # synthesize without building the Lambda asset (tests)

``cdk.App()`` reads ``cdk.json`` only under the CDK CLI; run directly, this file reads it itself.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(ROOT / "functions")]

import aws_cdk as cdk  # noqa: E402
from cdk_nag import AwsSolutionsChecks  # noqa: E402
from pydantic import ValidationError  # noqa: E402

from infra.config import EnvironmentConfig  # noqa: E402
from infra.stack import OffsetRestoreStack  # noqa: E402


def build_app(context: dict[str, Any] | None = None) -> cdk.App:
    context = dict(context or {})
    if "environments" not in context and not os.environ.get("CDK_CONTEXT_JSON"):
        context = {**json.loads((ROOT / "cdk.json").read_text())["context"], **context}
    if str(context.get("skipBundling", "")).lower() == "true":
        context["aws:cdk:bundling-stacks"] = []
    app = cdk.App(context=context)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    environments: dict[str, Any] = app.node.try_get_context("environments") or {}
    wanted = app.node.try_get_context("env")
    if wanted and wanted not in environments:
        raise SystemExit(f"unknown environment {wanted!r}; cdk.json defines: {', '.join(sorted(environments))}")
    for name, raw in sorted(environments.items()):
        if wanted and name != wanted:
            continue
        try:
            config = EnvironmentConfig.model_validate(raw, context={"name": name})
        except ValidationError as error:
            raise SystemExit(f"environment {name} in cdk.json is invalid (docs/deploy.md):\n{error}") from None
        # Bound to its account and region: deploying with another profile's credentials fails instead of
        # creating the environment in the wrong account or region.
        stack = OffsetRestoreStack(
            app,
            f"offset-restore-{name}",
            env_name=name,
            config=config,
            env=cdk.Environment(account=config.account, region=config.region),
        )
        cdk.Tags.of(stack).add("project", "offset-restore")
        cdk.Tags.of(stack).add("environment", name)
    return app


if __name__ == "__main__":
    build_app().synth()
