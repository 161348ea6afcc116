"""Provides cloud cost: the best offer for a plan and the field guides' formula with a volatility range."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

from advisor.catalog.assumptions import Assumptions
from advisor.catalog.gpus import Gpu
from advisor.catalog.loader import Knowledge, offers_of
from advisor.catalog.prices import Offer, age_months, today
from advisor.job.inputs import Constraints
from advisor.question.assumed import Assumed

PRICING_ROWS = {"on-demand": ("on-demand",), "spot": ("spot",), "reserved": ("reserved-1y", "reserved-3y")}


@dataclass(frozen=True, slots=True, repr=False)
class CostRange:
    """A cost in USD as low, middle and high."""

    low: float
    mid: float
    high: float


def guide_cost(
    usd_per_gpu_hour: float,
    gpus: float,
    hours: float,
    volatility: float,
    storage_gb: float,
    storage_usd_per_gb_month: float,
    storage_months: float,
) -> float:
    """The field guide's formula: GPU $/h x GPUs x hours x volatility + storage $/GB-month x GB x months."""
    return (
        usd_per_gpu_hour * gpus * hours * volatility + storage_usd_per_gb_month * storage_gb * storage_months
    )


OUTLIER_FACTOR = 2.0  # a region over 2x (or under half) the same instance's median across regions is flagged


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Screened:
    """The offers of one GPU sorted into usable, stale (older than the age limit) and region outliers."""

    usable: list[Offer]
    stale: list[Offer]
    outliers: list[tuple[Offer, float]]
    """Each outlier with its instance's median $/GPU-hour across the provider's regions."""


def newest_only(offers: list[Offer]) -> list[Offer]:
    """Keep, per provider, instance and plan, only the newest snapshot (all of its regions)."""
    latest: dict[tuple[str, str, str], dt.date] = {}
    for o in offers:
        key = (o.provider, o.instance, o.pricing)
        if key not in latest or o.date > latest[key]:
            latest[key] = o.date
    return [o for o in offers if o.date == latest[(o.provider, o.instance, o.pricing)]]


def outlier_medians(offers: list[Offer]) -> dict[int, float]:
    """id(offer) -> the median $/GPU-hour of the same instance across the provider's regions, for offers
    beyond OUTLIER_FACTOR of it (instances are compared with themselves: a bigger host is not a region
    outlier)."""
    groups: dict[tuple[str, str, str, str], list[Offer]] = {}
    for o in offers:
        groups.setdefault((o.provider, o.instance, o.gpu, o.pricing), []).append(o)
    flagged: dict[int, float] = {}
    for group in groups.values():
        if len(group) < 2:
            continue
        median = _median(sorted(o.usd_per_gpu_hour for o in group))
        for o in group:
            if o.usd_per_gpu_hour > OUTLIER_FACTOR * median or o.usd_per_gpu_hour < median / OUTLIER_FACTOR:
                flagged[id(o)] = median
    return flagged


def _median(ordered: list[float]) -> float:
    """statistics.median of sorted values, without importing statistics (fractions, decimal) for one use."""
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def screen_offers(
    knowledge: Knowledge, gpu: Gpu, constraints: Constraints, now: dt.date | None = None
) -> Screened:
    """The offers of a GPU under the pricing plan and provider filter: newest snapshot per instance, then
    those older than the age limit set aside, then region outliers set aside (they are never ranked first
    silently)."""
    kinds = PRICING_ROWS[constraints.pricing]
    providers = {p.lower() for p in constraints.providers}
    rows = [
        o
        for o in offers_of(knowledge, gpu.id)
        if o.pricing in kinds and (not providers or o.provider in providers)
    ]
    rows = newest_only(rows)
    now = now or today()
    stale = [o for o in rows if age_months(o.date, now) > constraints.max_price_age_months]
    fresh = [o for o in rows if age_months(o.date, now) <= constraints.max_price_age_months]
    medians = outlier_medians(fresh)
    outliers = [(o, medians[id(o)]) for o in fresh if id(o) in medians]
    usable = sorted(
        (o for o in fresh if id(o) not in medians),
        key=lambda o: (o.usd_per_gpu_hour, o.provider, o.instance, o.region),
    )
    return Screened(usable, stale, outliers)


