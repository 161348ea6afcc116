"""Provides cloud cost: the best offer for a plan and the field guides' formula with a volatility range."""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.catalog.assumptions import Assumptions
from advisor.catalog.gpus import Gpu
from advisor.catalog.loader import Knowledge
from advisor.catalog.prices import Offer
from advisor.inputs import Constraints

PRICING_ROWS = {"on-demand": ("on-demand",), "spot": ("spot",), "reserved": ("reserved-1y", "reserved-3y")}


@dataclass(frozen=True, slots=True)
class CostRange:
    """A cost in USD as low, middle and high."""

    low: float
    mid: float
    high: float


def guide_cost(usd_per_gpu_hour: float, gpus: float, hours: float, volatility: float, storage_gb: float,
               storage_usd_per_gb_month: float, storage_months: float) -> float:
    """The field guide's formula: GPU $/h x GPUs x hours x volatility + storage $/GB-month x GB x months."""
    return usd_per_gpu_hour * gpus * hours * volatility + storage_usd_per_gb_month * storage_gb * storage_months


def usable_offers(knowledge: Knowledge, gpu: Gpu, constraints: Constraints) -> list[Offer]:
    """The offers of a GPU under the pricing plan and provider filter, newest per instance and region."""
    kinds = PRICING_ROWS[constraints.pricing]
    providers = {p.lower() for p in constraints.providers}
    rows = [o for o in knowledge.offers_for(gpu.id)
            if o.pricing in kinds and (not providers or o.provider in providers)]
    # An instance priced by several snapshots keeps only its newest; regions of that snapshot all stay.
    latest: dict[tuple[str, str, str], object] = {}
    for o in rows:
        key = (o.provider, o.instance, o.pricing)
        if key not in latest or o.date > latest[key]:  # type: ignore[operator]
            latest[key] = o.date
    fresh = [o for o in rows if o.date == latest[(o.provider, o.instance, o.pricing)]]
    return sorted(fresh, key=lambda o: (o.usd_per_gpu_hour, o.provider, o.instance, o.region))


@dataclass(frozen=True, slots=True)
class PriceChoice:
    """The offer a plan is priced on and what it bills."""

    offer: Offer
    instances: int
    billed_gpus: int

    @property
    def usd_per_hour(self) -> float:
        """All instances of the plan, per hour."""
        return self.instances * self.offer.usd_per_hour


def node_size_for(gpu: Gpu, offers: list[Offer]) -> int:
    """GPUs per server: the largest instance on offer (capped at the GPU's usual server), else the usual server."""
    sizes = [o.gpus for o in offers if o.gpus <= gpu.gpus_per_node]
    return max(sizes) if sizes else gpu.gpus_per_node


def best_offer(offers: list[Offer], count: int, node_size: int) -> PriceChoice | None:
    """The cheapest way to rent `count` GPUs as servers of `node_size` (an instance must hold a whole server)."""
    need = min(count, node_size)
    best: PriceChoice | None = None
    for o in offers:
        if o.gpus < need or o.gpus > max(need, node_size):
            continue
        instances = math.ceil(count / o.gpus)
        choice = PriceChoice(o, instances, instances * o.gpus)
        if best is None or choice.usd_per_hour < best.usd_per_hour:
            best = choice
    return best


def volatility(constraints: Constraints, a: Assumptions) -> tuple[float, float, float]:
    """(low, mid, high) demand-volatility multiplier for the user's demand profile."""
    fig = {"static": a.cost.volatility_static, "fluctuating": a.cost.volatility_fluctuating,
           "high": a.cost.volatility_high}[constraints.demand]
    lo, hi = fig.range
    return lo, fig.value, hi


def spot_overhead(hours: float, instances: int, a: Assumptions) -> tuple[float, float, float]:
    """Expected extra fraction of run time lost to spot preemptions (low, mid, high).

    Any instance's preemption stops the job; each costs half a checkpoint interval of work plus a restart.
    """
    rate = a.cost.spot_interruptions_per_month
    loss = a.defaults.checkpoint_interval_h.value / 2.0 + a.defaults.restart_overhead_h.value
    per_hour = [r / a.cost.hours_per_month.value * instances * loss for r in rate.range]
    return per_hour[0], rate.value / a.cost.hours_per_month.value * instances * loss, per_hour[1]


def plan_cost(hours: tuple[float, float, float], usd_per_hour: float, constraints: Constraints,
              a: Assumptions, dataset_gb: float) -> CostRange:
    """Cost of a job of (p10, p50, p90) hours at `usd_per_hour`, with volatility and storage for its duration."""
    vol = volatility(constraints, a)
    rate = a.cost.storage_usd_per_gb_month.value
    month = a.cost.hours_per_month.value
    low, mid, high = (usd_per_hour * h * v + rate * dataset_gb * h / month for h, v in zip(hours, vol))
    return CostRange(low, mid, high)
