"""The one serving search, shared by recommend and predict: replica shapes, the engine, the load each replica
takes and the latency it answers with.

For every replica shape (tensor parallel inside a server, pipeline stages across servers; a stated tp, pp,
engine or batch held) it builds the replica the step model prices (`advisor/learned/serving/replica.py`),
takes the engine's learned efficiencies, and asks `advisor/physics/batching.py` for the capacity at the
engine's caps and the largest request rate whose TTFT and TPOT meet the targets at the percentile asked
(open loop, Poisson arrivals). recommend sizes replicas from that rate; predict holds the GPU, the count and
every stated value and reports the same figures (a stated batch is a closed loop of that many requests in
flight per replica).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from advisor.catalog.gpus import Gpu
from advisor.catalog.rules import evaluate
from advisor.job.layout import Layout
from advisor.job.resolve import Job
from advisor.learned.calibration.serving_profile import serving_efficiency
from advisor.learned.serving.engines import engine as engine_info
from advisor.learned.serving.engines import engines, runs
from advisor.learned.serving.model import Traits, load_model
from advisor.learned.serving.replica import build
from advisor.physics.batching import (
    EVERY,
    Latency,
    LoadStats,
    Saturation,
    cached_tokens,
    capacity,
    closed_run,
    closed_schedule,
    engine_usable_bytes,
    first_token,
    kv_tokens,
    open_loop,
    seq_tokens,
    steady_state,
    tpot_quantile,
)
from advisor.physics.lengths import request_lengths
from advisor.physics.memory import GB, engine_memory, inference_memory, usable_gb
from advisor.physics.serving import Efficiency, Replica, prefill_alone_s, stage_times
from advisor.question.errors import InputError
from advisor.question.vocab import DEFAULT_ENGINE
from advisor.search.candidates import Candidate, Miss, plan_facts
from advisor.search.context import Context
from advisor.search.served import Figures, Served, Targets

PERCENTILES = (50, 90, 99)
RATE_STEPS = 16  # bisection steps on the rate: 2^-16 of the capacity
CLOSED_LOOP_REQUESTS = 2048
SPEED_OF_LIGHT = Efficiency(memory=1.0, compute=1.0, kv=1.0, experts=1.0, step_s=0.0, per_seq_s=0.0, comm=1.0)


def engine_of(job: Job) -> tuple[str, bool]:
    """The serving engine and whether the user gave it."""
    given = job.config.engine
    return (str(given), True) if given else (DEFAULT_ENGINE, False)


def targets_of(job: Job, use: bool = True) -> Targets:
    """The job's TTFT/TPOT targets (none when `use` is False) at its SLO percentile."""
    q = (job.slo_percentile or 50) / 100.0
    if not use:
        return Targets(None, None, q)
    tpot = job.tpot_ms / 1000.0 if job.tpot_ms and math.isfinite(job.tpot_ms) else None
    return Targets(job.ttft_ms / 1000.0 if job.ttft_ms else None, tpot, q)


def prior_efficiency(ctx: Context, measured: bool = True) -> Efficiency:
    """The priors when no learned serving model is shipped: the measured kernels as measured (a replica
    priced from the tables), else the documented decode bandwidth and prefill compute shares."""
    if measured:
        return Efficiency(memory=1.0, compute=1.0, kv=1.0)
    eff = ctx.knowledge.assumptions.efficiency
    return Efficiency(memory=eff["decode"].p50, compute=eff["prefill"].p50, kv=eff["decode"].p50)


