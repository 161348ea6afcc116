"""Provides efficiency_model(): the learned model when its artifact is present, else the priors."""

from __future__ import annotations

from typing import Any, cast

from advisor.catalog.loader import Knowledge
from advisor.learned.efficiency.base import EfficiencyModel
from advisor.learned.efficiency.prior import PriorEfficiency


def efficiency_model(knowledge: Knowledge, *, prior: bool = False) -> EfficiencyModel:
    """The model predictions use: learned from benchmarks (and the user's calibration) unless prior is
    asked."""
    fallback = PriorEfficiency(knowledge.assumptions)
    if prior:
        return with_calibration(fallback)
    try:
        from advisor.learned.efficiency.learned import load_learned
    except ImportError:
        return with_calibration(fallback)
    return with_calibration(load_learned(knowledge, fallback) or fallback)


def with_calibration(model: EfficiencyModel) -> EfficiencyModel:
    """model with the user's calibration runs applied on top, when any profile holds runs (else model)."""
    from advisor.catalog.profiles import list_profiles

    if not list_profiles():
        return model
    from advisor.learned.calibration.efficiency import CalibratedEfficiency

    return cast(EfficiencyModel, CalibratedEfficiency(model))


class _LoadedOnUse:
    """An efficiency model read from its artifact only when first asked something (a serving question never
    asks: its plans carry the serving model's efficiencies), then that model itself for every attribute."""

    def __init__(self, knowledge: Knowledge, prior: bool) -> None:
        self._args = (knowledge, prior)
        self._model: EfficiencyModel | None = None

    def __getattr__(self, name: str) -> Any:
        if self._model is None:
            knowledge, prior = self._args
            self._model = efficiency_model(knowledge, prior=prior)
        return getattr(self._model, name)


def efficiency_model_on_use(knowledge: Knowledge, *, prior: bool = False) -> EfficiencyModel:
    """efficiency_model(), read on first use (the artifact's reading is a tenth of a serving `recommend`)."""
    return cast(EfficiencyModel, _LoadedOnUse(knowledge, prior))
