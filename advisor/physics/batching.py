"""Continuous batching on one replica: capacity, latency at a Poisson request rate, and a closed loop.

All three price iterations with the one step model (`advisor/physics/serving.py`):
  * capacity: the steady state at the engine's caps (max-num-seqs, tokens per iteration, the memory-limited
    batch): decode tokens b and prefill tokens p = b x prompt / (output - 1) share every iteration;
  * open loop (Poisson arrivals at a rate): a mean-value analysis. Little's law sets the decoding batch
    b = rate x (output - 1) x iteration and the prefill tokens p = rate x prompt x iteration per iteration
    (a fixed point); a request waits for the running iteration to end, then queues for the iteration's prompt
    budget (M/D/1 on the budget left after the decodes), then for a free slot (Erlang C over the batch cap),
    then is prefilled in chunks. Percentiles: the residual iteration is uniform, the waits have exponential
    tails (exact for Erlang C, Kingman's for M/D/1); TPOT at a percentile prices an iteration with the batch
    one z-score above its mean (the batch is Poisson);
  * closed loop (fixed concurrency, or one batch submitted at once): a discrete-event simulation of the
    scheduler, admission (slots and KV cache), chunked prefill, first-come first-served. Which tokens run in
    which iteration does not depend on time in a closed loop, so the schedule is built once and priced with
    the step model; percentiles are read from the simulated requests.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass, field

from advisor.physics.prefill_first import cycle, cycle_s, prefill_batch_s
from advisor.physics.serving import Efficiency, Replica, StepPricer, iteration_s, pricer_of

Z = {0.5: 0.0, 0.9: 1.2816, 0.95: 1.6449, 0.99: 2.3263}
"""Standard normal quantiles of the percentiles an answer is held to."""


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class EngineLimits:
    """An engine's scheduler and memory settings (knowledge/serving_engines.toml)."""

    max_seqs: int | None
    """Running sequences at most (vLLM max-num-seqs); None: only memory limits them."""
    token_budget: int
    """Tokens one iteration schedules at most (max-num-batched-tokens, chunked-prefill size)."""
    reserve: str = "expected"
    """'full': a request holds KV for prompt + output from admission (TensorRT-LLM's guaranteed-no-evict);
    'expected': paged KV grows with the output, so a running sequence holds prompt + output / 2 on average;
    'paged': as 'expected' for capacity, and the simulations admit a request when its prompt fits, grow
    its cache token by token and, when the cache runs out, preempt the newest running request, which
    waits again and recomputes its prompt and the tokens it had (vLLM's PreemptionMode.RECOMPUTE)."""
    memory_fraction: float = 0.9
    fraction_of: str = "total"
    """'total': weights, KV and workspace share memory_fraction of the GPU (vLLM, SGLang); 'free': the KV
    cache takes memory_fraction of what the weights leave (TensorRT-LLM, LMDeploy)."""
    chunked: bool = True
    """True: prompt chunks ride in the decodes' iterations (chunked prefill, in-flight batching); False:
    prefill runs first, in iterations of its own of up to `token_budget` tokens (a longer prompt over
    several), while every running decode waits (vLLM V0 without chunked prefill: vllm/core/scheduler.py
    _schedule_default schedules no decodes when prefills are scheduled; SGLang without
    --enable-mixed-chunk: Scheduler.run_step runs a new prefill batch whenever one can be formed). In a
    closed loop of equal requests this keeps the clients in waves: a wave is prefilled before any of it
    decodes, so it finishes, and returns, together, and its TTFT grows with the wave's size."""
    wave: bool = False
    """True: the prompts prefilled back to back (until none waits for prefill) reach their first tokens
    together, when the last of them is prefilled, and only then decode (the whole context phase of the
    requests that arrived together before any first token: LMDeploy TurboMind 0.1.0's published closed
    loops, knowledge/serving_engines.toml [lmdeploy]); False: each prompt's first token at the end of its
    own prefill iteration."""
    prefix_hit: float = 0.0
    """Share of each prompt's tokens the engine finds in its prefix cache (stated, --prefix-cache-hit): they
    are not prefilled, the rest is, its attention over the whole prefix (vLLM's automatic prefix caching,
    SGLang's radix cache). 0: every prompt prefilled in full."""


def cached_tokens(lim: EngineLimits, isl: float) -> int:
    """Prompt tokens a request finds in the prefix cache: the stated share, less at least the last token,
    which the engine computes for its logits; the token budget counts only the rest
    (vllm-project/vllm@003df2961dd8 vllm/v1/core/kv_cache_manager.py get_computed_blocks: 'When all tokens
    hit the cache, we must recompute the last token', max_cache_hit_length = num_tokens - 1, whole blocks
    only: vLLM prefills up to a block more, 16 tokens by default, which is left out)."""
    if lim.prefix_hit <= 0.0:
        return 0
    return max(0, min(int(isl) - 1, int(lim.prefix_hit * isl)))


def engine_usable_bytes(rep: Replica, lim: EngineLimits) -> float:
    """Bytes per GPU the engine's own accounting keeps its weights, working set and KV cache within: on a
    'total' engine its memory fraction of the GPU, the cache being what the weights and the profiled
    forward leave of it (vllm-project/vllm@v0.7.3 vllm/worker/worker.py determine_num_available_blocks:
    available_kv_cache_memory = total_gpu_memory x gpu_memory_utilization - peak_memory, num_gpu_blocks =
    available // cache_block_size); on a 'free' engine the whole GPU, its cache a fraction of what the
    weights leave and the rest left free. kv_tokens sizes the cache inside it, so a batch within
    batch_cap fits it by construction."""
    return rep.hw.memory_bytes * (lim.memory_fraction if lim.fraction_of == "total" else 1.0)


