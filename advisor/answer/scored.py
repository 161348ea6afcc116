"""Provides Scored: a candidate plan with its efficiency, time, price and cost (what the ranking orders)."""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.learned.efficiency import Interval
from advisor.physics.goodput import Goodput
from advisor.search.candidates import Candidate
from advisor.search.cost import CostRange, PriceChoice


@dataclass(slots=True, repr=False, eq=False)
class Scored:
    """A candidate with its efficiency, time, price and cost."""

    cand: Candidate
    eff: Interval
    hours: Interval
    throughput: Interval
    cost: CostRange
    price: PriceChoice | None
    usd_per_hour: float
    bonus: float
    latency_s: Interval | None = None
    ttft_ms: Interval | None = None
    tpot_ms: Interval | None = None
    capacity_rps: float = 0.0
    notes: list[str] = field(default_factory=list)
    goodput: Goodput | None = None
    alt_effs: list[Interval] = field(default_factory=list)

    @property
    def time_key(self) -> float:
        """What 'fastest' minimises: job hours (training) or request latency (inference)."""
        return self.latency_s.p50 if self.latency_s is not None else self.hours.p50

    @property
    def key(self) -> tuple[str, int, int]:
        """One plan per GPU, count and replica shape."""
        lay = self.cand.layout
        return self.cand.gpu.id, lay.count, lay.tp * lay.pp
