"""Provides the data-parallel collectives of a composed training step: gradient reduction and the sharded
optimizer's parameter gather, in the buckets each stack issues them in (every call pays the collective's
latency), priced from the measured-operation tables, and what of them the step waits for."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from advisor.job.layout import Layout
from advisor.physics.op_prices import OpPrices, Price

# Parameters per gradient bucket (one collective each) of the stacks' data-parallel wrappers.
# Megatron-Core: max(40M, 1M x dp) parameters, "larger DP sizes need larger buckets to ensure collectives do
# not become latency-bound" (NVIDIA/Megatron-LM@d98e8a64ddf3:megatron/core/distributed/
# distributed_data_parallel_config.py, bucket_size).
MEGATRON_BUCKET_PARAMS, MEGATRON_BUCKET_PER_RANK = 40e6, 1e6
# DeepSpeed ZeRO: reduce_bucket_size and allgather_bucket_size default to 5e8 elements (DeepSpeed
# configuration docs, www.deepspeed.ai/docs/config-json/, "ZeRO Optimizations").
DEEPSPEED_BUCKET_PARAMS = 5e8
# PyTorch DistributedDataParallel: bucket_cap_mb=25 (torch.nn.parallel.DistributedDataParallel docs); the
# bucket of every other stack (FSDP's ZeRO-3 units are its layers instead).
DDP_BUCKET_BYTES = 25.0 * 2**20
# ZeRO-1/2's parameter all-gather after the optimizer step waits unless the stack overlaps it with the next
# forward pass. Megatron-Core does so when asked (--overlap-param-gather, default False in
# NVIDIA/Megatron-LM@d98e8a64ddf3:megatron/training/arguments.py), and NeMo asks whenever data parallelism
# is on: its MegatronCommOverlapCallback sets overlap_grad_reduce and overlap_param_gather (128M-parameter
# buckets) for DP > 1 (NVIDIA/NeMo nemo/lightning/pytorch/callbacks/megatron_comm_overlap.py,
# _get_optimizer_overlap_cfgs), as the performance recipes behind the Megatron runs we know (NeMo's and
# Megatron Bridge's performance tables, MLPerf) do; so a Megatron-style runtime overlaps it. DeepSpeed's
# ZeRO-1/2 and the other stacks wait for it.
OVERLAP_PARAM_GATHER_MEGATRON = True
# Of a step's compute, the backward passes take two thirds (twice the forward's FLOPs).
BACKWARD_SHARE = 2.0 / 3.0
# A collective overlapped with compute slows that compute: its NCCL kernels hold SMs and memory bandwidth the
# GEMMs would use. Measured on GPT and LLaMA training on 4 A100, H100, MI250 and MI210: "an average
# computational slowdown of 18.9%, with a maximum of 40.0%" against the same compute with no communication
# beside it (Characterizing Compute-Communication Overlap in GPU-Accelerated Distributed Deep Learning,
# arXiv:2507.03114, 2025, abstract). The average is taken: compute overlapped with a collective runs at
# 1 / 1.189 of its rate.
OVERLAP_SLOWDOWN = 0.189


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class DpSync:
    """The data-parallel collectives of one step (seconds), before their overlap with compute."""

    grads: float
    """One reduction of the gradients (every bucket): all-reduce (DDP), reduce-scatter over the shard group
    (ZeRO), plus the all-reduce of the shards across hybrid groups."""
    grads_last: float
    """Its last bucket: issued when the backward pass ends, never hidden."""
    params: float
    """ZeRO-1/2: the parameter all-gather over the shard group after the optimizer step."""
    params_last: float
    gathers: float
    """ZeRO-3: one pass's weight gathers (a call per layer)."""
    source: str
    basis: str
    layers: int = 1
    """ZeRO-3: the layers (FSDP units) a rank gathers one at a time, a call each."""


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class _Bytes:
    """The bytes a data-parallel step moves: gradients, weights, and the layers they are bucketed over."""

    grads: float
    weights: float
    layers: int


def bucket_params(stack: str, megatron: bool, dp: int, value_bytes: float) -> float:
    """Parameters per gradient (and ZeRO parameter) bucket of a stack."""
    if megatron:
        return max(MEGATRON_BUCKET_PARAMS, MEGATRON_BUCKET_PER_RANK * dp)
    if "deepspeed" in stack:
        return DEEPSPEED_BUCKET_PARAMS
    return DDP_BUCKET_BYTES / value_bytes


