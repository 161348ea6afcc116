"""Provides the serving part of an answer: figures with their ranges, the ServingOut of a plan, and the notes
that say which engine's measurements the efficiencies come from and how latency under load is computed."""

from __future__ import annotations

import math

from advisor.answer.serving_out import LoadOut, Percentiles, ServingOut
from advisor.job.resolve import Job
from advisor.learned.efficiency.base import Interval
from advisor.learned.serving.engines import engine as engine_info
from advisor.learned.serving.model import load_model
from advisor.physics.batching import LoadStats
from advisor.search.context import Context
from advisor.search.cost import CostRange
from advisor.search.serving import Served, engine_of, stated_load

QUEUEING = (
    "latency under load: the engine's scheduler simulated request by request (running cap, KV blocks, "
    "token budget, chunked or whole-prompt prefill, the waiting queue): a stated concurrency or batch as a "
    "closed loop, a stated request rate with seeded Poisson arrivals; the search sizes replicas for a rate "
    "with a mean-value analysis (the batch by Little's law, the prompt budget an M/D/1 queue, free slots "
    "Erlang C), which agrees with the simulation on median TPOT and mean TTFT (docs/serving.md); a closed "
    "loop's figures are its steady state (the first wave, every client sending at once, is left out)"
)


def _pct(values: tuple[float, ...], mean: float, scale: float) -> Percentiles:
    p50, p90, p99 = (v * scale for v in values)
    return Percentiles(p50=p50, p90=p90, p99=p99, mean=mean * scale)


def load_out(ctx: Context | None, served: Served) -> LoadOut | None:
    """The stated load's figures of a plan (None when no load is stated); without a context only what the
    search already simulated (recommend's closed loops), never a new simulation."""
    st: LoadStats | None = stated_load(ctx, served) if ctx is not None else served.stats
    if st is None:
        return None
    n = served.replicas * served.filled  # replicas' worth of clients: idle replicas complete nothing
    return LoadOut(
        loop=st.loop,
        in_flight_per_replica=st.concurrency,
        requests_per_s=st.rate * n,
        output_tok_s=st.output_tok_s * n,
        running_per_replica=st.running,
        waiting_per_replica=st.waiting,
        ttft_ms=_pct(st.ttft, st.means[0], 1000.0),
        tpot_ms=_pct(st.tpot, st.means[1], 1000.0),
        itl_ms=_pct(st.itl, st.means[2], 1000.0),
        e2e_s=_pct(st.e2e, st.means[3], 1.0),
    )


def serving_interval(served: Served, quantity: str, p50: float) -> Interval:
    """P10-P90 around a serving figure from the learned model's held-out residuals (priors: x0.6-x1.6)."""
    model = load_model()
    if not math.isfinite(p50):
        return Interval(p50, p50, p50)
    if model is None:
        return Interval(p50 * 0.6, p50, p50 * 1.6)
    lo, hi = model.band(quantity)
    return Interval(p50 * lo, p50, p50 * hi)


def served_rps(job: Job, served: Served) -> float:
    """Requests/s the plan serves: the stated rate, or at a stated concurrency what the replicas complete."""
    closed = job.concurrency or job.num_prompts
    return served.rate * served.replicas * served.filled if closed else job.requests_per_s


def cost_per_million_note(job: Job, served: Served, cost: CostRange, hours: float) -> list[str]:
    """'$x per million output tokens at r req/s (low-high)' over the `hours` the cost covers."""
    rps = served_rps(job, served)
    tokens = rps * job.output_tokens * 3600.0 * hours / 1e6
    if tokens <= 0:
        return []
    return [
        f"${cost.mid / tokens:,.2f} per million output tokens at {rps:.3g} req/s "
        f"(${cost.low / tokens:,.2f}-{cost.high / tokens:,.2f})"
    ]


