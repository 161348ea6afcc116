"""The serving step model: the time of one continuous-batching iteration of one replica (standard library).

One iteration runs `b` decoding sequences (one token each, at an average context) and `p` prompt tokens of
chunked prefill together, as vLLM, SGLang, TensorRT-LLM (in-flight batching), LMDeploy and TGI do. On each of
the replica's tp x pp GPUs it reads its share of the weights once (a mixture of experts only the experts the
batch's tokens touch) and each sequence's KV cache, does 2 x active params FLOPs per token plus attention, and
all-reduces the activations twice per layer across the tensor-parallel group. The iteration takes the smooth
maximum of the memory and compute times at their learned efficiencies, plus the all-reduces (alpha-beta: a
per-call latency that does not shrink with the batch, which is what makes small-batch TP8 slow) and a
per-iteration and per-sequence scheduler overhead. Pipeline parallelism runs pp micro-batches through pp
stages.

Capacity (`advisor/physics/batching.py`) and every latency come from this one function; the learned serving
model (`advisor/learned/serving/`) supplies only the `Efficiency` it prices iterations with.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.job.shape import Arch
    from advisor.physics.serving_ops import ServingOps

GB = 1e9
ACTIVATION_BYTES = 2.0  # the all-reduced activations are 16-bit in every engine, whatever the weights
ATTENTION_TILE = 128  # query rows FlashAttention's prefill kernels process per pass over the keys and values
SMOOTH_MAX_POWER = 4.0  # memory and compute overlap almost fully: (m^4 + c^4)^(1/4) is within 19% of max()


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Shape:
    """What the step model needs of a transformer."""

    params: float
    active_params: float
    layers: int
    hidden: int
    attn_width: int
    """Width attention scores and values are computed over per token of context: heads x head dim, or for
    MLA (absorbed, as DeepSeek's engines run it) heads x the cached latent width."""
    kv_heads: int
    head_dim: int
    kv_latent: int = 0
    """MLA: the latent (plus rope) width cached per token and layer, replicated across tensor ranks."""
    experts: int = 1
    experts_per_token: int = 1
    expert_params: float = 0.0
    """Weights of every routed expert (a dense model: 0)."""
    expert_ffn: int = 0
    """Width of one routed expert's FFN: each tensor-parallel rank holds a 1/tp slice of it."""

    def kv_values(self, tp: int) -> float:
        """KV values one token adds per layer on one of `tp` tensor-parallel ranks."""
        if self.kv_latent:
            return float(self.kv_latent)
        return 2.0 * math.ceil(self.kv_heads / tp) * self.head_dim


def shape_of_arch(arch: Arch, params: float, active_params: float) -> Shape:
    """The step model's view of an `advisor.job.shape.Arch`."""
    latent = (arch.kv_lora_rank + arch.qk_rope_head_dim) if arch.kv_lora_rank else 0
    return Shape(
        params=params,
        active_params=active_params,
        layers=arch.layers,
        hidden=arch.hidden,
        attn_width=arch.heads * (latent or arch.head_dim),
        kv_heads=arch.kv_heads,
        head_dim=arch.head_dim,
        kv_latent=latent,
        experts=arch.experts,
        experts_per_token=arch.experts_per_token,
        expert_params=min(arch.expert_params, params) if arch.experts > 1 else 0.0,
        expert_ffn=arch.expert_ffn if arch.experts > 1 else 0,
    )


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Hardware:
    """One GPU of the replica: dense peak for the precision, memory bandwidth and size, the link between
    GPUs."""

    peak_flops: float
    bandwidth: float
    """Bytes/s."""
    memory_bytes: float
    link_bytes_s: float
    """Per direction, between the GPUs of one tensor-parallel group."""
    link_latency_s: float
    """One step of a collective on that link."""


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Replica:
    """One serving replica: the model, the GPU, its layout and the stored bytes of a weight and a KV value."""

    shape: Shape
    hw: Hardware
    tp: int = 1
    pp: int = 1
    weight_bytes: float = 2.0
    kv_bytes: float = 2.0
    ops: ServingOps | None = None
    """The replica's operations priced from the measured tables (advisor/physics/serving_ops.py); None: the
    roofline of `hw` at the efficiencies (a replica built by hand)."""

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    @property
    def weights_per_gpu(self) -> float:
        """Bytes of weights each GPU holds."""
        return self.shape.params * self.weight_bytes / self.gpus

    @property
    def kv_per_token_gpu(self) -> float:
        """KV bytes one token of context adds on each GPU."""
        return self.shape.layers / self.pp * self.shape.kv_values(self.tp) * self.kv_bytes


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Efficiency:
    """What the learned model supplies: achieved shares of bandwidth and peak, and fixed costs in seconds.

    On a replica priced from measured operations (`Replica.ops`) memory, compute, kv and experts are the
    share of the measured kernels' speed an engine reaches instead (1.0: as measured), each on its part:
    the memory-bound share of the GEMMs and the memory-bound ops, their compute-bound share and prefill
    attention, decode attention, the routed experts."""

    memory: float = 0.8
    """Achieved share of bandwidth reading weights."""
    compute: float = 0.6
    kv: float = 0.6
    """Achieved share of bandwidth reading the KV cache (attention kernels, paged blocks)."""
    experts: float = 1.0
    """Share of the weights' efficiency reached reading routed experts (grouped GEMMs of thin slices)."""
    step_s: float = 0.0
    """Scheduler, sampling and launch cost of one iteration."""
    per_seq_s: float = 0.0
    """Cost each running sequence adds to an iteration (batch bookkeeping, sampling)."""
    comm: float = 1.0
    """Multiplier on the all-reduce time (custom one-shot kernels beat NCCL rings)."""
    request_s: float = 0.0
    """Time a request spends outside the GPU before its first token: API server, tokenising, scheduling."""
    layer_s: float = 0.0
    """Cost each layer adds to an iteration beyond its measured kernels (launch gaps, small kernels the
    tables do not hold): measured operations only."""
    sync_s: float = 0.0
    """Cost each tensor-parallel all-reduce adds beyond its measured time, per doubling of the group:
    nccl-tests times collectives back to back, an engine waits for the slowest rank after uneven kernels
    (measured operations only)."""
    host_s: float = 0.0
    """Host time of one iteration (scheduler, sampling, launches) that runs while the GPU works: an
    iteration takes at least this long, and hides it once its kernels take longer (a calibration's)."""
    prefill: float = 1.0
    """Speed multiplier on the prompt tokens' part of an iteration (what they add to its decodes' time): a
    calibration's, so a first token the engine takes longer over moves prefill and never the decode."""


def _touched_experts(shape: Shape, tokens: float) -> float:
    """Share of the routed experts at least one of `tokens` tokens visits (uniform routing)."""
    if shape.experts <= 1 or tokens <= 0:
        return 0.0
    return 1.0 - (1.0 - shape.experts_per_token / shape.experts) ** tokens


def allreduce_s(rep: Replica, nbytes: float) -> float:
    """One all-reduce of `nbytes` across the tensor-parallel group: log2(tp) latency steps plus the ring's
    2(tp-1)/tp of the bytes over the link."""
    tp = rep.tp
    if tp <= 1:
        return 0.0
    steps = math.log2(tp)
    return steps * rep.hw.link_latency_s + 2.0 * (tp - 1) / tp * nbytes / rep.hw.link_bytes_s


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class StageTimes:
    """One pipeline stage's share of an iteration at 100% efficiency, by part, in seconds."""

    weights_s: float
    experts_s: float
    kv_s: float
    compute_s: float
    expert_compute_s: float
    """The routed experts' share of compute_s' FLOPs, timed apart (thin slices run at `experts` x)."""
    comm_s: float
    sequences: float


def stage_times(rep: Replica, b: float, ctx: float, p: float, ctx_p: float) -> StageTimes:
    """Speed-of-light times of one stage running `b` decoding sequences at context `ctx` and `p` prompt
    tokens whose attention spans `ctx_p` tokens on average."""
    s, g = rep.shape, rep.gpus
    tokens = b + p
    dense = (s.params - s.expert_params) * rep.weight_bytes / g
    experts = s.expert_params * rep.weight_bytes / g * _touched_experts(s, tokens)
    # Decode reads each sequence's whole cache per token; prefill attention reads the cached keys and values
    # once per tile of ATTENTION_TILE queries (FlashAttention), so it is compute bound.
    kv = rep.kv_per_token_gpu * (b * ctx + p * ctx_p / ATTENTION_TILE)
    routed = s.expert_params * s.experts_per_token / s.experts if s.experts > 1 else 0.0
    expert_flops = 2.0 * routed * tokens / g
    flops = 2.0 * (s.active_params - routed) * tokens / g
    flops += 4.0 * s.layers / rep.pp * s.attn_width / rep.tp * (b * ctx + p * ctx_p)
    layers = s.layers / rep.pp
    comm = 2.0 * layers * allreduce_s(rep, tokens * s.hidden * ACTIVATION_BYTES)
    return StageTimes(
        weights_s=dense / rep.hw.bandwidth,
        experts_s=experts / rep.hw.bandwidth,
        kv_s=kv / rep.hw.bandwidth,
        compute_s=flops / rep.hw.peak_flops,
        expert_compute_s=expert_flops / rep.hw.peak_flops,
        comm_s=comm,
        sequences=b + (1.0 if p > 0 else 0.0),
    )


def smooth_max(a: float, b: float) -> float:
    """max(a, b), rounded where the two are close (memory and compute overlap, not perfectly)."""
    k = SMOOTH_MAX_POWER
    hi = max(a, b)
    if hi <= 0:
        return 0.0
    return hi * ((a / hi) ** k + (b / hi) ** k) ** (1.0 / k)


def priced(t: StageTimes, eff: Efficiency) -> float:
    """One stage's time at the given efficiencies."""
    memory = t.weights_s / eff.memory + t.experts_s / (eff.memory * eff.experts) + t.kv_s / eff.kv
    roof = smooth_max(memory, (t.compute_s + t.expert_compute_s / eff.experts) / eff.compute)
    return roof + t.comm_s * eff.comm + eff.step_s + eff.per_seq_s * t.sequences


def iteration_s(
    rep: Replica, eff: Efficiency, b: float, ctx: float, p: float = 0.0, ctx_p: float = 0.0
) -> float:
    """Wall time of one iteration: every decoding sequence gets a token and `p` prompt tokens are prefilled.

    With pipeline parallelism the batch is split into pp micro-batches that follow each other through the
    stages, so each sequence waits pp stage times for its next token: pp x priced(stage_times(rep, b / pp,
    ctx, p / pp, ctx_p), eff), computed by `step_pricer`."""
    return pricer_of(rep, eff)(b, ctx, p, ctx_p)


StepPricer = Callable[[float, float, float, float], float]
_LAST_PRICER: tuple[object, object, StepPricer] = (None, None, lambda b, ctx, p, ctx_p: 0.0)


def pricer_of(rep: Replica, eff: Efficiency) -> StepPricer:
    """`step_pricer(rep, eff)`, kept for the next call: a search prices one replica thousands of times in a
    row. Both are frozen and the kept tuple holds them, so `is` cannot match a different pair."""
    global _LAST_PRICER
    last = _LAST_PRICER
    if last[0] is rep and last[1] is eff:
        return last[2]
    fn = step_pricer(rep, eff)
    _LAST_PRICER = (rep, eff, fn)
    return fn


def step_pricer(rep: Replica, eff: Efficiency) -> StepPricer:
    """`iteration_s` of one replica at one efficiency as a function of (b, ctx, p, ctx_p): composed from
    the measured operations where the replica has them, else its roofline."""
    price = composed_pricer(rep, eff) if rep.ops is not None else roofline_pricer(rep, eff)
    # At 1.0 and 0.0 the pricer itself, so uncalibrated figures stay the same floats to the last bit.
    if eff.prefill != 1.0:
        price = prefill_scaled(price, eff.prefill)
    return price if eff.host_s <= 0.0 else host_bound(price, eff.host_s)


def host_bound(price: StepPricer, host_s: float) -> StepPricer:
    """price, never under the host's time an iteration: the two overlap (smooth_max), so a host-bound
    engine at a small batch runs at its host's pace and at a large one at its kernels'."""

    def bounded(b: float, ctx: float, p: float = 0.0, ctx_p: float = 0.0) -> float:
        return smooth_max(price(b, ctx, p, ctx_p), host_s)

    return bounded


def prefill_scaled(price: StepPricer, speed: float) -> StepPricer:
    """price with the prompt tokens' part of each iteration (its time beyond the same decodes alone) at
    `speed` x: prefill's own kernels, attention and the sequence it adds, never the decodes' share, the
    weights' read both share, nor the per-iteration cost."""

    def scaled(b: float, ctx: float, p: float = 0.0, ctx_p: float = 0.0) -> float:
        if p <= 0:
            return price(b, ctx, p, ctx_p)
        decode = price(b, ctx, 0.0, 0.0)
        return decode + (price(b, ctx, p, ctx_p) - decode) / speed

    return scaled


def composed_pricer(rep: Replica, eff: Efficiency) -> StepPricer:
    """One stage's iteration as the sum of its operations (advisor/physics/serving_ops.py) at the tokens it
    runs, each part at the engine's share of the measured kernels' speed, never faster than the roofline at
    the datasheet's peak and bandwidth; plus the engine's per-layer, per-iteration and per-sequence costs."""
    from advisor.physics.serving_ops import GRID, STEPS

    ops = rep.ops
    assert ops is not None
    pp = rep.pp
    e_mem, e_cmp = eff.memory, eff.compute
    tokens_curve = tuple(
        gm / e_mem + gc / e_cmp + (xm / e_mem + xc / e_cmp) / eff.experts + c * eff.comm
        for gm, gc, xm, xc, c in zip(
            ops.gemm_memory, ops.gemm_compute, ops.experts_memory, ops.experts_compute, ops.comm, strict=True
        )
    )
    head = tuple(m / e_mem + c / e_cmp for m, c in zip(ops.head_memory, ops.head_compute, strict=True))
    fa = tuple(v / e_cmp for v in ops.fa_s_per_flop)
    elementwise, kv, attn = ops.elementwise_s / e_mem, ops.kv_s / eff.kv, ops.attn_flops
    fixed = ops.layers * eff.layer_s + ops.allreduces * eff.sync_s + eff.step_s
    e_seq, last = eff.per_seq_s, len(GRID) - 1
    log2 = math.log2
    # The speed-of-light floor (stage_times at 100%, without collectives), its constants worked out once.
    s, g, hw = rep.shape, rep.gpus, rep.hw
    dense_s = (s.params - s.expert_params) * rep.weight_bytes / g / hw.bandwidth
    experts_s = s.expert_params * rep.weight_bytes / g / hw.bandwidth
    untouched = 1.0 - s.experts_per_token / s.experts if s.experts > 1 else 1.0
    kv_tok = rep.kv_per_token_gpu / hw.bandwidth
    flop_tok = 2.0 * s.active_params / g / hw.peak_flops
    flop_ctx = 4.0 * s.layers / pp * s.attn_width / rep.tp / hw.peak_flops

    def curve(values: tuple[float, ...], x: float) -> float:  # serving_ops.at, written out: the hot path
        if x <= 1.0:
            return values[0]
        pos = log2(x) * STEPS
        i = int(pos)
        if i >= last:
            return values[-1] * x / GRID[-1]
        lo = values[i]
        return lo + (values[i + 1] - lo) * (pos - i)

    def price(b: float, ctx: float, p: float = 0.0, ctx_p: float = 0.0) -> float:
        bs, ps = b / pp, p / pp
        tokens = bs + ps
        seqs = bs + (1.0 if ps > 0 else 0.0)
        t = curve(tokens_curve, tokens) + elementwise * tokens + kv * bs * ctx
        if seqs > 0:
            t += curve(head, seqs)
        if ps > 0 and ctx_p > 0:
            t += attn * ps * ctx_p * curve(fa, math.sqrt(2.0 * ps * ctx_p))
        bc, pc = bs * ctx, ps * ctx_p
        memory = dense_s + kv_tok * (bc + pc / ATTENTION_TILE)
        if experts_s:
            memory += experts_s * (1.0 - untouched**tokens)
        compute = flop_tok * tokens + flop_ctx * (bc + pc)
        floor = memory if memory > compute else compute
        return pp * ((t if t > floor else floor) + fixed + e_seq * seqs)

    return price


def roofline_pricer(rep: Replica, eff: Efficiency) -> StepPricer:
    """`iteration_s` of one replica at one efficiency as a function of (b, ctx, p, ctx_p), with everything
    that does not depend on the load worked out once. Every product and sum is the one stage_times and
    priced compute, in the same order, so each result is the same float to the last bit (a unit test
    compares them)."""
    s, g, pp, tp = rep.shape, rep.gpus, rep.pp, rep.tp
    bw, peak = rep.hw.bandwidth, rep.hw.peak_flops
    expert_bytes = s.expert_params * rep.weight_bytes / g
    untouched = 1.0 - s.experts_per_token / s.experts if s.experts > 1 else 1.0
    moe = s.experts > 1
    kv_token = rep.kv_per_token_gpu
    routed = s.expert_params * s.experts_per_token / s.experts if s.experts > 1 else 0.0
    routed2, active2 = 2.0 * routed, 2.0 * (s.active_params - routed)
    attn4 = 4.0 * s.layers / pp * s.attn_width / tp
    comm2 = 2.0 * (s.layers / pp)
    ring = 2.0 * (tp - 1) / tp if tp > 1 else 0.0
    steps_latency = math.log2(tp) * rep.hw.link_latency_s if tp > 1 else 0.0
    link, width = rep.hw.link_bytes_s, s.hidden
    weights_mem = (s.params - s.expert_params) * rep.weight_bytes / g / bw / eff.memory
    mem_experts, e_kv, e_experts, e_compute = eff.memory * eff.experts, eff.kv, eff.experts, eff.compute
    e_comm, e_step, e_seq = eff.comm, eff.step_s, eff.per_seq_s

    k, root = SMOOTH_MAX_POWER, 1.0 / SMOOTH_MAX_POWER

    def price(b: float, ctx: float, p: float = 0.0, ctx_p: float = 0.0) -> float:
        b, p = b / pp, p / pp
        tokens = b + p
        bc, pc = b * ctx, p * ctx_p
        kv_s = kv_token * (bc + pc / ATTENTION_TILE) / bw
        compute_s = (active2 * tokens / g + attn4 * (bc + pc)) / peak
        if moe:
            touched = 0.0 if tokens <= 0 else 1.0 - untouched**tokens
            memory = weights_mem + expert_bytes * touched / bw / mem_experts + kv_s / e_kv
            compute = (compute_s + routed2 * tokens / g / peak / e_experts) / e_compute
        else:  # a dense model's expert terms are +0.0, and x + 0.0 is x
            memory = weights_mem + kv_s / e_kv
            compute = compute_s / e_compute
        # smooth_max(memory, compute): hi is max()'s pick; the larger's ratio hi / hi is exactly 1.0
        if compute > memory:
            hi, lo = compute, memory
        else:
            hi, lo = memory, compute
        roof = hi * (1.0 + (lo / hi) ** k) ** root if hi > 0 else 0.0
        if tp > 1:  # without tensor parallelism the all-reduces are 0.0
            roof += comm2 * (steps_latency + ring * (tokens * width * ACTIVATION_BYTES) / link) * e_comm
        return pp * (roof + e_step + e_seq * (b + (1.0 if p > 0 else 0.0)))

    return price


def prefill_alone_s(rep: Replica, eff: Efficiency, prompt: int, budget: int, cached: int = 0) -> float:
    """Time to first token of one request on an idle replica: its prompt in chunks of `budget` tokens, past
    the `cached` tokens its prefix cache holds."""
    done, total = cached, eff.request_s
    while done < prompt:
        chunk = min(budget, prompt - done)
        total += iteration_s(rep, eff, 0.0, 0.0, chunk, done + chunk / 2.0)
        done += chunk
    return total


def bytes_per_kv(kv_precision: str) -> float:
    """Stored bytes of one KV-cache value."""
    return 1.0 if kv_precision in ("fp8", "int8", "nvfp4") else 2.0


def mla_absorbed_bytes(arch: Arch, tp: int, weight_bytes: float) -> float:
    """Weight bytes per GPU an engine that absorbs MLA's up-projections for decode holds beside the raw
    weights it prefills with (vLLM's V0 MLA backends: knowledge/serving_engines.toml mla_absorbed_ref):
    W_UV_O (heads / tp x kv_lora_rank x hidden per layer) at the weights' precision (fp8 weights are
    requantized), and for quantized weights kv_b_proj dequantized to 16 bits (kv_lora_rank x heads / tp x
    (nope + value head dims)). W_Q_UK (q_lora_rank x heads / tp x kv_lora_rank) is left out: the catalogue
    does not hold q_lora_rank (about a fifth of W_UV_O for DeepSeek-V3). 0 for a model without MLA."""
    if not arch.kv_lora_rank:
        return 0.0
    heads = arch.heads / tp
    uv_o = heads * arch.kv_lora_rank * arch.hidden * weight_bytes
    kv_b = heads * arch.kv_lora_rank * 2.0 * arch.head_dim * ACTIVATION_BYTES if weight_bytes < 2 else 0.0
    return arch.layers * (uv_o + kv_b)
