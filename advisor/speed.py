"""Provides the speed-of-light model: roofline compute and memory time plus alpha-beta communication."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.catalog.assumptions import Assumptions, Fabric
from advisor.catalog.gpus import Gpu
from advisor.job import Job
from advisor.layout import Layout
from advisor.memory import weight_bytes_per_param

TFLOP = 1e12
GBS = 1e9


def compute_dtype(precision: str, gpu: Gpu) -> str:
    """The dtype whose peak bounds the math: int8 uses int8 tensor cores where present, int4 runs in 16-bit."""
    if precision == "int8":
        return "int8" if gpu.tflops.int8 else ("bf16" if gpu.tflops.bf16 else "fp16")
    if precision == "int4":
        return "bf16" if gpu.tflops.bf16 else "fp16"
    return precision


def peak_flops(gpu: Gpu, precision: str) -> float | None:
    """Dense peak FLOP/s for a precision on this GPU, None when it lacks it."""
    tf = gpu.peak_tflops(compute_dtype(precision, gpu))
    return tf * TFLOP if tf else None


def pcie_gbs(gpu: Gpu, a: Assumptions) -> float:
    """PCIe x16 bandwidth per direction, GB/s."""
    gen = gpu.pcie_gen or 4
    figure = {3: a.comm.pcie_gen3_gbs, 4: a.comm.pcie_gen4_gbs}.get(gen, a.comm.pcie_gen5_gbs)
    return figure.value


def intra_gbs(gpu: Gpu, group: int, a: Assumptions) -> float:
    """Per-direction bandwidth of a collective among `group` GPUs of one node."""
    if gpu.interconnect.kind != "pcie" and group <= gpu.nvlink_domain and gpu.interconnect.gbs:
        return gpu.interconnect.gbs / 2.0
    return pcie_gbs(gpu, a)


def ring_allreduce_s(nbytes: float, n: int, gbs: float, latency: float) -> float:
    """Ring all-reduce: 2(n-1)/n of the bytes over the link plus 2(n-1) latency steps."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    return 2.0 * (n - 1) / n * nbytes / (gbs * GBS) + 2.0 * (n - 1) * latency


def hierarchical_allreduce_s(nbytes: float, per_node: int, nodes: int, intra: float, inter: float,
                             lat_intra: float, lat_inter: float) -> float:
    """All-reduce over `nodes` x `per_node` ranks: a ring inside each node, then each rank's shard across nodes
    on its own NIC (rail-optimised), as NCCL does on multi-NIC servers."""
    inside = ring_allreduce_s(nbytes, per_node, intra, lat_intra)
    across = ring_allreduce_s(nbytes / max(per_node, 1), nodes, inter, lat_inter)
    return inside + across


@dataclass(frozen=True, slots=True)
class StepTime:
    """Speed-of-light time of one optimizer step (training) on every GPU, by part, in seconds."""

    flops_s: float
    bytes_s: float
    bubble_s: float
    dp_comm_s: float
    tp_comm_s: float
    pp_comm_s: float
    items: float
    """Items (tokens, images, ...) the whole system processes per step."""

    @property
    def roofline_s(self) -> float:
        """Compute or memory time, whichever binds."""
        return max(self.flops_s, self.bytes_s)

    @property
    def total_s(self) -> float:
        """The step at 100% efficiency."""
        return self.roofline_s + self.bubble_s + self.dp_comm_s + self.tp_comm_s + self.pp_comm_s

    @property
    def comm_fraction(self) -> float:
        """Exposed communication and bubble as a share of the step."""
        return (self.total_s - self.roofline_s) / self.total_s if self.total_s else 0.0

    @property
    def bound(self) -> str:
        """What limits the step: compute, memory or communication."""
        if self.comm_fraction > 0.5:
            return "communication"
        return "memory" if self.bytes_s > self.flops_s else "compute"


def training_flops_per_item(job: Job, layout: Layout, a: Assumptions) -> float:
    """FLOPs per item including what recomputation and frozen weights add or save."""
    flops = job.train_flops_per_item
    if job.kind in ("lora", "qlora"):
        flops = 2.0 * job.fwd_flops_per_item  # forward + input gradients; frozen weights get no weight gradient
    if layout.recompute == "full":
        flops += job.fwd_flops_per_item
    elif layout.recompute == "selective":
        flops *= 1.0 + a.activations.selective_recompute_flops.value
    return flops