def serving_out(
    job: Job, served: Served, ttft: Interval, tpot: Interval, cost: CostRange, hours: float
) -> ServingOut:
    """The serving sizing of one plan as output (cost per million output tokens at the offered load, over
    the `hours` the cost covers)."""
    fig = served.figures
    rps = served_rps(job, served)
    month_tokens = rps * job.output_tokens * 3600.0 * hours / 1e6
    per_million = (
        Interval(p10=cost.low / month_tokens, p50=cost.mid / month_tokens, p90=cost.high / month_tokens)
        if month_tokens > 0
        else None
    )
    return ServingOut(
        replicas=served.replicas,
        gpus_per_replica=fig.replica_gpus,
        batch_per_replica=served.batch,
        ttft_ms=ttft,
        tpot_ms=tpot,
        capacity_rps=round(fig.sat.requests_s * served.replicas, 3),
        load_rps=rps,
        percentile=job.slo_percentile,
        engine=fig.engine,
        learned_from=fig.learned_from,
        max_rate_rps=round(served.max_rate * served.replicas, 3),
        usd_per_million_output_tokens=per_million,
        prefill_replicas=served.prefill_replicas,
        load=load_out(None, served),
    )


def serving_reason(job: Job, served: Served, ttft: Interval, tpot: Interval) -> str:
    """Why a serving plan sizes as it does: replicas, the load each takes, latency at the percentile."""
    q, fig = job.slo_percentile, served.figures
    if job.num_prompts and job.concurrency:
        load = (
            f"{job.num_prompts} prompts through {job.concurrency} clients, every request counted "
            f"({served_rps(job, served):.2f} req/s over the run)"
        )
    elif job.num_prompts and 0 < job.requests_per_s < math.inf:
        load = (
            f"a run of {job.num_prompts} prompts at {job.requests_per_s:g} req/s, every request counted "
            f"({served_rps(job, served):.2f} req/s over the run, its drain included)"
        )
    elif job.num_prompts:
        load = (
            f"a burst of {job.num_prompts} prompts sent at once ({served_rps(job, served):.2f} req/s "
            "over its makespan)"
        )
    elif job.concurrency:
        load = (
            f"{job.concurrency} requests in flight ({served.batch} each, closed loop; "
            f"{served_rps(job, served):.2f} req/s completed)"
        )
    else:
        load = f"{job.requests_per_s:g} req/s ({served.rate:.2f} each, {served.batch} requests in flight)"
    return (
        f"{served.replicas} replica(s) x {fig.replica_gpus} GPU(s) serve {load}; P{q} TTFT "
        f"{ttft.p50:,.0f} ms, P{q} TPOT {tpot.p50:.1f} ms; within the targets each takes up to "
        f"{served.max_rate:.2f} req/s, full {fig.sat.requests_s:.2f} req/s"
    )


def serving_source_name() -> str:
    """The efficiency source of serving answers."""
    if load_model() is None:
        return "priors for serving (decode bandwidth, prefill compute; no measured serving data applies)"
    return "learned from measured serving runs (knowledge/serving_model.json)"


def engine_note(job: Job, learned_from: str | None) -> str:
    """Which engine is assumed and whose measurements its efficiencies come from."""
    eng, given = engine_of(job)
    model = load_model()
    where = f"engine {eng}" + ("" if given else " (default; pass an engine to change it)")
    if model is None:
        return where + ": efficiencies are priors (no learned serving model is shipped)"
    rows = model.meta.get("rows_by_engine", {})
    if learned_from == eng:
        return where + f": efficiencies learned from {rows.get(eng, '?')} measured {eng} runs"
    if learned_from:
        return (
            where
            + f": no measured {eng} runs, so {learned_from}'s efficiencies stand in (its nearest engine)"
        )
    return where + ": no measured runs of it or its stand-in; the engines' common efficiencies apply"


def step_note(served: Served) -> str | None:
    """How one iteration is priced: from which measured operations, and what the learned model adds."""
    rep, eff = served.figures.setup.replica, served.figures.eff
    ops = rep.ops
    if ops is None:
        return None
    sync = f", {eff.sync_s * 1e6:.0f} us per all-reduce per doubling of the group" if rep.tp > 1 else ""
    return (
        "iteration composed from measured operations (docs/serving.md): per layer the GEMMs at the "
        "iteration's tokens, attention (prefill: FlashAttention's forward rows; decode: the KV cache at the "
        "achieved bandwidth), the memory-bound ops, the tensor-parallel all-reduces at their message size "
        f"from NCCL rows, the LM head; {ops.basis} ({'; '.join(ops.sources)}); learned on top: the engine's "
        f"kernels at {eff.memory:.0%} (memory-bound) and {eff.compute:.0%} (compute-bound) of the measured "
        f"speed, {eff.step_s * 1e3:.2f} ms an iteration, {eff.per_seq_s * 1e6:.0f} us a sequence{sync}, "
        f"{eff.request_s * 1e3:.0f} ms in the server before the first token; never faster than the roofline"
    )


