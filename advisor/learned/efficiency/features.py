"""Provides the efficiency model's features: GPU specs and workload physics, never a GPU or model id."""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.catalog.assumptions import Assumptions, Fabric
from advisor.catalog.gpus import Gpu
from advisor.catalog.loader import Knowledge
from advisor.job.defaults import measured_batch
from advisor.job.layout import Layout
from advisor.job.resolve import Job
from advisor.learned.efficiency.base import Query, regime_of
from advisor.learned.efficiency.explicit import job_of_run, stated_layout
from advisor.learned.efficiency.runs import Run
from advisor.physics.memory import TrainingMemoryModel
from advisor.physics.speed import GBS, StepTime, intra_gbs, peak_flops, training_step

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
    "stack_fused",  # the stack runs fused kernels (Transformer Engine, torch.compile, Triton/flash kernels)
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
# What a stack does, not which stack it is: (fused kernels, Megatron-style runtime). Each pair is shared by at
# least two sources of the training data, so a held-out source is predicted from what its stack does.
STACK_TRAITS: dict[str, tuple[float, float]] = {
    "megatron": (1.0, 1.0),  # Megatron-Core/NeMo: Transformer Engine, SP, comm overlap
    "torchtitan": (1.0, 0.0),  # torch.compile, FlashAttention via SDPA, Float8 linears; FSDP2
    "composer": (1.0, 0.0),  # llm-foundry: Triton/flash-attn kernels; FSDP
    "unsloth": (1.0, 0.0),  # Triton kernels; single GPU
    "ngc-pytorch": (1.0, 0.0),  # NVIDIA DeepLearningExamples in NGC containers: apex/cuDNN fused kernels, AMP
    "pytorch": (1.0, 0.0),  # a non-LLM workload with no stack named: as the NGC examples measured
    "pytorch-fsdp": (0.0, 0.0),  # fms-fsdp: eager PyTorch FSDP with SDPA
    "hf": (0.0, 0.0),  # Hugging Face Trainer: eager modules, SDPA
    "deepspeed": (0.0, 0.0),  # DeepSpeed ZeRO over Hugging Face modules
}


def stack_traits(stack: str) -> tuple[float, float]:
    """The stack's traits (an unknown stack counts as eager PyTorch)."""
    return STACK_TRAITS.get(stack, (0.0, 0.0))


def _log(v: float) -> float:
    return math.log(max(v, 1))


def feature_vector(
    job: Job, gpu: Gpu, layout: Layout, step: StepTime, ctx_inter_gbs: float, intra: float, stack: str
) -> list[float]:
    """One row of features, in FEATURES order."""
    peak = (peak_flops(gpu, layout.precision) or 1.0) / 1e12
    items_per_gpu_step = layout.micro_batch * max(job.items_per_sequence, 1)
    flops = job.train_flops_per_item
    bytes_per_item = step.bytes_s * gpu.memory_bw_gbs * GBS / max(step.items / layout.count, 1e-9)
    roof = step.roofline_s
    fused, megatron = stack_traits(stack)
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
        fused,
        megatron,
        _log(layout.tp),
        _log(layout.pp),
        _log(layout.cp),
        _log(layout.ep),
        1.0 if layout.recompute == "selective" else 0.0,
        _log(layout.grad_accum),
        1.0 if job.arch is not None and job.arch.is_moe else 0.0,
    ]


def query_features(q: Query, a: Assumptions) -> list[float] | None:
    """Features of a training query (None for regimes the learned model does not cover)."""
    if q.step is None:
        return None
    intra = intra_gbs(q.gpu, min(q.layout.count, q.layout.node_size), a)
    return feature_vector(q.job, q.gpu, q.layout, q.step, q.fabric_gbps_per_gpu / 8.0, intra, q.job.stack)


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

    @property
    def family(self) -> str:
        """'llm': an LLM run of an LLM training stack; 'other': the rest (Lambda's NGC examples: CNNs, BERT,
        GNMT, speech, and its two 2019 Transformer-XL language models). Evaluated and calibrated apart."""
        llm = self.features[KIND_INDEX] == KIND_CODE["llm"] and self.row.stack in LLM_STACKS
        return "llm" if llm else "other"


KIND_INDEX = FEATURES.index("kind_code")
LLM_STACKS = ("megatron", "torchtitan", "composer", "pytorch-fsdp", "hf", "deepspeed", "unsloth")


def sample_of(knowledge: Knowledge, run: Run) -> Sample | None:
    """Rebuild a measured run as the core models it, its layout exactly as stated; None without a peak."""
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
    fabric = knowledge_fabric(knowledge, job, gpu)
    memory = TrainingMemoryModel(job, gpu, run.precision, a)
    per_seq = memory.per_sequence(layout.recompute, layout.tp, layout.cp, layout.pp)
    step = training_step(job, gpu, layout, fabric, a, per_seq)
    if step is None:
        return None
    sol = step.items / step.total_s
    inter = fabric.gbs_per_gpu(layout.node_size)
    intra = intra_gbs(gpu, min(run.count, layout.node_size), a)
    mfu_sol = peak * run.count / job.train_flops_per_item
    return Sample(
        run,
        feature_vector(job, gpu, layout, step, inter, intra, run.stack),
        sol,
        run.throughput / sol,
        regime_of(job),
        mfu_sol,
    )


def knowledge_fabric(knowledge: Knowledge, job: Job, gpu: Gpu) -> Fabric:
    """The fabric the core assumes for this GPU (as a prediction would)."""
    return knowledge.assumptions.fabric[gpu.fabric]
