"""Provides the training speed-of-light model: roofline compute and memory time plus alpha-beta communication
(serving has its own step model: advisor/physics/serving.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from advisor.catalog.assumptions import Assumptions, Fabric, optimizer_bytes
from advisor.catalog.gpus import Gpu
from advisor.job.layout import Layout
from advisor.job.resolve import Job
from advisor.physics import data_parallel, offload
from advisor.physics.memory import weight_bytes_per_param
from advisor.physics.network import Network, ring_allreduce_s
from advisor.physics.op_prices import Price
from advisor.physics.recompute_modules import forward_flops_per_token, recomputes_attention
from advisor.physics.step_ops import ComposedStep, StepOps

__all__ = [
    "GBS",
    "StepTime",
    "intra_gbs",
    "peak_flops",
    "ring_allreduce_s",
    "training_step",
]

TFLOP = 1e12
GBS = 1e9
NO_TRAFFIC = Price(0.0, "", "measured")
# PyTorch's foreach AdamW against its fused kernel, element reads and writes a step
# (pytorch/pytorch@c15fcf4eb79d: torch/optim/adamw.py): _foreach_mul_ of the parameters (2),
# _foreach_lerp_ of the first moment with the gradients (3), _foreach_mul_ and _foreach_addcmul_ of the
# second moment (2 + 3), its _foreach_sqrt into a temporary, _foreach_div_ and _foreach_add_ on it
# (2 + 2 + 2), _foreach_addcdiv_ of the parameters (4): 20; the fused kernel reads the parameters, gradients
# and both moments and writes three of them: 7. The optimizer line prices the fused kernel's bytes
# (_states_term), so a foreach step moves 20/7 of them.
FOREACH_ADAMW_PASSES = 20.0
FUSED_ADAMW_PASSES = 7.0
FOREACH_SOURCE = "pytorch/pytorch@c15fcf4eb79d:torch/optim/adamw.py (foreach AdamW: 20 passes, fused 7)"


def compute_dtype(precision: str, gpu: Gpu) -> str:
    """The dtype whose peak bounds the math: int8 uses int8 tensor cores where present, int4 runs in
    16-bit."""
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
    figure = {3: a.comm["pcie_gen3_gbs"], 4: a.comm["pcie_gen4_gbs"]}.get(gen, a.comm["pcie_gen5_gbs"])
    return figure.value


def intra_gbs(gpu: Gpu, group: int, a: Assumptions) -> float:
    """Per-direction bandwidth of a collective among `group` GPUs of one node."""
    if gpu.interconnect.kind != "pcie" and group <= gpu.nvlink_domain and gpu.interconnect.gbs:
        return gpu.interconnect.gbs / 2.0
    return pcie_gbs(gpu, a)


def network_for(gpu: Gpu, layout: Layout, fabric: Fabric, a: Assumptions, group: int) -> Network:
    """The cluster network as a group of `group` ranks in one server sees it. A group wider than a server (a
    stated TP across servers) rings through every server's network cards, one NCCL channel per card: its
    bus bandwidth is at most the server's whole network share (the per-GPU share x the GPUs of a server),
    and never above the in-server links, at the network's latency."""
    inter = fabric.gbs_per_gpu(layout.node_size)
    intra, lat = intra_gbs(gpu, group, a), a.comm["intra_node_latency_s"].value
    if group > layout.node_size > 1:
        intra = min(intra_gbs(gpu, layout.node_size, a), inter * layout.node_size)
        lat = fabric.latency_s
    return Network(
        intra_gbs=intra,
        inter_gbs=inter,
        node_size=layout.node_size,
        pod_gpus=int(a.network["pod_gpus"].value),
        oversubscription=a.network["oversubscription"].value,
        lat_intra=lat,
        lat_inter=fabric.latency_s,
    )


