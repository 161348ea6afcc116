"""Provides `gpu-advisor cost`: the field guide's formula on the user's numbers, its worked example corrected,
its cost table beside today's market, and the case-study scenario."""

from __future__ import annotations

import argparse

from advisor.catalog import Knowledge, load_knowledge
from advisor.cli.output import json_text
from advisor.question.errors import InputError
from advisor.question.records import dump
from advisor.search.cost import guide_cost


def _num(args: argparse.Namespace, name: str) -> float | None:
    """A number the user gave, already read and held to its bound by the field registry."""
    return getattr(args, "values", {}).get(name)


def _volatility(args: argparse.Namespace, knowledge: Knowledge) -> tuple[float, float, float, str]:
    given = _num(args, "volatility")
    if given is not None:
        return given, given, given, "given"
    a = knowledge.assumptions.cost
    fig = {
        "static": a["volatility_static"],
        "fluctuating": a["volatility_fluctuating"],
        "high": a["volatility_high"],
    }[args.demand or "static"]
    return fig.range[0], fig.value, fig.range[1], f"{args.demand or 'static'} demand ({fig.source})"


def user_cost(args: argparse.Namespace, knowledge: Knowledge) -> dict:
    """The guide's formula on the user's numbers, low/mid/high over the demand multiplier's range."""
    from advisor.catalog.storage import storage_price

    price, gpus, hours = (
        _num(args, "gpu_usd_hour"),
        _num(args, "cost_gpus"),
        _num(args, "hours"),
    )
    if price is None or gpus is None or hours is None:
        missing = [
            f for f, v in (("--gpu-usd-hour", price), ("--gpus", gpus), ("--hours", hours)) if v is None
        ]
        raise InputError(f"cost: give {', '.join(missing)} (or --guide-example, or --scenario NAME)")
    gb = _num(args, "storage_gb") or 0.0
    months = _num(args, "storage_months")
    months = hours / knowledge.assumptions.cost["hours_per_month"].value if months is None else months
    rate = _num(args, "storage_usd_gb_month")
    basis = "given"
    if rate is None:
        sp = storage_price(knowledge, args.provider or "aws", args.storage_kind or "object")
        rate, basis = sp.usd_per_gb_month, f"{sp.provider} {sp.name} [{sp.source}]"
    lo, mid, hi, vbasis = _volatility(args, knowledge)
    costs = [guide_cost(price, gpus, hours, v, gb, rate, months) for v in (lo, mid, hi)]
    return {
        "gpu_usd_per_hour": price,
        "gpus": gpus,
        "hours": hours,
        "volatility": [lo, mid, hi],
        "volatility_basis": vbasis,
        "storage_gb": gb,
        "storage_usd_per_gb_month": rate,
        "storage_basis": basis,
        "storage_months": months,
        "gpu_part": price * gpus * hours,
        "storage": rate * gb * months,
        "total": costs,
    }


def user_text(r: dict) -> str:
    """The user's cost, with each term."""
    lo, mid, hi = r["total"]
    v = r["volatility"]
    return "\n".join(
        [
            "cost = GPU $/h x GPUs x hours x demand multiplier + storage $/GB-month x GB x months (the "
            "guide's formula)",
            f"  GPUs:    ${r['gpu_usd_per_hour']:g}/h x {r['gpus']:g} x {r['hours']:g} h = "
            f"${r['gpu_part']:,.2f}",
            f"  demand:  x{v[1]:g} ({v[0]:g}-{v[2]:g}, {r['volatility_basis']})",
            f"  storage: ${r['storage_usd_per_gb_month']:g}/GB-month x {r['storage_gb']:,.0f} GB x "
            f"{r['storage_months']:.3g} months = ${r['storage']:,.2f} ({r['storage_basis']})",
            f"total: ${mid:,.2f}" + (f" (${lo:,.2f}-{hi:,.2f})" if hi != lo else ""),
        ]
    )


