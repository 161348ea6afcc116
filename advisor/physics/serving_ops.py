"""The serving iteration's operations priced from the measured tables (knowledge/operations/), as curves over
the tokens an iteration runs: what `advisor/physics/serving.py` composes one iteration of one replica from.

Per pipeline stage and layer, on one tensor-parallel rank: the GEMMs at m = the iteration's tokens (QKV,
attention out, the FFN or the router, shared and routed experts, each routed expert at the tokens it gets),
the memory-bound ops (norms, residual adds, the activation, rotary and the KV write: bytes over the achieved
memory bandwidth), two all-reduces of the activations at their real message size (NCCL rows by size: a
decode's few-KiB messages are latency-bound) and, between pipeline stages, a send/recv; the LM head at the
sequences sampled. Attention: a decode reads each sequence's KV cache at the achieved memory bandwidth; a
prompt chunk runs FlashAttention's forward at the table's rate for its length. AIConfigurator composes its
estimates the same way from its own measured databases (ai-dynamo/aiconfigurator), which are most of these
rows.

Every GEMM is split into its memory-bound and compute-bound share (by this GPU's roofline at that shape), so
that the learned serving model (`advisor/learned/serving/`) can scale each by how close an engine's kernels
come to the measured ones. A GPU whose GEMMs were not measured takes a measured GPU's times scaled by the
ratio of the two rooflines at each shape (weights over the achieved bandwidth, FLOPs over the peak): the
peer's kernel efficiency carries over, the regime is this GPU's own. (The tables' own fallback scales by the
FLOP peak alone, which prices a decode's memory-bound GEMMs at the peer's FLOP-to-byte ratio: an RTX 4090
scaled from an L40S would read its weights at 40% of its bandwidth.)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.catalog.gpus import Gpu
    from advisor.job.shape import Arch
    from advisor.physics.op_prices import OpPrices

M_POINTS = (1, 16, 64, 256, 1024, 4096, 16384, 32768, 65536, 131072, 262144)
"""Tokens at which each GEMM is read from the tables (their own m axis, then held at the largest's rate)."""
S_POINTS = (512, 1024, 2048, 4096, 8192, 16384, 32768)
"""Sequence lengths at which FlashAttention's forward rate is read (below 512 the tables hold the rate)."""
STEPS = 4  # curve points per octave: a quarter octave (19%) apart, interpolated log-linearly between
TOP = 19  # octaves the curves span: up to 2^19 tokens in one iteration
GRID = tuple(2.0 ** (i / STEPS) for i in range(STEPS * TOP + 1))
ACT_BYTES = 2.0  # activations, norms and all-reduced messages are 16-bit in every engine
NORM_RESIDUAL_VALUES = 10.0
"""Values one token moves through memory per layer in its two fused residual-add + RMSNorm kernels (read
the input and the residual, write both, read the weight, twice): 5 x hidden each."""
REFERENCE_GPU = "h100-sxm"
"""The measured GPU whose kernels a GPU without a measured peer of its architecture borrows (its GEMM grid is
the most complete: bf16 and fp8, m from 1)."""
SHARP = 4.0  # the memory/compute split of a GEMM's time: the share of each roof's 4th power


@dataclass(frozen=True, slots=True, repr=False)
class Kernels:
    """Where one GPU's GEMM times come from: the measured GPU and dtype whose table is read, and the two
    rooflines the times are carried between (FLOP/s, achieved bytes/s, bytes of one weight)."""

    gpu: str
    dtype: str
    ref: str
    """The GPU whose rows are read (the GPU itself when measured)."""
    ref_dtype: str
    own_flops: float
    own_bw: float
    own_weight: float
    ref_flops: float
    ref_bw: float
    ref_weight: float
    basis: str
    source: str


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class ServingOps:
    """One replica's operations per pipeline stage as curves over the tokens of one iteration (GRID), in
    seconds at the measured kernels' speed, and the per-token coefficients of the parts linear in tokens."""

    gemm_memory: tuple[float, ...]
    """Dense GEMMs (attention projections, dense or shared FFN, router): their memory-bound share."""
    gemm_compute: tuple[float, ...]
    experts_memory: tuple[float, ...]
    """Routed experts: each touched expert's GEMMs at the tokens routed to it."""
    experts_compute: tuple[float, ...]
    head_memory: tuple[float, ...]
    """The LM head at this many sampled sequences (a pipeline's last stage; here a 1/pp share per stage)."""
    head_compute: tuple[float, ...]
    comm: tuple[float, ...]
    """Tensor-parallel all-reduces (two a layer) and the send/recv to the next pipeline stage."""
    elementwise_s: float
    """Memory-bound ops: seconds per token."""
    kv_s: float
    """Decode attention: seconds per token of context read, per sequence (the KV cache at achieved bandwidth,
    or its FLOPs at the measured attention rate where that is slower, as absorbed MLA is)."""
    attn_flops: float
    """Attention FLOPs per (query token x token of context) on one stage."""
    fa_s_per_flop: tuple[float, ...]
    """Prefill attention: seconds per FLOP at a causal length (GRID), FlashAttention's measured forward."""
    layers: float
    """Layers on one stage."""
    allreduces: float
    """Tensor-parallel all-reduces one stage runs an iteration (two a layer; none without tensor parallelism),
    each weighted by log2 of the group: the wait for the slowest of the ranks grows with their number."""
    basis: str
    sources: tuple[str, ...]

    def memory_share(self, tokens: float) -> float:
        """Share of an iteration's GEMM time at `tokens` tokens that is memory-bound (decode at batch 1: near
        1; a large batch or a prompt chunk: near 0)."""
        mem = at(self.gemm_memory, tokens) + at(self.experts_memory, tokens)
        cmp = at(self.gemm_compute, tokens) + at(self.experts_compute, tokens)
        return mem / (mem + cmp) if mem + cmp > 0 else 0.0


def at(curve: tuple[float, ...], x: float) -> float:
    """A curve over GRID at `x` (log-linear between points; below 1 the value at 1; past the end in
    proportion to x)."""
    if x <= 1.0:
        return curve[0]
    pos = math.log2(x) * STEPS
    i = int(pos)
    if i >= len(curve) - 1:
        return curve[-1] * x / GRID[-1]
    lo = curve[i]
    return lo + (curve[i + 1] - lo) * (pos - i)


def _fill(points: tuple[float, ...], values: list[float]) -> tuple[float, ...]:
    """Values at `points`, interpolated onto GRID in log-log (past the last point: in proportion)."""
    logs = [math.log(v) for v in values]
    lx = [math.log(p) for p in points]
    out = []
    for g in GRID:
        x = math.log(g)
        if x <= lx[0]:
            out.append(values[0])
            continue
        if x >= lx[-1]:
            out.append(values[-1] * g / points[-1])
            continue
        j = next(j for j in range(1, len(lx)) if lx[j] >= x)
        w = (x - lx[j - 1]) / (lx[j] - lx[j - 1])
        out.append(math.exp(logs[j - 1] + (logs[j] - logs[j - 1]) * w))
    return tuple(out)


# --- GEMMs --------------------------------------------------------------------------------------------------
def table_dtype(precision: str) -> str:
    """The GEMM table a serving precision reads: 8-bit weights (fp8, int8 W8A8) the fp8 rows; 4-bit
    weight-only (AWQ, GPTQ) the 16-bit rows, whose activations they keep."""
    return {"fp8": "fp8", "int8": "fp8", "fp16": "fp16", "fp32": "fp32"}.get(precision, "bf16")


DTYPE_BYTES = {"fp8": 1.0, "int8": 1.0, "bf16": 2.0, "fp16": 2.0, "fp32": 4.0, "tf32": 4.0}


def _gpu(gpu_id: str) -> Gpu:
    from advisor.catalog.loader import load_knowledge

    return load_knowledge().gpu(gpu_id)


def _peak(gpu: Gpu, dtype: str) -> float:
    """FLOP/s of the datasheet dense peak of a dtype (16-bit where the dtype has none)."""
    return (gpu.peak_tflops(dtype) or gpu.peak_tflops("bf16") or gpu.peak_tflops("fp16") or 1.0) * 1e12


@functools.lru_cache(maxsize=256)
def kernels(gpu_id: str, precision: str, weight_bytes: float, profile: str | None = None) -> Kernels:
    """Which measured GEMM rows price `precision` on this GPU, and the two rooflines between them."""
    from advisor.catalog import operations as ops

    gpu, dtype = _gpu(gpu_id), table_dtype(precision)
    probe = ops.gemm_tflops(gpu.id, dtype, 1, 4096, 4096, profile=profile)
    ref, ref_dtype = gpu.id, dtype
    if probe.basis.startswith("scaled from "):
        words = probe.basis[len("scaled from ") :].split(",")[0].split()
        ref = words[0]
        if ref == gpu.id and len(words) > 1:  # another dtype of this GPU, scaled by the datasheet ratio
            ref_dtype = words[1]
    elif probe.basis.startswith("datasheet fallback"):
        ref = REFERENCE_GPU
    # A dtype the GPU does not execute (fp8 on Ampere) runs at the 16-bit rate on 16-bit rows.
    unexecuted = "not executed" in probe.basis
    executed = "bf16" if unexecuted else ref_dtype
    measured = ref == gpu.id and executed == dtype
    k = Kernels(
        gpu=gpu.id,
        dtype=dtype,
        ref=ref,
        ref_dtype=executed,
        own_flops=_peak(gpu, "bf16" if unexecuted else dtype),
        own_bw=ops.memory_gbs(gpu.id, profile=profile).value * 1e9,
        own_weight=weight_bytes,
        ref_flops=_peak(_gpu(ref), executed),
        ref_bw=ops.memory_gbs(ref, profile=profile).value * 1e9,
        ref_weight=DTYPE_BYTES.get(executed, 2.0),
        basis=(
            "measured"
            if measured
            else f"measured {executed} rows"
            if ref == gpu.id
            else f"{ref} {executed} rows carried by the roofline ratio"
        ),
        source=probe.source,
    )
    if ref == gpu.id:
        return k
    # Levelled: the tables' own figure for a large compute-bound GEMM (a peer's rate times the peak ratio,
    # levelled on this GPU's own best-shape row where it has one) sets this GPU's attainable FLOP rate.
    big = 8192
    mine = ops.gemm_tflops(gpu.id, dtype, big, big, big, profile=profile).value * 1e12
    level = mine * _carried(k, big, big, big, profile) / (2.0 * big**3)
    return Kernels(**{**{f: getattr(k, f) for f in Kernels.__slots__}, "own_flops": k.own_flops * level})


def _bytes(m: float, n: float, k: float, weight: float) -> float:
    """Bytes one GEMM moves: its weights once, its input and output activations."""
    return n * k * weight + (m * k + m * n) * ACT_BYTES


def _carried(k: Kernels, m: int, n: int, kk: int, profile: str | None) -> float:
    """Seconds of one GEMM on this GPU: the reference rows' time times the ratio of the two rooflines at
    this shape (1 where the GPU and dtype were measured themselves)."""
    from advisor.catalog import operations as ops

    r = ops.gemm_tflops(k.ref, k.ref_dtype, m, n, kk, profile=profile)
    flops = 2.0 * m * n * kk
    t = flops / min(r.value * 1e12, k.ref_flops)
    own = max(_bytes(m, n, kk, k.own_weight) / k.own_bw, flops / k.own_flops)
    ref = max(_bytes(m, n, kk, k.ref_weight) / k.ref_bw, flops / k.ref_flops)
    return t * own / ref


Curves = tuple[tuple[float, ...], tuple[float, ...]]


@functools.lru_cache(maxsize=4096)
def gemm_curve(k: Kernels, n: int, kk: int, profile: str | None) -> Curves:
    """(memory-bound share, compute-bound share) of one GEMM's seconds over GRID tokens."""
    mem, cmp = [], []
    for m in M_POINTS:
        t = _carried(k, m, n, kk, profile)
        flops = 2.0 * m * n * kk
        tm, tc = _bytes(m, n, kk, k.own_weight) / k.own_bw, flops / k.own_flops
        w = tm**SHARP / (tm**SHARP + tc**SHARP)
        mem.append(max(t * w, 1e-15))
        cmp.append(max(t * (1.0 - w), 1e-15))
    return _fill(M_POINTS, mem), _fill(M_POINTS, cmp)


def _add(acc: list[float], curve: tuple[float, ...], times: float) -> None:
    for i, v in enumerate(curve):
        acc[i] += times * v


def dense_gemms(arch: Arch, tp: int) -> list[tuple[int, int, float]]:
    """One stage's dense GEMMs a token passes through, per layer of the model, as (n, k, layers): QKV and the
    attention output on every layer, the FFN on the dense layers, the router and the shared experts on the
    mixture-of-experts layers. MLA (DeepSeek-V3): the queries, the shared latent's down-projection (every rank
    holds it whole), the latent's up-projection to each head's keys and values (absorbed into the queries and
    outputs at decode: the same weights read) and the output; the query's own low rank is not in the
    catalogue, so the query is priced at full rank."""
    hd, h = arch.head_dim, arch.hidden
    q = max(1, arch.heads * hd // tp)
    kv = max(1, -(-arch.kv_heads // tp)) * hd
    up = 2 if arch.gated else 1
    layers, moe = float(arch.layers), float(arch.moe_layers)
    if arch.kv_lora_rank:
        rank = arch.kv_lora_rank
        out = [
            (q, h, layers),
            (rank + arch.qk_rope_head_dim, h, layers),
            (2 * q, rank, layers),
            (h, q, layers),
        ]
    else:
        out = [(q + 2 * kv, h, layers), (h, q, layers)]
    f = max(1, arch.ffn_hidden // tp)
    if layers > moe:
        out += [(up * f, h, layers - moe), (h, f, layers - moe)]
    if moe:
        out.append((arch.experts, h, moe))
        if arch.shared_experts:
            fs = max(1, arch.expert_ffn * arch.shared_experts // tp)
            out += [(up * fs, h, moe), (h, fs, moe)]
    return out


def experts_curve(k: Kernels, arch: Arch, tp: int, profile: str | None) -> Curves:
    """One mixture-of-experts layer's routed GEMMs over GRID tokens: the experts at least one token visits
    (uniform routing) run as one grouped GEMM, each at the tokens routed to it, priced as one GEMM of those
    rows against the touched experts' weights side by side (one launch and one pass over their weights, as a
    fused MoE kernel runs them), interpolated log-log between powers of two of the experts touched."""
    e, top = arch.experts, arch.experts_per_token
    fe, h = max(1, arch.expert_ffn // tp), arch.hidden
    up = (2 if arch.gated else 1) * fe
    groups = sorted({min(e, 2**i) for i in range(e.bit_length() + 1)})
    curves: dict[int, Curves] = {}
    for g in groups:
        gate_up, down = gemm_curve(k, up * g, h, profile), gemm_curve(k, h * g, fe, profile)
        curves[g] = (
            tuple(x + y for x, y in zip(gate_up[0], down[0], strict=True)),
            tuple(x + y for x, y in zip(gate_up[1], down[1], strict=True)),
        )
    mem: list[float] = []
    cmp: list[float] = []
    for m in GRID:
        touched = max(1.0, e * (1.0 - (1.0 - top / e) ** m))
        each = max(1.0, m * top / touched)
        hi = next((g for g in groups if g >= touched), groups[-1])
        lo = max((g for g in groups if g <= touched), default=groups[0])
        w = math.log(touched / lo) / math.log(hi / lo) if hi > lo else 0.0
        for out, part in ((mem, 0), (cmp, 1)):
            t_lo, t_hi = at(curves[lo][part], each), at(curves[hi][part], each)
            out.append(math.exp(math.log(t_lo) + (math.log(t_hi) - math.log(t_lo)) * w))
    return tuple(mem), tuple(cmp)


# --- attention and collectives ------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1024)
def fa_curve(gpu_id: str, heads: int, kv_heads: int, head_dim: int, profile: str | None) -> tuple[float, ...]:
    """Seconds per FLOP of FlashAttention's causal forward (16-bit) over GRID sequence lengths."""
    from advisor.catalog import operations as ops

    rates = [
        ops.attention_tflops(
            gpu_id,
            "bf16",
            seq_len=s,
            heads=heads,
            kv_heads=kv_heads,
            head_dim=min(head_dim, 256),
            causal=True,
            pass_="fwd",
            batch=1,
            profile=profile,
        ).value
        * 1e12
        for s in S_POINTS
    ]
    per_flop = _fill(S_POINTS, [1.0 / r for r in rates])
    # _fill extends past the last point in proportion to the length; a longer sequence keeps the last rate.
    last = 1.0 / rates[-1]
    return tuple(last if g > S_POINTS[-1] else v for g, v in zip(GRID, per_flop, strict=True))


FLOOR_LINKS = ("nvlink3", "nvlink4", "nvlink5", "pcie4", "pcie5")
"""Links with measured small-message all-reduce rows: the fastest of them at 1 KiB is the least time an
all-reduce of that many GPUs takes on any link (a link measured only at large sizes, AMD's xGMI at 4 GiB,
would otherwise extrapolate a few-KiB message to nanoseconds)."""


@functools.lru_cache(maxsize=64)
def allreduce_floor(gpus: int) -> float:
    """The least time of an all-reduce over `gpus` GPUs on any measured link (seconds)."""
    from advisor.catalog import operations as ops

    best = math.inf
    for link in FLOOR_LINKS:
        try:
            r = ops.collective_busbw_gbs("all_reduce", link, gpus, 1, 1024.0)
        except LookupError:
            continue
        best = min(best, 2.0 * (gpus - 1) / gpus * 1024.0 / (r.value * 1e9))
    return best if math.isfinite(best) else 0.0


P2P_LINK = "pcie5"
"""The PCIe server whose NCCL rows ran peer-to-peer. The PCIe 4 rows are one L40S server whose 8-GPU
all-reduce reaches 1.5 GB/s (it likely crosses sockets without peer-to-peer: knowledge/operations/README.md),
which would price TensorRT-LLM's measured L40S TP8 runs at a seventh of their speed; a PCIe board's
all-reduce is the faster of its own link's rows and these rows at its link's nominal bandwidth."""


def allreduce_s(prices: OpPrices, gpus: int, nbytes: float, floor: float) -> float:
    """One all-reduce over the tensor-parallel group inside a server (seconds)."""
    from advisor.catalog import operations as ops

    t = prices.collective("all_reduce", gpus, 1, nbytes).seconds
    link = prices.link(False)
    if link.startswith("pcie") and link != P2P_LINK:
        mine, p2p = ops.nominal_gbs(link), ops.nominal_gbs(P2P_LINK)
        if mine and p2p:
            r = ops.collective_busbw_gbs("all_reduce", P2P_LINK, gpus, 1, nbytes)
            t = min(t, 2.0 * (gpus - 1) / gpus * nbytes / (r.value * 1e9 * mine / p2p))
    return max(t, floor)


def comm_curve(gpu: Gpu, arch: Arch, tp: int, pp: int, profile: str | None) -> tuple[float, ...]:
    """One stage's collectives over GRID tokens: two all-reduces a layer across the tensor-parallel group (a
    smaller message never slower than a larger one; a group wider than a server all-reduces over the servers'
    network, as the measured multi-server rows do) and, with pipeline stages, one send/recv."""
    from advisor.physics.op_prices import OpPrices

    if tp <= 1 and pp <= 1:
        return tuple(0.0 for _ in GRID)
    prices = OpPrices(gpu, gpu.fabric, profile)
    layers = arch.layers / pp
    servers = math.ceil(tp / gpu.gpus_per_node)  # a stated TP over whole servers crosses their network
    floor = allreduce_floor(tp) if 1 < tp <= gpu.gpus_per_node else 0.0
    values = []
    for m in M_POINTS:
        nbytes = m * arch.hidden * ACT_BYTES
        t = 0.0
        if servers > 1:  # nccl-tests' rows of that many GPUs on that many servers, on the cluster fabric
            t += 2.0 * layers * prices.collective("all_reduce", tp, servers, nbytes).seconds
        elif tp > 1:
            t += 2.0 * layers * allreduce_s(prices, tp, nbytes, floor)
        if pp > 1:
            across = tp * pp > gpu.gpus_per_node
            t += prices.collective("send_recv", 2, 2 if across else 1, nbytes).seconds
        values.append(max(t, 1e-15))
    for i in range(len(values) - 2, -1, -1):  # a message is never slower than a larger one (pad it)
        values[i] = min(values[i], values[i + 1])
    return _fill(M_POINTS, values)


# --- one replica --------------------------------------------------------------------------------------------
def _stage_gemms(k: Kernels, arch: Arch, tp: int, pp: int, profile: str | None) -> tuple[list[float], ...]:
    """One stage's dense GEMMs and routed experts over GRID tokens: (dense memory-bound, dense compute-bound,
    experts memory-bound, experts compute-bound)."""
    mem, cmp = [0.0] * len(GRID), [0.0] * len(GRID)
    for n, kk, layers in dense_gemms(arch, tp):
        m_c, c_c = gemm_curve(k, n, kk, profile)
        _add(mem, m_c, layers / pp)
        _add(cmp, c_c, layers / pp)
    xmem, xcmp = [0.0] * len(GRID), [0.0] * len(GRID)
    if arch.moe_layers:
        e_m, e_c = experts_curve(k, arch, tp, profile)
        _add(xmem, e_m, arch.moe_layers / pp)
        _add(xcmp, e_c, arch.moe_layers / pp)
    return mem, cmp, xmem, xcmp


def elementwise_values(arch: Arch, tp: int) -> float:
    """Values one token moves through memory per layer in the memory-bound ops: the two residual-add +
    RMSNorm kernels, the gated activation (of the routed and shared experts' widths), rotary and the KV
    write."""
    moe = arch.moe_layers > 0
    width = arch.expert_ffn * (arch.experts_per_token + arch.shared_experts) if moe else arch.ffn_hidden
    return (
        NORM_RESIDUAL_VALUES * arch.hidden
        + (3.0 if arch.gated else 2.0) * width / tp
        + 2.0 * (arch.heads + 2 * arch.kv_heads) * arch.head_dim / tp
    )


WEIGHT_ONLY_HEAD = ("int4",)
"""Precisions whose checkpoints quantise the decoder layers' linear layers only: 4-bit weight-only AWQ
and GPTQ. Their LM head loads in the 16-bit model dtype, so one decode step reads the head at 2 bytes a
weight (vllm-project/vllm@92d756e9ccd74c7772d5d9936ac5631b811a961f:
vllm/model_executor/layers/quantization/awq.py AWQConfig.get_linear_method: the AWQ method is the linear
layers'; the LM head, a ParallelLMHead (a VocabParallelEmbedding), takes none). vLLM's fp8 path
leaves the head 16-bit too; fp8, int8 and fp4 are not listed because the serving model's shares were
fitted on their measured rows with the head at their own bytes (a refit)."""


def head_kernels(k: Kernels, precision: str, profile: str | None) -> Kernels:
    """The kernels pricing the LM head: the layers' own, or the 16-bit weights of a weight-only checkpoint."""
    if precision not in WEIGHT_ONLY_HEAD:
        return k
    return kernels(k.gpu, "bf16", DTYPE_BYTES["bf16"], profile)


def compose(
    arch: Arch,
    gpu: Gpu,
    tp: int,
    pp: int,
    precision: str,
    weight_bytes: float,
    kv_per_token: float,
    attn_width: int,
    profile: str | None = None,
) -> ServingOps:
    """The curves of one replica: `kv_per_token` is the KV bytes one token of context adds on one GPU of a
    stage, `attn_width` the width attention's scores and values are computed over per token of context."""
    from advisor.catalog import operations as ops

    k = kernels(gpu.id, precision, weight_bytes, profile)
    mem, cmp, xmem, xcmp = _stage_gemms(k, arch, tp, pp, profile)
    head_m, head_c = gemm_curve(
        head_kernels(k, precision, profile), max(1, arch.vocab // tp), arch.hidden, profile
    )
    bw = ops.memory_gbs(gpu.id, profile=profile)
    layers = arch.layers / pp
    heads, kv_heads = max(1, arch.heads // tp), max(1, -(-arch.kv_heads // tp))
    fa = fa_curve(gpu.id, heads, kv_heads, arch.head_dim, profile)
    attn_flops = 4.0 * layers * attn_width / tp
    att = ops.attention_tflops(
        gpu.id,
        "bf16",
        seq_len=4096,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=min(arch.head_dim, 256),
        causal=True,
        pass_="fwd",
        batch=1,
        profile=profile,
    )
    return ServingOps(
        gemm_memory=tuple(mem),
        gemm_compute=tuple(cmp),
        experts_memory=tuple(xmem),
        experts_compute=tuple(xcmp),
        head_memory=tuple(v / pp for v in head_m),
        head_compute=tuple(v / pp for v in head_c),
        comm=comm_curve(gpu, arch, tp, pp, profile),
        elementwise_s=layers * elementwise_values(arch, tp) * ACT_BYTES / (bw.value * 1e9),
        # Decode attention reads the cache once per token; absorbed MLA computes over it at attention's rate.
        kv_s=max(kv_per_token / (bw.value * 1e9), attn_flops * at(fa, 8192.0)),
        attn_flops=attn_flops,
        fa_s_per_flop=fa,
        layers=layers,
        allreduces=2.0 * layers * math.log2(tp) if tp > 1 else 0.0,
        basis=f"GEMMs {k.basis}; attention {att.basis}; memory {bw.basis}",
        sources=tuple(dict.fromkeys((k.source, att.source, bw.source))),
    )
