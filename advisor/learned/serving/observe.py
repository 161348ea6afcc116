"""What the serving model predicts for a measured row, figure by figure, beside what was measured.

Every figure comes from the one step model and the load the row states: offline rows from the capacity at
the engine's caps (their first tokens, where measured, from the burst of every request sent at once), rows
at a request rate from the open-loop analysis, rows at a concurrency or one batch from the closed-loop
simulation, first-token rows from the prompt alone. The baseline prices the same rows
with a bandwidth/compute roofline at one constant efficiency: no engine caps, no scheduler cost, no
all-reduce, no queueing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

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
)
from advisor.physics.serving import Efficiency, iteration_s, prefill_alone_s

QUANTILE_OF = {"mean": None, "p50": 0.5, "p90": 0.9, "p99": 0.99}
LOOSE = EngineLimits(max_seqs=None, token_budget=1 << 30)


@dataclass(frozen=True, slots=True, repr=False)
class Obs:
    """One figure of one row: 'throughput' (output tokens/s), 'ttft' or 'tpot' (seconds), its statistic."""

    quantity: str
    stat: str
    predicted: float
    measured: float


def traits(c: Case) -> Traits:
    shape = c.setup.replica.shape
    return Traits(
        engine=c.engine,
        fp8=c.fp8,
        amd=c.vendor == "amd",
        moe=c.moe,
        expert_slice=shape.expert_ffn / c.tp,
        legacy=c.setup.engine.legacy(c.version),
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
    elif burst(c):
        conc = n = c.requests or 1
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
    run = closed_run(sched, rep, eff, c.requests if c.kind == "concurrency" else None)
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
        # TensorRT-LLM's engine benchmark times the prefill alone: no server, no scheduler before it.
        alone = prefill_alone_s(rep, replace(eff, request_s=0.0), c.isl, lim.token_budget)
        return [Obs("ttft", m.stat, alone, m.ms / 1000) for m in c.ttft]
    sat = capacity(rep, eff, lim, c.isl, c.osl, c.setup.overhead_bytes)
    tpot_alone = None
    if c.kind in ("concurrency", "batch", "static"):
        tput, at = _closed(c, eff, lim, baseline)
    elif c.kind == "online" and c.request_rate is not None:
        tput, at = _open(c, eff, lim, sat)
        if baseline or at(0.5) is None:  # a saturated run: its iterations are the capacity's
            tpot_alone = sat.iteration_s if sat else float("inf")
    else:  # throughput at the capacity; a burst's first tokens queue behind it
        tput, at = (sat.output_tok_s if sat else 0.0), _offline_latency(c, eff, lim, baseline)
        tpot_alone = sat.iteration_s if sat else float("inf")
    if baseline:
        at = _baseline_latency(c, eff, lim)
        tpot_alone = None
    out = [Obs("throughput", "mean", tput, c.output_tok_s)] if c.output_tok_s else []
    no_ttft = _no_ttft(c)
    return out + [o for o in _latency_obs(c, at, tpot_alone) if not (o.quantity == "ttft" and no_ttft)]


def _offline_latency(c: Case, eff: Efficiency, lim: EngineLimits, baseline: bool) -> Callable:
    """An offline row's latencies: a burst's simulated, else none (the capacity has no first token)."""
    return _closed(c, eff, lim, baseline)[1] if burst(c) else (lambda q: None)


def _no_ttft(c: Case) -> bool:
    """Rows whose TTFT is not scored: offline runs other than bursts, and saturated runs at a rate."""
    return (c.kind == "offline" and not burst(c)) or saturated_run(c)


def burst(c: Case) -> bool:
    """An offline run that states its requests and a first-token latency: every request sent at once (`vllm
    bench serve` and `sglang.bench_serving` at the default request rate inf, or an offline engine given them
    all), so each waits for a running slot and KV, and for the prompts ahead of it; simulated as that many
    clients sending one request each (their TTFT as the run counted it: every request once)."""
    return c.kind == "offline" and bool(c.requests) and bool(c.ttft)


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


def fit_obs(c: Case, eff: Efficiency) -> list[Obs]:
    """The figures a fit learns from: the row's throughput and its central latencies (mean or median) as
    `observe` predicts them, so that the fit and the scores price a row the same way (issue 30: the
    separate fast path that priced grouped runs and online rows at their measured batch is gone)."""
    return [o for o in observe(c, eff) if o.quantity == "throughput" or o.stat in ("mean", "p50")]
