"""Provides what every knowledge schema shares: a strict frozen base model, sources and id normalisation."""

from __future__ import annotations

import datetime as dt
import re

from pydantic import BaseModel, ConfigDict, Field

_SEPARATORS = re.compile(r"[\s_/]+")


def normalise_id(text: str) -> str:
    """Return the lookup form of an id or alias: lower case, spaces, '_' and '/' as '-'."""
    return _SEPARATORS.sub("-", text.strip().lower()).strip("-")


class Strict(BaseModel):
    """A frozen model that rejects unknown keys, so a typo in a knowledge file fails at load."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Source(Strict):
    """Where a figure comes from: a repository file at a commit, a datasheet or a paper."""

    title: str = Field(min_length=3)
    ref: str = Field(min_length=3)
    """`owner/repo@commit:path`, or a document title."""
    url: str | None = None
    date: dt.date | None = None
    """When the cited figures were current, where known."""
    note: str = ""
