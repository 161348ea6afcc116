"""Provides efficiency_model(): the learned model when its artifact is present, else the priors."""

from __future__ import annotations

from advisor.catalog.loader import Knowledge
from advisor.learned.efficiency.base import EfficiencyModel
from advisor.learned.efficiency.prior import PriorEfficiency


def efficiency_model(knowledge: Knowledge, *, prior: bool = False) -> EfficiencyModel:
    """The model predictions use: learned from benchmarks (and the user's calibration) unless prior is
    asked."""
    fallback = PriorEfficiency(knowledge.assumptions)
    if prior:
        return fallback
    try:
        from advisor.learned.efficiency.learned import load_learned
    except ImportError:
        return fallback
    return load_learned(knowledge, fallback) or fallback
