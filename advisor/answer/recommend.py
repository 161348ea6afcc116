"""Provides recommend(): every fitting plan priced and timed, ranked by objective, with front and why-nots."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from advisor.answer.caveats import with_caveats
from advisor.answer.configuration import (
    alternative_out,
    configuration,
    goodput_out,
    layout_out,
    memory_out,
    serving_configuration,
)
from advisor.answer.report import (
    FrontPoint,
    JobOut,
    PlanOut,
    PriceOut,
    Report,
    RuleOut,
    Suggestion,
    Throughput,
)
from advisor.answer.risk import first_reason, risk_aware, safer_layout
from advisor.answer.scored import Scored
from advisor.answer.step_out import StepBreakdown, step_breakdown
from advisor.catalog.assumptions import Assumptions
from advisor.catalog.gpus import Gpu
from advisor.catalog.loader import Knowledge
from advisor.catalog.rules import Firing, evaluate
from advisor.job.config_check import check_config
from advisor.job.inputs import MAX_COUNT, Constraints, Workload
from advisor.job.resolve import Job, resolve_job
from advisor.learned.efficiency import EfficiencyModel, Interval, PriorEfficiency
from advisor.physics.goodput import goodput
from advisor.physics.speed import peak_flops
from advisor.question.assumed import Assumed
from advisor.question.errors import InputError
from advisor.question.units import fmt_hours
from advisor.search.candidates import Candidate, Miss, efficiency_query, resolve_precision
from advisor.search.context import Context
from advisor.search.cost import (
    PriceChoice,
    best_offer,
    node_size_for,
    plan_cost,
    price_notes,
    spot_overhead,
    usable_offers,
)
from advisor.search.links import offer_groups, with_link
from advisor.search.training import layout_margin, preferred, search_training, with_rules

if TYPE_CHECKING:  # the operations modules load only when a plan needs them (the serving records likewise)
    from advisor.answer.serving_out import ServingOut
    from advisor.ops.launch import LaunchArtefacts
    from advisor.ops.plan import OpsPlan
    from advisor.ops.tco import TcoOut

OnPremRate = Callable[[Gpu, int], float]
LIMIT_FACTS = ("constraints.has_budget", "constraints.has_deadline")
"""The rule facts that read the budget or the deadline (a rule testing one makes a search depend on them)."""
SENSITIVITY_POOL = 20
"""Plans re-ranked when asking what would change the first place: a plan further down cannot take it by a
change of one input within the ranges searched (each is at least 2x away on the objective)."""


def select_gpus(knowledge: Knowledge, constraints: Constraints) -> list[Gpu]:
    """The GPUs the user allows (all when none are named)."""
    if not constraints.gpus:
        return list(knowledge.gpus)
    return [knowledge.gpu(name) for name in constraints.gpus]


def _score(
    ctx: Context,
    cand: Candidate,
    eff: Interval,
    offers_by_gpu: dict[str, list],
    onprem_rate: OnPremRate | None,
    failure: float = 1.0,
) -> Scored | Miss:
    """A candidate timed and priced; `failure` scales the sourced failure rate (what-would-change)."""
    a = _with_failure_rate(ctx.knowledge.assumptions, failure)
    job, lay, c = ctx.job, cand.layout, ctx.constraints
    price = None
    if c.deployment == "cloud":
        price = best_offer(offers_by_gpu[cand.offer_group or cand.gpu.id], lay.count, lay.node_size)
        if price is None:
            return Miss(
                cand.gpu.id,
                lay.count,
                "price",
                f"no {c.pricing} instance of {lay.node_size} GPUs in the price catalogue",
                3.0,
            )
        usd_per_hour = price.usd_per_hour
    else:
        assert onprem_rate is not None
        usd_per_hour = onprem_rate(cand.gpu, lay.count)
    bonus = sum(f.score for f in cand.firings if f.kind == "preference")
    if job.training:
        assert cand.step is not None
        sol = cand.sol_items_per_s
        throughput = eff.scaled(sol)
        good = goodput(job, lay.count, a)
        useful = throughput.inverted(job.total_items / 3600.0)
        # Interruptions at this scale: checkpoints, lost work and restarts stretch the run (goodput).
        run = Interval(*(good.wall_hours(h) for h in (useful.p10, useful.p50, useful.p90)))
        good = good.over(useful.p50)
        lo, mid, hi = (
            a.defaults["startup_overhead_h"].range[0],
            a.defaults["startup_overhead_h"].value,
            a.defaults["startup_overhead_h"].range[1],
        )
        hours = Interval(run.p10 + lo, run.p50 + mid, run.p90 + hi)
        notes: list[str] = []
        if good.fraction < 0.995:
            notes.append(
                f"goodput {good.fraction:.1%}: {good.interruptions:.1f} expected interruptions "
                f"(one every {good.mtbf_h:,.1f} h), checkpoint every {good.interval_h * 60:,.0f} min"
            )
        if c.pricing == "spot":
            instances = price.instances if price else max(1, lay.nodes)
            lo, mid, hi = spot_overhead(hours.p50, instances, a)
            hours = Interval(hours.p10 * (1 + lo), hours.p50 * (1 + mid), hours.p90 * (1 + hi))
            notes.append(f"spot: {mid:.1%} expected time lost to preemptions ({lo:.1%}-{hi:.1%})")
        cost = plan_cost((hours.p10, hours.p50, hours.p90), usd_per_hour, c, a, job.dataset_gb)
        return Scored(
            cand, eff, hours, throughput, cost, price, usd_per_hour, bonus, notes=notes, goodput=good
        )
    return _score_serving(ctx, cand, price, usd_per_hour, bonus)


def _with_failure_rate(a: Assumptions, factor: float) -> Assumptions:
    """The assumptions with the interruptions per GPU-hour scaled by factor (the same ones at 1)."""
    if factor == 1.0:
        return a
    fig = a.goodput["interruptions_per_gpu_hour"]
    rate = dataclasses.replace(fig, value=fig.value * factor)
    return dataclasses.replace(a, goodput={**a.goodput, "interruptions_per_gpu_hour": rate})


def _score_serving(
    ctx: Context, cand: Candidate, price: PriceChoice | None, usd_per_hour: float, bonus: float
) -> Scored:
    """A serving plan: a month of service at the offered load, latency at the SLO percentile."""
    from advisor.answer.serving_answer import serving_interval  # serving modules: only for a serving answer

    a, job, c = ctx.knowledge.assumptions, ctx.job, ctx.constraints
    served = cand.serving
    assert served is not None
    month = a.cost["hours_per_month"].value
    ttft = serving_interval(served, "ttft", served.ttft_s * 1000.0)
    tpot = serving_interval(served, "tpot", served.tpot_s * 1000.0)
    latency = Interval(
        ttft.p10 / 1000.0 + job.output_tokens * tpot.p10 / 1000.0,
        ttft.p50 / 1000.0 + job.output_tokens * tpot.p50 / 1000.0,
        ttft.p90 / 1000.0 + job.output_tokens * tpot.p90 / 1000.0,
    )
    tokens = serving_interval(served, "throughput", served.max_rate * served.replicas * job.output_tokens)
    share = served.figures.sat.output_tok_s / served.figures.sol.output_tok_s
    eff = serving_interval(served, "throughput", share)
    eff = Interval(min(1.0, eff.p10), min(1.0, eff.p50), min(1.0, eff.p90))
    cost = plan_cost((month, month, month), usd_per_hour, c, a, job.dataset_gb)
    return Scored(
        cand,
        eff,
        Interval(month, month, month),
        tokens,
        cost,
        price,
        usd_per_hour,
        bonus,
        latency_s=latency,
        ttft_ms=ttft,
        tpot_ms=tpot,
        capacity_rps=served.figures.sat.requests_s * served.replicas,
    )


def _limits(ctx: Context, s: Scored, constraints: Constraints | None = None) -> Miss | None:
    """Why a scored plan breaks the deadline or the budget (`constraints`' where given), or None."""
    c = constraints if constraints is not None else ctx.constraints
    a = ctx.knowledge.assumptions
    gpu, count = s.cand.gpu.id, s.cand.layout.count
    if c.deadline_hours is not None and ctx.job.training and s.hours.p90 > c.deadline_hours:
        return Miss(
            gpu,
            count,
            "deadline",
            f"P90 {s.hours.p90:,.0f} h > deadline {c.deadline_hours:g} h",
            s.hours.p90 / c.deadline_hours,
        )
    if c.budget_usd is not None:
        spend = s.cost.high
        if c.budget_period == "month" and ctx.job.training:
            spend = s.cost.high / max(1.0, s.hours.p90 / a.cost["hours_per_month"].value)
        if spend > c.budget_usd:
            what = "per month" if c.budget_period == "month" or not ctx.job.training else ""
            return Miss(
                gpu,
                count,
                "budget",
                f"P90 cost ${spend:,.0f}{' ' + what if what else ''} > budget ${c.budget_usd:,.0f}",
                spend / c.budget_usd,
            )
    return None


def _rank(ctx: Context, feasible: list[Scored], *, aware: bool = True) -> list[Scored]:
    """The plans by objective, then (aware) each moved below the safer or, balanced, smaller plans it does not
    beat by more than the model's error (advisor/answer/risk.py)."""
    ranked = _by_objective(ctx, feasible)
    if aware:
        ranked = risk_aware(ranked, ctx.constraints.objective, layout_margin(ctx.efficiency))
    # One plan per GPU, count and shape: the same plan searched on several offer groups (search/links.py)
    # keeps its best-ranked pricing, so ranks count plans, not searches.
    first: dict[tuple[str, int, int], Scored] = {}
    for s in ranked:
        first.setdefault(s.key, s)
    return list(first.values())


def _by_objective(ctx: Context, feasible: list[Scored]) -> list[Scored]:
    objective = ctx.constraints.objective
    if not feasible:
        return []
    min_cost = min(s.cost.mid for s in feasible) or 1e-9
    min_time = min(s.time_key for s in feasible) or 1e-9

    def key(s: Scored) -> tuple[float, float, int, str]:
        cost = math.log(max(s.cost.mid, 1e-9) / min_cost)
        time = math.log(max(s.time_key, 1e-12) / min_time)
        primary = {"cheapest": cost + 1e-3 * time, "fastest": time + 1e-3 * cost, "balanced": cost + time}[
            objective
        ]
        return primary - s.bonus, s.cost.mid, s.cand.layout.count, s.cand.gpu.id

    return sorted(feasible, key=key)


def pareto_front(scored: list[Scored]) -> list[Scored]:
    """Plans no other plan beats on both cost and time, cheapest first."""
    front: list[Scored] = []
    for s in sorted(scored, key=lambda s: (s.cost.mid, s.time_key)):
        if not front or s.time_key < front[-1].time_key:
            front.append(s)
    return front


# Why-not lines rank the miss that says most about a GPU: a missed deadline or budget first, the price last.
_MISS_PRIORITY = {
    "deadline": 0,
    "budget": 0,
    "latency": 1,
    "memory": 2,
    "scale": 3,
    "constraint": 3,
    "price": 5,
    "precision": 6,
}

# A why-not line with its sort key; a line is worded only once it is among those shown: a memory miss words
# itself with a search (lazily).
_WhyLine = tuple[tuple[float, ...], str | Miss]


def _why_not(search: Search, ranked: list[Scored], top: list[Scored], limit: int = 10) -> list[str]:
    """One line for each GPU type not in the top plans (its best plan, or why none fits), and for the top
    GPU types the largest count that does not fit."""
    top_gpus = {s.cand.gpu.id for s in top}
    lines = _fewer_lines(search, top)
    behind = _best_behind(ranked, top_gpus)
    lines += _behind_lines(ranked, behind)
    shown = top_gpus | behind.keys()
    lines += [((2 + _MISS_PRIORITY[m.kind], m.rank, -m.count), m) for m in _telling_misses(search, shown)]
    return [x if isinstance(x, str) else x.line() for _, x in sorted(lines, key=lambda x: x[0])[:limit]]


def _fewer_lines(search: Search, top: list[Scored]) -> list[_WhyLine]:
    """Why not fewer of each chosen GPU: the largest count below the chosen ones that ran out of memory."""
    chosen = {(s.cand.gpu.id, s.cand.layout.count) for s in top}
    lines: list[_WhyLine] = []
    # In rank order, not the set's: lines of equal count keep that order, whatever the string hash seed.
    for gpu_id in dict.fromkeys(s.cand.gpu.id for s in top):
        smaller = [
            m
            for m in search.misses
            if m.gpu_id == gpu_id
            and m.kind == "memory"
            and m.count < min(c for g, c in chosen if g == gpu_id)
        ]
        if smaller:
            m = max(smaller, key=lambda m: m.count)
            lines.append(((0, m.count), m))
    return lines


def _best_behind(ranked: list[Scored], top_gpus: set[str]) -> dict[str, Scored]:
    """The best-ranked feasible plan of each GPU type that is not among the top plans."""
    best: dict[str, Scored] = {}
    for s in ranked:
        if s.cand.gpu.id not in top_gpus and s.cand.gpu.id not in best:
            best[s.cand.gpu.id] = s
    return best


def _behind_lines(ranked: list[Scored], behind: dict[str, Scored]) -> list[_WhyLine]:
    """For each GPU type that fits but ranks lower: its rank, time and cost."""
    position = {s.key: i + 1 for i, s in enumerate(ranked)}
    lines: list[_WhyLine] = []
    for gpu_id, s in behind.items():
        what = f"{s.hours.p50:,.1f} h" if s.latency_s is None else f"{s.latency_s.p50:.1f} s per request"
        text = (
            f"{gpu_id} x{s.cand.layout.count}: ranks #{position[s.key]} ({what}, ${s.cost.mid:,.0f}) "
            "behind the plans above"
        )
        lines.append(((1, position[s.key]), text))
    return lines


def _telling_misses(search: Search, shown: set[str]) -> list[Miss]:
    """For each GPU type with no plan at all, its most telling miss (the first one met on ties)."""
    by_gpu: dict[str, Miss] = {}
    for m in search.misses:
        if m.gpu_id in shown:
            continue
        best = by_gpu.get(m.gpu_id)
        if best is None or _tells_more(m, best):
            by_gpu[m.gpu_id] = m
    return list(by_gpu.values())


def _tells_more(m: Miss, best: Miss) -> bool:
    """Whether miss m says more than best: a higher-priority kind, or on the same kind the nearer miss of a
    deadline or budget, the smaller count over a limit on scale (the fewest GPUs it needs, not the widest
    shape tried), or the larger count of any other."""
    pm, pb = _MISS_PRIORITY[m.kind], _MISS_PRIORITY[best.kind]
    if pm != pb:
        return pm < pb
    if m.kind in ("deadline", "budget"):
        return m.rank < best.rank
    return m.count < best.count if m.kind == "scale" and best.kind == "scale" else m.count > best.count


def _plan_out(ctx: Context, s: Scored, rank: int, on_front: bool) -> PlanOut:
    """One scored plan as output: its figures, the reasons it was chosen, its rules and configuration."""
    cand, lay, mem = s.cand, s.cand.layout, s.cand.memory
    job = ctx.job
    fired = [f for f in cand.firings if f.kind != "constraint"]
    step, alternatives = _step_and_alternatives(s)
    unit = job.unit if job.training else "output tokens/s"
    return PlanOut(
        rank=rank,
        gpu=cand.gpu.id,
        gpu_name=cand.gpu.name,
        count=lay.count,
        nodes=lay.nodes,
        parallelism=lay.label() if job.training else serving_label(cand),
        precision=lay.precision,
        layout=layout_out(lay),
        memory_per_gpu_gb=round(mem.central_gb, 2),
        memory=memory_out(mem),
        throughput=Throughput(value=s.throughput.p50, p10=s.throughput.p10, p90=s.throughput.p90, unit=unit),
        step_time_s=step,
        efficiency=_shown_efficiency(s),
        bound=cand.step.bound if cand.step else (cand.serving.figures.bound if cand.serving else "compute"),
        hours=s.hours,
        cost_usd=s.cost,
        price=_price_out(s.price),
        reasons=tuple(_plan_reasons(job, s, fired)),
        rules=tuple(RuleOut(id=f.rule_id, kind=f.kind, message=f.message, source=f.source) for f in fired),
        advice=tuple(f.message for f in fired if f.kind == "advice"),
        serving=_serving_of(job, s),
        on_front=on_front,
        configuration=configuration(job, lay) if job.training else serving_configuration(job, lay),
        alternatives=alternatives,
        goodput=goodput_out(s.goodput) if s.goodput else None,
        step_breakdown=_breakdown(s, step),
    )


def _shown_efficiency(s: Scored) -> Interval:
    """The plan's efficiency against its speed of light (a composed step's residual scaled by its share)."""
    step = s.cand.step
    if step is None or step.ops is None:
        return s.eff
    return s.eff.scaled(step.sol_s / step.total_s)


def _breakdown(s: Scored, step: Interval | None) -> StepBreakdown | None:
    """A training plan's P50 step by operation class, when the step was composed from measured operations."""
    ops = s.cand.step.ops if s.cand.step is not None else None
    if ops is None or step is None:
        return None
    return step_breakdown(ops, step.p50, "the learned residual (knowledge/efficiency_model.json)")


def _plan_reasons(job: Job, s: Scored, fired: list[Firing]) -> list[str]:
    """Why a plan: its memory, its time (or serving latency), its price, its notes and the preferences met."""
    cand, mem = s.cand, s.cand.memory
    # A serving engine's allocation has no error band: no range to show.
    band = "" if round(mem.low_gb, 1) == round(mem.high_gb, 1) else f" ({mem.low_gb:.1f}-{mem.high_gb:.1f})"
    reasons = [
        f"{mem.verdict}: {mem.central_gb:.1f} GB{band} of {mem.usable_gb:.1f} GB usable per GPU "
        f"(largest: {mem.dominant})"
    ]
    if job.training:
        reasons.append(
            f"P50 {fmt_hours(s.hours.p50)} (P10-P90 {fmt_hours(s.hours.p10)}-{fmt_hours(s.hours.p90)}) "
            f"at {s.eff.p50:.0%} of speed of light, {cand.step.bound if cand.step else 'compute'} bound"
        )
    else:
        assert s.ttft_ms is not None and s.tpot_ms is not None and cand.serving is not None
        from advisor.answer.serving_answer import serving_reason

        reasons.append(serving_reason(job, cand.serving, s.ttft_ms, s.tpot_ms))
    if s.price is not None:
        o = s.price.offer
        host = "" if o.includes_host else " (GPU only, host VM extra)"
        reasons.append(
            f"{o.provider} {o.instance} x{s.price.instances} at ${o.usd_per_gpu_hour:.2f}/GPU-h "
            f"{o.pricing}{host}, prices as of {o.date.isoformat()}"
        )
    else:
        reasons.append(f"on-prem at ${s.usd_per_hour / cand.layout.count:.2f}/GPU-h (TCO, amortised)")
    reasons += s.notes + _serving_plan_notes(job, s)
    reasons += [
        f"preference {f.rule_id}: {f.message} ({f.score:+g})" for f in fired if f.kind == "preference"
    ]
    return reasons


def _price_out(price: PriceChoice | None) -> PriceOut | None:
    """The cloud offer a plan is priced on, as output (None on-prem)."""
    if price is None:
        return None
    o = price.offer
    return PriceOut(
        provider=o.provider,
        region=o.region,
        instance=o.instance,
        pricing=o.pricing,
        usd_per_gpu_hour=round(o.usd_per_gpu_hour, 4),
        usd_per_hour=round(price.usd_per_hour, 4),
        instances=price.instances,
        billed_gpus=price.billed_gpus,
        date=o.date,
        source=o.source,
        includes_host=o.includes_host,
        note=o.note,
    )


def _step_and_alternatives(s: Scored) -> tuple[Interval | None, tuple]:
    """A training plan's step time and its runner-up layouts, each timed against it (none for serving)."""
    cand = s.cand
    if cand.step is None:
        return None, ()
    step = s.eff.inverted(cand.step.total_s)
    alternatives = tuple(
        alternative_out(c, e, step.p50, cand.step.items)
        for c, e in zip(cand.alternatives, s.alt_effs, strict=True)
    )
    return step, alternatives


def _serving_report_notes(ctx: Context, top: list[Scored]) -> list[str]:
    """A serving answer's notes (engine, its data, the percentile, the queueing), from the chosen plan."""
    if ctx.job.training:
        return []
    from advisor.answer.serving_answer import serving_notes

    return list(serving_notes(ctx, top[0].cand.serving if top else None))


def _serving_plan_notes(job: Job, s: Scored) -> list[str]:
    """A serving plan's own notes and its cost per million output tokens at the offered load."""
    srv = s.cand.serving
    if srv is None:
        return []
    from advisor.answer.serving_answer import cost_per_million_note

    return [*srv.notes, *cost_per_million_note(job, srv, s.cost, s.hours.p50)]


def _serving_of(job: Job, s: Scored) -> ServingOut | None:
    """The serving sizing of a plan as output (None for training)."""
    cand = s.cand
    if job.training or s.ttft_ms is None or s.tpot_ms is None or cand.serving is None:
        return None
    from advisor.answer.serving_answer import serving_out

    return serving_out(job, cand.serving, s.ttft_ms, s.tpot_ms, s.cost, s.hours.p50)


def serving_label(cand: Candidate) -> str:
    """'2 replicas x TP4', or '1 prefill + 3 decode replicas x TP4' for a disaggregated plan."""
    lay, srv = cand.layout, cand.serving
    if srv is None or not srv.prefill_replicas:
        return lay.serving_label()
    shape = lay.serving_label().split(" x ", 1)[1]
    return f"{srv.prefill_replicas} prefill + {srv.replicas - srv.prefill_replicas} decode replicas x {shape}"


@dataclass(slots=True, repr=False, eq=False)
class Search:
    """Everything one search produced, before the report is assembled."""

    ctx: Context
    scored: list[Scored]
    feasible: list[Scored]
    misses: list[Miss]
    job_firings: list[Firing]
    offers_by_gpu: dict[str, list] = field(default_factory=dict)
    onprem_rate: OnPremRate | None = None


def run_search(
    knowledge: Knowledge,
    workload: Workload,
    constraints: Constraints,
    efficiency: EfficiencyModel | None = None,
    onprem: dict[str, float] | None = None,
) -> Search:
    """Enumerate, fit, time, price and filter every plan (on-prem plans at their TCO per GPU-hour)."""
    job = resolve_job(knowledge, workload)
    check_config(job)
    model = efficiency or PriorEfficiency(knowledge.assumptions)
    ctx = Context(knowledge, job, constraints, model)
    onprem_rate: OnPremRate | None = None
    if constraints.deployment == "on-prem":
        from advisor.ops.tco import default_onprem_rate  # deferred: only on-prem runs need the TCO model

        onprem_rate = default_onprem_rate(knowledge, **(onprem or {}))
    job_firings = evaluate(ctx.rules_by_scope["job"], ctx.job_facts)
    misses: list[Miss] = []
    candidates: list[Candidate] = []
    offers_by_gpu: dict[str, list] = {}
    for gpu in select_gpus(knowledge, constraints):
        offers = usable_offers(knowledge, gpu, constraints) if constraints.deployment == "cloud" else []
        for group, link, sub, counts in offer_groups(ctx, gpu, offers):
            offers_by_gpu[group] = sub
            found, missed = _gpu_plans(with_link(ctx, link), gpu, sub, onprem_rate, counts)
            for cand in found:
                for c in (cand, *cand.alternatives):
                    c.link, c.offer_group = link, group
            candidates += found
            misses += missed
    scored = _scored(ctx, candidates, offers_by_gpu, onprem_rate, misses)
    feasible = []
    for s in scored:
        miss = _limits(ctx, s)
        if miss is None:
            feasible.append(s)
        else:
            misses.append(miss)
    return Search(ctx, scored, feasible, misses, job_firings, offers_by_gpu, onprem_rate)


def _gpu_plans(
    ctx: Context, gpu: Gpu, offers: list, onprem_rate: OnPremRate | None, counts: list[int] | None = None
) -> tuple[list[Candidate], list[Miss]]:
    """The candidate plans of one GPU type and its misses; one miss alone when the GPU is ruled out whole."""
    precision = resolve_precision(ctx.job.precision, gpu)
    ruled_out = _gpu_ruled_out(ctx, gpu, offers, onprem_rate)
    if ruled_out is not None:
        return [], [ruled_out]
    node_size = node_size_for(gpu, offers)
    facts = {**ctx.gpu_facts(gpu, node_size), "plan.precision": precision}
    hard = [
        f
        for f in evaluate(ctx.rules_by_scope["gpu"] + ctx.rules_by_scope["plan"], facts)
        if f.kind == "constraint"
    ]
    if hard:
        return [], [Miss(gpu.id, 1, "constraint", f"{hard[0].message} (rule {hard[0].rule_id})", 4.0)]
    if peak_flops(gpu, precision) is None:
        reason = gpu.missing.get(f"tflops.{precision}", f"no {precision} support")
        return [], [Miss(gpu.id, 1, "precision", f"no {precision} peak: {reason}", 6.0)]
    if ctx.job.training:
        return search_training(ctx, gpu, precision, node_size, counts)
    from advisor.search.serving import search_serving  # serving modules: only for a serving answer

    return search_serving(ctx, gpu, precision, node_size)


def _gpu_ruled_out(ctx: Context, gpu: Gpu, offers: list, onprem_rate: OnPremRate | None) -> Miss | None:
    """Why a GPU type cannot be priced at all: no cloud offer, or no purchase price for an on-prem TCO."""
    constraints = ctx.constraints
    if constraints.deployment == "cloud" and not offers:
        return Miss(
            gpu.id,
            1,
            "price",
            f"no {constraints.pricing} price in the catalogue"
            + (f" from {', '.join(constraints.providers)}" if constraints.providers else ""),
            5.0,
        )
    if constraints.deployment == "on-prem" and onprem_rate is not None and gpu.price is None:
        return Miss(gpu.id, 1, "price", "no sourced purchase price for an on-prem TCO", 5.0)
    return None


def _scored(
    ctx: Context,
    candidates: list[Candidate],
    offers_by_gpu: dict[str, list],
    onprem_rate: OnPremRate | None,
    misses: list[Miss],
) -> list[Scored]:
    """Every candidate that can be priced, with its efficiency, time and cost; the others join `misses`."""
    scored: list[Scored] = []
    for cand, eff, alt_effs in _with_efficiency(ctx, candidates):
        result = _score(ctx, cand, eff, offers_by_gpu, onprem_rate)
        if isinstance(result, Miss):
            misses.append(result)
        else:
            result.alt_effs = alt_effs
            scored.append(result)
    return scored


def _with_efficiency(
    ctx: Context, candidates: list[Candidate]
) -> list[tuple[Candidate, Interval, list[Interval]]]:
    """Each candidate with its efficiency; training picks, among a count's runner-ups, the simplest layout
    unless another is faster at speed of light x efficiency by more than the model's error, and keeps the
    others as its alternatives."""
    if not ctx.job.training:  # serving plans carry their own efficiency (see _score_serving)
        return [(c, Interval(1.0, 1.0, 1.0), []) for c in candidates]
    flat = [x for c in candidates for x in (c, *c.alternatives)]
    effs = iter(ctx.efficiency.estimate([efficiency_query(c, ctx) for c in flat])) if flat else iter(())
    out = []
    for cand in candidates:
        group = [(c, next(effs)) for c in (cand, *cand.alternatives)]
        group.sort(key=lambda ce: ce[0].predicted_s(ce[1].p50))
        margin = layout_margin(ctx.efficiency)
        group.insert(0, group.pop(preferred(group, margin)))
        # A layout whose memory P90 passes the capacity yields to a safe one within the model's error.
        group.insert(0, group.pop(safer_layout(group, 0, margin)))
        best, eff = group[0]
        with_rules(ctx, best)  # a runner-up that the efficiency makes the fastest is scored by its rules too
        best.alternatives = [c for c, _ in group[1:]]
        out.append((best, eff, [e for _, e in group[1:]]))
    return out


def _suggestions(
    knowledge: Knowledge,
    workload: Workload,
    constraints: Constraints,
    search: Search,
    efficiency: EfficiencyModel | None,
    onprem: dict[str, float] | None,
) -> list[Suggestion]:
    """What would make a plan fit, each checked by a real search: an input, a value and what it gives."""
    lines: list[Suggestion] = []
    kinds = {m.kind for m in search.misses}
    rerun = functools.partial(run_search, knowledge, efficiency=efficiency, onprem=onprem)
    if search.scored:
        lines += _relaxed(workload, constraints, search, rerun)
    elif "memory" in kinds or "scale" in kinds or "latency" in kinds:
        lines += _lighter(workload, constraints, search.ctx.job, rerun)
        if constraints.max_gpus < MAX_COUNT:
            lines.append(Suggestion(field="max_gpus", outcome=f"raise it above {constraints.max_gpus}"))
        if constraints.gpus:
            lines.append(Suggestion(field="gpus", outcome="allow more GPU types (leave it out)"))
    if "price" in kinds and constraints.pricing != "on-demand":
        lines.append(
            Suggestion(
                field="pricing", value="on-demand", outcome=f"few {constraints.pricing} prices are catalogued"
            )
        )
    return lines


def _relaxed(
    workload: Workload, constraints: Constraints, search: Search, rerun: Callable[..., Search]
) -> list[Suggestion]:
    """The budget (and, for training, the deadline) that would let the best plan in."""
    ctx = search.ctx
    # No rule tests whether a limit is set: the search and its scoring read neither limit (only _limits
    # does), so the plans without one are this search's scored plans filtered by the other alone.
    reuse = not any(f in LIMIT_FACTS for rule in ctx.knowledge.rules.rule for f in rule.fields)

    def without(field: str) -> list[Scored]:
        lifted: dict[str, Any] = {field: None}
        relaxed = dataclasses.replace(constraints, **lifted)
        if reuse:
            return [s for s in search.scored if _limits(ctx, s, relaxed) is None]
        return rerun(workload, relaxed).feasible

    training = ctx.job.training
    lines = []
    # Each limit lifted in turn: the plan that needs the least of it, and that least value (its P90).
    for name, needed, other, on in (
        ("budget_usd", lambda s: s.cost.high, lambda s: f"in {s.hours.p90:,.0f} h (its P90 cost)", True),
        ("deadline_hours", lambda s: s.hours.p90, lambda s: f"at ${s.cost.high:,.0f} (P90)", training),
    ):
        feasible = without(name) if on else []
        if feasible:
            best = min(feasible, key=needed)
            plan = f"{best.cand.gpu.id} x{best.cand.layout.count}"
            lines.append(
                Suggestion(field=name, value=math.ceil(needed(best)), outcome=f"allows {plan} {other(best)}")
            )
    return lines


def _lighter(
    workload: Workload, constraints: Constraints, job: Job, rerun: Callable[..., Search]
) -> list[Suggestion]:
    """The first lighter workload (LoRA, QLoRA, int8 or int4 serving) that fits, as one changed input."""
    alternatives: list[dict[str, Any]] = []
    if job.kind in ("pretrain", "finetune") and job.arch is not None:
        alternatives = [{"kind": "lora"}, {"kind": "qlora"}]
    elif job.kind == "lora":
        alternatives = [{"kind": "qlora"}]
    elif job.kind == "inference":
        alternatives = [{"precision": "int8"}, {"precision": "int4"}]
    for change in alternatives:
        try:
            trial = rerun(dataclasses.replace(workload, **change), constraints)
        except InputError:
            continue
        if trial.feasible:
            best = _rank(trial.ctx, trial.feasible)[0]
            field, value = next(iter(change.items()))
            per_gpu = f"{best.cand.memory.central_gb:.0f} GB per GPU"
            outcome = f"fits: {best.cand.gpu.id} x{best.cand.layout.count} ({per_gpu})"
            return [Suggestion(field=field, value=value, outcome=outcome)]
    return []


def _top(ranked: list[Scored], n: int) -> list[Scored]:
    """The first n ranked plans, one per GPU, count and replica shape."""
    top: list[Scored] = []
    seen: set[tuple[str, int, int]] = set()
    for s in ranked:
        if s.key not in seen:
            seen.add(s.key)
            top.append(s)
        if len(top) == n:
            break
    return top


def _how_to_run(
    knowledge: Knowledge, search: Search, plans: tuple[PlanOut, ...], onprem: dict[str, float] | None
) -> tuple[OpsPlan | None, LaunchArtefacts | None, TcoOut | None]:
    """The chosen plan's operations plan, launch artefacts and (on-prem) TCO; None without a plan."""
    if not plans:
        return None, None, None
    from advisor.ops.launch import launch_artefacts
    from advisor.ops.plan import operations_plan

    job, constraints = search.ctx.job, search.ctx.constraints
    operations = operations_plan(knowledge, job, constraints, plans[0].facts())
    launch = launch_artefacts(knowledge, job, constraints, plans[0].facts())
    tco_out = None
    if constraints.deployment == "on-prem":
        from advisor.ops.tco import TcoInputs, tco

        tco_inputs = TcoInputs(gpu=plans[0].gpu, count=plans[0].count, **(onprem or {}))
        tco_out = tco(knowledge, tco_inputs, constraints)
    return operations, launch, tco_out


def _job_out(job: Job) -> JobOut:
    return JobOut(
        model=job.model_id,
        model_name=job.model_name,
        kind=job.kind,
        params=job.params,
        seq_len=job.seq_len,
        unit=job.unit,
        total_items=job.total_items,
        assumed=job.assumed,
    )


def _front_points(front: list[Scored], top: list[Scored]) -> tuple[FrontPoint, ...]:
    return tuple(
        FrontPoint(
            gpu=s.cand.gpu.id,
            count=s.cand.layout.count,
            hours_p50=s.time_key,
            cost_mid=s.cost.mid,
            chosen=bool(top) and s.key == top[0].key,
        )
        for s in front
    )


def _calibration_notes(ctx: Context, top: list) -> list[str]:
    """Which plans the user's calibration runs moved, naming the profile (answer/calibration_answer.py)."""
    from advisor.catalog.profiles import list_profiles

    if not top or not list_profiles():
        return []  # no profile holds runs: nothing calibrated, and the calibration modules stay unimported
    from advisor.answer.calibration_answer import training_profile_notes

    return training_profile_notes(ctx, sorted({s.cand.gpu.id for s in top}))


def recommend(
    knowledge: Knowledge,
    workload: Workload,
    constraints: Constraints,
    efficiency: EfficiencyModel | None = None,
    onprem: dict[str, float] | None = None,
) -> Report:
    """The ranked answer to one question: plans, front, why-nots, and for the chosen plan its operations plan,
    launch artefacts and (on-prem) its TCO. `onprem` overrides TCO inputs (years, utilization, tariff...)."""
    search = run_search(knowledge, workload, constraints, efficiency, onprem)
    ctx = search.ctx
    ranked = _rank(ctx, search.feasible)
    top = _top(ranked, constraints.top)
    front = pareto_front(search.feasible)
    front_keys = {s.key for s in front}
    name = ctx.efficiency.name if ctx.job.training else _serving_source_name()
    plans = tuple(with_caveats(ctx, _plan_out(ctx, s, i + 1, s.key in front_keys)) for i, s in enumerate(top))
    plans = _first_explained(search, ranked, top, _with_changes(search, ranked, plans), constraints)
    dates = [s.price.offer.date for s in top if s.price is not None]
    sources = sorted({s.price.offer.source for s in top if s.price is not None})
    job = ctx.job
    suggestions = [] if top else _suggestions(knowledge, workload, constraints, search, efficiency, onprem)
    operations, launch, tco_out = _how_to_run(knowledge, search, plans, onprem)
    notes: list[Assumed] = [Assumed(text=n) for n in _serving_report_notes(ctx, top)]
    if constraints.deployment == "cloud":  # stale and outlier offers the price screen left out
        notes += price_notes(knowledge, select_gpus(knowledge, constraints), constraints)
    notes += [Assumed(text=n) for n in _calibration_notes(ctx, top)]
    return Report(
        workload=workload,
        constraints=constraints,
        job=_job_out(job),
        plans=plans,
        front=_front_points(front, top),
        why_not=tuple(_why_not(search, ranked, top)),
        job_advice=tuple(
            RuleOut(id=f.rule_id, kind=f.kind, message=f.message, source=f.source) for f in search.job_firings
        ),
        nothing_fits=not top,
        suggestions=tuple(suggestions),
        prices_as_of=min(dates) if dates else None,
        price_sources=tuple(sources),
        efficiency_source=name,
        catalogue_version=knowledge.catalogue_version,
        # What the ranking chose from: within memory, budget and deadline, one per GPU, count and shape.
        plans_considered=len({s.key for s in search.feasible}),
        notes=tuple(notes),
        operations=operations,
        launch=launch,
        tco=tco_out,
    )


def _first_explained(
    search: Search,
    ranked: list[Scored],
    top: list[Scored],
    plans: tuple[PlanOut, ...],
    constraints: Constraints,
) -> tuple[PlanOut, ...]:
    """The plans with the first one's place explained in one line, and (serving) hosted APIs, rent and buy
    beside the chosen deployment."""
    ctx = search.ctx
    if top and not ctx.job.training:
        from advisor.answer.hosted import hosted_lines

        plans = (
            dataclasses.replace(plans[0], reasons=(*plans[0].reasons, *hosted_lines(ctx, top[0]))),
            *plans[1:],
        )
    if plans:
        first = first_reason(
            ranked, _rank(ctx, search.feasible, aware=False), constraints, layout_margin(ctx.efficiency)
        )
        plans = (dataclasses.replace(plans[0], reasons=(first, *plans[0].reasons)), *plans[1:])
    return plans


def _with_changes(search: Search, ranked: list[Scored], plans: tuple[PlanOut, ...]) -> tuple[PlanOut, ...]:
    """Each plan with what would change its place: its inputs re-scored and every plan near the top
    re-ranked (advisor/answer/sensitivity.py)."""
    from advisor.answer.sensitivity import change_line

    pool, rescore, rank = sensitivity_tools(search, ranked, len(plans))
    return tuple(
        dataclasses.replace(p, reasons=(*p.reasons, change_line(pool, i, rescore, rank)))
        for i, p in enumerate(plans)
    )


def sensitivity_tools(
    search: Search, ranked: list[Scored], n: int
) -> tuple[
    list[Scored], Callable[[Scored, float, float], Scored | None], Callable[[list[Scored]], list[Scored]]
]:
    """The plans near the top, a re-scorer (a plan at efficiency x f and price x g, through the same scoring
    and limits as the search; None outside them) and the ranking, for what-would-change questions."""
    ctx = search.ctx
    pool = _top(ranked, max(SENSITIVITY_POOL, n))

    def rescore(s: Scored, eff: float, price: float, failure: float = 1.0) -> Scored | None:
        new = _score(ctx, s.cand, s.eff.scaled(eff), search.offers_by_gpu, search.onprem_rate, failure)
        if isinstance(new, Miss):
            return None
        if price != 1.0:
            a, hours = ctx.knowledge.assumptions, new.hours
            new.usd_per_hour *= price
            new.cost = plan_cost(
                (hours.p10, hours.p50, hours.p90), new.usd_per_hour, ctx.constraints, a, ctx.job.dataset_gb
            )
        return new if _limits(ctx, new) is None else None

    def rank(trial: list[Scored]) -> list[Scored]:
        return _rank(ctx, trial)

    return pool, rescore, rank


def _serving_source_name() -> str:
    from advisor.answer.serving_answer import serving_source_name

    return serving_source_name()
