"""Provides the text rendering of a TCO answer (the CLI layer: the core returns TcoOut, this prints it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.cli.hints import assumed_text
from advisor.cli.output import table

if TYPE_CHECKING:
    from advisor.ops.tco import TcoOut


def tco_text(r: TcoOut) -> str:
    """TCO breakdown, shares against the guide, attribution, buy versus rent, options and staging."""
    i = r.inputs
    lines = [f"TCO of {i.count} x {r.gpu_name} ({r.nodes} server(s)) over {i.years:g} years", ""]
    rows = [
        [
            c.component,
            f"${c.usd:,.0f}",
            f"{c.share:.1%}",
            "" if c.typical_low is None else f"{c.typical_low:.0%}-{c.typical_high:.0%}",
            c.flag,
        ]
        for c in r.lines
    ]
    rows.append(["total", f"${r.total_usd:,.0f}", "100%", "", ""])
    lines.append(table(["component", "cost", "share", "guide", ""], rows, right=(1, 2)))
    lines += ["", f"${r.per_year_usd:,.0f} per year; ${r.usd_per_gpu_hour:.2f} per used GPU-hour"]
    lines.append("per GPU-hour: " + ", ".join(f"{k} ${v:.2f}" for k, v in r.attribution_per_gpu_hour.items()))
    b = r.buy_rent
    lines += ["", "Buy or rent:", f"  cloud: {b.cloud}"]
    if b.cloud_usd_per_month is not None:
        lines.append(
            f"  {b.gpu_hours_per_month:,.0f} GPU-hours/month: own ${b.own_usd_per_month:,.0f}/month, "
            f"rent ${b.cloud_usd_per_month:,.0f}/month at ${b.cloud_usd_per_gpu_hour:.2f}/GPU-h"
        )
        if b.breakeven_months is not None:
            lines.append(
                f"  payback: ${b.capex_usd:,.0f} bought / (rent ${b.cloud_usd_per_month:,.0f} - running "
                f"${b.running_usd_per_month:,.0f} power, operations and space)/month "
                f"= {b.breakeven_months:.1f} months"
            )
    lines.append(f"  {b.verdict}")
    lines += ["", "Financing:"]
    for o in r.options:
        cost = "-" if o.total_usd is None else f"${o.initial_usd:,.0f} first, ${o.total_usd:,.0f} in all"
        lines.append(f"  {o.name}: {cost}; expansion cost {o.expansion_cost}, lock-in {o.lock_in}. {o.note}")
    lines += ["", "Staged purchase:"] + [
        f"  month {s.month}: {s.gpus} GPUs, ${s.usd:,.0f}: {s.action}" for s in r.staged
    ]
    lines += ["", "Components:"] + [f"  {c.component}: {c.basis} [{c.source}]" for c in r.lines]
    lines += (
        ["Assumptions:"] + [f"  {a}" for a in r.assumptions] + [f"note: {assumed_text(n)}" for n in r.notes]
    )
    return "\n".join(lines)
