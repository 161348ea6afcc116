"""What the serving model predicts for a measured row, figure by figure, beside what was measured.

Every figure comes from the one step model and the load the row states: offline rows from the capacity at
the engine's caps, rows at a request rate from the open-loop analysis, rows at a concurrency or one batch
from the closed-loop simulation, first-token rows from the prompt alone. The baseline prices the same rows
with a bandwidth/compute roofline at one constant efficiency: no engine caps, no scheduler cost, no
all-reduce, no queueing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

from advisor.learned.serving.data import MAX_REQUESTS, Case, Measured, lengths_of
from advisor.learned.serving.model import ServingModel, Traits
from advisor.physics.batching import (
    EngineLimits,
    Latency,
    Saturation,
    batch_cap,
    capacity,
    closed_run,
    closed_schedule,
    kv_tokens,
    open_loop,
    prompt_mix,
    saturation,
    saturation_load,
    weighted_quantile,
)
from advisor.physics.serving import Efficiency, Replica, iteration_s, prefill_alone_s, priced, stage_times
from advisor.question.values import value_type

QUANTILE_OF = {"mean": None, "p50": 0.5, "p90": 0.9, "p99": 0.99}
LOOSE = EngineLimits(max_seqs=None, token_budget=1 << 30)


@value_type(slots=True)
class Obs:
    """One figure of one row: 'throughput' (output tokens/s), 'ttft' or 'tpot' (seconds), its statistic."""

    quantity: str
    stat: str
    predicted: float
    measured: float


def traits(c: Case) -> Traits:
    shape = c.setup.replica.shape
    return Traits(
        engine=c.engine, fp8=c.fp8, amd=c.vendor == "amd", moe=c.moe, expert_slice=shape.expert_ffn / c.tp
    )


def limits_of(c: Case, baseline: bool) -> EngineLimits:
    """The engine's caps, a static batch's own, or none at all (the baseline)."""
    if baseline:
        return replace(c.setup.limits, max_seqs=None, token_budget=1 << 30)
    if c.kind == "static" and c.batch:
        return replace(c.setup.limits, max_seqs=c.batch, token_budget=c.batch * c.isl, reserve="full")
    return c.setup.limits


def _stat(lat: Latency | None, which: str, m: Measured) -> float:
    if lat is None:
        return float("inf")
    q = QUANTILE_OF.get(m.stat)
    if which == "ttft":
        return lat.ttft_s if q is None else lat.ttft_q_s
    if m.kind == "itl":
        return lat.itl_s if q is None else lat.itl_q_s
    return lat.tpot_s if q is None else lat.tpot_q_s


def _latency_obs(c: Case, at: Callable[[float], Latency | None], tpot_alone: float | None) -> list[Obs]:
    out = []
    for which, figures in (("ttft", c.ttft), ("tpot", c.tpot)):
        for m in figures:
            q = QUANTILE_OF.get(m.stat) or 0.5
            pred = tpot_alone if (which == "tpot" and tpot_alone is not None) else _stat(at(q), which, m)
            out.append(Obs(which, m.stat, pred, m.ms / 1000.0))
    return out


def _closed(c: Case, eff: Efficiency, lim: EngineLimits, baseline: bool) -> tuple[float, Callable]:
    """Throughput and latency of a closed loop (a concurrency, one batch, a static batch)."""
    rep = c.setup.replica
    if c.kind == "concurrency":
        conc = c.concurrency or 1
        n = min(MAX_REQUESTS, max(4 * conc, 64))
    else:
        conc = n = c.batch or 1
    key = f"sched/{baseline}"
    if key not in c.cache:
        cap = batch_cap(rep, lim, c.isl, c.osl, c.setup.overhead_bytes)
        kv = kv_tokens(rep, lim, c.setup.overhead_bytes)
        c.cache[key] = closed_schedule(lim, cap, kv, lengths_of(c, n), conc)
    sched = c.cache[key]
    if sched is None:
        return 0.0, lambda q: None
    run = closed_run(sched, rep, eff)
    return run.latency(0.5).output_tok_s, run.latency


def _open(c: Case, eff: Efficiency, lim: EngineLimits, sat: Saturation | None) -> tuple[float, Callable]:
    rep, rate = c.setup.replica, c.request_rate
    if rate is None or sat is None or rate >= sat.requests_s:
        return (sat.output_tok_s if sat else 0.0), lambda q: None
    args = (rep, eff, lim, c.isl, c.osl, rate)
    return rate * c.osl, lambda q: open_loop(*args, q, c.setup.overhead_bytes)


def observe(c: Case, eff: Efficiency, baseline: bool = False) -> list[Obs]:
    """Every figure the row measured, predicted."""
    rep, lim = c.setup.replica, limits_of(c, baseline)
    if c.kind == "ttft-bs1":
        return [
            Obs("ttft", m.stat, prefill_alone_s(rep, eff, c.isl, lim.token_budget), m.ms / 1000)
            for m in c.ttft
        ]
    sat = capacity(rep, eff, lim, c.isl, c.osl, c.setup.overhead_bytes)
    tpot_alone = None
    if c.kind in ("concurrency", "batch", "static"):
        tput, at = _closed(c, eff, lim, baseline)
    elif c.kind == "online" and c.request_rate is not None:
        tput, at = _open(c, eff, lim, sat)
        if baseline or at(0.5) is None:  # a saturated run: its iterations are the capacity's
            tpot_alone = sat.iteration_s if sat else float("inf")
    else:
        tput, at = (sat.output_tok_s if sat else 0.0), (lambda q: None)
        tpot_alone = sat.iteration_s if sat else float("inf")
    if baseline:
        at = _baseline_latency(c, eff, lim)
        tpot_alone = None
    out = [Obs("throughput", "mean", tput, c.output_tok_s)] if c.output_tok_s else []
    no_ttft = c.kind == "offline" or saturated_run(c)
    return out + [o for o in _latency_obs(c, at, tpot_alone) if not (o.quantity == "ttft" and no_ttft)]


def saturated_run(c: Case) -> bool:
    """A run at a request rate that delivered under 90% of the offered tokens: the replica was over capacity,
    so its TTFT is how long the finite run queued, not a steady state (left out of fit and scores)."""
    if c.kind != "online" or c.request_rate is None:
        return c.kind == "online"
    return c.output_tok_s is not None and c.output_tok_s < 0.9 * c.request_rate * c.osl


def _baseline_latency(c: Case, eff: Efficiency, lim: EngineLimits) -> Callable:
    """The roofline's latency: the prompt alone, and one iteration at the stated batch (no queueing)."""
    rep = c.setup.replica
    b = float(c.concurrency or c.batch or 1)
    if c.request_rate:
        b = max(1.0, c.request_rate * c.osl * iteration_s(rep, eff, 1.0, c.isl + c.osl / 2))
    ttft = prefill_alone_s(rep, eff, c.isl, lim.token_budget)
    tpot = iteration_s(rep, eff, b, c.isl + c.osl / 2.0)
    lat = Latency(0.5, ttft, tpot, ttft, tpot, b, 0.0, 0.0, tpot, tpot)
    return lambda q: lat


