"""Provides the fleet planner's terminal text: the plan and the validation figures."""

from __future__ import annotations

import math

from advisor.cli.output import table
from advisor.fleet.plan import FleetPlan
from advisor.fleet.stats import Ci
from advisor.fleet.validation import Validation


def _num(x: float, unit: str) -> str:
    if math.isnan(x):
        return "-"
    if unit == "fraction":
        return f"{x:.1%}"
    if unit == "per GPU-month":
        return f"{x:.2%}"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.2f}"


def ci_text(ci: Ci, unit: str) -> str:
    """'71.2% [69.0-73.4%]'."""
    if math.isnan(ci.mean):
        return "-"
    return f"{_num(ci.mean, unit)} [{_num(ci.low, unit)}-{_num(ci.high, unit)}]"


def _jobs(plan: FleetPlan) -> str:
    rows = []
    for j in plan.jobs:
        rate = f"{j.requests_per_s:g} req/s" if j.requests_per_s else f"{j.per_week:g}/week"
        rows.append(
            (
                j.name,
                j.owner,
                j.priority,
                f"{j.gpu} x{j.gpus}",
                f"{j.hours:,.1f}" if j.hours else "-",
                rate,
                f"{j.deadline_hours:g} h" if j.deadline_hours else "-",
                j.layout,
            )
        )
    return table(
        ("workload", "owner", "class", "GPUs per job/replica", "hours", "arrives", "deadline", "layout"),
        rows,
        right=(4,),
    )


def _options(plan: FleetPlan) -> str:
    rows = [
        (("> " if o.chosen else "  ") + o.label, o.gpus, f"${o.tco_usd:,.0f}", f"{o.utilisation:.0%}")
        for o in plan.options
    ]
    # The screening run's TCO (a shorter simulation), so the chosen row differs a little from the headline's
    head = ("design (met the KPIs in screening)", "GPUs", "TCO in screening", "utilisation")
    return table(head, rows, right=(1, 2, 3))


def _kpis(plan: FleetPlan) -> str:
    rows = [
        (
            k.name,
            ci_text(k.value, k.unit) + ("" if k.unit in ("fraction", "per GPU-month") else f" {k.unit}"),
            k.target,
            k.verdict.upper() if k.verdict != "-" else "-",
        )
        for k in plan.kpis
    ]
    return table(("KPI (mean [95% interval])", "value", "guide's target", ""), rows)


def _waits(plan: FleetPlan) -> str:
    rows = [
        (cls, ci_text(w["p50_min"], "min"), ci_text(w["p95_min"], "min")) for cls, w in plan.waits.items()
    ]
    return table(("class", "wait P50, min", "wait P95, min"), rows)


def _costs(plan: FleetPlan) -> str:
    rows = [
        (
            a.owner,
            a.cls,
            f"{a.gpu_hours:,.0f}",
            f"${a.hardware_usd:,.0f}",
            f"${a.power_usd:,.0f}",
            f"${a.maintenance_usd:,.0f}",
            f"${a.space_usd:,.0f}",
            f"${a.total_usd:,.0f}",
        )
        for a in plan.attribution
    ]
    return table(
        ("owner", "class", "GPU-hours", "hardware", "power", "maintenance 15%", "space", "total"),
        rows,
        right=(2, 3, 4, 5, 6, 7),
    )


def render_plan(plan: FleetPlan) -> str:
    """The whole plan as text."""
    name = plan.portfolio.get("name", "portfolio")
    b, r, res = plan.buying, plan.ratio, plan.reserve
    years = b.years
    lines = [
        f"Fleet plan for {name}: {plan.chosen}, TCO ${plan.tco_usd:,.0f} over {years:g} years "
        f"(simulated {plan.weeks:g} weeks x {plan.replications} replications)",
        "",
        _jobs(plan),
        "",
        _options(plan),
        "",
        _kpis(plan),
        "",
        _waits(plan),
        "",
        f"train:inference GPU-hours {r['implied']} (the guide's {r['guide']})"
        + (f"; capacity {r['capacity']}" if "capacity" in r else ""),
        f"elastic reserve needed {res['needed_fraction']:.0%} above the mean load of "
        f"{res['mean_load_gpus']:,.1f} GPUs "
        f"(the guide's {res['guide_fraction']:.0%}: {res['verdict']})",
        "",
        f"Cost per owner over {years:g} years (the guide's hardware + power + 15% maintenance, "
        "plus space and idle):",
        _costs(plan),
        "",
        f"On-prem ${b.onprem_usd:,.0f} against cloud "
        + (f"${b.cloud_usd:,.0f}" if b.cloud_usd is not None else "(no price)")
        + f" for the same busy GPU-hours ({b.cloud_basis})",
        f"Staged purchase ${b.staged_usd:,.0f} against all at once ${b.all_at_once_usd:,.0f}: "
        f"{b.staged_note}",
        *("  " + s for s in b.staged_steps),
        "",
        "Notes:",
        *("- " + n for n in plan.notes),
    ]
    return "\n".join(lines)


def render_validation(v: Validation) -> str:
    """Closed-form errors and the trace replay."""
    rows = [
        (c.name, f"{c.simulated:.4f}", f"{c.exact:.4f}", f"{c.error:.2%}", f"{c.jobs:,}") for c in v.checks
    ]
    out = [table(("check", "simulated", "closed form", "error", "jobs"), rows, right=(1, 2, 3, 4)), ""]
    rec, sim = v.trace["recorded"], v.trace["simulated"]
    keys = ("pods", "zero_delay_share", "p50_s", "p90_s", "p99_s", "mean_s", "allocation")
    out.append(table(("trace replay", "recorded", "simulated"), [(k, rec[k], sim[k]) for k in keys]))
    out.append(f"trace: {v.trace_source}")
    if "method" in v.trace:
        out.append(f"method: {v.trace['method']}")
    if "gap" in v.trace:
        out.append(f"gap: {v.trace['gap']}")
    return "\n".join(out)
