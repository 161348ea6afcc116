"""Provides PriorEfficiency: the documented efficiency priors of assumptions.toml, one interval per regime."""

from __future__ import annotations

from collections.abc import Sequence

from advisor.catalog.assumptions import Assumptions
from advisor.learned.efficiency.base import Interval, Query


class PriorEfficiency:
    """Efficiency = the sourced prior of the plan's regime; no dependence on the GPU or the layout."""

    name = "prior by regime (knowledge/assumptions.toml)"

    def __init__(self, assumptions: Assumptions) -> None:
        self._priors = {k: Interval(p.p10, p.p50, p.p90) for k, p in assumptions.efficiency.items()}

    def estimate(self, queries: Sequence[Query]) -> list[Interval]:
        """The prior interval of each query's regime."""
        return [self._priors[q.regime] for q in queries]

    def prior(self, regime: str) -> Interval:
        """The prior interval of one regime."""
        return self._priors[regime]
