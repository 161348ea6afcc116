"""Provides the troubleshooting checklist schema: symptoms, thresholds, ordered steps, tools, sources."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from advisor.catalog.common import NON_EMPTY, EntryId

MEMORY_COMPONENTS = (
    "weights",
    "gradients",
    "optimizer",
    "master_weights",
    "activations",
    "kv_cache",
    "adapters",
    "overhead",
)


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Threshold:
    """A measured level past which the entry applies."""

    metric: str
    op: Literal[">", ">=", "<", "<="]
    value: float
    unit: str
    meaning: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Step:
    """One ordered action."""

    text: str
    tool: str | None = None
    command: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class ChecklistEntry:
    """One error type and what to do about it."""

    id: EntryId
    title: str
    category: Literal[
        "memory", "distributed", "network", "compatibility", "performance", "cost", "reliability"
    ]
    keywords: tuple[str, ...] = ()
    symptoms: Annotated[tuple[str, ...], NON_EMPTY]
    tools: tuple[str, ...] = ()
    sources: Annotated[tuple[str, ...], NON_EMPTY]
    thresholds: tuple[Threshold, ...] = ()
    steps: Annotated[tuple[Step, ...], NON_EMPTY]
    remedies: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def haystack(self) -> str:
        """All searchable text of the entry, lower-cased."""
        parts = [self.id, self.title, self.category, *self.keywords, *self.symptoms, *self.tools]
        parts += [s.text for s in self.steps] + [s.command or "" for s in self.steps]
        parts += [t.metric for t in self.thresholds]
        return "\n".join(parts).lower()
