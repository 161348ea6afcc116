"""Provides the cost of a fleet: attribution per owner and class (the guide's function, checked), on-prem
against cloud for the same portfolio, and the guide's staged purchase against buying everything at once."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass

from advisor.fleet.design import Design, Setup
from advisor.fleet.stats import CLASS_NAMES, RunFigures
from advisor.job.inputs import Constraints
from advisor.ops.tco import HOURS_PER_YEAR, TcoInputs, tco
from advisor.search.cost import best_offer, usable_offers

CLASS_LABEL = {**CLASS_NAMES, -1: "serving"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Attribution:
    """One owner's (or idle capacity's) share over the whole period, by the guide's three columns + space."""

    owner: str
    cls: str
    gpu_hours: float
    hardware_usd: float
    power_usd: float
    maintenance_usd: float
    space_usd: float

    @property
    def total_usd(self) -> float:
        """All four columns."""
        return self.hardware_usd + self.power_usd + self.maintenance_usd + self.space_usd


@dataclass(frozen=True, slots=True, kw_only=True)
class Buying:
    """Owning against renting, and staged against all-at-once, over the same years."""

    years: float
    onprem_usd: float
    cloud_usd: float | None
    cloud_basis: str
    staged_usd: float
    staged_steps: tuple[str, ...]
    all_at_once_usd: float
    staged_note: str


def _part_of(design: Design, cls: int) -> str:
    if len(design.parts) == 1:
        return design.parts[0].name
    return "edge" if cls in (2, -1) else "core"


def _mean_gpu_hours(runs: list[RunFigures]) -> dict[tuple[str, int], float]:
    keys = {k for r in runs for k in r.gpu_hours}
    return {k: statistics.fmean(r.gpu_hours.get(k, 0.0) for r in runs) for k in keys}


def attribution(setup: Setup, design: Design, runs: list[RunFigures], weeks: float) -> list[Attribution]:
    """The guide's cost_attribution per owner and class: hardware = GPU-hours x unit price (the amortised
    hardware and network per available GPU-hour), power = their energy x tariff, maintenance = 15% of
    hardware. Two things the guide's function leaves out are added: space, and the idle capacity nobody used
    (its own row), so that the rows add up to the cluster's cost."""
    years = setup.portfolio.sizing.years
    scale = years * 52.0 / weeks  # simulated weeks to the whole period
    tariff = setup.tco_figures.power["electricity_usd_kwh"].value
    share = setup.tco_figures.operations["maintenance_fraction_per_year"].value
    used = _mean_gpu_hours(runs)
    rows: list[Attribution] = []
    for part in design.parts:
        out = tco(setup.knowledge, TcoInputs(gpu=part.gpu, count=part.gpus, years=years))
        line = {ln.component: ln.usd for ln in out.lines}
        available = part.gpus * HOURS_PER_YEAR * years
        unit = (line["hardware"] + line["network"]) / available
        space = line["space"] / available
        kwh = statistics.fmean(r.busy_kwh_by_pool[part.name] for r in runs) * scale
        busy = sum(h for (o, c), h in used.items() if _part_of(design, c) == part.name) * scale
        per_kwh_hour = kwh / busy if busy else 0.0
        for (owner, cls), hours in sorted(used.items()):
            if _part_of(design, cls) != part.name:
                continue
            h = hours * scale
            rows.append(
                Attribution(
                    owner=owner,
                    cls=CLASS_LABEL[cls],
                    gpu_hours=round(h, 1),
                    hardware_usd=round(h * unit, 2),
                    power_usd=round(h * per_kwh_hour * tariff, 2),
                    maintenance_usd=round(h * unit * share, 2),
                    space_usd=round(h * space, 2),
                )
            )
        idle = max(0.0, available - busy)
        rows.append(
            Attribution(
                owner=f"idle ({part.name})",
                cls="-",
                gpu_hours=round(idle, 1),
                hardware_usd=round(idle * unit, 2),
                power_usd=0.0,
                maintenance_usd=round(idle * unit * share, 2),
                space_usd=round(idle * space, 2),
            )
        )
    return rows


