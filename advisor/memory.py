"""Provides the per-GPU memory model: every component after sharding, as a low-high range in GB."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.catalog.assumptions import Assumptions
from advisor.catalog.gpus import Gpu
from advisor.job import Job
from advisor.layout import Layout

GB = 1e9
COMPONENT_ORDER = ("weights", "gradients", "master_weights", "optimizer", "adapters", "activations", "kv_cache",
                   "overhead")


@dataclass(frozen=True, slots=True)
class Memory:
    """Per-GPU memory by component, each (low, high) in GB, against the usable capacity."""

    components: tuple[tuple[str, float, float], ...]
    capacity_gb: float
    usable_gb: float

    @property
    def low_gb(self) -> float:
        """Lower estimate of the total."""
        return sum(c[1] for c in self.components)

    @property
    def high_gb(self) -> float:
        """Upper estimate of the total: what must fit."""
        return sum(c[2] for c in self.components)

    @property
    def fits(self) -> bool:
        """Whether the upper estimate leaves the headroom free."""
        return self.high_gb <= self.usable_gb

    @property
    def dominant(self) -> str:
        """The largest component by its upper estimate."""
        return max(self.components, key=lambda c: c[2])[0]

    def as_dict(self) -> dict[str, float]:
        """Upper estimate per component, GB."""
        return {name: round(high, 3) for name, _, high in self.components}


def weight_bytes_per_param(precision: str, a: Assumptions, *, training: bool) -> float:
    """Bytes of one stored weight for a precision (training keeps fp32 or 16-bit working weights)."""
    if precision in ("fp32", "tf32"):
        return 4.0
    if training or precision in ("fp16", "bf16"):
        return 2.0
    return {"fp8": 1.0, "int8": a.precision.int8_bits.value / 8, "int4": a.precision.int4_bits.value / 8}[precision]


def _overhead(count: int, a: Assumptions) -> tuple[float, float]:
    nccl = a.memory.nccl_buffers_gb.value * GB if count > 1 else 0.0
    return a.memory.cuda_context_gb.value * GB + nccl, a.memory.runtime_other_high_gb.value * GB + nccl


class TrainingMemoryModel:
    """Training memory of one job on one GPU at one precision, with every per-layout constant precomputed.

    The search asks fixed_high() and per_sequence_high() thousands of times; components() gives the full
    breakdown of a chosen layout from the same constants.
    """

    def __init__(self, job: Job, gpu: Gpu, precision: str, a: Assumptions) -> None:
        self.job, self.gpu, self.a = job, gpu, a
        mixed = precision not in ("fp32", "tf32")
        w = weight_bytes_per_param(precision, a, training=True)
        opt = getattr(a.optimizer, job.optimizer).value
        master = a.optimizer.master_weights.value if mixed else 0.0
        self.werr, self.aerr = a.memory.weights_rel_error.value, a.memory.activations_rel_error.value
        self.peft = job.kind in ("lora", "qlora")
        self.base_bytes = a.precision.nf4_bits.value / 8 if job.kind == "qlora" else w
        self.grad_bytes = 0.0 if self.peft else w
        self.master_bytes = 0.0 if self.peft else master
        self.opt_bytes = 0.0 if self.peft else opt
        self.adapter_w, self.adapter_states = (w, master + opt) if self.peft else (0.0, 0.0)
        self.overhead = {1: _overhead(1, a), 2: _overhead(2, a)}
        act_scale = 1.0 if mixed else 2.0  # Korthikanti's coefficients count 16-bit activations
        self.per_seq_tp1: dict[str, float] = {}
        arch = job.arch
        for recompute in ("none", "selective", "full"):
            if arch is None:
                per_seq = job.activation_bytes_per_item * job.items_per_sequence
            else:
                s, h, c = job.seq_len or 1, arch.hidden, a.activations
                if recompute == "full":
                    per_layer = c.full_recompute_coeff.value * s * h
                    working = c.per_layer_coeff.value * s * h  # one layer's full set while it is recomputed
                else:
                    attention = 0.0 if (recompute == "selective" or gpu.features.flash_attention) else (
                        c.attention_coeff.value * arch.heads * s * s)
                    per_layer = c.per_layer_coeff.value * s * h + attention
                    working = 0.0
                # 1F1B pipelines keep p micro-batches of L/p layers on the first stage: L layers in all.
                logits = c.logits_bytes.value * s * arch.vocab
                per_seq = arch.layers * per_layer + working + logits
            self.per_seq_tp1[recompute] = per_seq * act_scale

    def _states(self, mp: int, dp: int, zero: int) -> tuple[float, float, float, float, float]:
        p = self.job.params / mp
        weights = p * self.base_bytes / (dp if zero == 3 else 1)
        grads = p * self.grad_bytes / (dp if zero >= 2 else 1)
        master = p * self.master_bytes / (dp if zero >= 1 else 1)
        opt = p * self.opt_bytes / (dp if zero >= 1 else 1)
        a = self.job.trainable_params / mp if self.peft else 0.0
        # Adapters shard like full training does: states from ZeRO-1, gradients from 2, weights from 3.
        adapters = a * (self.adapter_w / (dp if zero == 3 else 1) + self.adapter_w / (dp if zero >= 2 else 1)
                        + self.adapter_states / (dp if zero >= 1 else 1))
        return weights, grads, master, opt, adapters

    def fixed_high(self, mp: int, dp: int, zero: int, count: int) -> float:
        """Upper bytes of everything but activations."""
        weights, grads, master, opt, adapters = self._states(mp, dp, zero)
        return weights * (1 + self.werr) + grads + master + opt + adapters + self.overhead[min(count, 2)][1]

    def per_sequence_high(self, recompute: str, tp: int) -> float:
        """Upper activation bytes per sequence (or item) of micro-batch."""
        arch_tp = tp if self.job.arch is not None else 1  # tensor (and sequence) parallel splits activations
        return self.per_seq_tp1[recompute] / arch_tp * (1 + self.aerr)

    def per_sequence(self, recompute: str, tp: int) -> float:
        """Nominal activation bytes per sequence (or item)."""
        return self.per_seq_tp1[recompute] / (tp if self.job.arch is not None else 1)

    def components(self, layout: Layout, usable_gb: float) -> Memory:
        """The full breakdown of a layout, each component as (low, high)."""
        weights, grads, master, opt, adapters = self._states(layout.model_parallel, layout.dp, layout.zero)
        act = self.per_sequence(layout.recompute, layout.tp) * layout.micro_batch
        lo_o, hi_o = self.overhead[min(layout.count, 2)]
        comps = [("weights", weights * (1 - self.werr), weights * (1 + self.werr))]
        if self.peft:
            comps.append(("adapters", adapters, adapters))
        else:
            comps += [("gradients", grads, grads), ("optimizer", opt, opt)]
            if master:
                comps.append(("master_weights", master, master))
        comps += [("activations", act * (1 - self.aerr), act * (1 + self.aerr)), ("overhead", lo_o, hi_o)]
        return _to_gb(comps, self.gpu, usable_gb)


def training_memory(job: Job, gpu: Gpu, layout: Layout, a: Assumptions, usable_gb: float) -> Memory:
    """Per-GPU memory of a training layout at its micro-batch."""
    return TrainingMemoryModel(job, gpu, layout.precision, a).components(layout, usable_gb)


def _to_gb(comps: list[tuple[str, float, float]], gpu: Gpu, usable_gb: float) -> Memory:
    ordered = sorted(comps, key=lambda c: COMPONENT_ORDER.index(c[0]))
    return Memory(tuple((n, lo / GB, hi / GB) for n, lo, hi in ordered), gpu.memory_gb, usable_gb)


@dataclass(frozen=True, slots=True)
class InferenceTerms:
    """Serving memory: fixed bytes (weights, working set, overhead) and KV bytes per concurrent sequence."""

    fixed: tuple[tuple[str, float, float], ...]
    kv_per_seq_low: float
    kv_per_seq_high: float


def kv_bytes_per_value(precision: str) -> float:
    """KV cache element size: fp8 when serving in fp8, else 16-bit (int8/int4 quantise weights only)."""
    return 1.0 if precision == "fp8" else 2.0


def inference_terms(job: Job, gpu: Gpu, layout: Layout, a: Assumptions, context_tokens: int) -> InferenceTerms:
    """Per-GPU serving memory: weights over tp x pp, KV per sequence of `context_tokens`, prefill working set."""
    assert job.arch is not None
    arch, t, p = job.arch, layout.tp, layout.pp
    w = weight_bytes_per_param(layout.precision, a, training=False)
    werr = a.memory.weights_rel_error.value
    weights = job.params * w / (t * p)
    kv_heads_local = -(-arch.kv_heads // t)  # ceil: heads are replicated when tp exceeds the KV heads
    kv_per_token = 2.0 * arch.layers / p * kv_heads_local * arch.head_dim * kv_bytes_per_value(layout.precision)
    kv = kv_per_token * context_tokens
    # Prefill working set: one layer's activations for a prompt chunk (Korthikanti's per-layer term).
    chunk = min(job.prompt_tokens, 8192)
    working = a.activations.per_layer_coeff.value * chunk * arch.hidden / t
    low_o, high_o = _overhead(layout.count, a)
    fixed = (("weights", weights * (1 - werr), weights * (1 + werr)), ("activations", working, working),
             ("overhead", low_o, high_o))
    kv_err = 0.01  # vllm-memory-estimator: KV per token within 1%
    return InferenceTerms(fixed, kv * (1 - kv_err), kv * (1 + kv_err))


def inference_memory(job: Job, gpu: Gpu, layout: Layout, a: Assumptions, usable_gb: float,
                     context_tokens: int) -> Memory:
    """Per-GPU serving memory with `layout.micro_batch` concurrent sequences per replica."""
    terms = inference_terms(job, gpu, layout, a, context_tokens)
    b = layout.micro_batch
    comps = [*terms.fixed, ("kv_cache", terms.kv_per_seq_low * b, terms.kv_per_seq_high * b)]
    return _to_gb(comps, gpu, usable_gb)