@dataclass(frozen=True, slots=True, repr=False)
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
    cp_comm_s: float = 0.0
    ep_comm_s: float = 0.0
    ops: StepOps | None = None
    """The step composed from measured operations (a transformer LLM): what total_s is then; the fields above
    stay the speed of light."""

    @property
    def roofline_s(self) -> float:
        """Compute or memory time, whichever binds."""
        return max(self.flops_s, self.bytes_s)

    @property
    def total_s(self) -> float:
        """The step at the measured operations' rates where composed, else at 100% efficiency."""
        ops = self.ops
        return ops.total_s if ops is not None else self.sol_s

    @property
    def sol_s(self) -> float:
        """The step at 100% efficiency: roofline, bubble and exposed alpha-beta communication."""
        return (
            self.roofline_s
            + self.bubble_s
            + self.dp_comm_s
            + self.tp_comm_s
            + self.pp_comm_s
            + self.cp_comm_s
            + self.ep_comm_s
        )

    @property
    def comm_fraction(self) -> float:
        """Exposed communication and bubble as a share of the step."""
        ops = self.ops
        if ops is not None:
            waiting = ops.exposed_comm_s + ops.seconds("pipeline bubble")
            return waiting / ops.total_s if ops.total_s else 0.0
        total = self.sol_s
        return (total - self.roofline_s) / total if total else 0.0

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
        flops = (
            2.0 * job.fwd_flops_per_item
        )  # forward + input gradients; frozen weights get no weight gradient
    if layout.recompute == "full":
        flops += job.fwd_flops_per_item
    elif layout.recompute == "selective":
        # Unstated modules: Megatron's default, the attention core (Korthikanti's selective recomputation).
        modules = job.config.recompute_modules or ()
        tokens_per_item = max(job.seq_len, 1) / max(job.items_per_sequence, 1)
        extra = forward_flops_per_token(job.arch, modules) * tokens_per_item if job.arch is not None else 0.0
        if recomputes_attention(modules):
            flops *= 1.0 + a.activations["selective_recompute_flops"].value
        flops += extra
    return flops


def _trained_experts(job: Job) -> float:
    """The routed experts' parameters a full training step updates (none under LoRA: the adapters are)."""
    if job.arch is None or not job.arch.is_moe or job.trainable_params < job.params:
        return 0.0
    return min(job.arch.expert_params, job.params)


def _local_params(job: Job, layout: Layout) -> float:
    """Parameters one GPU holds before ZeRO sharding: dense over tp x pp, experts over expert TP x ep x pp."""
    expert = min(job.arch.expert_params, job.params) if job.arch is not None else 0.0
    experts_split = layout.expert_tp * layout.pp * layout.ep
    return (job.params - expert) / layout.model_parallel + expert / experts_split


def _model_comm(job: Job, layout: Layout, net: Network, roof: float) -> tuple[float, float, float, float]:
    """Exposed tensor-, pipeline-, context- and expert-parallel traffic of one step."""
    arch = job.arch
    if arch is None:
        return 0.0, 0.0, 0.0, 0.0
    act_value = 2.0 if layout.precision not in ("fp32", "tf32") else 4.0
    mb, m, tp, cp = layout.micro_batch, layout.grad_accum, layout.tp, layout.cp
    tokens = job.seq_len / cp * mb
    layers = arch.layers / layout.pp
    recompute = layout.recompute == "full"
    tp_comm = pp_comm = cp_comm = ep_comm = 0.0
    if tp > 1:  # sequence parallel: an all-gather and a reduce-scatter per all-reduce, the same volume
        per_call = ring_allreduce_s(tokens * arch.hidden * act_value, tp, net.intra_gbs, net.lat_intra)
        tp_comm = per_call * (4 + (2 if recompute else 0)) * layers * m
    if layout.pp > 1:
        msg = tokens * arch.hidden * act_value / tp
        pp_comm = 2.0 * m * layout.virtual * net.p2p_s(msg, layout.nodes > 1)
    if cp > 1:
        # Ring attention passes each rank's K and V around the cp ranks: once forward, twice backward (K, V
        # and
        # their gradients), overlapped with the attention math of the same layer.
        kv = arch.kv_values_per_token_layer(tp) * tokens * act_value
        ring = 3.0 * (cp - 1) * net.p2p_s(kv, cp * tp > layout.node_size) * layers * m
        attention_share = 4.0 * arch.layers * arch.hidden * job.seq_len / max(job.fwd_flops_per_item, 1.0)
        cp_comm = max(0.0, ring - roof * attention_share)
    if layout.ep > 1 and arch.is_moe:
        # Dispatch and combine every MoE layer, forward and backward: four all-to-alls of the routed tokens.
        moe_layers = arch.moe_layers / layout.pp
        routed = tokens * arch.experts_per_token * arch.hidden * act_value / tp
        ep_comm = 4.0 * moe_layers * m * net.alltoall_s(routed, layout.ep, tp * cp)
    return tp_comm, pp_comm, cp_comm, ep_comm