def offer_flags(
    offers: list[Offer], max_age_months: float, now: dt.date | None = None
) -> dict[int, list[str]]:
    """id(offer) -> its flags for listing: superseded by a newer snapshot, stale, region outlier."""
    now = now or today()
    newest = {id(o) for o in newest_only(offers)}
    flags: dict[int, list[str]] = {id(o): [] for o in offers}
    for o in offers:
        if id(o) not in newest:
            flags[id(o)].append("superseded")
        elif age_months(o.date, now) > max_age_months:
            flags[id(o)].append(f"stale ({age_months(o.date, now):.0f} months)")
    current = [o for o in offers if id(o) in newest]
    for key, median in outlier_medians(current).items():
        flags[key].append(f"region outlier (instance median ${median:.2f}/GPU-h)")
    return flags


def usable_offers(knowledge: Knowledge, gpu: Gpu, constraints: Constraints) -> list[Offer]:
    """The offers a plan may be priced on (fresh, not region outliers), cheapest per GPU first."""
    return screen_offers(knowledge, gpu, constraints).usable


def price_notes(knowledge: Knowledge, gpus: list[Gpu], constraints: Constraints) -> list[Assumed]:
    """What the price screen left out for these GPUs: stale offers (with the input that sets the age limit:
    each front end names it), providers with no fresh price, outliers."""
    stale: list[Offer] = []
    outliers: list[tuple[Offer, float]] = []
    fresh_providers: set[str] = set()
    for gpu in gpus:
        s = screen_offers(knowledge, gpu, constraints)
        stale += s.stale
        outliers += s.outliers
        fresh_providers |= {o.provider for o in s.usable} | {o.provider for o, _ in s.outliers}
    notes: list[Assumed] = []
    limit = f"{constraints.max_price_age_months:g} months"
    if stale:
        oldest = min(o.date for o in stale)
        gone = sorted({o.provider for o in stale} - fresh_providers)
        notes.append(
            Assumed(
                text=f"{len(stale)} {constraints.pricing} offer(s) older than {limit} excluded (oldest "
                f"{oldest.isoformat()})" + (f"; no fresh price from: {', '.join(gone)}" if gone else ""),
                field="max_price_age_months",
            )
        )
    if outliers:
        shown = ", ".join(
            f"{o.provider} {o.region} {o.gpu} ${o.usd_per_gpu_hour:.2f}/GPU-h vs median ${median:.2f}"
            for o, median in outliers[:3]
        )
        more = f" and {len(outliers) - 3} more" if len(outliers) > 3 else ""
        notes.append(
            Assumed(
                text=f"{len(outliers)} region outlier(s) set aside (over {OUTLIER_FACTOR:g}x or under "
                f"1/{OUTLIER_FACTOR:g} of the same instance's median across the provider's regions): "
                f"{shown}{more}"
            )
        )
    return notes


@dataclass(frozen=True, slots=True, repr=False, eq=False)
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
    """GPUs per server: the largest instance on offer (capped at the GPU's usual server), else the usual
    server."""
    sizes = [o.gpus for o in offers if o.gpus <= gpu.gpus_per_node]
    return max(sizes) if sizes else gpu.gpus_per_node


def best_offer(offers: list[Offer], count: int, node_size: int) -> PriceChoice | None:
    """The cheapest way to rent `count` GPUs as servers of `node_size` (an instance must hold a whole
    server)."""
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
    fig = {
        "static": a.cost["volatility_static"],
        "fluctuating": a.cost["volatility_fluctuating"],
        "high": a.cost["volatility_high"],
    }[constraints.demand]
    lo, hi = fig.range
    return lo, fig.value, hi


def spot_overhead(hours: float, instances: int, a: Assumptions) -> tuple[float, float, float]:
    """Expected extra fraction of run time lost to spot preemptions (low, mid, high).

    Any instance's preemption stops the job; each costs half a checkpoint interval of work plus a restart.
    """
    rate = a.cost["spot_interruptions_per_month"]
    loss = a.defaults["checkpoint_interval_h"].value / 2.0 + a.defaults["restart_overhead_h"].value
    per_hour = [r / a.cost["hours_per_month"].value * instances * loss for r in rate.range]
    return per_hour[0], rate.value / a.cost["hours_per_month"].value * instances * loss, per_hour[1]


def plan_cost(
    hours: tuple[float, float, float],
    usd_per_hour: float,
    constraints: Constraints,
    a: Assumptions,
    dataset_gb: float,
) -> CostRange:
    """Cost of a job of (p10, p50, p90) hours at `usd_per_hour`, with volatility and storage for its
    duration."""
    vol = volatility(constraints, a)
    rate = a.cost["storage_usd_per_gb_month"].value
    month = a.cost["hours_per_month"].value
    low, mid, high = (
        usd_per_hour * h * v + rate * dataset_gb * h / month for h, v in zip(hours, vol, strict=True)
    )
    return CostRange(low, mid, high)