def figures_for(ctx: Context, gpu: Gpu, tp: int, pp: int, precision: str) -> Figures | None:
    """The replica of tp x pp `gpu`s, or None when the GPU has no peak or not one sequence fits."""
    job, a = ctx.job, ctx.knowledge.assumptions
    eng, _ = engine_of(job)
    # A stated engine release (--stack-version) is simulated with that release's scheduler defaults and
    # priced with what the fit learned of its release (vLLM V0's prefill share and API server time).
    setup = build(job, gpu, tp, pp, precision, eng, a, engine_version=job.stack_version)
    if setup is None:
        return None
    if ctx.headroom:  # the memory kept free is outside the engine's: its cache is sized on the rest
        hw = setup.replica.hw
        hw = replace(hw, memory_bytes=hw.memory_bytes * (1.0 - ctx.headroom))
        setup = replace(setup, replica=replace(setup.replica, hw=hw))
    model = load_model()
    shape = setup.replica.shape
    traits = Traits(
        engine=eng,
        fp8=precision == "fp8",
        amd=gpu.vendor == "amd",
        moe=shape.experts > 1,
        expert_slice=shape.expert_ffn / tp,
        legacy=setup.engine.legacy(job.stack_version),
    )
    eff = model.efficiency(traits) if model else prior_efficiency(ctx, setup.replica.ops is not None)
    # The user's results on this GPU and engine move the efficiencies themselves (calibrate).
    eff = serving_efficiency(ctx.efficiency, job, gpu.id, eng, eff)
    learned_from = model.source_engine(eng) if model else None
    args = (setup.replica, eff, setup.limits, job.prompt_tokens, job.output_tokens, setup.overhead_bytes)
    sat = capacity(*args)
    if sat is None:
        return None
    # The speed of light is the roofline at the datasheet's figures, whatever prices the iteration.
    rep = setup.replica
    sol = capacity(replace(rep, ops=None), SPEED_OF_LIGHT, *args[2:])
    assert sol is not None
    return Figures(setup, eff, sat, sol, eng, learned_from, _bound(rep, eff, sat, job))


def _bound(rep: Replica, eff: Efficiency, sat: Saturation, job: Job) -> str:
    """What limits a full replica's iteration: 'memory' (weights and KV reads) or 'compute'."""
    if rep.ops is not None:  # the measured GEMMs' own split at the iteration's tokens
        tokens = (sat.batch + sat.prefill_tokens) / rep.pp
        return "memory" if rep.ops.memory_share(tokens) >= 0.5 else "compute"
    t = stage_times(
        rep,
        sat.batch / rep.pp,
        job.prompt_tokens + job.output_tokens / 2,
        sat.prefill_tokens / rep.pp,
        job.prompt_tokens / 2,
    )
    memory = t.weights_s / eff.memory + t.experts_s / (eff.memory * eff.experts) + t.kv_s / eff.kv
    return "memory" if memory >= (t.compute_s + t.expert_compute_s / eff.experts) / eff.compute else "compute"


def latency_at(ctx: Context, fig: Figures, rate: float, quantile: float) -> Latency | None:
    """Latency of one replica offered `rate` requests/s (None: over capacity)."""
    job, s = ctx.job, fig.setup
    return open_loop(
        s.replica, fig.eff, s.limits, job.prompt_tokens, job.output_tokens, rate, quantile, s.overhead_bytes
    )


def in_flight(job: Job, replicas: int) -> int | None:
    """Requests each replica keeps in flight when the load is stated so: a static batch per replica
    (--batch-size), or the deployment's concurrency split evenly over its replicas (as a load balancer in
    front of them does); None when the load is a request rate."""
    if job.batch_size:
        return job.batch_size
    if job.concurrency:
        return math.ceil(job.concurrency / max(replicas, 1))
    return None


def answer_lengths(job: Job, n: int) -> list[tuple[int, int]]:
    """The (prompt, output) lengths of `n` simulated requests: the stated ones, or spread as the stated
    dataset spreads them (--request-lengths sharegpt: advisor/physics/lengths.py)."""
    spread = job.config.request_lengths or "fixed"
    return request_lengths(job.prompt_tokens, job.output_tokens, n, spread)


def filled_share(job: Job, replicas: int, per: int) -> float:
    """The share of `replicas` x `per` client slots a stated concurrency fills: N clients spread over R
    replicas run ceil(N / R) on some and fewer (or none) on the others, so the deployment completes what
    N clients send (Little's law on the clients), not R x ceil(N / R) (a static batch fills every slot)."""
    if job.batch_size or not job.concurrency or per <= 0 or replicas <= 0:
        return 1.0
    return min(1.0, job.concurrency / (replicas * per))