def training_step(
    job: Job,
    gpu: Gpu,
    layout: Layout,
    fabric: Fabric,
    a: Assumptions,
    activation_bytes_per_seq: float,
    traits: Traits | None = None,
    compose: bool = True,
    attention: str | None = None,
) -> StepTime | None:
    """Time of one training step (composed from measured operations for an LLM unless `compose` is False,
    with its speed of light), or None when the GPU has no peak for the precision. `attention`: the
    attention kernel the run states (None: the stack's usual one)."""
    return StepModel(job, gpu, fabric, a, traits, compose, attention).step(layout, activation_bytes_per_seq)


Traits = tuple[float, float, float, float]
"""(FlashAttention, compiled or fused kernels, Transformer Engine FP8, Megatron-style runtime)."""


def stack_traits(stack: str) -> Traits:
    """The shipped stack's traits today (FSDP's when the stack is not shipped)."""
    from advisor.catalog.stacks import shipped_stacks

    stacks = shipped_stacks()
    spec = stacks.get(stack) or stacks.get("fsdp")
    return spec.traits() if spec is not None else (1.0, 1.0, 0.0, 0.0)


def reduces_fp32(stack: str) -> bool:
    """Whether the shipped stack reduces its gradients in fp32 by default (training_stacks.toml)."""
    from advisor.catalog.stacks import shipped_stacks

    spec = shipped_stacks().get(stack)
    return spec is not None and spec.reduce_fp32


def foreach_optimizer(stack: str) -> bool:
    """Whether the shipped stack steps PyTorch's AdamW as constructed, its foreach implementation
    (training_stacks.toml `optimizer_foreach`)."""
    from advisor.catalog.stacks import shipped_stacks

    spec = shipped_stacks().get(stack)
    return spec is not None and spec.optimizer_foreach


def sequence_parallel(stack: str) -> bool:
    """Whether the shipped stack's tensor parallelism is sequence-parallel without a Megatron-style runtime
    (training_stacks.toml `sequence_parallel`: torchtitan's DTensor plan)."""
    from advisor.catalog.stacks import shipped_stacks

    spec = shipped_stacks().get(stack)
    return spec is not None and spec.sequence_parallel


# The harnesses of the non-LLM benchmark tables: an LLM measured there keeps the speed-of-light path of the
# other models (its runs are fitted with them).
NON_LLM_STACKS = ("ngc-pytorch", "pytorch")


def composes(job: Job) -> bool:
    """Whether the job's step is composed from measured operations: a transformer LLM trained on an LLM
    training stack."""
    arch = job.arch
    if arch is None or job.model_kind != "llm" or job.stack in NON_LLM_STACKS:
        return False
    return arch.layers > 0 and arch.hidden > 0


