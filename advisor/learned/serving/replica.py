"""One serving replica as the step model sees it, built the same way for measured rows and for answers."""

from __future__ import annotations

from dataclasses import dataclass, replace

from advisor.catalog.assumptions import Assumptions
from advisor.catalog.gpus import Gpu
from advisor.job.layout import Layout
from advisor.job.resolve import Job
from advisor.learned.serving.engines import Engine, engine
from advisor.physics.batching import EngineLimits, profile_peak_bytes
from advisor.physics.memory import inference_terms, usable_gb, weight_bytes_per_param
from advisor.physics.serving import GB, Hardware, Replica, bytes_per_kv, mla_absorbed_bytes, shape_of_arch
from advisor.physics.serving_ops import ServingOps, compose
from advisor.physics.speed import intra_gbs, peak_flops


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Setup:
    """A replica, its engine's caps on this GPU, and the bytes per GPU that are neither weights nor KV."""

    replica: Replica
    limits: EngineLimits
    overhead_bytes: float
    engine: Engine
    kv_precision: str
    working_bytes: float = 0.0
    """The activations' part of overhead_bytes (the forward the engine profiles, or the prefill's working
    set); the rest is the runtime's own memory inside the engine's fraction."""


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class EngineFlags:
    """Engine flags a measured run set away from its release's defaults (None: the default)."""

    max_num_seqs: int | None = None
    max_batched_tokens: int | None = None
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    """The served context (--max-model-len): where an engine schedules whole prompts up to it (vLLM V0
    without chunked prefill), its token budget and the forward it profiles."""


def default_kv_precision(precision: str) -> str:
    """The KV cache's precision an answer assumes: fp8 with fp8 weights (the memory model's convention, and
    what the launch file asks of the engine), else 16-bit."""
    return "fp8" if precision == "fp8" else "bf16"


def build(
    job: Job,
    gpu: Gpu,
    tp: int,
    pp: int,
    precision: str,
    engine_id: str | None,
    a: Assumptions,
    kv_precision: str | None = None,
    engine_version: str | None = None,
    flags: object | None = None,
) -> Setup | None:
    """The replica of `job` on tp x pp `gpu`s, or None when the GPU has no peak for the precision
    (`engine_version`: a measured row's, whose release may have had other defaults)."""
    if not hasattr(gpu.tflops, precision) and precision not in ("int8", "int4"):
        return None  # e.g. nvfp4: the catalogue holds no FP4 peaks
    peak = peak_flops(gpu, precision)
    if peak is None or job.arch is None:
        return None
    kv = kv_precision or default_kv_precision(precision)
    hw = Hardware(
        peak_flops=peak,
        bandwidth=gpu.memory_bw_gbs * GB,
        # What CUDA hands out (cudaMemGetInfo's total, which vLLM's gpu_memory_utilization is a share of):
        # the catalogue's '80 GB' is 80 GiB, less the driver's reservation and a GDDR card's ECC.
        memory_bytes=usable_gb(gpu, a) * GB,
        link_bytes_s=_tp_link_gbs(gpu, tp, a) * GB,
        link_latency_s=(
            a.fabric[gpu.fabric].latency_s if tp > gpu.gpus_per_node else a.comm["intra_node_latency_s"].value
        ),
    )
    rep = Replica(
        shape=shape_of_arch(job.arch, job.params, job.active_params),
        hw=hw,
        tp=tp,
        pp=pp,
        weight_bytes=weight_bytes_per_param(precision, a, training=False),
        kv_bytes=bytes_per_kv(kv),
    )
    rep = replace(rep, ops=measured_ops(job, gpu, rep, precision))
    eng = engine(engine_id)
    layout = Layout(count=tp * pp, nodes=1, node_size=max(tp, 1), precision=precision, tp=tp, pp=pp)
    terms = inference_terms(job, gpu, layout, a, job.prompt_tokens + job.output_tokens)
    mla = bool(job.arch.kv_lora_rank)
    context = getattr(flags, "max_model_len", None)
    limits = with_flags(
        eng.limits(gpu.id, gpu.memory_gb, engine_version, gpu.vendor, mla, context), flags or job.config
    )
    if eng.profile == "budget":  # the engine sizes its cache after profiling a forward at its token budget
        working = profile_peak_bytes(rep, limits, job.arch.vocab, a.activations["per_layer_coeff"].value)
        overhead = working + communicator_bytes(tp, pp, a)
    else:
        working = sum(hi for name, _, hi in terms.fixed if name == "activations")
        overhead = sum(hi for name, _, hi in terms.fixed if name != "weights")
    if eng.absorbs_mla(engine_version):  # absorbed decode weights beside the raw ones, before the cache
        overhead += mla_absorbed_bytes(job.arch, tp, rep.weight_bytes)
    return Setup(rep, limits, overhead, eng, kv, working)


def _tp_link_gbs(gpu: Gpu, tp: int, a: Assumptions) -> float:
    """Per-direction bandwidth of the tensor-parallel group's all-reduce: the in-server links, or for a
    stated group over whole servers their network, one NCCL channel per card: at most a server's whole
    network share, never above the in-server links (as advisor/physics/speed.py network_for)."""
    node = gpu.gpus_per_node
    if tp <= node:
        return intra_gbs(gpu, tp, a)
    return min(intra_gbs(gpu, node, a), a.fabric[gpu.fabric].gbs_per_gpu(node) * node)


def communicator_bytes(tp: int, pp: int, a: Assumptions) -> float:
    """What vLLM's profile counts inside its memory fraction besides the weights and the profiled forward:
    the non-torch memory allocated after its baseline snapshot, the NCCL communicators' buffers (one per
    parallel dimension over 1). The CUDA context is in the baseline, and the CUDA graphs are captured after
    the cache is sized, so both live in the share the fraction leaves (vllm-project/vllm@v0.7.3
    vllm/worker/worker.py determine_num_available_blocks: total x gpu_memory_utilization less weights,
    non-torch increase and the torch peak; vllm/worker/model_runner.py capture_model: 'If out-of-memory
    error occurs during cudagraph capture, consider decreasing gpu_memory_utilization')."""
    return (int(tp > 1) + int(pp > 1)) * a.memory["nccl_buffers_gb"].range[1] * GB


def measured_ops(job: Job, gpu: Gpu, rep: Replica, precision: str) -> ServingOps | None:
    """The replica's operations priced from the measured tables (None where they hold nothing for this GPU:
    the roofline then prices it)."""
    assert job.arch is not None
    try:
        return compose(
            job.arch,
            gpu,
            rep.tp,
            rep.pp,
            precision,
            rep.weight_bytes,
            rep.kv_per_token_gpu,
            rep.shape.attn_width,
            getattr(job, "profile", None),
        )
    except LookupError:
        return None


def with_flags(lim: EngineLimits, flags: object) -> EngineLimits:
    """The engine's caps with the flags a run set (max_num_seqs, max_batched_tokens,
    gpu_memory_utilization on a RunConfig or a measured row's EngineFlags; a stated prefix cache hit):
    priced as it ran."""
    seqs = getattr(flags, "max_num_seqs", None)
    budget = getattr(flags, "max_batched_tokens", None)
    fraction = getattr(flags, "gpu_memory_utilization", None)
    hit = getattr(flags, "prefix_cache_hit", None)
    return replace(
        lim,
        prefix_hit=float(hit) if hit else lim.prefix_hit,
        max_seqs=int(seqs) if seqs else lim.max_seqs,
        token_budget=int(budget) if budget else lim.token_budget,
        memory_fraction=float(fraction) if fraction else lim.memory_fraction,
    )
