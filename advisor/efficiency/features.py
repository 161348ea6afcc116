"""Provides the efficiency model's features: GPU specs and workload physics, never a GPU or model id."""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.catalog.assumptions import Assumptions
from advisor.catalog.benchmarks import BenchmarkRow
from advisor.catalog.gpus import Gpu
from advisor.catalog.loader import Knowledge
from advisor.context import Context
from advisor.efficiency.base import Query, regime_of
from advisor.efficiency.prior import PriorEfficiency
from advisor.inputs import Constraints, Workload
from advisor.job import Job, resolve_job
from advisor.layout import Layout
from advisor.memory import TrainingMemoryModel
from advisor.speed import GBS, StepTime, intra_gbs, peak_flops, training_step

FEATURES: tuple[str, ...] = (
    "log_peak_tflops",      # dense peak of the precision used
    "log_bw_gbs",           # HBM/GDDR bandwidth
    "log_ridge",            # peak / bandwidth: FLOPs per byte where compute and memory balance
    "log_memory_gb",
    "compute_capability",   # generation (0 for non-NVIDIA)
    "precision_bits",       # 32 fp32, 19 tf32, 16, 8
    "log_flops_per_item",   # training FLOPs per throughput item
    "log_intensity",        # FLOPs per byte of the workload at its batch (vs the GPU's ridge)
    "log_params",
    "log_items_per_gpu_step",  # work per GPU per micro-batch: batch x items per sequence
    "log_count",
    "nodes_log2",
    "log_intra_gbs",
    "log_inter_gbs",
    "bytes_share",          # memory-time / roofline time at speed of light
    "comm_share",           # exposed communication / step at speed of light
    "recompute_full",
    "zero_stage",
    "kind_code",            # 0 cnn, 1 encoder, 2 vit, 3 rnn, 4 speech, 5 recsys, 6 llm
)
KIND_CODE = {"cnn": 0, "encoder": 1, "vit": 2, "rnn": 3, "speech": 4, "recsys": 5, "llm": 6}
BITS = {"fp32": 32, "tf32": 19, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4}


def feature_vector(job: Job, gpu: Gpu, layout: Layout, step: StepTime, ctx_inter_gbs: float,
                   intra: float) -> list[float]:
    """One row of features, in FEATURES order."""
    peak = (peak_flops(gpu, layout.precision) or 1.0) / 1e12
    items_per_gpu_step = layout.micro_batch * max(job.items_per_sequence, 1)
    flops = job.train_flops_per_item
    bytes_per_item = step.bytes_s * gpu.memory_bw_gbs * GBS / max(step.items / layout.count, 1e-9)
    roof = step.roofline_s
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
        math.log(max(items_per_gpu_step, 1)),
        math.log(layout.count),
        math.log2(max(layout.nodes, 1)),
        math.log(max(intra, 1e-3)),
        math.log(max(ctx_inter_gbs, 1e-3)),
        step.bytes_s / roof if roof else 0.0,
        step.comm_fraction,
        1.0 if layout.recompute == "full" else 0.0,
        float(layout.zero),
        float(KIND_CODE.get(job.model_kind, 6)),
    ]


def query_features(q: Query, a: Assumptions) -> list[float] | None:
    """Features of a training query (None for regimes the learned model does not cover)."""
    if q.step is None:
        return None
    intra = intra_gbs(q.gpu, min(q.layout.count, q.layout.node_size), a)
    return feature_vector(q.job, q.gpu, q.layout, q.step, q.fabric_gbps_per_gpu / 8.0, intra)


@dataclass(frozen=True, slots=True)
class Sample:
    """One benchmark row turned into features, speed of light and the measured efficiency."""

    row: BenchmarkRow
    features: list[float]
    sol: float
    """Whole-system throughput at 100% efficiency, the row's unit."""
    efficiency: float
    """measured / sol."""
    regime: str


def sample_of(knowledge: Knowledge, row: BenchmarkRow) -> Sample | None:
    """Rebuild a benchmark run as the core models it; None when the run cannot be modelled (e.g. no peak)."""
    a = knowledge.assumptions
    gpu = knowledge.gpu(row.gpu)
    workload = Workload(model=row.workload, kind="pretrain", precision=row.precision,
                        seq_len=row.seq_len or None, batch_size=int(row.batch_per_gpu) if row.batch_per_gpu else None)
    job = resolve_job(knowledge, workload, need_data=False)
    ctx = Context(knowledge, job, Constraints(), PriorEfficiency(a))
    mb = int(row.batch_per_gpu) if row.batch_per_gpu else (ctx.default_batch(gpu, row.precision) or 1)
    node_size = row.count // row.nodes
    zero = row.zero_stage
    sharding = {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}[zero] if row.count > 1 else "none"
    layout = Layout(count=row.count, nodes=row.nodes, node_size=node_size, precision=row.precision, tp=1, pp=1,
                    dp=row.count, sharding=sharding, recompute=row.recompute or "none", micro_batch=max(mb, 1),
                    grad_accum=row.grad_accum or 1)
    if peak_flops(gpu, row.precision) is None:
        return None
    fabric = ctx.fabric(gpu)
    memory = TrainingMemoryModel(job, gpu, row.precision, a)
    step = training_step(job, gpu, layout, fabric, a, memory.per_sequence(layout.recompute, 1))
    if step is None:
        return None
    sol = step.items / step.total_s
    inter = fabric.gbs_per_gpu(node_size)
    intra = intra_gbs(gpu, min(row.count, node_size), a)
    return Sample(row, feature_vector(job, gpu, layout, step, inter, intra), sol, row.throughput / sol,
                  regime_of(job))