def _span_nodes(size: int, stride: int, node_size: int) -> int:
    """Servers a group of `size` ranks `stride` apart spans."""
    span = size * stride
    return max(1, math.ceil(span / node_size)) if span > node_size else 1


def _bucketed(
    prices: OpPrices, op: str, size: int, stride: int, node_size: int, nbytes: float, calls: int
) -> tuple[Price, float]:
    """(all `calls` collectives of `nbytes` in all, the last call's seconds)."""
    if size <= 1 or nbytes <= 0:
        return Price(0.0, "", "measured"), 0.0
    calls = max(1, calls)
    one = prices.collective(op, size, _span_nodes(size, stride, node_size), nbytes / calls)
    return Price(one.seconds * calls, one.source, one.basis), one.seconds


def dp_sync(
    layout: Layout,
    prices: OpPrices,
    nbytes: tuple[float, float, int],
    stack: str,
    megatron: bool,
) -> DpSync:
    """The data-parallel collectives of a layout: `nbytes` = (the local gradients' bytes, the local
    weights' bytes, the layers a rank holds)."""
    b = _Bytes(*nbytes)
    group, stride, node = layout.dp * layout.cp, layout.tp, layout.node_size
    shard = layout.shard_group or group
    value = 2.0 if layout.precision not in ("fp32", "tf32") else 4.0
    per_bucket = bucket_params(stack, megatron, layout.dp, value) * value
    calls = max(1, math.ceil(b.grads / per_bucket))
    zero = layout.zero
    if zero == 0:
        grads, last = _bucketed(prices, "all_reduce", group, stride, node, b.grads, calls)
        return DpSync(grads.seconds, last, 0.0, 0.0, 0.0, grads.source, grads.basis)
    scatter_calls = b.layers if zero == 3 else calls
    scatter, last = _bucketed(prices, "reduce_scatter", shard, stride, node, b.grads, scatter_calls)
    seconds, last_s = scatter.seconds, last
    if shard < group:  # hybrid: the shards all-reduced across the replicas of the shard group
        across, across_last = _bucketed(
            prices, "all_reduce", group // shard, stride * shard, node, b.grads / shard, scatter_calls
        )
        seconds, last_s = seconds + across.seconds, last + across_last
    gather_calls = b.layers if zero == 3 else max(1, math.ceil(b.weights / per_bucket))
    gather, gather_last = _bucketed(prices, "all_gather", shard, stride, node, b.weights, gather_calls)
    if zero == 3:
        return DpSync(seconds, last_s, 0.0, 0.0, gather.seconds, scatter.source, scatter.basis, b.layers)
    return DpSync(seconds, last_s, gather.seconds, gather_last, 0.0, scatter.source, scatter.basis)


