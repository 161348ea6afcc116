"""Provides Strict, the frozen pydantic base of every schema that validates input (imported only to
validate)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """A frozen model that rejects unknown keys, so a typo in a knowledge file fails at load."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