def kv_tokens(rep: Replica, lim: EngineLimits, overhead_bytes: float) -> float:
    """Tokens of context the replica's KV cache holds."""
    mem, w = rep.hw.memory_bytes, rep.weights_per_gpu
    if lim.fraction_of == "free":
        room = lim.memory_fraction * (mem - w - overhead_bytes)
    else:
        room = lim.memory_fraction * mem - w - overhead_bytes
    return max(0.0, room) / rep.kv_per_token_gpu


RESIDUAL_STREAM_BYTES = 4.0
"""Bytes per token and hidden unit that tensor parallelism does not split in an inference forward: the hidden
states and the residual (16-bit) each decoder layer passes on, full width on every rank (vLLM's decoder
layers return (hidden_states, residual); a row-parallel projection all-reduces its output to full width:
vllm/model_executor/models/llama.py LlamaDecoderLayer.forward, vllm/model_executor/layers/linear.py
RowParallelLinear)."""

MOE_CHUNK_TOKENS = 32768
"""vLLM's fused MoE runs a forward's tokens in chunks of this many (vllm/envs.py VLLM_FUSED_MOE_CHUNK_SIZE,
default 32768 in the V0 releases): its intermediate caches are sized for one chunk."""


def profile_peak_bytes(rep: Replica, lim: EngineLimits, vocab: int, per_token_hidden: float) -> float:
    """Peak activations per GPU of the forward an engine profiles before sizing its KV cache (vLLM: one
    pass of `token_budget` tokens and `max_seqs` sampled sequences; what it leaves is the cache): one
    layer's working set (per_token_hidden bytes per token and hidden unit over tp) on top of the residual
    stream every rank holds at full width (RESIDUAL_STREAM_BYTES), a mixture of experts' routed copies
    (top-k x hidden outputs, top-k x 3 x expert width / tp inputs and activations, 16-bit, per chunk of
    MOE_CHUNK_TOKENS), and the sampler's fp32 logits for every sequence."""
    s, tp, tokens = rep.shape, rep.tp, float(lim.token_budget)
    peak = (per_token_hidden / tp + RESIDUAL_STREAM_BYTES) * tokens * s.hidden
    if s.experts > 1:
        routed = min(tokens, MOE_CHUNK_TOKENS) * s.experts_per_token
        peak += routed * (s.hidden + 3.0 * s.expert_ffn / tp) * 2.0
    seqs = min(float(lim.max_seqs or 256), tokens)
    return peak + seqs * vocab / tp * 4.0


def seq_tokens(lim: EngineLimits, isl: float, osl: float) -> float:
    """KV tokens one running sequence holds (see EngineLimits.reserve)."""
    return isl + (osl if lim.reserve == "full" else osl / 2.0)


