"""Provides the validated knowledge base: GPUs, models, prices, checklist, rules and assumptions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.catalog.loader import Knowledge, load_knowledge

__all__ = ["Knowledge", "load_knowledge"]


def __getattr__(name: str) -> Any:
    # Deferred: importing advisor.job.inputs (which needs advisor.catalog.common) must not build every schema.
    if name in __all__:
        from advisor.catalog import loader

        return getattr(loader, name)
    raise AttributeError(name)
