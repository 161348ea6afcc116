"""Provides the validated knowledge base: GPUs, models, prices, checklist, rules and assumptions."""

from advisor.catalog.loader import Knowledge, load_knowledge

__all__ = ["Knowledge", "load_knowledge"]
