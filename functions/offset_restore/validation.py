"""A pydantic ``ValidationError`` as one line for people: each problem as ``where: what``, without
pydantic's own wording around it (``Value error, ``, the documentation URL, the input echoed back)
— the CLI, the handlers and the plan file all say a bad document's problems this way."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

__all__ = ["describe"]

_PREFIXES = ("Value error, ", "Assertion failed, ")
_NOT_AN_OBJECT = ("model_type", "dict_type", "model_attributes_type")


def describe(error: Exception, limit: int = 3) -> str:
    """The first ``limit`` problems, then how many more (another error: its own message)."""
    if not isinstance(error, ValidationError):
        return str(error)
    found = [_one(problem) for problem in error.errors(include_url=False, include_input=False)]
    more = f" (and {len(found) - limit} more)" if len(found) > limit else ""
    return "; ".join(found[:limit]) + more


def _one(problem: Any) -> str:
    where = ".".join(str(part) for part in problem["loc"])
    message = str(problem["msg"])
    for prefix in _PREFIXES:
        message = message.removeprefix(prefix)
    if problem["type"] == "json_invalid":
        return f"not valid JSON ({problem.get('ctx', {}).get('error', message)})"
    if problem["type"] in _NOT_AN_OBJECT:
        message = "not a JSON object" if not where else "should be a JSON object"
    elif message[:1].isupper() and not message[1:2].isupper():
        message = message[0].lower() + message[1:]
    return f"{where}: {message}" if where else message