class StepModel:
    """training_step() of one job on one GPU type and fabric, with what the layouts of a search share
    memoised: the networks by group, the collectives by message, the per-layout bytes (the same arithmetic,
    so the same figures to the last bit)."""

    def __init__(
        self,
        job: Job,
        gpu: Gpu,
        fabric: Fabric,
        a: Assumptions,
        traits: Traits | None = None,
        compose: bool = True,
        attention: str | None = None,
    ) -> None:
        self.job, self.gpu, self.fabric, self.a = job, gpu, fabric, a
        self.composed = (
            ComposedStep(
                job,
                gpu,
                fabric,
                a,
                traits or stack_traits(job.stack),
                attention,
                sequence_parallel(job.stack),
            )
            if compose and composes(job)
            else None
        )
        self._ops_dp: dict[tuple[object, ...], data_parallel.DpSync] = {}
        self._optimizers: dict[tuple[float, int, int, int, int, str], Price] = {}
        self.offload = offload.offloaded(job)
        self.bw = gpu.memory_bw_gbs * GBS
        self._peaks: dict[str, float | None] = {}
        self._nets: dict[tuple[int, int], Network] = {}
        self._works: dict[tuple[object, ...], tuple[float, float]] = {}
        self._states: dict[tuple[object, ...], float] = {}
        self._terms: dict[tuple[object, ...], _Terms | None] = {}
        self._allreduces: dict[tuple[object, ...], float] = {}
        self._dps: dict[tuple[object, ...], tuple[float, ...]] = {}

    def peak(self, precision: str) -> float | None:
        """peak_flops() of a precision (memoised)."""
        if precision not in self._peaks:
            self._peaks[precision] = peak_flops(self.gpu, precision)
        return self._peaks[precision]

    def network(self, layout: Layout, group: int) -> Network:
        """network_for() (memoised on what it reads of the layout: the server size)."""
        key = (layout.node_size, group)
        net = self._nets.get(key)
        if net is None:
            net = self._nets[key] = network_for(self.gpu, layout, self.fabric, self.a, group)
        return net

    def step(self, layout: Layout, activation_bytes_per_seq: float) -> StepTime | None:
        """training_step() of one layout."""
        terms = self.terms(layout)
        if terms is None:
            return None
        peak, per_item, weights_passes, states, zero, dp_times, tp_net = terms
        mb, m = layout.micro_batch, layout.grad_accum
        items = float(mb * m * layout.dp * self.job.items_per_sequence)
        flops_s = per_item * items / layout.count / peak
        bytes_s = (weights_passes * m + states + 2.0 * activation_bytes_per_seq * mb * m) / self.bw
        roof = bytes_s if bytes_s > flops_s else flops_s  # max(), written out: asked per trial
        # Interleaving v model chunks per stage shrinks the bubble to (p-1)/(m v) (Narayanan et al. 2021,
        # 2.2.2).
        bubble = roof * (layout.pp - 1) / (m * layout.virtual) if layout.pp > 1 else 0.0
        dp_comm = _dp_exposed(zero, m, dp_times, roof) if dp_times else 0.0
        tp_comm, pp_comm, cp_comm, ep_comm = _model_comm(self.job, layout, tp_net, roof)
        ops = self._composed(layout, peak, per_item, zero, states) if self.composed is not None else None
        return StepTime(flops_s, bytes_s, bubble, dp_comm, tp_comm, pp_comm, items, cp_comm, ep_comm, ops)

    def _composed(self, layout: Layout, peak: float, per_item: float, zero: int, states: float) -> StepOps:
        """The step from measured operations; no stage faster than its share of the job's FLOPs at peak (so
        the search's bounds stay lower bounds)."""
        composed = self.composed
        assert composed is not None
        seq_items = layout.micro_batch * self.job.items_per_sequence
        floor_s = per_item * seq_items / (layout.tp * layout.cp * layout.pp * peak)
        m = layout.grad_accum
        sync = self._dp_sync(layout) if layout.dp * layout.cp > 1 else None
        overlap_params = composed.megatron and data_parallel.OVERLAP_PARAM_GATHER_MEGATRON
        window = data_parallel.interleaved_window(layout.pp, layout.virtual, m) if composed.megatron else 1.0

        def dp(compute_s: float) -> Price:
            if sync is None:
                return NO_TRAFFIC
            seconds = data_parallel.exposed(sync, zero, m, compute_s, overlap_params, window)
            return Price(seconds, sync.source, sync.basis)

        def note() -> str:
            return _dp_note(zero, layout, overlap_params, window) if sync is not None else ""

        return composed.step(layout, floor_s, dp, self._optimizer(layout, states), note, self.offload)

    def _optimizer(self, layout: Layout, states: float) -> Price:
        """The optimizer step: on the GPU, its states through memory at the measured rate; offloaded, on the
        host CPU and the parameters sent back (memoised per shard)."""
        key = (
            states,
            layout.model_parallel,
            layout.shard_ranks if layout.zero >= 1 else 1,
            layout.count,
            layout.grad_accum,  # an offloaded step's host copies repeat each micro-step
            layout.recompute,
        )
        optimizer = self._optimizers.get(key)
        if optimizer is None:
            composed = self.composed
            assert composed is not None
            if self.offload:
                w = weight_bytes_per_param(layout.precision, self.a, training=True)
                optimizer = offload.offload_price(self.job, layout, self.gpu, self.a, w)
            else:
                local = self.job.trainable_params / layout.model_parallel
                passes = self._optimizer_passes()
                optimizer = composed.prices.memory(states * passes, local * 4.0)
                if passes != 1.0:
                    source = f"{optimizer.source}; {FOREACH_SOURCE}"
                    optimizer = Price(optimizer.seconds, source, optimizer.basis)
            self._optimizers[key] = optimizer
        return optimizer

    def _optimizer_passes(self) -> float:
        """The optimizer's bytes against the fused kernel's: 20/7 for a stack whose AdamW runs PyTorch's
        foreach implementation (training_stacks.toml `optimizer_foreach`), 1 otherwise (other optimizers too).
        """
        foreach = self.job.optimizer == "adamw" and foreach_optimizer(self.job.stack)
        return FOREACH_ADAMW_PASSES / FUSED_ADAMW_PASSES if foreach else 1.0

    def _dp_sync(self, layout: Layout) -> data_parallel.DpSync:
        """The data-parallel collectives at the measured rates (memoised on what they read of the layout)."""
        key = _dp_key(layout)
        got = self._ops_dp.get(key)
        if got is None:
            composed = self.composed
            assert composed is not None
            job, a = self.job, self.a
            w = weight_bytes_per_param(layout.precision, a, training=True)
            base_w = a.precision["nf4_bits"].value / 8 if job.kind == "qlora" else w
            # A stack that reduces its gradients in fp32 (torchtitan) moves 4 bytes a gradient when it shards.
            reduce_w = 4.0 if layout.zero >= 1 and reduces_fp32(job.stack) else w
            # A rank's routed experts (full training): 1 / (expert TP x EP x PP) of them, reduced over their
            # own expert-data-parallel ranks (data_parallel.moe_dp_sync); the rest over the data-parallel.
            experts = _trained_experts(job)
            trainable = (job.trainable_params - experts) / layout.model_parallel
            mine = experts / (layout.expert_tp * layout.ep * layout.pp)
            # ZeRO-3 gathers every weight it shards (frozen base weights too); ZeRO-1/2 gathers only the
            # parameters the optimizer updated (a LoRA step: the adapters), in the weights' own dtype.
            whole = _local_params(job, layout) - mine
            weights = whole * base_w if layout.zero == 3 else trainable * w
            layers = max(1, (job.arch.layers if job.arch is not None else 1) // layout.pp)
            got = self._ops_dp[key] = data_parallel.moe_dp_sync(
                layout,
                composed.prices,
                (trainable * reduce_w, weights, layers),
                (mine * reduce_w, mine * (base_w if layout.zero == 3 else w), layers),
                job.stack,
                composed.megatron,
            )
        return got

    def terms(self, layout: Layout) -> _Terms | None:
        """What a step of this layout computes before its batch (memoised on every field but the batch), or
        None when the GPU has no peak for the precision."""
        key = (
            layout.precision,
            layout.recompute,
            layout.node_size,
            layout.tp,
            layout.pp,
            layout.ep,
            layout.dp,
            layout.cp,
            layout.sharding,
            layout.shard_group,
        )
        if key in self._terms:
            return self._terms[key]
        peak = self.peak(layout.precision)
        terms = None
        if peak is not None:
            work_key = (layout.precision, layout.recompute, layout.tp, layout.pp, layout.ep)
            work = self._works.get(work_key)
            if work is None:
                work = self._works[work_key] = _work_terms(self.job, layout, self.a)
            zero, shard = layout.zero, layout.shard_ranks
            states_key = (layout.precision, layout.tp * layout.pp, shard if zero >= 1 else 1)
            states = self._states.get(states_key)
            if states is None:
                states = self._states[states_key] = _states_term(self.job, layout, self.a)
            # Tensor-parallel collectives run among the tp ranks of one server (NVLink); a context-parallel
            # ring that leaves the server says so itself (p2p across nodes), so the TP group alone sets the
            # in-server bandwidth.
            tp_net = self.network(layout, max(layout.tp, 1))
            terms = _Terms(peak, *work, states, zero, self._dp_times(layout), tp_net)
        self._terms[key] = terms
        return terms

    def _dp_times(self, layout: Layout) -> tuple[float, ...]:
        """The data-parallel collectives of a layout (none for one rank), memoised without the
        recomputation."""
        group = layout.dp * layout.cp
        if group <= 1:
            return ()
        key = _dp_key(layout)
        times = self._dps.get(key)
        if times is None:
            per_node = max(1, min(group, layout.node_size // min(layout.tp, layout.node_size)))
            net = self.network(layout, per_node)

            def allreduce(nbytes: float, size: int, stride: int) -> float:
                # Memoised: DDP, ZeRO-2 and ZeRO-3 of a shape reduce the same gradients over the same ranks.
                at = (layout.node_size, per_node, nbytes, size, stride)
                t = self._allreduces.get(at)
                if t is None:
                    t = self._allreduces[at] = net.allreduce_s(nbytes, size, stride)
                return t

            times = self._dps[key] = _dp_collectives(self.job, layout, allreduce, self.a)
        return times


def _dp_note(zero: int, layout: Layout, overlap_params: bool, window: float = 1.0) -> str:
    """What the data-parallel line of a composed step is (`window`: the micro-batches it hides under)."""
    hybrid = f" (shard {layout.shard_group})" if layout.shard_group else ""
    if zero == 3:
        return f"ZeRO-3 gathers + gradient reduce-scatter{hybrid}, a layer at a time under the layer before"
    grads = {0: "gradient all-reduce", 1: "gradient reduce-scatter", 2: "gradient reduce-scatter"}[zero]
    when = "per micro-batch, each" if zero == 2 else "bucketed"
    under = "the last backward pass"
    if window > 1.0:
        under = f"the backward of the model chunks after each ({window:.2g} micro-batches' worth)"
    text = f"{grads}{hybrid} {when} under {under}"
    if zero:
        text += ", then the parameter all-gather " + (
            "under the next forward pass" if overlap_params else "after the optimizer step"
        )
    return text


def _dp_key(layout: Layout) -> tuple[object, ...]:
    """What a layout's data-parallel collectives depend on (all but the recomputation and the batch)."""
    return (
        layout.precision,
        layout.node_size,
        layout.tp,
        layout.pp,
        layout.ep,
        layout.dp,
        layout.cp,
        layout.zero,
        layout.shard_group,
    )


class _Terms(NamedTuple):
    """What a step computes before its batch: the peak, _work_terms(), _states_term(), the data-parallel
    collectives (_dp_collectives(); empty for one rank) and the tensor-parallel group's network."""

    peak: float
    per_item: float
    weights_passes: float
    states: float
    zero: int
    dp_times: tuple[float, ...]
    tp_net: Network


def _work_terms(job: Job, layout: Layout, a: Assumptions) -> tuple[float, float]:
    """FLOPs per item, and the weights' bytes times the passes over them."""
    per_item = training_flops_per_item(job, layout, a)
    w = weight_bytes_per_param(layout.precision, a, training=True)
    base_w = a.precision["nf4_bits"].value / 8 if job.kind == "qlora" else w
    local_weights = _local_params(job, layout) * base_w
    passes = 3 + (1 if layout.recompute == "full" else 0)
    return per_item, local_weights * passes


def _states_term(job: Job, layout: Layout, a: Assumptions) -> float:
    """Twice the optimizer states' bytes over their shards (read and written once a step)."""
    w = weight_bytes_per_param(layout.precision, a, training=True)
    trainable_local = job.trainable_params / layout.model_parallel
    master = (
        a.optimizer["master_weights"].value
        if layout.precision not in ("fp32", "tf32") and job.master_weights
        else 0.0
    )
    states = trainable_local * (w + w + master + optimizer_bytes(a.optimizer, job.optimizer))
    return 2.0 * states / (layout.shard_ranks if layout.zero >= 1 else 1)


def _dp_collectives(
    job: Job, layout: Layout, allreduce: Callable[[float, int, int], float], a: Assumptions
) -> tuple[float, ...]:
    """The gradient (and ZeRO-3 weight) collectives of the data-parallel ranks, before their overlap with
    compute: `allreduce` is the network's allreduce_s (an all-gather or reduce-scatter is half of one, as
    Network.allgather_s)."""
    group = layout.dp * layout.cp
    stride = layout.tp
    w = weight_bytes_per_param(layout.precision, a, training=True)
    base_w = a.precision["nf4_bits"].value / 8 if job.kind == "qlora" else w
    grads = job.trainable_params / layout.model_parallel * w
    shard = layout.shard_group or group
    if layout.zero == 3:
        # Gather the weights for every forward and backward pass, reduce-scatter the gradients once; hybrid
        # sharding gathers within its group and all-reduces the shards across groups.
        gather = allreduce(_local_params(job, layout) * base_w, shard, stride) / 2.0
        scatter = allreduce(grads, shard, stride) / 2.0
        across = allreduce(grads / shard, group // shard, stride * shard) if shard < group else 0.0
        return gather, scatter, across
    if layout.zero == 2:
        return (allreduce(grads, shard, stride) / 2.0,)
    return (allreduce(grads, group, stride),)


def _dp_exposed(zero: int, m: int, times: tuple[float, ...], roof: float) -> float:
    """Exposed gradient (and ZeRO-3 weight) traffic over the data x context parallel ranks, of a step of
    `m` micro-batches."""
    if zero == 3:
        gather, scatter, across = times
        return max(0.0, 2 * m * gather + scatter + across - roof)  # prefetching overlaps it with all compute
    backward_last = roof * (2.0 / 3.0) / m  # bucketed reduction overlaps the last backward pass
    if zero == 2:
        # ZeRO-2 reduce-scatters every micro-batch's gradients, each overlapped with its own backward pass.
        per_micro = max(0.0, times[0] - backward_last)
        return m * per_micro + times[0]
    return max(0.0, times[0] - backward_last)