def _idle_note(clients: int, replicas: int) -> str:
    """Why a closed loop of fewer clients than replicas completes less than the replicas could."""
    many = clients > 1
    return (
        f"{clients} request{'s' if many else ''} in flight keep{'' if many else 's'} {clients} of the "
        f"{replicas} replicas busy; the other {replicas - clients} idle (throughput counts the clients, "
        "not the replicas)"
    )


def closed_loop(
    ctx: Context, fig: Figures, concurrency: int, quantile: float, prompts: int | None = None
) -> tuple[Latency, LoadStats] | None:
    """Latency at the percentile, and the full figures, of one replica kept at `concurrency` requests in
    flight: the engine's scheduler simulated (its running cap, KV blocks, token budget, waiting queue); a run
    of `prompts` requests counted as a benchmark of that many counts them (closed_requests)."""
    job, s = ctx.job, fig.setup
    n, counted_as = closed_requests(concurrency, prompts)
    lengths = answer_lengths(job, n)
    cap = min(fig.sat.cap, concurrency)
    sched = closed_schedule(
        s.limits, cap, kv_tokens(s.replica, s.limits, s.overhead_bytes), lengths, concurrency
    )
    if sched is None:
        return None
    run = closed_run(sched, s.replica, fig.eff, requests=counted_as)
    return run.latency(quantile), run.stats(concurrency)


def closed_requests(concurrency: int, prompts: int | None) -> tuple[int, int | None]:
    """(requests to simulate, how closed_run counts them) for `concurrency` clients. Without a stated run
    length the steady state (None): the first wave, every client sending at once, is a service's start-up,
    not its load. With a stated number of prompts N, the run as vllm's bench serve times N prompts at a
    max_concurrency of C: every request counted once, the first wave and the last included
    (vllm-project/vllm@def9ce85ba1079af970a58ed3d42dd861ae35d58:vllm/benchmarks/serve.py `benchmark`: a
    semaphore of max_concurrency around every request, all N sent at rate inf; `calculate_metrics`: TTFT
    over every request); a run longer than the simulation weighs its waves once and its steady part as
    N - 2C requests (`counted`)."""
    steady = min(CLOSED_LOOP_REQUESTS, max(4 * concurrency, 64))
    if not prompts:
        return steady, None
    if prompts <= steady:
        return prompts, EVERY
    return steady, prompts


def burst(ctx: Context, fig: Figures, prompts: int, quantile: float) -> tuple[Latency, LoadStats] | None:
    """Latency at the percentile, and the full figures, of one replica sent `prompts` requests at once: t=0,
    as `vllm bench serve --request-rate inf` sends them
    (vllm-project/vllm@def9ce85ba1079af970a58ed3d42dd861ae35d58:vllm/benchmarks/serve.py get_request:
    a delay of 0 for every request when the rate is inf;
    calculate_metrics: output_throughput = output tokens / the run's duration, TTFT over every request).
    The engine's scheduler simulated (its running cap and KV blocks from knowledge/serving_engines.toml
    admit them in waves, its token budget chunks the prefills), every request counted once."""
    job, s = ctx.job, fig.setup
    lengths = answer_lengths(job, prompts)
    cap = min(fig.sat.cap, prompts)
    sched = closed_schedule(s.limits, cap, kv_tokens(s.replica, s.limits, s.overhead_bytes), lengths, prompts)
    if sched is None:
        return None
    run = closed_run(sched, s.replica, fig.eff, requests=EVERY)
    return run.latency(quantile), run.stats(prompts)


def closed_loop_at(ctx: Context, fig: Figures, concurrency: int, quantile: float) -> Latency | None:
    """Latency and throughput of one replica kept at `concurrency` requests in flight."""
    got = closed_loop(ctx, fig, concurrency, quantile)
    return got[0] if got else None


def stated_load(ctx: Context, served: Served) -> LoadStats | None:
    """The stated load's figures of a plan: the closed loop's (kept when it was sized), or at a stated
    request rate the open loop simulated (Poisson arrivals through the engine's scheduler; the mean-value
    analysis sizes the search but its tails are not reported, see tests/unit/test_serving_open_loop.py).
    None when no load is stated or the rate is over capacity."""
    from advisor.physics.arrivals import OPEN_LOOP_REQUESTS, simulate_open

    job = ctx.job
    if served.stats is not None or job.concurrency or job.batch_size:
        return served.stats
    given = "requests_per_s" in job.given_workload
    fig, s = served.figures, served.figures.setup
    if not given or served.rate <= 0 or served.rate >= fig.sat.requests_s or served.prefill_replicas:
        return None
    lengths = answer_lengths(job, OPEN_LOOP_REQUESTS)
    kv = kv_tokens(s.replica, s.limits, s.overhead_bytes)
    served.stats = simulate_open(s.replica, fig.eff, s.limits, fig.sat.cap, kv, lengths, served.rate)
    return served.stats