def expert_group(layout: Layout) -> Layout:
    """The ranks an expert's gradients and shards are reduced and gathered over: its expert-data-parallel
    ones, TP x CP x DP / (expert TP x EP) of them, adjacent groups of expert TP x EP apart (Megatron-Core's
    expert rank order etp-ep-dp-pp: expert_data_parallel_size = world / (etp x ep x pp), NVIDIA/
    Megatron-LM@00caa53af309:megatron/core/parallel_state.py; FSDP2's experts shard over the data-parallel
    ranks left by EP, as torchtitan and NeMo AutoModel build their meshes). EP 64 on DP 64: one rank, no
    traffic."""
    etp = layout.expert_tp
    ranks = max(1, layout.tp * layout.cp * layout.dp // (etp * layout.ep))
    return replace(layout, tp=etp * layout.ep, cp=1, dp=ranks, shard_group=0)


def moe_dp_sync(
    layout: Layout,
    prices: OpPrices,
    dense: tuple[float, float, int],
    experts: tuple[float, float, int],
    stack: str,
    megatron: bool,
) -> DpSync:
    """dp_sync of a mixture of experts: the dense weights' collectives over the data x context parallel ranks,
    the routed experts' over their expert-data-parallel ranks (expert_group), one after the other."""
    a = dp_sync(layout, prices, dense, stack, megatron)
    if experts[0] <= 0 and experts[1] <= 0:
        return a
    b = dp_sync(expert_group(layout), prices, experts, stack, megatron)
    return DpSync(
        a.grads + b.grads,
        a.grads_last + b.grads_last,
        a.params + b.params,
        a.params_last + b.params_last,
        a.gathers + b.gathers,
        a.source or b.source,
        a.basis,
        a.layers,
    )


def overlapped(comm_s: float, compute_s: float) -> float:
    """Seconds a window of `compute_s` of compute takes beyond it when `comm_s` of collectives run beside it:
    the collective's excess over the compute, or the compute's slowdown while they share the GPU
    (OVERLAP_SLOWDOWN), whichever is more. Compute slowed by s finishes under a collective of at least
    compute x (1 + s); otherwise the collective's seconds slow it by comm x s / (1 + s)."""
    if comm_s <= 0.0:
        return 0.0
    return max(comm_s - compute_s, comm_s * OVERLAP_SLOWDOWN / (1.0 + OVERLAP_SLOWDOWN))


def _zero3(sync: DpSync, m: int, compute_s: float) -> float:
    """ZeRO-3's exposed traffic as the stacks schedule it, a layer (FSDP unit) at a time with one layer of
    prefetch (FSDP1's BACKWARD_PRE and limit_all_gathers, FSDP2's default, DeepSpeed's prefetch bucket): in
    the forward pass a layer's gather hides only under the previous layer's forward, and the first layer's
    waits; in the backward pass the next layer's gather and this layer's gradient reduce-scatter run on one
    process group, so one after the other (NCCL runs a communicator's collectives in issue order: Zhao et
    al., PyTorch FSDP, VLDB 2023, arXiv:2304.11277, sec. 3.3.2), under one layer's backward; the last
    reduce-scatter waits. Every micro-batch gathers again (its gradients reduce-scatter each time)."""
    layers = max(1, sync.layers)
    gather, scatter = sync.gathers / layers, sync.grads / layers
    forward = compute_s * (1.0 - BACKWARD_SHARE) / (m * layers)
    backward = compute_s * BACKWARD_SHARE / (m * layers)
    one = gather + (layers - 1) * overlapped(gather, forward)
    one += (layers - 1) * overlapped(gather + scatter, backward) + max(sync.grads_last, scatter)
    return m * one


def interleaved_window(pp: int, virtual: int, m: int) -> float:
    """How many micro-batches' backward (and forward) passes Megatron-Core's data-parallel collectives hide
    under: one (the last micro-batch's backward, the first one's forward) without interleaving; with `virtual`
    model chunks per stage, the interleaved schedule starts each chunk's gradient reduction when that chunk's
    last micro-batch is through its backward pass (`is_last_microbatch_for_model_chunk` -> grad sync, and a
    chunk's parameter gather at the first micro-batch of the chunk before it: NVIDIA/Megatron-LM@4dabc6238579:
    megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving). Its last
    group of min(pp, m) micro-batches runs chunk after chunk (the backward from the last chunk down), so the
    reductions of all but the last chunk hide under (virtual - 1) / virtual of that group's backward, and the
    last chunk's under its own last micro-batch: ((virtual - 1) min(pp, m) + 1) / virtual micro-batches. The
    Megatron Bridge guide says the same: "the granularity of DP communication becomes the Transformer layers
    per virtual pipeline stage" (docs.nvidia.com/nemo/megatron-bridge, "Communication Overlap")."""
    if pp <= 1 or virtual <= 1:
        return 1.0
    return ((virtual - 1) * min(pp, max(1, m)) + 1) / virtual


def exposed(
    sync: DpSync, zero: int, m: int, compute_s: float, overlap_params: bool, window: float = 1.0
) -> float:
    """Seconds of a step's data-parallel traffic the step waits for, given its compute of `m` micro-batches:
    DDP and ZeRO-1 reduce under the last micro-batch's backward pass (`window` micro-batches' where the
    schedule interleaves model chunks: interleaved_window), ZeRO-2 under each one's, ZeRO-3 a layer at a time
    (_zero3); the last bucket of a reduction is never hidden, and compute with a collective beside it runs
    slower (overlapped); ZeRO-1/2's parameter gather follows the optimizer step, hidden under the next step's
    first forward pass (as many as the `window`) only when `overlap_params` (Megatron's
    --overlap-param-gather: OVERLAP_PARAM_GATHER_MEGATRON)."""
    m = max(1, m)
    if zero == 3:
        return _zero3(sync, m, compute_s)
    share = min(float(m), max(1.0, window)) / m
    backward = compute_s * BACKWARD_SHARE * share
    grads = sync.grads_last + overlapped(sync.grads - sync.grads_last, backward)
    if zero == 2:
        grads *= m
    if zero == 0:
        return grads
    forward = compute_s * (1.0 - BACKWARD_SHARE) * share
    if not overlap_params:
        return grads + sync.params
    return grads + sync.params_last + overlapped(sync.params - sync.params_last, forward)