def by_owner(rows: list[Attribution]) -> dict[str, float]:
    """Total per owner (classes added)."""
    out: dict[str, float] = defaultdict(float)
    for r in rows:
        out[r.owner] += r.total_usd
    return dict(out)


def _cloud_rate(setup: Setup, gpu: str, node: int) -> tuple[float | None, str]:
    """$/GPU-hour of the cheapest on-demand whole instance of `gpu`, from the price catalogue."""
    g = setup.knowledge.gpu(gpu)
    offers = usable_offers(setup.knowledge, g, Constraints())
    choice = best_offer(offers, node, node) if offers else None
    if choice is None:
        return None, f"no on-demand offer of {gpu} in the price catalogue"
    o = choice.offer
    return (
        choice.usd_per_hour / node,
        f"{o.provider} {o.instance} on demand (prices as of {o.date.isoformat()})",
    )


def buying(setup: Setup, design: Design, runs: list[RunFigures], weeks: float, total_usd: float) -> Buying:
    """On-prem against the cloud (busy GPU-hours only, rented by the hour), and the guide's staged purchase
    (its first 40%, quarterly reviews) against buying the whole cluster at once."""
    years = setup.portfolio.sizing.years
    scale = years * 52.0 / weeks
    used = _mean_gpu_hours(runs)
    cloud: float | None = 0.0
    bases = []
    for part in design.parts:
        rate, basis = _cloud_rate(setup, part.gpu, part.node_size)
        busy = sum(h for (o, c), h in used.items() if _part_of(design, c) == part.name) * scale
        bases.append(basis)
        cloud = cloud + busy * rate if rate is not None and cloud is not None else None
    staged_usd, steps, note = _staged(setup, design, runs, weeks)
    return Buying(
        years=years,
        onprem_usd=round(total_usd, 2),
        cloud_usd=None if cloud is None else round(cloud, 2),
        cloud_basis="; ".join(bases),
        staged_usd=round(staged_usd, 2),
        staged_steps=steps,
        all_at_once_usd=round(total_usd, 2),
        staged_note=note,
    )


def _staged(
    setup: Setup, design: Design, runs: list[RunFigures], weeks: float
) -> tuple[float, tuple[str, ...], str]:
    """Each tranche owned from its month to the end; the work its missing capacity cannot do in the meantime
    is rented in the cloud at the same GPU's on-demand rate (or, with none, counted as unserved)."""
    years = setup.portfolio.sizing.years
    months = round(years * 12)
    total, lines = 0.0, []
    for part in design.parts:
        plan = tco(setup.knowledge, TcoInputs(gpu=part.gpu, count=part.gpus, years=years)).staged
        util = statistics.fmean(r.utilisation_by_pool[part.name] for r in runs)
        rate, _ = _cloud_rate(setup, part.gpu, part.node_size)
        owned_by_month = [0] * months
        for step in plan:
            left = max(1.0 / 12, years - step.month / 12.0)
            total += tco(
                setup.knowledge,
                TcoInputs(gpu=part.gpu, count=step.gpus, years=left, utilization=max(util, 0.01)),
            ).total_usd
            for m in range(step.month, months):
                owned_by_month[m] += step.gpus
            lines.append(
                f"{part.name}: month {step.month}: {step.gpus} x {part.gpu} (${step.usd:,.0f}) {step.action}"
            )
        demand = util * part.gpus * 730.0  # GPU-hours a month the portfolio keeps busy
        burst = sum(max(0.0, demand - owned * 730.0 * util) for owned in owned_by_month)
        total += burst * (rate or 0.0)
    note = (
        "demand is taken as flat (the portfolio as given, from month 0): staging only saves money if the "
        "portfolio grows into the cluster or prices fall, and no sourced GPU price trend exists here; "
        "the missing capacity before each tranche is rented on demand"
    )
    return total, tuple(lines), note
