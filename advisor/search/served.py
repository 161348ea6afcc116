"""Provides the serving search's records: a replica shape's figures, the latency targets and a sized plan.

Apart from the search (`advisor/search/serving.py`) so that the candidates and the disaggregated layouts can
name them without importing the search itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.learned.serving.replica import Setup
from advisor.physics.batching import Latency, LoadStats, Saturation
from advisor.physics.serving import Efficiency


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Targets:
    """The latency a plan is held to, at one percentile of requests."""

    ttft_s: float | None
    tpot_s: float | None
    quantile: float

    def met(self, lat: Latency | None) -> bool:
        if lat is None:
            return False
        ok_ttft = self.ttft_s is None or lat.ttft_q_s <= self.ttft_s
        return ok_ttft and (self.tpot_s is None or lat.tpot_q_s <= self.tpot_s)


@dataclass(slots=True, repr=False, eq=False)
class Figures:
    """One replica shape on one GPU: its setup, efficiencies, capacity and the engine's data source."""

    setup: Setup
    eff: Efficiency
    sat: Saturation
    sol: Saturation
    """The capacity at 100% efficiency (speed of light)."""
    engine: str
    learned_from: str | None
    """The engine whose measured rows the efficiencies come from (None: priors, or the engines' common
    values)."""
    bound: str = "memory"
    """What limits a full replica's iteration: memory (weights and KV reads) or compute."""

    @property
    def replica_gpus(self) -> int:
        return self.setup.replica.gpus


@dataclass(slots=True, repr=False, eq=False)
class Served:
    """The serving figures of one plan: per replica, and what they add up to."""

    figures: Figures
    replicas: int
    rate: float
    """Requests/s each replica is offered (0: no load given)."""
    load: Latency | None
    """Latency at that load (or at the stated batch), at the SLO percentile."""
    max_rate: float
    """Requests/s each replica takes within the targets."""
    targets: Targets
    batch: int
    """Requests in flight per replica (stated, or the load's average)."""
    alone: tuple[float, float]
    notes: list[str] = field(default_factory=list)
    prefill_replicas: int = 0
    """Disaggregated: how many of the replicas only prefill (the others only decode); 0 = colocated."""
    stats: LoadStats | None = None
    """The stated load's figures per replica (running and waiting requests, latencies at P50/P90/P99)."""
    filled: float = 1.0
    """The share of the replicas' client slots a stated concurrency fills: its clients over the replicas x
    the requests each was simulated at (1 client over 2 replicas keeps one busy and the other idle: 0.5)."""

    @property
    def throughput(self) -> float:
        """Output tokens/s of the whole deployment at its load (the capacity when none is given)."""
        if self.load is not None:
            return self.load.output_tok_s * self.replicas * self.filled
        return self.figures.sat.output_tok_s * self.replicas

    @property
    def ttft_s(self) -> float:
        return self.load.ttft_q_s if self.load else self.alone[0]

    @property
    def tpot_s(self) -> float:
        return self.load.tpot_q_s if self.load else self.figures.sat.iteration_s