def baseline_efficiency(k: float) -> Efficiency:
    """The roofline at one constant efficiency: no scheduler cost, no all-reduce."""
    return Efficiency(memory=k, compute=k, step_s=0.0, per_seq_s=0.0, comm=0.0)


def observe_model(model: ServingModel, c: Case) -> list[Obs]:
    """The learned model's figures for one row."""
    return observe(c, model.efficiency(traits(c)))


def _stages(c: Case, key: str, make: Callable[[], list[tuple]]) -> list:
    if key not in c.cache:
        c.cache[key] = make()
    return c.cache[key]


def _priced_sum(rep_pp: int, stages: list, eff: Efficiency) -> tuple[float, float, float, list]:
    """Sums over cached stage times of count x iteration time, weighted by 1, by the requests waiting for a
    first token and by the decoding requests' 1 / (output - 1); and the (gap, decode tokens) pairs."""
    total = waiting = inv = 0.0
    gaps = []
    for count, w, i, batch, st in stages:
        gap = rep_pp * priced(st, eff)
        tau = count * gap
        total += tau
        waiting += tau * w
        inv += tau * i
        if batch > 0:
            gaps.append((gap, count * batch))
    return total, waiting, inv, gaps


def _tpot_fast(m: Measured, inv_mean: float, gaps: list) -> Obs | None:
    """A measured TPOT or ITL against the schedule's: TPOT per request; ITL per streamed token."""
    if m.kind == "itl":
        weight = sum(w for _, w in gaps) or 1.0
        pred = (
            sum(g * w for g, w in gaps) / weight
            if m.stat == "mean"
            else weighted_quantile(gaps, QUANTILE_OF[m.stat] or 0.5)
        )
        return Obs("tpot", m.stat, pred, m.ms / 1000.0)
    return Obs("tpot", m.stat, inv_mean, m.ms / 1000.0) if m.stat in ("mean", "p50") else None


