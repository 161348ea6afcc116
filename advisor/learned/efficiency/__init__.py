"""Provides the efficiency interface: achieved / speed-of-light, as a P10-P50-P90 interval per plan."""

from advisor.learned.efficiency.base import EfficiencyModel, Interval, Query, regime_of
from advisor.learned.efficiency.prior import PriorEfficiency

__all__ = ["EfficiencyModel", "Interval", "PriorEfficiency", "Query", "regime_of"]