def example_text(knowledge: Knowledge) -> str:
    """The guide's worked example, its errors, the corrected result, and its cost table against today."""
    from advisor.answer.scenarios import cost_table, guide_example, guide_source

    g = guide_example(knowledge)
    i = g.inputs
    src = guide_source(knowledge)
    lines = (
        [
            f"The field guide's worked example [{src.ref}, section 5]:",
            f"  as printed: (${i['usd_per_gpu_hour']:g}/h x {i['gpus']:g} GPUs x {i['hours']:g} h) x "
            f"{i['volatility']:g} + (1 TB x $0.023/TB-month) = ${g.stated_gpu_part:.2f} x "
            f"{i['volatility']:g} + "
            f"$0.023 = ${g.stated_total:.2f}",
            "  errors:",
        ]
        + [f"    - {e}" for e in g.errors]
        + [
            f"  corrected: {i['usd_per_gpu_hour']:g} x {i['gpus']:g} x {i['hours']:g} = {g.gpu_part:.2f}; "
            f"x {i['volatility']:g} = {g.gpu_part_with_volatility:.2f}; + 1,000 GB x $0.023 x 1 month = "
            f"{g.storage:.2f}; total ${g.total:.2f}",
            "",
            "The guide's cost table (USD/month) beside today's cheapest fresh on-demand offer:",
        ]
    )
    for r in cost_table(knowledge):
        market = (
            f"today {r.market} ({r.base_usd_per_gpu_hour / r.market_usd_per_gpu_hour:.1f}x below the guide)"
            if r.market_usd_per_gpu_hour
            else f"today: {r.market}"
        )
        lines.append(
            f"  {r.name}: {r.gpus} x {r.gpu}, ${r.base_usd_month:,.0f}/month = "
            f"${r.base_usd_per_gpu_hour:.2f}/GPU-h; range ${r.range[0]:,.0f}-{r.range[1]:,.0f}"
            + (f" (the guide prints {r.stated_range[1]:,.0f}: {r.error})" if r.error else "")
            + f"; {market}"
        )
    return "\n".join(lines)


def scenario_text(knowledge: Knowledge, name: str, efficiency: object) -> str:
    """The case study as the guide states it, then today's prices and the model."""
    from advisor.answer.scenarios import SCENARIOS, case_study

    if name not in SCENARIOS:
        raise InputError(f"--scenario {name!r}: unknown; accepted: {', '.join(SCENARIOS)}")
    c = case_study(knowledge, efficiency)
    s = c.stated
    lines = [
        f"{s['title']} (field guide, section 4)",
        f"  as stated: {s['gpus']} x A100 ({s['provider'].upper()} EC2), {s['hours_before']} h -> "
        f"{s['hours_after']} h, ${s['cost_before_usd']:,} -> ${s['cost_after_usd']:,} per run, "
        f"{s['cache_tb']} TB SSD cache; shares training {s['share_training']:.0%}, cache "
        f"{s['share_cache']:.0%}, "
        f"monitoring {s['share_monitoring']:.0%}",
        f"  implied: ${c.implied_usd_per_gpu_hour_after:.2f}/GPU-h after, "
        f"${c.implied_usd_per_gpu_hour_before:.2f}/GPU-h before",
        f"  today: {c.offer}; {s['hours_after']} h ${c.today_usd_after or 0:,.0f}, {s['hours_before']} h "
        f"${c.today_usd_before or 0:,.0f}; cache {c.cache_storage} ${c.cache_usd_run:,.0f} per run, "
        f"${c.cache_usd_month:,.0f} per month",
    ]
    if c.model_images_per_s:
        lines.append(
            f"  model: ResNet-50 on {s['gpus']} x {s['gpu']} at {c.model_images_per_s:,.0f} images/s (P50): "
            f"{c.model_images_after:,.0f} images in {s['hours_after']} h"
        )
    lines += ["Differences:"] + [f"  - {d}" for d in c.differences]
    lines.append(
        f"Run it: gpu-advisor recommend --model resnet50 --gpu {s['gpu']} --max-gpus {s['gpus']} "
        f"--samples {round(c.model_images_after or 0):d} --dataset-gb {s['cache_tb'] * 1000:g}"
    )
    return "\n".join(lines)


def cost_cli(args: argparse.Namespace) -> int:
    """`gpu-advisor cost`."""
    knowledge = load_knowledge()
    fmt = args.format or "text"
    if args.scenario:
        from advisor.answer.scenarios import case_study
        from advisor.learned.efficiency.select import efficiency_model

        eff = efficiency_model(knowledge, prior=False)
        if fmt == "json":
            scenario_text(knowledge, args.scenario, eff)  # validates the name
            print(json_text(dump(case_study(knowledge, eff), mode="json"), indent=2))
        else:
            print(scenario_text(knowledge, args.scenario, eff))
        return 0
    if args.guide_example:
        from advisor.answer.scenarios import cost_table, guide_example

        if fmt == "json":
            print(
                json_text(
                    {
                        "example": dump(guide_example(knowledge), mode="json"),
                        "cost_table": [dump(r, mode="json") for r in cost_table(knowledge)],
                    },
                    indent=2,
                )
            )
        else:
            print(example_text(knowledge))
        return 0
    result = user_cost(args, knowledge)
    print(json_text(result, indent=2) if fmt == "json" else user_text(result))
    return 0
