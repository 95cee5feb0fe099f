"""A model held by the hundred thousand (a plan's entries, a snapshot's partitions and their evidence).

Pydantic keeps, per instance, the set of the fields its input gave (``model_fields_set``): 2.2 KB for a
plan entry, more than its values. Nothing here reads it (no ``exclude_unset``), so every instance shares
one set; a field set after validation adds its name there, as pydantic does, to no one's harm.
``tests/unit/test_lean_models.py`` fails if pydantic stops keeping it where this puts it.
"""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, model_validator

__all__ = ["SHARED_FIELDS_SET", "LeanModel"]

SHARED_FIELDS_SET: set[str] = set()
"""The one fields-set every lean instance holds."""


class LeanModel(BaseModel):
    @model_validator(mode="after")
    def _share_the_fields_set(self) -> Self:
        object.__setattr__(self, "__pydantic_fields_set__", SHARED_FIELDS_SET)
        return self