def max_rate(ctx: Context, fig: Figures, targets: Targets) -> float:
    """The largest requests/s one replica takes with TTFT and TPOT within the targets at the percentile,
    and at most the utilisation cap of its capacity (0 when even a trickle misses them)."""
    cap = ctx.knowledge.assumptions.defaults["serving_utilisation_cap"].value * fig.sat.requests_s
    if targets.ttft_s is None and targets.tpot_s is None:
        return cap
    meets = _meets(ctx, fig, targets)
    if meets(cap):
        return cap
    lo, hi = 0.0, cap
    if not meets(cap * 1e-4):
        return 0.0
    for _ in range(RATE_STEPS):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if meets(mid) else (lo, mid)
    return lo


def _meets(ctx: Context, fig: Figures, targets: Targets) -> Callable[[float], bool]:
    """Whether one replica offered a rate meets the targets: targets.met(latency_at(...)), working out only
    what met() reads (TPOT first: when it misses, the first token's queueing is never needed)."""
    job, s, q = ctx.job, fig.setup, targets.quantile
    ttft_s, tpot_s = targets.ttft_s, targets.tpot_s
    rep, eff, lim, isl, osl = s.replica, fig.eff, s.limits, job.prompt_tokens, job.output_tokens

    def meets(rate: float) -> bool:
        st = steady_state(rep, eff, lim, isl, osl, rate, s.overhead_bytes)
        if st is None:
            return False
        # As met(): a figure passes when it is <= its target (so a NaN fails).
        if tpot_s is not None and not tpot_quantile(rep, eff, lim, isl, osl, st, q) <= tpot_s:
            return False
        return ttft_s is None or first_token(rep, eff, lim, isl, osl, st, q).q_s <= ttft_s

    return meets


def alone(ctx: Context, fig: Figures) -> tuple[float, float]:
    """(TTFT, TPOT) of one request on an idle replica."""
    s, job = fig.setup, ctx.job
    cached = cached_tokens(s.limits, job.prompt_tokens)
    ttft = prefill_alone_s(s.replica, fig.eff, job.prompt_tokens, s.limits.token_budget, cached)
    # latency_at(a trickle).tpot_s: the steady state's mean iteration, without the rest of the latency
    st = steady_state(
        s.replica,
        fig.eff,
        s.limits,
        job.prompt_tokens,
        job.output_tokens,
        fig.sat.requests_s * 1e-6,
        s.overhead_bytes,
    )
    return ttft, (st[0] if st else math.inf)


def shapes(job: Job, node_size: int, gpus: int | None = None) -> list[tuple[int, int]]:
    """Replica shapes (tp, pp) to try: tensor parallel within a server, pipeline stages of a full server
    across servers; a stated tp or pp is held (for every workload kind); a stated count must hold whole
    replicas."""
    assert job.arch is not None
    given_tp, given_pp = job.config.tp, job.config.pp
    out = [(tp, 1) for tp in (1, 2, 4, 8, 16) if tp <= node_size and job.arch.heads % tp == 0]
    out += [(node_size, pp) for pp in (2, 4, 8) if job.arch.heads % node_size == 0]
    if given_tp or given_pp:
        tps = [given_tp] if given_tp else sorted({t for t, _ in out})
        pps = [given_pp] if given_pp else [1]
        # Tensor parallelism a search picks stays inside a server; a stated tp over whole servers (SGLang's
        # TP 16 over two nodes) is held, its all-reduces priced over the servers' network (serving_ops).
        out = [(t, p) for t in tps for p in pps if t <= node_size or t % node_size == 0]
    if gpus is not None:
        out = [(t, p) for t, p in out if gpus % (t * p) == 0]
    return _runnable(job, out)


