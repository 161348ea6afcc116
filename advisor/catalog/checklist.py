"""Provides the troubleshooting checklist schema: symptoms, thresholds, ordered steps, tools, sources."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from advisor.catalog.common import Strict

MEMORY_COMPONENTS = (
    "weights", "gradients", "optimizer", "master_weights", "activations", "kv_cache", "adapters", "overhead",
)


class Threshold(Strict):
    """A measured level past which the entry applies."""

    metric: str
    op: Literal[">", ">=", "<", "<="]
    value: float
    unit: str
    meaning: str
    source: str


class Step(Strict):
    """One ordered action."""

    text: str
    tool: str | None = None
    command: str | None = None


class ChecklistEntry(Strict):
    """One error type and what to do about it."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9\-]*$")
    title: str
    category: Literal["memory", "distributed", "network", "compatibility", "performance", "cost", "reliability"]
    keywords: tuple[str, ...] = ()
    symptoms: tuple[str, ...] = Field(min_length=1)
    tools: tuple[str, ...] = ()
    sources: tuple[str, ...] = Field(min_length=1)
    thresholds: tuple[Threshold, ...] = ()
    steps: tuple[Step, ...] = Field(min_length=1)
    remedies: dict[str, tuple[str, ...]] = {}

    def haystack(self) -> str:
        """All searchable text of the entry, lower-cased."""
        parts = [self.id, self.title, self.category, *self.keywords, *self.symptoms, *self.tools]
        parts += [s.text for s in self.steps] + [s.command or "" for s in self.steps]
        parts += [t.metric for t in self.thresholds]
        return "\n".join(parts).lower()
