"""The typed inputs of the apply-step handlers; a bad input names the step and the field."""

from __future__ import annotations

from typing import Any, TypeVar

from offset_restore.errors import BadInputError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["ApplyRequest", "BatchRequest", "parse"]

Model = TypeVar("Model", bound=BaseModel)


class ApplyRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    restore_id: str = Field(min_length=1)


class BatchRequest(ApplyRequest):
    groups: list[str] = Field(min_length=1)
    allow_rewind: bool = False


def parse(model: type[Model], event: dict[str, Any], step: str) -> Model:
    try:
        return model.model_validate(event)
    except ValidationError as error:
        raise BadInputError(f"invalid {step} request: {error}") from None
