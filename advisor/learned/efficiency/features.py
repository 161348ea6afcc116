"""Provides the efficiency model's features: GPU specs and workload physics, never a GPU or model id."""

from __future__ import annotations

import math

from advisor.catalog.assumptions import Assumptions
from advisor.catalog.gpus import Gpu
from advisor.job.layout import Layout
from advisor.job.resolve import Job
from advisor.learned.efficiency.base import Query
from advisor.physics.speed import GBS, StepTime, intra_gbs, peak_flops

FEATURES: tuple[str, ...] = (
    "log_peak_tflops",  # dense peak of the precision used (FP8 against the FP8 peak)
    "log_bw_gbs",  # HBM/GDDR bandwidth
    "log_ridge",  # peak / bandwidth: FLOPs per byte where compute and memory balance
    "log_memory_gb",
    "compute_capability",  # generation (0 for non-NVIDIA)
    "precision_bits",  # 32 fp32, 19 tf32, 16, 8
    "log_flops_per_item",  # training FLOPs per throughput item
    "log_intensity",  # FLOPs per byte of the workload at its batch (vs the GPU's ridge)
    "log_params",
    "log_items_per_gpu_step",  # work per GPU per micro-batch: batch x items per sequence
    "log_count",
    "nodes_log2",
    "log_intra_gbs",
    "log_inter_gbs",
    "bytes_share",  # memory-time / roofline time at speed of light
    "comm_share",  # exposed communication and bubble / step at speed of light
    "recompute_full",
    "zero_stage",
    "kind_code",  # 0 cnn, 1 encoder, 2 vit, 3 rnn, 4 speech, 5 recsys, 6 llm
    "flash_attention",  # the stack ran FlashAttention (or SDPA's flash backend) when the run was measured
    "compiled",  # torch.compile or fused kernels (Transformer Engine, Triton, apex)
    "te_fp8",  # FP8 through Transformer Engine's fused kernels (an FP8 run of a stack that has them)
    "stack_megatron",  # Megatron-style runtime: sequence-parallel TP, overlapped DP/PP communication
    "log_tp",
    "log_pp",
    "log_cp",
    "log_ep",
    "recompute_selective",
    "log_grad_accum",
    "moe",  # mixture of experts: routed tokens, grouped GEMMs
)
KIND_CODE = {"cnn": 0, "encoder": 1, "vit": 2, "rnn": 3, "speech": 4, "recsys": 5, "llm": 6}
BITS = {"fp32": 32, "tf32": 19, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4}
Traits = tuple[float, float, float, float]
"""(FlashAttention, compiled or fused kernels, Transformer Engine FP8, Megatron-style runtime): what a stack
does, not which stack it is (advisor/catalog/stacks.py, knowledge/training_stacks.toml)."""


def _log(v: float) -> float:
    return math.log(max(v, 1))


def feature_vector(
    job: Job, gpu: Gpu, layout: Layout, step: StepTime, ctx_inter_gbs: float, intra: float, traits: Traits
) -> list[float]:
    """One row of features, in FEATURES order."""
    peak = (peak_flops(gpu, layout.precision) or 1.0) / 1e12
    items_per_gpu_step = layout.micro_batch * max(job.items_per_sequence, 1)
    flops = job.train_flops_per_item
    bytes_per_item = step.bytes_s * gpu.memory_bw_gbs * GBS / max(step.items / layout.count, 1e-9)
    roof = step.roofline_s
    flash, compiled, te_fp8, megatron = traits
    return [
        math.log(peak),
        math.log(gpu.memory_bw_gbs),
        math.log(peak * 1e3 / gpu.memory_bw_gbs),
        math.log(gpu.memory_gb),
        gpu.compute_capability_value,
        float(BITS[layout.precision]),
        math.log(flops),
        math.log(max(flops / max(bytes_per_item, 1.0), 1e-3)),
        math.log(job.params),
        _log(items_per_gpu_step),
        math.log(layout.count),
        math.log2(max(layout.nodes, 1)),
        math.log(max(intra, 1e-3)),
        math.log(max(ctx_inter_gbs, 1e-3)),
        step.bytes_s / roof if roof else 0.0,
        step.comm_fraction,
        1.0 if layout.recompute == "full" else 0.0,
        float(layout.zero),
        float(KIND_CODE.get(job.model_kind, 6)),
        flash,
        compiled,
        te_fp8 if layout.precision == "fp8" else 0.0,
        megatron,
        _log(layout.tp),
        _log(layout.pp),
        _log(layout.cp),
        _log(layout.ep),
        1.0 if layout.recompute == "selective" else 0.0,
        _log(layout.grad_accum),
        1.0 if job.arch is not None and job.arch.is_moe else 0.0,
    ]


def query_features(q: Query, a: Assumptions, traits: Traits) -> list[float] | None:
    """Features of a training query with its stack's traits today (None for regimes the learned model does
    not cover)."""
    if q.step is None:
        return None
    intra = intra_gbs(q.gpu, min(q.layout.count, q.layout.node_size), a)
    return feature_vector(q.job, q.gpu, q.layout, q.step, q.fabric_gbps_per_gpu / 8.0, intra, traits)


def family_of(sample_kind_code: float) -> str:
    """Interval family of a sample: LLM runs or the rest."""
    return "llm" if sample_kind_code == 6.0 else "other"