def training_step(job: Job, gpu: Gpu, layout: Layout, fabric: Fabric, a: Assumptions,
                  activation_bytes_per_seq: float) -> StepTime | None:
    """Speed-of-light time of one training step, or None when the GPU has no peak for the precision."""
    peak = peak_flops(gpu, layout.precision)
    if peak is None:
        return None
    mb, m, mp, dp = layout.micro_batch, layout.grad_accum, layout.model_parallel, layout.dp
    items = float(mb * m * dp * job.items_per_sequence)
    flops = training_flops_per_item(job, layout, a) * items / layout.count

    w = weight_bytes_per_param(layout.precision, a, training=True)
    base_w = a.precision.nf4_bits.value / 8 if job.kind == "qlora" else w
    local_weights = job.params / mp * base_w
    passes = 3 + (1 if layout.recompute == "full" else 0)
    trainable_local = job.trainable_params / mp
    master = a.optimizer.master_weights.value if layout.precision not in ("fp32", "tf32") else 0.0
    states = trainable_local * (w + w + master + getattr(a.optimizer, job.optimizer).value)
    nbytes = (local_weights * passes * m + 2.0 * states / (dp if layout.zero >= 1 else 1)
              + 2.0 * activation_bytes_per_seq * mb * m)
    flops_s = flops / peak
    bytes_s = nbytes / (gpu.memory_bw_gbs * GBS)
    roof = max(flops_s, bytes_s)
    bubble = roof * (layout.pp - 1) / m if layout.pp > 1 else 0.0

    lat_intra = a.comm.intra_node_latency_s.value
    inter = fabric.gbs_per_gpu(layout.node_size)
    dp_comm = 0.0
    if dp > 1:
        per_node = max(1, min(dp, layout.node_size // min(mp, layout.node_size)))
        spanned = max(1, dp // per_node)
        intra = intra_gbs(gpu, per_node, a)
        grads = trainable_local * w
        if layout.zero == 3:
            # Gather the weights for every forward and backward pass, reduce-scatter the gradients once.
            gather = hierarchical_allreduce_s(local_weights, per_node, spanned, intra, inter, lat_intra,
                                              fabric.latency_s) / 2.0
            scatter = hierarchical_allreduce_s(grads, per_node, spanned, intra, inter, lat_intra,
                                               fabric.latency_s) / 2.0
            dp_comm = max(0.0, 2 * m * gather + scatter - roof)  # prefetching overlaps it with all compute
        else:
            total = hierarchical_allreduce_s(grads, per_node, spanned, intra, inter, lat_intra, fabric.latency_s)
            backward_last = roof * (2.0 / 3.0) / m  # bucketed all-reduce overlaps the last backward pass
            dp_comm = max(0.0, total - backward_last)

    tp_comm = 0.0
    arch = job.arch
    act_value = 2.0 if layout.precision not in ("fp32", "tf32") else 4.0
    if layout.tp > 1 and arch is not None:
        msg = job.seq_len * mb * arch.hidden * act_value
        per_call = ring_allreduce_s(msg, layout.tp, intra_gbs(gpu, layout.tp, a), lat_intra)
        calls = (4 + (2 if layout.recompute == "full" else 0)) * arch.layers / layout.pp * m
        tp_comm = per_call * calls
    pp_comm = 0.0
    if layout.pp > 1 and arch is not None:
        msg = job.seq_len * mb * arch.hidden * act_value
        across = layout.nodes > 1
        gbs = inter if across else intra_gbs(gpu, 2, a)
        pp_comm = 2.0 * m * (msg / (gbs * GBS) + (fabric.latency_s if across else lat_intra))
    return StepTime(flops_s, bytes_s, bubble, dp_comm, tp_comm, pp_comm, items)


@dataclass(frozen=True, slots=True)
class ServingTime:
    """Speed-of-light serving times of one replica (tp x pp GPUs) at a batch of concurrent sequences."""

    decode_step_s: float
    """One output token for every sequence of the batch."""
    prefill_s: float
    """One request's prompt."""
    decode_bound: str


def serving_times(job: Job, gpu: Gpu, layout: Layout, a: Assumptions, weights_bytes_per_gpu: float,
                  kv_bytes_per_seq_per_gpu: float) -> ServingTime | None:
    """Decode-step and prefill times at 100% efficiency, or None without a peak for the precision."""
    peak = peak_flops(gpu, layout.precision)
    if peak is None or job.arch is None:
        return None
    arch, b, gpus = job.arch, layout.micro_batch, layout.tp * layout.pp
    avg_context = job.prompt_tokens + job.output_tokens / 2.0
    # Decode reads every local weight once per step and each sequence's KV cache (at its average length).
    kv_read = kv_bytes_per_seq_per_gpu * avg_context / (job.prompt_tokens + job.output_tokens)
    decode_bytes = weights_bytes_per_gpu + b * kv_read
    decode_flops = b * (2.0 * job.active_params + 4.0 * arch.layers * arch.hidden * avg_context) / gpus
    t_bytes = decode_bytes / (gpu.memory_bw_gbs * GBS)
    t_flops = decode_flops / peak
    stage = max(t_bytes, t_flops)
    lat = a.comm.intra_node_latency_s.value
    tp_comm = 0.0
    if layout.tp > 1:
        per_call = ring_allreduce_s(b * arch.hidden * 2.0, layout.tp, intra_gbs(gpu, layout.tp, a), lat)
        tp_comm = 2.0 * arch.layers / layout.pp * per_call
    decode = (stage + tp_comm) * layout.pp
    p = job.prompt_tokens
    prefill_flops = (2.0 * job.active_params * p + 2.0 * arch.layers * arch.hidden * p * p) / gpus
    prefill = prefill_flops / peak * layout.pp
    return ServingTime(decode, prefill, "memory" if t_bytes >= t_flops else "compute")
