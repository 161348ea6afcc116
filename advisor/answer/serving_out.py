"""Provides the serving part of a plan's result records: its replicas, latencies and cost per token, and
the stated load's figures (declared only when a serving plan is answered: a training answer needs none)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # field types only
    from advisor.learned.efficiency.base import Interval


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class Percentiles:
    """A latency's P50, P90 and P99 over the requests, and its mean."""

    p50: float
    p90: float
    p99: float
    mean: float


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class LoadOut:
    """A serving plan under the stated load, per replica: the loop, the requests it runs and queues, and
    each latency at P50/P90/P99 (from the engine's scheduler simulated, or the open loop's analysis)."""

    loop: str
    """'closed': requests in flight (a concurrency or a static batch); 'open': a Poisson request rate;
    'burst': N prompts sent at once (--num-prompts), counted from t=0 to the last token."""
    in_flight_per_replica: int | None
    requests_per_s: float
    """Completed (closed loop) or offered (open loop), whole deployment."""
    output_tok_s: float
    """Whole deployment."""
    running_per_replica: float
    """Requests admitted (prefilling or decoding), time-averaged."""
    waiting_per_replica: float
    """Requests queued for a running slot or KV blocks, time-averaged."""
    ttft_ms: Percentiles
    tpot_ms: Percentiles
    itl_ms: Percentiles
    e2e_s: Percentiles


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class ServingOut:
    """Inference sizing of a plan: replicas, the load each takes, latency at the SLO percentile, cost."""

    replicas: int
    gpus_per_replica: int
    batch_per_replica: int
    ttft_ms: Interval
    """Time to first token at the offered load, at `percentile` of requests (range: the model's P10-P90)."""
    tpot_ms: Interval
    capacity_rps: float
    """Requests/s the deployment completes when kept full (the engine's batch caps, memory)."""
    load_rps: float
    percentile: int = 50
    engine: str = "vllm"
    learned_from: str | None = None
    """The engine whose measured rows the efficiencies were learned from (None: priors)."""
    max_rate_rps: float | None = None
    """Requests/s the deployment takes with TTFT and TPOT within the targets at `percentile`."""
    usd_per_million_output_tokens: Interval | None = None
    """At the offered load."""
    prefill_replicas: int = 0
    """Disaggregated layouts: replicas that only prefill (the rest only decode)."""
    load: LoadOut | None = None
    """The stated load's figures, when a load is stated."""


def _times(p: Percentiles, factor: float) -> Percentiles:
    return Percentiles(p50=p.p50 * factor, p90=p.p90 * factor, p99=p.p99 * factor, mean=p.mean * factor)


def moved_load(load: LoadOut, throughput: float, ttft: float, tpot: float) -> LoadOut:
    """The stated load's figures moved by the factors a calibration's leftover correction moved the plan's
    P50s by (throughput, first token, per token): the load line then says what the plan's figures say (a
    request's end-to-end time by the inverse of the throughput's, as Little's law holds the requests in
    flight)."""
    return replace(
        load,
        requests_per_s=load.requests_per_s * throughput,
        output_tok_s=load.output_tok_s * throughput,
        ttft_ms=_times(load.ttft_ms, ttft),
        tpot_ms=_times(load.tpot_ms, tpot),
        itl_ms=_times(load.itl_ms, tpot),
        e2e_s=_times(load.e2e_s, 1.0 / throughput if throughput else 1.0),
    )