def _runnable(job: Job, out: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The shapes the job's engine can run (knowledge/serving_engines.toml supports); a stated pipeline
    the engine has no stages for is refused."""
    eng = engine_info(engine_of(job)[0])
    given_pp = job.config.pp
    if given_pp and given_pp > 1 and not runs(eng, 1, given_pp):
        raise InputError(
            field="pp",
            value=given_pp,
            problem=f"is pipeline parallelism, which {eng.name} cannot run",
            accepted="pp 1 with this engine, or an engine with pipeline stages: "
            + ", ".join(e.id for e in engines().values() if e.supports.get("pp")),
        )
    return sorted({(t, p) for t, p in out if runs(eng, t, p)})


def size_for_load(ctx: Context, fig: Figures, targets: Targets, rate_total: float) -> Served | str:
    """recommend: the fewest replicas whose rate each meets the targets; or why none can. A stated batch is
    the requests each replica keeps in flight (a closed loop): its completion rate sizes the replicas."""
    lone = alone(ctx, fig)
    if ctx.job.concurrency and not ctx.job.batch_size:
        return _size_for_concurrency(ctx, fig, targets, lone)
    if ctx.job.batch_size:
        held = closed_loop_at(ctx, fig, ctx.job.batch_size, targets.quantile)
        if held is None or not targets.met(held):
            return f"{ctx.job.batch_size} requests in flight per replica miss the latency targets"
        replicas = max(1, math.ceil(rate_total / held.requests_s - 1e-9))
        return Served(
            fig, replicas, rate_total / replicas, held, held.requests_s, targets, ctx.job.batch_size, lone
        )
    best = max_rate(ctx, fig, targets)
    if best <= 0:
        return _latency_miss(targets, lone)
    replicas = max(1, math.ceil(rate_total / best - 1e-9))
    rate = rate_total / replicas
    load = latency_at(ctx, fig, rate, targets.quantile)
    batch = max(1, round(load.batch)) if load else fig.sat.cap
    return Served(fig, replicas, rate, load, best, targets, batch, lone)


def _size_for_concurrency(
    ctx: Context, fig: Figures, targets: Targets, lone: tuple[float, float]
) -> Served | str:
    """recommend at a stated concurrency: the fewest replicas whose share of the requests in flight meets
    the targets (bisection on the replicas: fewer requests each is never slower)."""
    total = ctx.job.concurrency or 1
    q = targets.quantile
    seen: dict[int, tuple[Latency, LoadStats] | None] = {}

    def run(replicas: int) -> tuple[Latency, LoadStats] | None:
        per = math.ceil(total / replicas)
        if per not in seen:
            seen[per] = closed_loop(ctx, fig, per, q)
        return seen[per]

    def meets(replicas: int) -> bool:
        got = run(replicas)
        return got is not None and targets.met(got[0])

    if not meets(total):  # even one request in flight per replica misses them
        return _latency_miss(targets, lone)
    lo, hi = 0, total  # meets(hi); not known for lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if meets(mid) else (mid, hi)
    got = run(hi)
    assert got is not None
    load, stats = got
    served = Served(fig, hi, load.requests_s, load, load.requests_s, targets, math.ceil(total / hi), lone)
    served.stats = stats
    served.filled = filled_share(ctx.job, hi, math.ceil(total / hi))
    return served


def _latency_miss(targets: Targets, lone: tuple[float, float]) -> str:
    ttft, tpot = lone
    if targets.tpot_s is not None and tpot > targets.tpot_s:
        return f"{tpot * 1000:.0f} ms per output token even alone (target {targets.tpot_s * 1000:g} ms)"
    if targets.ttft_s is not None and ttft > targets.ttft_s:
        return f"time to first token {ttft * 1000:.0f} ms even alone (target {targets.ttft_s * 1000:g} ms)"
    return "no request rate meets the latency targets at this percentile"


def size_for_count(ctx: Context, fig: Figures, targets: Targets, replicas: int) -> Served:
    """predict: the stated GPUs as replicas; a stated batch in flight per replica, else a stated load, else
    the capacity."""
    job = ctx.job
    lone = alone(ctx, fig)
    q = targets.quantile
    rate_given = "requests_per_s" in job.given_workload
    if job.num_prompts and rate_given and 0 < job.requests_per_s < math.inf:
        return _size_for_finite_run(ctx, fig, targets, replicas, lone)
    if job.num_prompts and not job.concurrency:
        return _size_for_burst(ctx, fig, targets, replicas, lone)
    per = in_flight(job, replicas)
    if per:
        prompts = math.ceil(job.num_prompts / replicas) if job.num_prompts and job.concurrency else None
        got = closed_loop(ctx, fig, per, q, prompts)
        load = got[0] if got else None
        rate = load.requests_s if load else 0.0
        served = Served(fig, replicas, rate, load, max_rate(ctx, fig, targets), targets, per, lone)
        served.stats = got[1] if got else None
        served.filled = filled_share(job, replicas, per)
        if served.filled * replicas * per < replicas:
            served.notes.append(_idle_note(job.concurrency or 0, replicas))
        return served
    if rate_given and job.requests_per_s:
        rate = job.requests_per_s / replicas
        load = latency_at(ctx, fig, rate, q)
        batch = max(1, round(load.batch)) if load else fig.sat.cap
        served = Served(fig, replicas, rate, load, max_rate(ctx, fig, targets), targets, batch, lone)

        if load is None:
            served.notes.append(
                f"{job.requests_per_s:g} req/s is over this deployment's capacity "
                f"({fig.sat.requests_s * replicas:.2f} req/s): latency grows without bound"
            )
        return served
    batch = max(1, round(fig.sat.batch))
    return Served(fig, replicas, 0.0, None, max_rate(ctx, fig, targets), targets, batch, lone)


def _size_for_finite_run(
    ctx: Context, fig: Figures, targets: Targets, replicas: int, lone: tuple[float, float]
) -> Served:
    """predict: a run of N prompts sent at a rate (vllm bench serve at a request rate with a number of
    prompts), split evenly over the replicas (ceil(N / R) each at the rate / R), each replica's share
    simulated from the start to its last token (arrivals.finite_open): throughput over the run's duration,
    the drain included, and every request's latency counted."""
    from advisor.physics.arrivals import finite_open

    job, s = ctx.job, fig.setup
    n = job.num_prompts or 1
    per = math.ceil(n / max(replicas, 1))
    rate = job.requests_per_s / max(replicas, 1)
    lengths = answer_lengths(job, per)
    kv = kv_tokens(s.replica, s.limits, s.overhead_bytes)
    got = finite_open(s.replica, fig.eff, s.limits, fig.sat.cap, kv, lengths, rate, targets.quantile)
    load = got[0] if got else None
    batch = max(1, round(load.batch)) if load else fig.sat.cap
    done = load.requests_s if load else 0.0
    served = Served(fig, replicas, done, load, max_rate(ctx, fig, targets), targets, batch, lone)
    served.stats = got[1] if got else None
    served.filled = min(1.0, n / (replicas * per))
    served.notes.append(
        f"a run of {n} prompts sent at {job.requests_per_s:g} req/s (Poisson, as bench serve --request-rate "
        "with --num-prompts): throughput is output tokens over the run, from the first send to the last "
        f"token (the drain included), TTFT over its {n} requests"
    )
    return served


def _size_for_burst(
    ctx: Context, fig: Figures, targets: Targets, replicas: int, lone: tuple[float, float]
) -> Served:
    """predict: a burst of N prompts split evenly over the replicas (ceil(N / R) each, as a load balancer
    spreads them), each replica's share simulated from t=0 to its last token."""
    n = ctx.job.num_prompts or 1
    per = math.ceil(n / max(replicas, 1))
    got = burst(ctx, fig, per, targets.quantile)
    load = got[0] if got else None
    served = Served(
        fig,
        replicas,
        load.requests_s if load else 0.0,
        load,
        max_rate(ctx, fig, targets),
        targets,
        min(per, fig.sat.cap),
        lone,
    )
    served.stats = replace(got[1], loop="burst") if got else None
    served.filled = min(1.0, n / (replicas * per))
    served.notes.append(
        f"assumed all {n} prompts sent at once (t=0, as bench serve --request-rate inf): throughput is "
        f"output tokens over the burst's makespan, TTFT over its {n} requests (queued behind earlier "
        "prefills and admission waves)"
    )
    return served


def engine_usable_gb(ctx: Context, gpu: Gpu) -> tuple[float, str]:
    """What the job's engine keeps the weights and the KV cache within on one GPU, GB, and the words naming
    its setting: on a 'total' engine its own memory fraction of what CUDA hands out (knowledge/
    serving_engines.toml, or the --gpu-memory-utilization stated), on a 'free' one the whole of it, its cache
    taking the fraction of what the weights leave (as engine_usable_bytes accounts a plan); less the headroom
    kept free."""
    eng = engine_info(engine_of(ctx.job)[0])
    stated = ctx.job.config.gpu_memory_utilization
    fraction = float(stated) if stated else eng.memory_fraction
    flag = str(eng.launch.get("gpu_memory_utilization", " memory fraction")).split()[0]
    setting = f"{flag} {fraction:g}"
    usable = usable_gb(gpu, ctx.knowledge.assumptions, ctx.headroom)
    if eng.fraction_of == "free":
        return usable, f"{eng.name}'s KV cache takes {setting} of what the weights leave"
    return usable * fraction, f"{eng.name}'s {setting} of the GPU"


def _memory_miss(ctx: Context, gpu: Gpu, precision: str, node_size: int) -> Miss:
    """Why not one sequence fits even on the widest replica."""
    job, a = ctx.job, ctx.knowledge.assumptions
    tp = max(t for t, _ in shapes(job, node_size))
    layout = Layout(count=tp, nodes=1, node_size=node_size, precision=precision, tp=tp)
    usable, setting = engine_usable_gb(ctx, gpu)
    mem = inference_memory(job, gpu, layout, a, usable, job.prompt_tokens + job.output_tokens)
    return Miss(
        gpu.id,
        tp,
        "memory",
        f"needs {mem.central_gb:.0f} GB per GPU for one sequence of {job.prompt_tokens + job.output_tokens} "
        f"tokens, has {gpu.memory_gb:g} {gpu.memory_unit} ({usable:.0f} GB usable: {setting})",
        1.0,
    )


def _candidate(ctx: Context, gpu: Gpu, precision: str, node_size: int, served: Served) -> Candidate | Miss:
    """The plan of a sized deployment: its layout, memory at the running batch, and the rules' verdict."""
    job, a = ctx.job, ctx.knowledge.assumptions
    rep = served.figures.setup.replica
    tp, pp, replicas = rep.tp, rep.pp, served.replicas
    count = replicas * tp * pp
    # A replica wider than a server spans whole servers (a stated TP2 on one-GPU GH200 nodes takes two).
    nodes = (
        max(1, math.ceil(count / node_size))
        if tp * pp <= node_size
        else replicas * math.ceil(tp * pp / node_size)
    )
    layout = Layout(
        count=count,
        nodes=nodes,
        node_size=node_size,
        precision=precision,
        tp=tp,
        pp=pp,
        dp=replicas,
        sharding="none",
        micro_batch=served.batch,
    )
    # One accounting with the engine that admitted the batch: the replica's own weights and KV bytes, the
    # sequences it runs at once (a stated batch past its cache waits), each holding its average context
    # (paged caches: prompt + output / 2), against the memory its cache was sized within (batch_cap).
    setup = served.figures.setup
    rep, lim = setup.replica, setup.limits
    running = min(served.batch, served.figures.sat.cap)
    kv = rep.kv_per_token_gpu * seq_tokens(lim, job.prompt_tokens, job.output_tokens) * running
    engine_bytes = (setup.working_bytes, setup.overhead_bytes - setup.working_bytes)
    usable = engine_usable_bytes(rep, lim) / GB
    memory = engine_memory(gpu, a, usable, rep.weights_per_gpu, kv, engine_bytes)
    facts = plan_facts(ctx.gpu_facts(gpu, node_size), layout, memory, gpu, 0.0)
    firings = evaluate(ctx.rules_by_scope["plan"], facts)
    hard = [f for f in firings if f.kind == "constraint"]
    if hard:
        return Miss(gpu.id, count, "constraint", f"{hard[0].message} (rule {hard[0].rule_id})", 2.0)
    return Candidate(gpu, layout, memory, "decode", serving=served, firings=firings, facts=facts)


def _disaggregated(
    ctx: Context, gpu: Gpu, precision: str, node_size: int, fig: Figures, targets: Targets, colocated: int
) -> Candidate | None:
    """The prefill/decode split of this replica shape, when it needs fewer GPUs than colocating."""
    from advisor.search.disaggregated import disaggregated

    job = ctx.job
    if not fig.setup.engine.supports.get("disaggregation", False):
        return None  # the engine cannot split prefill from decode (TGI, LMDeploy)
    served = disaggregated(fig, job.prompt_tokens, job.output_tokens, job.requests_per_s, targets)
    if served is None or served.replicas * fig.replica_gpus >= colocated:
        return None
    served.notes.append(
        f"disaggregated prefill/decode wins here: {served.replicas * fig.replica_gpus} GPUs against "
        f"{colocated} colocated ({served.prefill_replicas} prefill + "
        f"{served.replicas - served.prefill_replicas} decode replicas: decodes no longer wait behind prompt "
        "chunks, so each decode replica runs a larger batch within the TPOT target)"
    )
    got = _candidate(ctx, gpu, precision, node_size, served)
    return got if isinstance(got, Candidate) else None


def _sized(ctx: Context, gpu: Gpu, fig: Figures, targets: Targets, count: int | None) -> Served | Miss:
    """One replica shape sized for the load (recommend) or as the stated count (predict), or why not."""
    job, rep = ctx.job, fig.setup.replica
    g = rep.tp * rep.pp
    if count is not None:
        return size_for_count(ctx, fig, targets, count // g)
    if job.num_prompts:  # a burst ends: there is no steady load to size replicas for
        raise InputError(
            field="num_prompts",
            value=job.num_prompts,
            problem="is a burst on stated GPUs (predict), not a load to size replicas for",
            accepted="a request rate or a concurrency to recommend for; a burst with a GPU and a count",
        )
    served = size_for_load(ctx, fig, targets, job.requests_per_s)
    if isinstance(served, str):
        return Miss(gpu.id, g, "latency", served, 1.5)
    total, most = served.replicas * g, ctx.constraints.max_gpus
    if total > most:
        load = f"{job.concurrency} requests in flight" if job.concurrency else f"{job.requests_per_s:g} req/s"
        why = f"needs {total} GPUs for {load}, over the most GPUs allowed ({most})"
        return Miss(gpu.id, total, "scale", why, 2.5)
    return served


def search_serving(
    ctx: Context, gpu: Gpu, precision: str, node_size: int, count: int | None = None
) -> tuple[list[Candidate], list[Miss]]:
    """Every replica shape that serves the load (recommend), or the stated count as replicas (predict)."""
    job = ctx.job
    found: list[Candidate] = []
    missed: list[Miss] = []
    given_targets = job.ttft_ms is not None or "tpot_ms" in job.given_workload
    targets = targets_of(job, use=count is None or given_targets)
    if job.config.tp and job.config.tp > node_size and job.config.tp % node_size:
        why = f"tensor parallel {job.config.tp} is wider than its {node_size}-GPU servers, not whole servers"
        return [], [Miss(gpu.id, job.config.tp, "constraint", why, 2.0)]
    for tp, pp in shapes(job, node_size, count):
        fig = figures_for(ctx, gpu, tp, pp, precision)
        if fig is None:
            continue
        served = _sized(ctx, gpu, fig, targets, count)
        if isinstance(served, Miss):
            missed.append(served)
            continue
        total = served.replicas * tp * pp
        got = _candidate(ctx, gpu, precision, node_size, served)
        (missed if isinstance(got, Miss) else found).append(got)  # type: ignore[arg-type]
        closed = job.batch_size or job.concurrency
        if count is None and not closed and (targets.ttft_s or targets.tpot_s):
            split = _disaggregated(ctx, gpu, precision, node_size, fig, targets, total)
            if split is not None:
                found.append(split)
    if not found and not missed:
        missed.append(_memory_miss(ctx, gpu, precision, node_size))
    return found, missed