def _closed_fast(c: Case, eff: Efficiency) -> list[Obs]:
    """Throughput, mean TTFT, TPOT and ITL of a closed loop from its grouped runs (what a fit needs, fast)."""
    if "sched/False" not in c.cache:
        _closed(c, eff, limits_of(c, False), False)
    sched = c.cache["sched/False"]
    if sched is None:
        return []
    rep = c.setup.replica
    pp = rep.pp
    stages = _stages(
        c,
        "groups",
        lambda: [
            (
                g.count,
                g.waiting,
                g.inv_output,
                g.batch,
                stage_times(rep, g.batch / pp, g.ctx, g.prefill / pp, g.ctx_p),
            )
            for g in sched.grouped()
        ],
    )
    total, waiting, inv, gaps = _priced_sum(pp, stages, eff)
    if "tokens" not in c.cache:
        c.cache["tokens"] = (
            sum(o for _, o in sched.lengths),
            len(sched.lengths),
            sum(1 for _, o in sched.lengths if o > 1) or 1,
        )
    out_tokens, n, decoders = c.cache["tokens"]
    out = [Obs("throughput", "mean", out_tokens / total, c.output_tok_s)] if c.output_tok_s else []
    out += [o for o in (_tpot_fast(m, inv / decoders, gaps) for m in c.tpot) if o is not None]
    return out + [
        Obs("ttft", m.stat, waiting / n + eff.request_s, m.ms / 1000.0) for m in c.ttft if m.stat == "mean"
    ]


def _mixed_stages(rep: Replica, b: float, ctx: float, p: float, isl: float, budget: int) -> list[tuple]:
    """The two kinds of iteration of a steady load (with and without a prompt chunk), weighted by share."""
    share, chunk = prompt_mix(b, p, isl, budget)
    pp = rep.pp
    out = [(share, 0, 0, b, stage_times(rep, b / pp, ctx, chunk / pp, isl / 2.0))] if share else []
    if share < 1.0:
        out.append((1.0 - share, 0, 0, b, stage_times(rep, b / pp, ctx, 0.0, 0.0)))
    return out


def _saturated_fast(c: Case, eff: Efficiency) -> list[Obs]:
    """Throughput (and iteration time) of a replica kept full, from cached stage times."""
    rep = c.setup.replica
    if "sat" not in c.cache:
        c.cache["sat"] = saturation_load(rep, c.setup.limits, c.isl, c.osl, c.setup.overhead_bytes)
    load = c.cache["sat"]
    if load is None:
        return [Obs("throughput", "mean", 0.0, c.output_tok_s)] if c.output_tok_s else []
    cap, b, p = load
    ctx = c.isl + c.osl / 2.0
    budget = c.setup.limits.token_budget
    stages = _stages(c, "sat-stage", partial(_mixed_stages, rep, b, ctx, p, c.isl, budget))
    tau = _priced_sum(rep.pp, stages, eff)[0]
    sat = saturation(cap, b, p, tau, c.isl, c.osl)
    out = [Obs("throughput", "mean", sat.output_tok_s, c.output_tok_s)] if c.output_tok_s else []
    return out + [Obs("tpot", m.stat, tau, m.ms / 1000.0) for m in c.tpot if m.stat in ("mean", "p50")]


def _online_fast(c: Case, eff: Efficiency) -> list[Obs]:
    """A row at a request rate, for the fit: TPOT priced at the batch the measurement implies (Little's law
    with the measured TPOT), throughput the offered load or the capacity, whichever is less. A saturated run
    (it delivered under 90% of the offered tokens) is priced at the capacity."""
    rate, rep = c.request_rate or 0.0, c.setup.replica
    sat_obs = _saturated_fast(c, eff)
    offered = rate * c.osl
    saturated = saturated_run(c)
    tput = min([o.predicted for o in sat_obs if o.quantity == "throughput"] or [offered])
    out = [Obs("throughput", "mean", min(offered, tput), c.output_tok_s)] if c.output_tok_s else []
    if saturated:
        return out + [o for o in sat_obs if o.quantity == "tpot"]
    for m in c.tpot:
        if m.stat not in ("mean", "p50"):
            continue
        t = m.ms / 1000.0
        b, p = rate * (c.osl - 1) * t, rate * c.isl * t
        key = f"online/{m.stat}"
        ctx = c.isl + c.osl / 2.0
        budget = c.setup.limits.token_budget
        stages = _stages(c, key, partial(_mixed_stages, rep, b, ctx, p, c.isl, budget))
        out.append(Obs("tpot", m.stat, _priced_sum(rep.pp, stages, eff)[0], t))
    return out + [o for o in observe(c, eff) if o.quantity == "ttft"]


def fit_obs(c: Case, eff: Efficiency) -> list[Obs]:
    """The figures a fit learns from, computed the fast way where the schedule allows: throughput, TPOT and
    TTFT (closed loops: their means; saturated runs at a rate: no TTFT, their queue is the run's length)."""
    if c.kind in ("concurrency", "batch", "static"):
        return _closed_fast(c, eff)
    if c.kind == "offline" or (c.kind == "online" and c.request_rate is None):
        return _saturated_fast(c, eff)
    if c.kind == "online":
        return _online_fast(c, eff)
    return observe(c, eff)