def batch_cap(rep: Replica, lim: EngineLimits, isl: float, osl: float, overhead_bytes: float) -> int:
    """Sequences one replica runs at once: the engine's cap or what the KV cache holds, whichever is less."""
    by_memory = int(kv_tokens(rep, lim, overhead_bytes) // seq_tokens(lim, isl, osl))
    return max(0, min(by_memory, lim.max_seqs) if lim.max_seqs else by_memory)


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Saturation:
    """A replica kept full: decoding sequences, prompt tokens per iteration, iteration time, throughput."""

    batch: float
    prefill_tokens: float
    iteration_s: float
    output_tok_s: float
    requests_s: float
    cap: int


def saturation_load(
    rep: Replica, lim: EngineLimits, isl: float, osl: float, overhead_bytes: float
) -> tuple[int, float, float] | None:
    """(batch cap, decoding sequences, prompt tokens per iteration) of a replica kept full, or None when not
    one sequence fits. It does not depend on the efficiencies: only the caps set it."""
    cap = batch_cap(rep, lim, isl, osl, overhead_bytes)
    if cap < 1:
        return None
    budget = lim.token_budget
    if osl <= 1:
        return cap, 0.0, float(min(budget, cap * isl))
    decode_iters = osl - 1.0
    # Slots: each request also holds one for its prefill iteration; budget: b + b x isl / (osl - 1) <= budget
    # where the prompts ride in the decodes' iterations (prefill first, the budget bounds the prefills only).
    b = cap * decode_iters / (decode_iters + 1.0)
    if lim.chunked:
        b = min(b, budget * decode_iters / (decode_iters + isl))
    return cap, b, b * isl / decode_iters


def prompt_mix(b: float, p: float, isl: float, budget: int) -> tuple[float, float]:
    """(share of iterations that carry a prompt chunk, that chunk's tokens): prompts arrive whole and are cut
    into chunks of what the budget leaves after the decodes, so `p` prompt tokens per iteration on average
    are a chunk in a share of the iterations, not a sliver in each (iteration time is convex in tokens)."""
    if p <= 0:
        return 0.0, 0.0
    chunk = min(isl, max(budget - b, 1.0))
    share = p / chunk
    return (share, chunk) if share < 1.0 else (1.0, p)


def mixed_iteration_s(
    rep: Replica,
    eff: Efficiency,
    b: float,
    ctx: float,
    p: float,
    isl: float,
    budget: int,
    chunked: bool = True,
) -> float:
    """Mean iteration time when `p` prompt tokens per iteration ride along `b` decodes (see prompt_mix);
    where prefill runs first (`chunked` False), the mean time between two decode iterations with the
    prefill batches between them (advisor/physics/prefill_first.py)."""
    price = pricer_of(rep, eff)
    return _mixed(price, b, ctx, p, isl, budget) if chunked else cycle_s(price, b, ctx, p, isl, budget)


def _mixed(price: StepPricer, b: float, ctx: float, p: float, isl: float, budget: int) -> float:
    """mixed_iteration_s with the replica's step pricer: the open loop's fixed point calls it thousands of
    times, so prompt_mix is written out here (the same comparisons and operations, so the same floats)."""
    if p <= 0:
        share, chunk = 0.0, 0.0
    else:
        room = budget - b
        room = 1.0 if room < 1.0 else room  # max(budget - b, 1.0)
        chunk = room if room < isl else isl  # min(isl, room)
        share = p / chunk
        if share >= 1.0:
            share, chunk = 1.0, p
    with_chunk = price(b, ctx, chunk, isl / 2.0) if share else 0.0
    without = price(b, ctx, 0.0, 0.0) if share < 1.0 else 0.0
    return share * with_chunk + (1.0 - share) * without


def saturation(cap: int, b: float, p: float, tau: float, isl: float, osl: float) -> Saturation:
    """Throughput of a full replica whose iterations take `tau`."""
    rps = p / isl / tau if osl <= 1 else b / ((osl - 1.0) * tau)
    return Saturation(b, p, tau, rps * osl, rps, cap)


def capacity(
    rep: Replica, eff: Efficiency, lim: EngineLimits, isl: float, osl: float, overhead_bytes: float
) -> Saturation | None:
    """Maximum throughput: the steady state at the batch cap and the iteration's token budget (None when not
    one sequence fits)."""
    load = saturation_load(rep, lim, isl, osl, overhead_bytes)
    if load is None:
        return None
    cap, b, p = load
    tau = mixed_iteration_s(rep, eff, b, isl + osl / 2.0, p, isl, lim.token_budget, lim.chunked)
    return saturation(cap, b, p, tau, isl, osl)


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Latency:
    """Latency of one replica under a load: means and the percentile asked for, in seconds."""

    quantile: float
    ttft_s: float
    tpot_s: float
    ttft_q_s: float
    tpot_q_s: float
    batch: float
    """Sequences running on average."""
    output_tok_s: float
    requests_s: float
    itl_s: float = 0.0
    """Mean gap between a request's streamed tokens (token-weighted; = TPOT's mean for equal lengths)."""
    itl_q_s: float = 0.0
    """The gap at the percentile: a decode-only iteration unless prompt chunks ride in over 1 - q of them."""


PERCENTILES = (0.5, 0.9, 0.99)
"""The percentiles a load's latencies are reported at."""


@dataclass(frozen=True, slots=True, repr=False)
class LoadStats:
    """A replica under a stated load: what it completes, the requests it runs and queues, and each latency
    (seconds) at P50, P90 and P99 (PERCENTILES), with the means (TTFT, TPOT, ITL, end-to-end)."""

    loop: str
    """'closed' (a concurrency or a static batch) or 'open' (a request rate)."""
    concurrency: int | None
    rate: float
    """Requests/s completed (closed) or offered (open)."""
    output_tok_s: float
    running: float
    waiting: float
    ttft: tuple[float, ...]
    tpot: tuple[float, ...]
    itl: tuple[float, ...]
    e2e: tuple[float, ...]
    means: tuple[float, ...]


def _fixed_point(
    rep: Replica, eff: Efficiency, isl: float, osl: float, rate: float, budget: int, chunked: bool = True
) -> float | None:
    """Mean iteration time (prefill first: the mean cycle) at `rate` by Little's law (the root of
    f(tau) = tau, by bisection), or None when there is none (over capacity)."""
    ctx = isl + osl / 2.0
    price = pricer_of(rep, eff)
    decoding, prompts = rate * (osl - 1.0), rate * isl  # per second: b and p are these x tau
    mean = _mixed if chunked else cycle_s

    def f(tau: float) -> float:
        return mean(price, decoding * tau, ctx, prompts * tau, isl, budget) - tau

    lo, first = 0.0, price(1.0, ctx, 0.0, 0.0)
    hi = first
    while f(hi) > 0:  # f(0) > 0 (the weights are read even for no token); widen until the load is met
        lo, hi = hi, 2.0 * hi
        if hi > 1e4 * first:
            return None
    for _ in range(60):  # bisection on a bracket: f is smooth and crosses zero once
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
        if hi - lo <= 1e-6 * hi:
            break
    return hi


def erlang_c(servers: int, load: float) -> float:
    """Probability that an arrival waits for one of `servers` busy servers at offered load `load` (Erlang)."""
    if load >= servers:
        return 1.0
    if load < 0.5 * servers - 4.0 * math.sqrt(servers):  # far from the cap the wait probability is negligible
        return 0.0
    b = 1.0
    for k in range(1, servers + 1):  # Erlang B by its recursion: b = load b / (k + load b)
        lb = load * b
        b = lb / (k + lb)
    return servers * b / (servers - load * (1.0 - b))


def exp_tail_quantile(p_wait: float, mean_given_wait: float, q: float) -> float:
    """q-quantile of a wait that is 0 with probability 1 - p_wait, else exponential with this mean."""
    if p_wait <= 1.0 - q or mean_given_wait <= 0:
        return 0.0
    return mean_given_wait * math.log(p_wait / (1.0 - q))


Steady = tuple[float, float, float, float, int, float, float, int]
"""An open loop's steady state: (mean iteration, decoding sequences, prompt tokens per iteration, the budget
the decodes leave, chunks per prompt, how long a request holds a slot, slots held on average, the batch
cap)."""


def steady_state(
    rep: Replica,
    eff: Efficiency,
    lim: EngineLimits,
    isl: float,
    osl: float,
    rate: float,
    overhead_bytes: float,
) -> Steady | None:
    """The steady state at `rate` requests/s of Poisson arrivals (None when the replica cannot keep up)."""
    cap = batch_cap(rep, lim, isl, osl, overhead_bytes)
    ok = cap >= 1 and rate > 0
    tau = _fixed_point(rep, eff, isl, osl, rate, lim.token_budget, lim.chunked) if ok else None
    if tau is None:
        return None
    b, p = rate * max(osl - 1.0, 0.0) * tau, rate * isl * tau
    # Prefill first: prompts have the whole budget (the decodes wait); the cycle already prices a prompt
    # load that overflows one prefill batch.
    budget = lim.token_budget - b if lim.chunked else float(lim.token_budget)
    if budget <= 0 or (lim.chunked and p >= budget):
        return None
    chunks = math.ceil(isl / budget)
    hold = (max(osl - 1.0, 0.0) + chunks) * tau  # how long a request holds a slot
    slots = rate * hold
    if slots >= cap:
        return None
    return tau, b, p, budget, chunks, hold, slots, cap


def tpot_quantile(
    rep: Replica, eff: Efficiency, lim: EngineLimits, isl: float, osl: float, st: Steady, q: float
) -> float:
    """TPOT at the percentile: an iteration priced with the batch one z-score above its mean (the batch is
    Poisson), never below the mean iteration."""
    tau, b, p = st[0], st[1], st[2]
    z = Z.get(round(q, 2), 0.0)
    b_q, p_q = b + z * math.sqrt(b), p + z * math.sqrt(p * isl)
    tpot_q = mixed_iteration_s(rep, eff, b_q, isl + osl / 2.0, p_q, isl, lim.token_budget, lim.chunked)
    return max(tau, tpot_q)


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class FirstToken:
    """The first token in an open loop's steady state (seconds), and the gap a prompt opens in the stream."""

    mean_s: float
    q_s: float
    """At the percentile asked for."""
    own_s: float
    """The request's own prefill (its chunks, or its prefill batch)."""
    gap_s: float
    """The gap between two tokens of a decoding request when a prompt is prefilled between them."""
    share: float
    """Share of the gaps that carry a prompt."""


def first_token(
    rep: Replica, eff: Efficiency, lim: EngineLimits, isl: float, osl: float, st: Steady, q: float
) -> FirstToken:
    """The first token in the steady state: the residual iteration, the prompt budget's M/D/1 queue, Erlang
    C for a free slot, the prompt's chunks; where prefill runs first, see _first_token_stalled."""
    if not lim.chunked:
        return _first_token_stalled(rep, eff, lim, isl, osl, st, q)
    tau, b, p, budget, chunks, hold, slots, cap = st
    with_chunk = iteration_s(rep, eff, b, isl + osl / 2.0, min(isl, budget), isl / 2.0)
    own = chunks * with_chunk
    rho = p / budget  # the prompt budget's utilisation: M/D/1 with service isl / budget iterations
    service = isl / budget * tau
    w_budget = rho * service / (2.0 * (1.0 - rho))
    c = erlang_c(cap, slots)
    w_slot_given = hold / (cap - slots)
    ttft = eff.request_s + tau / 2.0 + w_budget + c * w_slot_given + own
    ttft_q = (
        eff.request_s
        + q * tau
        + exp_tail_quantile(rho, w_budget / rho if rho > 0 else 0.0, q)
        + exp_tail_quantile(c, w_slot_given, q)
        + own
    )
    share = prompt_mix(b, p, isl, lim.token_budget)[0]  # share of iterations that carry a chunk
    return FirstToken(ttft, ttft_q, own, with_chunk, share)


def _first_token_stalled(
    rep: Replica, eff: Efficiency, lim: EngineLimits, isl: float, osl: float, st: Steady, q: float
) -> FirstToken:
    """Prefill first: a prompt waits out the iteration it arrives in (a decode iteration or a prefill batch,
    sampled by length), a free slot (Erlang C), then its own prefill batch, with the prompts that arrived
    beside it; it never waits behind the decodes."""
    _, b, p, _, _, hold, slots, cap = st
    cyc = cycle(pricer_of(rep, eff), b, isl + osl / 2.0, p, isl, lim.token_budget)
    own = cyc.batch_s if cyc.batches else prefill_alone_s_of(rep, eff, isl, lim.token_budget)
    c = erlang_c(cap, slots)
    w_slot_given = hold / (cap - slots)
    ttft = eff.request_s + cyc.residual_s + c * w_slot_given + own
    longest = max(cyc.decode_s, cyc.batch_s)
    ttft_q = eff.request_s + q * longest + exp_tail_quantile(c, w_slot_given, q) + own
    return FirstToken(ttft, ttft_q, own, cyc.decode_s + cyc.batch_s, min(1.0, cyc.batches))


def prefill_alone_s_of(rep: Replica, eff: Efficiency, isl: float, budget: int) -> float:
    """One prompt prefilled alone (no decodes, no server time)."""
    return prefill_batch_s(pricer_of(rep, eff), isl, isl, budget)


def open_loop(
    rep: Replica,
    eff: Efficiency,
    lim: EngineLimits,
    isl: float,
    osl: float,
    rate: float,
    quantile: float,
    overhead_bytes: float,
) -> Latency | None:
    """Latency at `rate` requests/s of Poisson arrivals (None when the replica cannot keep up)."""
    st = steady_state(rep, eff, lim, isl, osl, rate, overhead_bytes)
    if st is None:
        return None
    tau, b, _, _, chunks = st[:5]
    q = quantile
    ft = first_token(rep, eff, lim, isl, osl, st, q)
    itl_q = ft.gap_s if q > 1.0 - ft.share else iteration_s(rep, eff, b, isl + osl / 2.0)
    running = b + rate * chunks * tau
    tpot_q = tpot_quantile(rep, eff, lim, isl, osl, st, q)
    return Latency(q, ft.mean_s, tau, ft.q_s, tpot_q, running, rate * osl, rate, tau, itl_q)


def open_stats(
    rep: Replica,
    eff: Efficiency,
    lim: EngineLimits,
    isl: float,
    osl: float,
    rate: float,
    overhead_bytes: float,
) -> LoadStats | None:
    """LoadStats at `rate` requests/s of Poisson arrivals from the mean-value analysis (None when the replica
    cannot keep up); the requests queued for a slot or the prompt budget by Little's law."""
    lats = [open_loop(rep, eff, lim, isl, osl, rate, q, overhead_bytes) for q in PERCENTILES]
    st = steady_state(rep, eff, lim, isl, osl, rate, overhead_bytes)
    if st is None or any(lat is None for lat in lats):
        return None
    got = [lat for lat in lats if lat is not None]
    mean = got[0]
    tau, b, chunks = st[0], st[1], st[4]
    own = first_token(rep, eff, lim, isl, osl, st, 0.5).own_s
    queued = rate * max(0.0, mean.ttft_s - eff.request_s - tau / 2.0 - own)
    decode = max(osl - 1.0, 0.0)
    return LoadStats(
        loop="open",
        concurrency=None,
        rate=rate,
        output_tok_s=rate * osl,
        running=b + rate * chunks * tau,
        waiting=queued,
        ttft=tuple(lat.ttft_q_s for lat in got),
        tpot=tuple(lat.tpot_q_s for lat in got),
        itl=tuple(lat.itl_q_s for lat in got),
        e2e=tuple(lat.ttft_q_s + decode * lat.tpot_q_s for lat in got),
        means=(mean.ttft_s, mean.tpot_s, mean.itl_s, mean.ttft_s + decode * mean.tpot_s),
    )


@dataclass(slots=True, repr=False, eq=False)
class _Run:
    """Consecutive iterations of the same make-up."""

    start: int
    count: int
    batch: float
    ctx: float
    prefill: float
    ctx_p: float
    waiting: float = 0.0
    """Requests that have arrived and wait for their first token during these iterations."""
    inv_output: float = 0.0
    """Sum over the decoding requests of 1 / (output - 1): weighs an iteration into the mean TPOT."""
    queued: float = 0.0
    """Requests that have arrived and not been admitted (no slot or KV blocks yet) during these iterations."""


@dataclass(slots=True, repr=False, eq=False)
class Schedule:
    """A closed loop's iterations (time-free) and each request's arrival, first-token and last iteration."""

    runs: list[_Run] = field(default_factory=list)
    arrival: list[int] = field(default_factory=list)
    first: list[int] = field(default_factory=list)
    done: list[int] = field(default_factory=list)
    lengths: list[tuple[int, int]] = field(default_factory=list)
    last_issue: int = 0
    """The iteration at which the last request was sent: until then every client has one in flight."""

    def times(self, rep: Replica, eff: Efficiency) -> tuple[list[int], list[float]]:
        """(iteration index at each run's end, time at each run's end), the step model pricing each run."""
        ends, clock, t = [], [], 0.0
        for r in self.runs:
            t += r.count * iteration_s(rep, eff, r.batch, r.ctx, r.prefill, r.ctx_p)
            ends.append(r.start + r.count)
            clock.append(t)
        return ends, clock


def time_at(ends: list[int], clock: list[float], runs: list[_Run], it: int) -> float:
    """Time at the end of iteration `it` (0 = the start)."""
    if it <= 0:
        return 0.0
    k = bisect.bisect_left(ends, it)
    r = runs[k]
    before = clock[k - 1] if k else 0.0
    return before + (clock[k] - before) * (it - r.start) / r.count


class _Loop:
    """Builds the schedule of a closed loop: `concurrency` clients, each sending its next request when the
    last one finishes, until `lengths` (prompt, output) are all served."""

    def __init__(self, lim: EngineLimits, cap: int, kv: float, lengths: list[tuple[int, int]], conc: int):
        self.lim, self.cap, self.kv = lim, cap, kv
        self.s = Schedule(lengths=list(lengths))
        n = len(lengths)
        self.s.arrival, self.s.first, self.s.done = [0] * n, [-1] * n, [-1] * n
        self.waiting: deque[int] = deque(range(min(conc, n)))
        self.issued = min(conc, n)
        self.prefill: list[list[int]] = []  # [request, prompt tokens left]
        self.finishing: dict[int, list[int]] = {}  # iteration -> requests that finish decoding at its end
        self.decoding, self.ctx_sum, self.kv_used, self.it, self.inv = 0, 0.0, 0.0, 0, 0.0
        self.dit = 0  # iterations that ran the decodes (fewer than self.it when prefills stall them)
        self.paged = lim.reserve == "paged"
        self.had = [0] * n  # paged: output tokens a preempted request had made (recomputed on return)
        self.began = [0] * n  # paged: the decode iteration its current decoding began at
        self.order: dict[int, int] = {}  # paged: decoding request -> admission order (newest preempted)
        self.held: list[int] = []  # wave: prefilled requests whose first token waits for the wave's last

    def _reserve(self, r: int) -> float:
        isl, osl = self.s.lengths[r]
        if self.paged:  # what admission takes: the prompt (and the outputs to recompute)
            return float(isl + self.had[r])
        return seq_tokens(self.lim, isl, osl)

    def _admit(self) -> None:
        while self.waiting and self.decoding + len(self.prefill) + len(self.held) < self.cap:
            r = self.waiting[0]
            if self.kv_used + self._reserve(r) > self.kv and (self.decoding or self.prefill or self.held):
                return
            self.waiting.popleft()
            self.kv_used += self._reserve(r)
            isl = self.s.lengths[r][0]  # the cached prefix is not prefilled, only the rest
            self.prefill.append([r, isl - cached_tokens(self.lim, isl) + self.had[r]])

    def _finish(self, r: int) -> None:
        """Its last token out: its KV freed (paged: the prompt and every output token it holds), and its
        client's next request sent."""
        self.s.done[r] = self.it
        self.kv_used -= sum(self.s.lengths[r]) if self.paged else self._reserve(r)
        self.order.pop(r, None)
        self._next_request()

    def _next_request(self) -> None:
        """A closed loop: the client whose request finished sends its next one."""
        if self.issued < len(self.s.lengths):
            self.s.arrival[self.issued] = self.it
            self.waiting.append(self.issued)
            self.issued += 1
            self.s.last_issue = self.it

    def _prefilled(self, r: int) -> None:
        if self.lim.wave and self.s.first[r] < 0 and self.s.lengths[r][1] > 1:
            self.held.append(r)  # its first token, and its decode, wait for the wave's last prompt
            return
        self._decode(r)

    def _decode(self, r: int) -> None:
        """Its first token out (unless it came before a preemption) and it joins the decodes."""
        isl, osl = self.s.lengths[r]
        if self.s.first[r] < 0:  # a recomputed request's first token came before it was preempted
            self.s.first[r] = self.it
        if osl <= 1:
            self._finish(r)
            return
        had = self.had[r] + 1  # the prefill (or the recompute) samples one more token
        self.decoding += 1
        self.inv += 1.0 / (osl - 1)
        self.ctx_sum += isl + had
        if self.paged:
            self.kv_used += 1.0  # that token's slot
            self.began[r], self.had[r] = self.dit, had
            self.order[r] = self.it * 4096 + len(self.order)
        self.finishing.setdefault(self.dit + osl - had, []).append(r)

    def _preempt(self) -> int | None:
        """Paged: the iterations the cache holds the decodes for (at least one), preempting the newest
        running requests while not one more token fits; None when not paged."""
        if not self.paged or not self.decoding:
            return None
        while self.decoding > 1 and self.kv - self.kv_used < self.decoding:
            r = max(self.order, key=self.order.__getitem__)
            made = self.had[r] + self.dit - self.began[r]
            key = self.began[r] + self.s.lengths[r][1] - self.had[r]
            self.finishing[key].remove(r)
            if not self.finishing[key]:
                del self.finishing[key]
            del self.order[r]
            self.decoding -= 1
            self.inv -= 1.0 / (self.s.lengths[r][1] - 1)
            self.ctx_sum -= self.s.lengths[r][0] + made
            self.kv_used -= self.s.lengths[r][0] + made
            self.had[r] = made
            self.waiting.appendleft(r)
        return max(1, int((self.kv - self.kv_used) // self.decoding))

    def step(self) -> bool:
        """Run the next stretch of identical iterations; False when everything is served."""
        self._admit()
        if not self.prefill and not self.decoding:
            return False
        plan, count, decodes = self.plan()
        self._record(count, plan, decodes)
        return True

    def plan(self) -> tuple[list[tuple[list[int], int]], int, bool]:
        """The next iterations: (prompt chunks, how many identical iterations, whether the decodes run)."""
        stall = not self.lim.chunked and bool(self.prefill)  # whole prompts alone, the decodes wait
        budget = self.lim.token_budget if stall else max(self.lim.token_budget - self.decoding, 1)
        plan: list[tuple[list[int], int]] = []
        left = budget
        for item in self.prefill:
            if left <= 0 or (stall and plan and item[1] > left):
                break
            take = min(item[1], left)
            plan.append((item, take))
            left -= take
        next_done = min(self.finishing) - self.dit if self.finishing else 1 << 30
        count = 1
        if len(plan) == 1 and plan[0][1] < plan[0][0][1]:  # only the head's long prompt: same chunk repeats
            count = min(plan[0][0][1] // plan[0][1], 1 << 30 if stall else next_done)
        elif not plan:
            count = next_done
        room = self._preempt() if not stall else None
        if room is not None:  # paged: the stretch ends when the cache is full
            count = min(count, room)
        return plan, count, not stall

    def makeup(self, plan: list[tuple[list[int], int]], count: int, decodes: bool) -> tuple[float, ...]:
        """(decoding sequences, their mean context, prompt tokens, the prompts' attention span) of the
        iterations `plan` describes: what the step model prices."""
        p = sum(take for _, take in plan)
        ctx_p = (
            sum(take * (self.s.lengths[i[0]][0] - i[1] + take * count / 2.0) for i, take in plan) / p
            if p
            else 0.0
        )
        b = self.decoding if decodes else 0
        ctx = self.ctx_sum / b + (count - 1) / 2.0 if b else 0.0
        return float(b), ctx, float(p), ctx_p

    def _record(self, count: int, plan: list[tuple[list[int], int]], decodes: bool = True) -> None:
        b, ctx, p, ctx_p = self.makeup(plan, count, decodes)
        waiting = float(len(self.waiting) + len(self.prefill) + len(self.held))
        queued = float(len(self.waiting))
        # a stalled iteration still counts toward its decoding requests' TPOT (they wait through it)
        self.s.runs.append(_Run(self.it, count, b, ctx, p, ctx_p, waiting, self.inv, queued))
        self.it += count
        for item, take in plan:
            item[1] -= take * count
        if decodes:
            self.dit += count
            self.ctx_sum += self.decoding * count
            if self.paged:
                self.kv_used += self.decoding * count
            for r in self.finishing.pop(self.dit, []):
                self.decoding -= 1
                self.inv -= 1.0 / (self.s.lengths[r][1] - 1)
                self.ctx_sum -= sum(self.s.lengths[r])
                self._finish(r)
        for item in [x for x in self.prefill if x[1] <= 0]:
            self.prefill.remove(item)
            self._prefilled(item[0])
        if self.held and not self.prefill:  # wave: the last prompt is in, every first token goes out
            held, self.held = self.held, []
            for r in held:
                self._decode(r)


def closed_schedule(
    lim: EngineLimits, cap: int, kv: float, lengths: list[tuple[int, int]], concurrency: int
) -> Schedule | None:
    """The iterations of a closed loop (None when not one request fits)."""
    if cap < 1 or not lengths or seq_tokens(lim, *lengths[0]) > kv:
        return None
    loop = _Loop(lim, cap, kv, lengths, concurrency)
    while loop.step():
        pass
    return loop.s


def weighted_quantile(pairs: list[tuple[float, float]], q: float) -> float:
    """The q-quantile of values given as (value, weight)."""
    if not pairs:
        return 0.0
    ordered = sorted(pairs)
    target, seen = q * sum(w for _, w in ordered), 0.0
    for value, w in ordered:
        seen += w
        if seen >= target:
            return value
    return ordered[-1][0]


def quantile_of(xs: list[float], q: float) -> float:
    """The q-quantile of a sample, linearly interpolated."""
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    return s[lo] + (s[min(lo + 1, len(s) - 1)] - s[lo]) * (pos - lo)


@dataclass(slots=True, repr=False, eq=False)
class ClosedRun:
    """A priced closed loop: every request's TTFT and TPOT, and the run's length and output tokens."""

    ttft: list[float]
    tpot: list[float]
    seconds: float
    output_tokens: float
    batch: float
    gaps: list[tuple[float, float]]
    """(iteration time, decoding sequences x iterations) of every run: the inter-token gaps, their weights."""
    e2e: list[float] = field(default_factory=list)
    """Every request's end-to-end latency: arrival to its last token."""
    running: float = 0.0
    """Requests admitted (prefilling or decoding) on average over the run's time."""
    waiting: float = 0.0
    """Requests queued for a slot or KV blocks on average over the run's time."""
    weights: list[float] = field(default_factory=list)
    """How much each request counts in the latency figures, in the order of `ttft` and `e2e` (empty: each
    once); see `counted`."""
    tpot_weights: list[float] = field(default_factory=list)
    """The same for `tpot` (requests of more than one output token)."""
    completed: float = 0.0
    """Requests completed in `seconds` (0: every simulated request)."""

    def _of(self, values: list[float], weights: list[float]) -> tuple[list[float], list[float]]:
        return (values or [0.0]), (weights if values and weights else [1.0] * max(1, len(values)))

    def figures(self, which: str, q: float | None) -> float:
        """The mean (q None) or the q-quantile of 'ttft', 'tpot' or 'e2e' over the requests as counted."""
        values, weights = {
            "ttft": (self.ttft, self.weights),
            "tpot": (self.tpot, self.tpot_weights),
            "e2e": (self.e2e, self.weights),
        }[which]
        xs, ws = self._of(values, weights)
        if q is not None:
            if not weights:  # every request once: the interpolated sample quantile
                return quantile_of(xs, q)
            return weighted_quantile(list(zip(xs, ws, strict=True)), q)
        total = sum(ws)
        return sum(x * w for x, w in zip(xs, ws, strict=True)) / total if total else 0.0

    def stats(self, concurrency: int) -> LoadStats:
        """Throughput, the running and waiting requests, and TTFT, TPOT, ITL and end-to-end latency at
        P50, P90 and P99, read from the simulated requests as counted."""
        t = self.seconds
        return LoadStats(
            loop="closed",
            concurrency=concurrency,
            rate=(self.completed or len(self.ttft)) / t if t else 0.0,
            output_tok_s=self.output_tokens / t if t else 0.0,
            running=self.running,
            waiting=self.waiting,
            ttft=tuple(self.figures("ttft", q) for q in PERCENTILES),
            tpot=tuple(self.figures("tpot", q) for q in PERCENTILES),
            itl=tuple(weighted_quantile(self.gaps, q) for q in PERCENTILES),
            e2e=tuple(self.figures("e2e", q) for q in PERCENTILES),
            means=(
                self.figures("ttft", None),
                self.figures("tpot", None),
                sum(g * w for g, w in self.gaps) / (sum(w for _, w in self.gaps) or 1.0),
                self.figures("e2e", None) if self.e2e else 0.0,
            ),
        )

    def latency(self, quantile: float) -> Latency:
        """Means and the `quantile` of TTFT and TPOT, and throughput."""
        t = self.seconds
        weight = sum(w for _, w in self.gaps) or 1.0
        return Latency(
            quantile,
            self.figures("ttft", None),
            self.figures("tpot", None),
            self.figures("ttft", quantile),
            self.figures("tpot", quantile),
            self.batch,
            self.output_tokens / t if t else 0.0,
            (self.completed or len(self.ttft)) / t if t else 0.0,
            sum(g * w for g, w in self.gaps) / weight,
            weighted_quantile(self.gaps, quantile),
        )


def counted(sched: Schedule, requests: int | None) -> list[float]:
    """How much each simulated request counts (in the order they were sent). A closed loop's first wave (every
    client sends at once) queues behind its own prompts, and its last wave runs as the clients stop; a run of
    `requests` requests counts each wave once and the rest of its requests in the steady state between them
    (`vllm bench serve`, `sglang.bench_serving` and LMDeploy's profilers count every request they send); None
    counts the steady state alone (a service that runs on, or perf_analyzer's stable windows under
    genai-perf). Too short a run to have a steady state (one batch sent at once) counts every request."""
    n = len(sched.lengths)
    wave = sum(1 for a in sched.arrival if a == 0)
    if n <= 2 * wave:
        return []
    middle = 1.0 if requests is None else max(0.0, requests - 2.0 * wave) / (n - 2 * wave)
    edge = 0.0 if requests is None else 1.0
    return [edge] * wave + [middle] * (n - 2 * wave) + [edge] * wave


def _steady_rate(sched: Schedule, e2e: list[float]) -> float:
    """Requests/s between the first and the last wave, by Little's law: every client keeps one request out,
    so `wave` clients complete one each per mean end-to-end latency."""
    wave = sum(1 for a in sched.arrival if a == 0)
    middle = e2e[wave : len(e2e) - wave]
    mean = sum(middle) / len(middle) if middle else 0.0
    return wave / mean if mean > 0 else 0.0


EVERY = -1
"""closed_run's `requests` for every simulated request counted once."""


def _count(run: ClosedRun, sched: Schedule, requests: int | None) -> None:
    """Weigh a priced closed loop's requests as `counted` does, and its throughput with them: the steady
    state's rate (None), or a run of `requests` requests whose steady part is as long as it needs."""
    weights = counted(sched, requests)
    if not weights:
        return
    run.weights = weights
    run.tpot_weights = [w for w, (_, osl) in zip(weights, sched.lengths, strict=True) if osl > 1]
    rate = _steady_rate(sched, run.e2e)
    if rate <= 0:
        return
    n = len(sched.lengths)
    wave = sum(1 for a in sched.arrival if a == 0)
    mean_out = sum(o for _, o in sched.lengths[wave : n - wave]) / (n - 2 * wave)
    if requests is None:
        run.seconds, run.output_tokens = 1.0, rate * mean_out
        run.completed = rate
        return
    # The waves as simulated, the steady part stretched (or cut) to the run's requests.
    extra = max(requests, 2 * wave) - n
    run.seconds = max(run.seconds + extra / rate, 1e-9)
    run.output_tokens = run.output_tokens + extra * mean_out
    run.completed = float(n + extra)


def closed_run(sched: Schedule, rep: Replica, eff: Efficiency, requests: int | None = EVERY) -> ClosedRun:
    """Price a closed loop's schedule with the step model; its latencies count the requests as a run of
    `requests` requests would, None the steady state (`counted`), EVERY each simulated request once."""
    ends, clock = sched.times(rep, eff)
    at = lambda it: time_at(ends, clock, sched.runs, it)  # noqa: E731
    ttft, tpot, e2e = [], [], []
    for r, (_, osl) in enumerate(sched.lengths):
        t_first, t_arrive = at(sched.first[r]), at(sched.arrival[r])
        ttft.append(t_first - t_arrive + eff.request_s)
        e2e.append(at(sched.done[r]) - t_arrive + eff.request_s)
        if osl > 1:
            tpot.append((at(sched.done[r]) - t_first) / (osl - 1))
    busy = sum(r.count * r.batch for r in sched.runs) / max(ends[-1], 1) if ends else 0.0
    gaps, before = [], 0.0
    running = waiting = span = 0.0
    for run, t in zip(sched.runs, clock, strict=True):
        if run.batch > 0:
            gaps.append(((t - before) / run.count, run.count * run.batch))
        if run.start < sched.last_issue or not sched.last_issue:  # while every client has a request out
            # time-weighted: the requests admitted (decoding, or prefilling) and those still queued
            running += (t - before) * (run.batch + run.waiting - run.queued)
            waiting += (t - before) * run.queued
            span += t - before
        before = t
    total = clock[-1] if clock else 0.0
    out_tokens = sum(o for _, o in sched.lengths)
    priced_run = ClosedRun(ttft, tpot, total, out_tokens, busy, gaps, e2e)
    if requests != EVERY:
        _count(priced_run, sched, requests)
    if span > 0:
        priced_run.running, priced_run.waiting = running / span, waiting / span
    return priced_run
