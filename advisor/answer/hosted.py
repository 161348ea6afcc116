"""Provides hosted_lines(): a serving plan beside the hosted APIs of the same model (dated, sourced prices)
and the GPUs owned: the cost per million output tokens of each, and the monthly volume where each becomes
the cheaper."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.catalog.dates import today
from advisor.catalog.hosted_prices import ApiPrice, api_prices, load_hosted
from advisor.question.errors import InputError

if TYPE_CHECKING:
    from advisor.answer.scored import Scored
    from advisor.search.context import Context

SHOWN = 4
"""Hosts listed by name (the cheapest; the range covers all)."""


def _volume(m_tokens: float, job_output: int, month_h: float) -> str:
    """Millions of output tokens a month, with the request rate that makes them."""
    rps = m_tokens * 1e6 / (job_output * 3600.0 * month_h)
    return f"{m_tokens:,.0f}M output tokens a month ({rps:,.2f} req/s)"


def hosted_lines(ctx: Context, s: Scored) -> list[str]:
    """Hosted APIs, rent and buy for a serving plan: costs per million output tokens and the crossovers."""
    job, srv = ctx.job, s.cand.serving
    if job.training or srv is None or not job.requests_per_s or s.hours.p50 <= 0:
        return []
    month = s.hours.p50
    apis = api_prices(ctx.knowledge, job.model_id, today())
    if not apis:
        return [f"hosted APIs: no stored price for {job.model_id} (knowledge/hosted_api_prices.toml)"]
    per = [(a, a.per_m_output(job.prompt_tokens, job.output_tokens)) for a in apis]
    per.sort(key=lambda x: x[1])
    cheapest, p = per[0]
    lines = [_api_line(ctx, job, per)]
    replica_month = s.usd_per_hour * month / max(1, srv.replicas)
    cap_m = srv.max_rate * job.output_tokens * 3600.0 * month / 1e6  # one replica within the targets
    load_m = job.requests_per_s * job.output_tokens * 3600.0 * month / 1e6
    what = "renting" if s.price is not None else "owning (this plan's TCO)"
    lines.append(
        f"{what} vs API: this deployment costs ${s.cost.mid / load_m:,.2f} per M output tokens at "
        f"{job.requests_per_s:g} req/s (${s.cost.mid:,.0f} a month), the cheapest API ({cheapest.provider}) "
        f"${p * load_m:,.0f} a month at that volume; "
        + _crossover(what.split(" ")[0], replica_month, cap_m, p, job.output_tokens, month)
    )
    own = _owned_month(ctx, s, month)
    if own is not None and s.price is not None:
        cheaper = "cheaper" if own < replica_month else "dearer"
        lines.append(
            f"buy vs rent and API: owning one replica's {s.cand.layout.tp * s.cand.layout.pp} GPU(s) costs "
            f"${own:,.0f} a month (TCO, always on) against ${replica_month:,.0f} rented: {cheaper} than "
            f"renting at any volume; " + _crossover("owning", own, cap_m, p, job.output_tokens, month)
        )
    return lines


def _api_line(ctx: Context, job: object, per: list[tuple[ApiPrice, float]]) -> str:
    src = load_hosted(ctx.knowledge).sources[per[0][0].source]
    hosts = ", ".join(f"{a.provider} ${a.usd_per_m_input:g}/${a.usd_per_m_output:g}" for a, _ in per[:SHOWN])
    lo, hi = per[0][1], per[-1][1]
    prompt, output = getattr(job, "prompt_tokens", 0), getattr(job, "output_tokens", 1)
    date = src.date.isoformat() if src.date else "undated"
    name = getattr(job, "model_name", "")
    return (
        f"hosted APIs for {name}: {len(per)} current prices, USD per M input/output tokens ({src.ref}, as "
        f"of {date}): {hosts}; at {prompt}:{output} prompt:output tokens "
        f"${lo:,.2f}-{hi:,.2f} per M output tokens"
    )


def _crossover(who: str, replica_month: float, cap_m: float, p: float, output: int, month: float) -> str:
    """Where one replica of the deployment becomes cheaper than the API at price p per M output tokens."""
    if cap_m <= 0 or p <= 0:
        return "no crossover can be computed"
    full = replica_month / cap_m
    if full >= p:
        return (
            f"{who} is never the cheaper: even a fully loaded replica costs ${full:,.2f} per M output tokens "
            f"(it takes at most {_volume(cap_m, output, month)})"
        )
    return f"{who} is the cheaper above {_volume(replica_month / p, output, month)}, on one replica"


def _owned_month(ctx: Context, s: Scored, month: float) -> float | None:
    """One replica's GPUs owned, always on: the TCO per GPU-hour at full use x GPUs x the month (None when
    the GPU has no sourced purchase price)."""
    from advisor.ops.tco import default_onprem_rate  # the TCO model only for a serving answer

    gpu = s.cand.gpu
    if gpu.price is None:
        return None
    try:
        rate = default_onprem_rate(ctx.knowledge, utilization=1.0)
        return rate(gpu, s.cand.layout.tp * s.cand.layout.pp) * month
    except InputError:
        return None
