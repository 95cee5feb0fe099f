"""The example environments synthesized once per test module (without bundling)."""

from __future__ import annotations

import pytest
from aws_cdk import App

from app import build_app


@pytest.fixture(scope="module")
def app() -> App:
    return build_app({"skipBundling": "true"})
