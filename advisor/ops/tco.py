"""Provides the total cost of ownership of a GPU cluster, its attribution per GPU-hour and buy versus rent."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from advisor.catalog.assumptions import Figure
from advisor.catalog.gpus import PRICE_OLD_MONTHS, Gpu
from advisor.catalog.loader import Knowledge
from advisor.catalog.tco import TcoFigures, load_tco
from advisor.job.inputs import Constraints
from advisor.question.assumed import Assumed
from advisor.question.errors import InputError
from advisor.question.fields import default_of

HOURS_PER_YEAR = 8760.0
NIGHT_HOURS = 10.0  # the guide's off-peak window 22:00-08:00


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class TcoInputs:
    """The question: own `count` GPUs for `years` at an average utilisation."""

    gpu: str
    count: int
    years: float = default_of("years")
    utilization: float | None = None
    electricity_usd_kwh: float | None = None
    off_peak_usd_kwh: float | None = None
    pue: float | None = None
    staff_usd_year: float | None = None
    gpu_hours_per_month: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class CostLine:
    """One component of TCO over the whole period."""

    component: str
    usd: float
    share: float
    typical_low: float | None = None
    typical_high: float | None = None
    flag: str = ""
    basis: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class BuyRent:
    """Owning against the cheapest cloud plan of the same capacity."""

    cloud: str
    cloud_usd_per_gpu_hour: float | None
    gpu_hours_per_month: float
    own_usd_per_month: float
    cloud_usd_per_month: float | None
    breakeven_months: float | None
    """Gross purchase (capex_usd) / (cloud per month - running_usd_per_month): months until owning has paid
    for itself against renting the same GPU-hours."""
    breakeven_utilization: float | None
    verdict: str
    capex_usd: float = 0.0
    """GPUs, servers and network as bought (before any resale)."""
    running_usd_per_month: float = 0.0
    """Power, operations and space per month: what owning costs once bought."""


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class FinanceOption:
    """Purchase, lease or joint development."""

    name: str
    initial_usd: float | None
    total_usd: float | None
    expansion_cost: str
    lock_in: str
    note: str


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class StagedStep:
    """One step of the staged purchase."""

    month: int
    gpus: int
    usd: float
    action: str


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class TcoOut:
    """The whole TCO answer."""

    inputs: TcoInputs
    gpu_name: str
    nodes: int
    lines: tuple[CostLine, ...]
    total_usd: float
    per_year_usd: float
    usd_per_gpu_hour: float
    """Per GPU-hour actually used (total / (GPUs x hours x utilisation))."""
    attribution_per_gpu_hour: dict[str, float]
    buy_rent: BuyRent
    options: tuple[FinanceOption, ...]
    staged: tuple[StagedStep, ...]
    assumptions: tuple[str, ...]
    notes: tuple[Assumed, ...] = ()
    """What the figures could not source, each with the input that would supply it (front ends name it)."""


def _old_price(gpu: Gpu) -> list[Assumed]:
    """A note when the purchase price is older than PRICE_OLD_MONTHS (the hardware line says its date)."""
    price = gpu.price
    if price is None or not price.is_old():
        return []
    return [
        Assumed(
            text=f"GPU price ${price.usd:,.0f} ({price.kind}) was written on {price.date.isoformat()}, "
            f"{price.age_months():.0f} months ago (over {PRICE_OLD_MONTHS:g}): today's price may differ",
            note=f"source {price.source}",
        )
    ]


def _server_cost(gpu: Gpu, t: TcoFigures) -> tuple[float, str]:
    """Non-GPU server cost per node, and which figure it is."""
    name = gpu.name.lower()
    if "geforce" in name or "titan" in name or (gpu.gpus_per_node <= 4 and gpu.form_factor == "pcie"):
        return t.hardware["workstation_usd"].value, "workstation host"
    if gpu.form_factor == "pcie" or gpu.form_factor == "nvl":
        return t.hardware["server_pcie_usd"].value, "PCIe GPU server"
    return t.hardware["server_8gpu_sxm_usd"].value * gpu.gpus_per_node / 8.0, "HGX/OAM server (per 8 GPUs)"


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class _Capital:
    """What owning buys: GPUs, servers and fabric, and the resale at the end of the period."""

    nodes: int
    server_each: float
    server_kind: str
    gpus_usd: float
    servers_usd: float
    residual: float
    network_usd: float
    network_basis: str

    @property
    def capex(self) -> float:
        """GPUs, servers and network as bought."""
        return self.gpus_usd + self.servers_usd + self.network_usd


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class _Running:
    """What owning costs each year once bought: power and space, and the IT load behind both."""

    power_year: float
    power_basis: str
    space_year: float
    it_kw: float


def _capital(gpu: Gpu, n: int, years: float, t: TcoFigures, fabric: str, notes: list[Assumed]) -> _Capital:
    """The purchase: n GPUs, their servers and (past one server) their fabric; the resale after `years`."""
    assert gpu.price is not None
    nodes = math.ceil(n / gpu.gpus_per_node)
    server_each, server_kind = _server_cost(gpu, t)
    gpus_usd = n * gpu.price.usd
    residual_fig = t.hardware["residual_value_fraction"]
    residual = gpus_usd * (residual_fig.value if years <= 3 else (residual_fig.low or residual_fig.value))
    network_usd, network_basis = 0.0, "one server: no cluster fabric"
    if nodes > 1 and fabric.startswith(("ib", "roce")):
        per_gpu = t.hardware["network_ib_per_gpu_usd"].value
        network_usd = n * per_gpu
        network_basis = f"{fabric} fabric at ${per_gpu:,.0f} per GPU (switches, optics)"
    elif nodes > 1:
        network_basis = f"{fabric}: no sourced price for Ethernet switching (left out)"
        notes.append(
            Assumed(text="network: " + t.missing.get("hardware.network_eth_per_node_usd", "unsourced"))
        )
    return _Capital(
        nodes, server_each, server_kind, gpus_usd, nodes * server_each, residual, network_usd, network_basis
    )


def _running(
    gpu: Gpu, n: int, inputs: TcoInputs, util: float, t: TcoFigures, notes: list[Assumed]
) -> _Running:
    """Power (at the user's or the sourced tariff, day and night) and colocation space per year."""
    tariff = inputs.electricity_usd_kwh or t.power["electricity_usd_kwh"].value
    pue = inputs.pue or t.power["pue"].value
    tdp = gpu.tdp_w or 0
    overhead_w = t.power["server_overhead_w_per_gpu"].value
    it_kw = n * (tdp + overhead_w) / 1000.0
    kwh_year = it_kw * util * HOURS_PER_YEAR * pue
    use = (
        f"{kwh_year:,.0f} kWh/yr (TDP {tdp} W + {overhead_w:.0f} W server share per GPU, x{util:.0%} "
        f"use, PUE {pue:g}) at ${tariff:g}/kWh"
    )
    if inputs.off_peak_usd_kwh:
        blended = (tariff * (24 - NIGHT_HOURS) + inputs.off_peak_usd_kwh * NIGHT_HOURS) / 24
        basis = f"{use} day, ${inputs.off_peak_usd_kwh:g} off-peak 22:00-08:00"
    else:
        blended, basis = tariff, use
        notes.append(
            Assumed(
                text="off-peak tariff: " + t.missing.get("power.off_peak_usd_kwh", "unsourced"),
                field="off_peak_usd_kwh",
            )
        )
    space_year = t.space["colocation_usd_per_kw_month"].value * it_kw * 12
    return _Running(kwh_year * blended, basis, space_year, it_kw)


def _cost_lines(raw: list[tuple[str, float, Figure | None, str, str]]) -> tuple[tuple[CostLine, ...], float]:
    """Each component with its share of the total, flagged against the guide's typical range; the total."""
    total = sum(r[1] for r in raw)
    lines = []
    for comp, usd, typical, basis, source in raw:
        share = usd / total if total else 0.0
        flag = ""
        if typical is not None:
            lo, hi = typical.range
            if share < lo / 2 or share > hi * 1.5:
                flag = f"far outside the guide's {lo:.0%}-{hi:.0%}"
            elif share < lo or share > hi:
                flag = f"outside the guide's {lo:.0%}-{hi:.0%}"
        lines.append(
            CostLine(
                component=comp,
                usd=round(usd, 2),
                share=round(share, 4),
                typical_low=typical.range[0] if typical else None,
                typical_high=typical.range[1] if typical else None,
                flag=flag,
                basis=basis,
                source=source,
            )
        )
    return tuple(lines), total


def _options(capex: float, t: TcoFigures) -> tuple[FinanceOption, ...]:
    """Purchase, lease and joint development, as the guide compares them (lease terms sourced)."""
    lease = t.lease
    ratio = lease["lease_to_purchase_ratio"]
    return (
        FinanceOption(
            name="purchase",
            initial_usd=round(capex, 2),
            total_usd=round(capex, 2),
            expansion_cost="low",
            lock_in="high",
            note="one-time purchase; the guide rates expansion cost low and technology lock-in high",
        ),
        FinanceOption(
            name="lease",
            initial_usd=round(capex * ratio.value / lease["term_months"].value, 2),
            total_usd=round(capex * ratio.value, 2),
            expansion_cost="high",
            lock_in="medium",
            note=f"{lease['term_months'].value:.0f} monthly payments at "
            f"{lease['annual_rate'].value:.1%} APR: "
            f"{ratio.value:.2f}x the price ({ratio.low:.2f}-{ratio.high:.2f}x over 10-17% APR, 36-60 months)",
        ),
        FinanceOption(
            name="joint development",
            initial_usd=None,
            total_usd=None,
            expansion_cost="medium",
            lock_in="low",
            note="no sourced terms: the guide rates initial and expansion cost medium and "
            "lock-in low; terms are negotiated",
        ),
    )


def tco(knowledge: Knowledge, inputs: TcoInputs, constraints: Constraints | None = None) -> TcoOut:
    """Compute TCO, shares against the guide's typical ranges, attribution, buy-versus-rent and options."""
    t = load_tco(knowledge)
    gpu = knowledge.gpu(inputs.gpu)
    if gpu.price is None:
        priced = ", ".join(g.id for g in knowledge.gpus if g.price)
        raise InputError(
            field="gpu",
            value=gpu.id,
            problem="has no sourced purchase price",
            accepted=f"TCO needs one of: {priced}",
        )
    years, n = inputs.years, inputs.count
    util = inputs.utilization if inputs.utilization is not None else t.operations["target_utilization"].value
    notes: list[Assumed] = []
    fabric = constraints.fabric if constraints and constraints.fabric else gpu.fabric
    cap = _capital(gpu, n, years, t, fabric, notes)
    run = _running(gpu, n, inputs, util, t, notes)
    ops_usd, ops_basis = _operations(inputs, t, cap.capex - cap.residual, years)
    if inputs.staff_usd_year is None:
        notes.append(
            Assumed(
                text="operations at the guide's share of the hardware and network cost",
                note="no sourced GPUs-per-engineer ratio exists",
                field="staff_usd_year",
            )
        )
    notes += _old_price(gpu)
    lines, total = _cost_lines(_components(gpu, inputs, cap, run, ops_usd, ops_basis, t))
    used_hours = n * HOURS_PER_YEAR * years * util
    running_month = (run.power_year + run.space_year) / 12 + ops_usd / (years * 12)
    return TcoOut(
        inputs=inputs,
        gpu_name=gpu.name,
        nodes=cap.nodes,
        lines=lines,
        total_usd=round(total, 2),
        per_year_usd=round(total / years, 2),
        usd_per_gpu_hour=round(total / used_hours, 4),
        # Every line of the table per used GPU-hour: the parts add up to the total per GPU-hour.
        attribution_per_gpu_hour={c.component: round(c.usd / used_hours, 4) for c in lines},
        buy_rent=_buy_rent(
            knowledge, gpu, n, inputs, util, total, years, run.power_year, cap.capex, running_month
        ),
        options=_options(cap.capex, t),
        staged=_staged(gpu, n, t, cap.server_each, cap.network_usd / n if n else 0.0),
        assumptions=_assumption_lines(inputs, util, cap, gpu, years, t),
        notes=tuple(notes),
    )


def _components(
    gpu: Gpu, inputs: TcoInputs, cap: _Capital, run: _Running, ops_usd: float, ops_basis: str, t: TcoFigures
) -> list[tuple[str, float, Figure | None, str, str]]:
    """(component, USD over the period, the guide's typical share, basis, source) for each line of the TCO."""
    assert gpu.price is not None
    s, years, colo = t.typical_shares, inputs.years, t.space["colocation_usd_per_kw_month"]
    hardware = (
        f"{inputs.count} x ${gpu.price.usd:,.0f} GPUs ({gpu.price.label()}) + {cap.nodes} x "
        f"${cap.server_each:,.0f} {cap.server_kind} - ${cap.residual:,.0f} resale after {years:g} years"
    )
    ops_source = (
        "given" if inputs.staff_usd_year is not None else t.operations["maintenance_fraction_per_year"].source
    )
    return [
        (
            "hardware",
            cap.gpus_usd + cap.servers_usd - cap.residual,
            s["hardware"],
            hardware,
            gpu.price.source,
        ),
        (
            "network",
            cap.network_usd,
            s["network"],
            cap.network_basis,
            t.hardware["network_ib_per_gpu_usd"].source,
        ),
        ("power", run.power_year * years, s["power"], run.power_basis, t.power["electricity_usd_kwh"].source),
        ("operations", ops_usd, s["staff"], ops_basis, ops_source),
        (
            "space",
            run.space_year * years,
            s["space"],
            f"{run.it_kw:.1f} kW of IT load at ${colo.value:g}/kW-month",
            colo.source,
        ),
    ]


def _assumption_lines(
    inputs: TcoInputs, util: float, cap: _Capital, gpu: Gpu, years: float, t: TcoFigures
) -> tuple[str, ...]:
    """What the figures assumed, each with where it came from (given, or its source)."""
    tariff = inputs.electricity_usd_kwh or t.power["electricity_usd_kwh"].value
    pue = inputs.pue or t.power["pue"].value
    util_from = "given" if inputs.utilization is not None else "the guide target, field-guide-002"
    tariff_from = "given" if inputs.electricity_usd_kwh else t.power["electricity_usd_kwh"].source
    colo = t.space["colocation_usd_per_kw_month"]
    _, ops_basis = _operations(inputs, t, cap.capex - cap.residual, years)
    return (
        f"utilisation {util:.0%} ({util_from})",
        f"electricity ${tariff:g}/kWh ({tariff_from})",
        f"PUE {pue:g} ({'given' if inputs.pue else t.power['pue'].source})",
        f"amortised over {years:g} years; resale {cap.residual / cap.gpus_usd:.0%} of the GPU price "
        f"({t.hardware['residual_value_fraction'].source})",
        f"server without GPUs ${cap.server_each:,.0f} "
        f"({cap.server_kind}; {t.hardware['server_8gpu_sxm_usd'].source})",
        f"colocation ${colo.value:g}/kW-month ({colo.source})",
        f"operations (staff and maintenance, one category): {ops_basis}",
    )


def _buy_rent(
    knowledge: Knowledge,
    gpu: Gpu,
    n: int,
    inputs: TcoInputs,
    util: float,
    total: float,
    years: float,
    power_year: float,
    capex: float,
    running_month: float,
) -> BuyRent:
    from advisor.search.cost import best_offer, node_size_for, usable_offers

    offers = usable_offers(knowledge, gpu, Constraints())
    choice = best_offer(offers, n, node_size_for(gpu, offers)) if offers else None
    hours_month = inputs.gpu_hours_per_month or util * 730.0 * n
    own_month = total / (years * 12)
    if choice is None:
        return BuyRent(
            cloud="no on-demand offer of this GPU in the price catalogue",
            cloud_usd_per_gpu_hour=None,
            gpu_hours_per_month=hours_month,
            own_usd_per_month=round(own_month, 2),
            cloud_usd_per_month=None,
            breakeven_months=None,
            breakeven_utilization=None,
            verdict="no cloud price to compare with",
            capex_usd=round(capex, 2),
            running_usd_per_month=round(running_month, 2),
        )
    rate = choice.usd_per_hour / n  # whole instances are billed: the rate per GPU the plan uses
    cloud_month = rate * hours_month
    power_per_gpu_hour = power_year / (n * HOURS_PER_YEAR * util)
    fixed_month = own_month - power_year / 12
    # Payback compares the gross purchase with what renting saves each month once the cluster is running: the
    # resale at the end of the period is not money in hand during it, so it is not netted into either side.
    margin = cloud_month - running_month
    months = capex / margin if margin > 0 else None
    u_star = fixed_month / (n * 730.0 * (rate - power_per_gpu_hour)) if rate > power_per_gpu_hour else None
    o = choice.offer
    return BuyRent(
        cloud=f"{o.provider} {o.instance} {o.pricing} (prices as of {o.date.isoformat()})",
        cloud_usd_per_gpu_hour=round(rate, 4),
        gpu_hours_per_month=round(hours_month, 1),
        own_usd_per_month=round(own_month, 2),
        cloud_usd_per_month=round(cloud_month, 2),
        breakeven_months=None if months is None else round(months, 1),
        breakeven_utilization=None if u_star is None else round(u_star, 4),
        verdict=_verdict(months, u_star, years, hours_month),
        capex_usd=round(capex, 2),
        running_usd_per_month=round(running_month, 2),
    )


def _verdict(months: float | None, u_star: float | None, years: float, hours_month: float) -> str:
    """Buy or rent in one sentence: the payback at this usage, and the utilisation where owning wins."""
    if months is not None and months <= years * 12:
        verdict = f"owning pays back in {months:.1f} months at {hours_month:,.0f} GPU-hours/month"
    else:
        verdict = "renting is cheaper over the amortisation period at this usage"
    if u_star is not None:
        verdict += (
            f"; owning wins above {min(u_star, 9.99):.0%} utilisation"
            if u_star <= 1
            else "; owning never wins, even at 100% utilisation"
        )
    return verdict


def _operations(inputs: TcoInputs, t: TcoFigures, base_usd: float, years: float) -> tuple[float, str]:
    """Operations over the period, one category: the user's staff figure, else the guide's 15% of base cost.

    The guide's cost_attribution charges maintenance = base_cost x 0.15 on the hardware cost a task uses, and
    its 'operations staff 15-20% of TCO' is the same category: charging both would count operations twice.
    """
    if inputs.staff_usd_year is not None:
        return inputs.staff_usd_year * years, (
            f"${inputs.staff_usd_year:,.0f}/yr given (staff and maintenance) x {years:g} years"
        )
    share = t.operations["maintenance_fraction_per_year"].value
    return share * base_usd, (
        f"the guide's {share:.0%} of the amortised hardware and network cost "
        f"(${base_usd:,.0f}); no sourced GPUs-per-engineer ratio exists (an engineer costs "
        f"${t.staff['engineer_usd_year'].value:,.0f}/yr)"
    )


def _staged(
    gpu: Gpu, n: int, t: TcoFigures, server_usd: float, network_per_gpu: float
) -> tuple[StagedStep, ...]:
    """The guide's staged purchase: its first share in whole servers (the nearest count, said so), then
    quarterly reviews; each step's cost is GPUs, their servers and their share of the fabric."""
    assert gpu.price is not None
    unit_usd = gpu.price.usd  # the closure below cannot see the narrowing above
    node = gpu.gpus_per_node
    share = t.operations["staged_first_purchase_fraction"].value
    servers = max(1, min(math.ceil(n / node), round(n * share / node)))
    first = min(n, servers * node)

    def cost(gpus: int) -> float:
        return round(gpus * (unit_usd + network_per_gpu) + math.ceil(gpus / node) * server_usd, 2)

    exact = (
        ""
        if abs(first - n * share) < 1e-9
        else (
            f" ({share:.0%} of {n} is {n * share:g} GPUs; "
            f"nearest whole servers: {servers} x {node} = {first}, {first / n:.1%})"
        )
    )
    steps = [
        StagedStep(month=0, gpus=first, usd=cost(first), action=f"buy {share:.0%} of the capacity{exact}")
    ]
    rest, month = n - first, 0
    interval = int(t.operations["staged_review_interval_months"].value)
    reviews = 3
    for i in range(reviews):
        if rest <= 0:
            break
        month += interval
        add = min(rest, math.ceil(rest / (reviews - i) / node) * node)
        rest -= add
        steps.append(
            StagedStep(
                month=month,
                gpus=add,
                usd=cost(add),
                action=f"review: add {add} if utilisation held >= "
                f"{t.operations['target_utilization'].value:.0%} and the model roadmap still fits "
                f"{gpu.id}",
            )
        )
    return tuple(steps)


def default_onprem_rate(knowledge: Knowledge, **overrides: float) -> Callable[[Gpu, int], float]:
    """$/hour of owning `count` GPUs (TCO per used GPU-hour x count), for ranking on-prem plans."""
    cache: dict[tuple[str, int], float] = {}

    def rate(gpu: Gpu, count: int) -> float:
        key = (gpu.id, count)
        if key not in cache:
            cache[key] = (
                tco(knowledge, TcoInputs(gpu=gpu.id, count=count, **overrides)).usd_per_gpu_hour * count
            )
        return cache[key]

    return rate