def prefix_note(hit: float, prompt: int) -> str:
    """What a stated prefix cache hit changes (--prefix-cache-hit)."""
    cached = max(0, min(prompt - 1, int(hit * prompt)))
    return (
        f"prefix cache: {hit:.0%} of each prompt stated cached ({cached} of {prompt} tokens), not prefilled "
        "(the rest is, attending over the whole prompt): in the first token alone, a burst, a closed loop "
        "and a simulated run at a rate; the mean-value analysis that sizes replicas for a rate prefills "
        "whole prompts, and the cache's blocks are counted as each request's own"
    )


LENGTHS_NOTE = (
    "request lengths: ShareGPT-like, each request's prompt and output drawn around the stated means "
    "(lognormal, log-spread 0.8, mean kept; a prompt at most 1,024 tokens and prompt + output at most "
    "2,048, as vllm bench serve's ShareGPT sampler keeps them; advisor/physics/lengths.py): in a burst, a "
    "closed loop and a simulated run at a rate the short requests finish early and the longest decode in a "
    "thinning batch; the mean-value analysis that sizes replicas for a rate uses the means"
)
"""What --request-lengths sharegpt changes."""


def serving_notes(
    ctx: Context, served: Served | None, shown: tuple[float, float] | None = None
) -> tuple[str, ...]:
    """What is learned and from what, the engine's caps, the SLO percentile and how queueing is computed.
    `shown`: the TTFT and TPOT (ms) the answer shows (predict's, held against the targets, which a figure
    at no load or a stated load may miss); None where the plans are sized to hold them (recommend)."""
    job = ctx.job
    eng, _ = engine_of(job)
    info = engine_info(eng)
    if served is not None:
        learned_from = served.figures.learned_from
    else:  # no plan: whose efficiencies a plan would have used, as the search asks the model
        model = load_model()
        learned_from = model.source_engine(eng) if model else None
    notes = [engine_note(job, learned_from)]
    step = step_note(served) if served is not None else None
    if step:
        notes.append(step)
    if served is not None:
        lim = served.figures.setup.limits
        seqs = (
            f"at most {lim.max_seqs} running sequences"
            if lim.max_seqs
            else "running sequences as memory allows"
        )
        release = f" {job.stack_version}" if job.stack_version else ""
        mixing = (
            "prompt chunks ride in the decodes' iterations"
            if lim.chunked
            else "prefill first, in iterations of its own while the decodes wait"
        ) + (", first tokens when the last prompt that arrived with them is prefilled" if lim.wave else "")
        notes.append(
            f"{info.name}{release}'s defaults on this GPU: {seqs}, {lim.token_budget} tokens per iteration, "
            f"{mixing}, {lim.memory_fraction:.0%} of "
            f"{'the GPU' if lim.fraction_of == 'total' else 'free memory'} for weights and KV cache "
            f"({info.source_for(job.stack_version)})"
        )
        if lim.prefix_hit > 0:
            notes.append(prefix_note(lim.prefix_hit, job.prompt_tokens))
    if job.config.request_lengths == "sharegpt":
        notes.append(LENGTHS_NOTE)
    targets = _targets(job, shown)
    if targets:
        held = "at" if shown else "held by"
        notes.append(f"latency targets {held} P{job.slo_percentile} of requests: {', '.join(targets)}")
    notes.append(QUEUEING)
    return tuple(notes)


def _targets(job: Job, shown: tuple[float, float] | None) -> list[str]:
    """Each latency target, and with the figures shown whether each meets it."""
    out = []
    for name, target, i in (("TTFT", job.ttft_ms, 0), ("TPOT", job.tpot_ms, 1)):
        if not target or not math.isfinite(target):
            continue
        text = f"{name} <= {target:g} ms"
        if shown is not None:
            got = shown[i]
            figure = f"{got:,.0f}" if got >= 100 else f"{got:.3g}"
            text += f" (the {figure} ms shown {'meets' if got <= target else 'misses'} it)"
        out.append(text)
    return out
