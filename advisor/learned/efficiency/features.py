"""Provides the efficiency model's features: GPU specs and workload physics, never a GPU or model id."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from advisor.catalog.assumptions import Assumptions, Fabric
from advisor.catalog.gpus import Gpu
from advisor.catalog.loader import Knowledge
from advisor.catalog.stacks import stack_of
from advisor.job.defaults import measured_batch
from advisor.job.layout import Layout
from advisor.job.resolve import Job
from advisor.learned.efficiency.base import Query, regime_of
from advisor.physics.memory import TrainingMemoryModel
from advisor.physics.speed import (  # NON_LLM_STACKS: an LLM measured there is not an LLM stack's run
    GBS,
    NON_LLM_STACKS,
    StepTime,
    intra_gbs,
    peak_flops,
    training_step,
)

if TYPE_CHECKING:  # measured runs are read where the model is trained, not where it answers a query
    from advisor.learned.efficiency.runs import Run

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


@dataclass(frozen=True, slots=True)
class Sample:
    """One measured run turned into features, speed of light and the measured efficiency."""

    row: Run
    features: list[float]
    sol: float
    """Whole-system throughput at 100% efficiency (core step: roofline, bubble, exposed communication)."""
    efficiency: float
    """measured / sol."""
    regime: str
    mfu_sol: float
    """Whole-system throughput at 100% MFU: peak x GPUs / the model's training FLOPs per item."""
    generation: str = ""
    """The GPU's architecture (ampere, hopper, blackwell, ...): the efficiency bound is per generation."""
    old_sol: float = 0.0
    """Whole-system throughput at the speed of light (roofline, bubble, alpha-beta communication): what the
    previous estimator multiplied by one efficiency; sol itself is the step composed from measured
    operations where the run is an LLM's (0: the same as sol)."""

    @property
    def composed(self) -> bool:
        """Whether sol is the step composed from measured operations (its efficiency a residual, which may
        pass 1)."""
        return self.old_sol > 0.0 and self.old_sol != self.sol

    @property
    def family(self) -> str:
        """'llm': an LLM run of an LLM training stack; 'other': the rest (Lambda's NGC examples: CNNs, BERT,
        GNMT, speech, and its two 2019 Transformer-XL language models). Evaluated and calibrated apart."""
        llm = self.features[KIND_INDEX] == KIND_CODE["llm"] and self.row.stack not in NON_LLM_STACKS
        return "llm" if llm else "other"


KIND_INDEX = FEATURES.index("kind_code")


def sample_of(knowledge: Knowledge, run: Run) -> Sample | None:
    """Rebuild a measured run as the core models it, its layout exactly as stated; None without a peak."""
    from advisor.learned.efficiency.explicit import job_of_run, stated_layout

    a = knowledge.assumptions
    gpu = knowledge.gpu(run.gpu)
    peak = peak_flops(gpu, run.precision)
    if peak is None:
        return None
    job = job_of_run(knowledge, run)
    mb = run.micro_batch
    if mb is None:
        mb = measured_batch(knowledge, job, gpu, run.precision) or 1
    layout = stated_layout(job, run.count, run.nodes, run.precision, max(mb, 1), run.grad_accum)
    fabric = knowledge.assumptions.fabric.get(run.fabric) or knowledge_fabric(knowledge, job, gpu)
    memory = TrainingMemoryModel(job, gpu, run.precision, a)
    per_seq = memory.per_sequence(layout.recompute, layout.tp, layout.cp, layout.pp, layout.virtual)
    traits = stack_of(knowledge, run.stack).traits(run.month)
    # A run of a non-LLM harness keeps the speed-of-light step of the models it is fitted with.
    step = training_step(job, gpu, layout, fabric, a, per_seq, traits, run.stack not in NON_LLM_STACKS)
    if step is None:
        return None
    sol = step.items / step.total_s
    inter = fabric.gbs_per_gpu(layout.node_size)
    intra = intra_gbs(gpu, min(run.count, layout.node_size), a)
    mfu_sol = peak * run.count / job.train_flops_per_item
    return Sample(
        run,
        feature_vector(job, gpu, layout, step, inter, intra, traits),
        sol,
        run.throughput / sol,
        regime_of(job),
        mfu_sol,
        gpu.architecture,
        step.items / step.sol_s,
    )


def knowledge_fabric(knowledge: Knowledge, job: Job, gpu: Gpu) -> Fabric:
    """The fabric the core assumes for this GPU (as a prediction would)."""
    return knowledge.assumptions.fabric[gpu.fabric]


def family_of(sample_kind_code: float) -> str:
    """Interval family of a sample: LLM runs or the rest."""
    return "llm" if sample_kind_code == 6.0 else "other"
