"""Provides the per-GPU memory model: every component after sharding, as a low-high range in GB."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.catalog.assumptions import Assumptions
from advisor.catalog.gpus import Gpu
from advisor.job.layout import Layout
from advisor.job.resolve import Arch, Job

GB = 1e9
COMPONENT_ORDER = (
    "weights",
    "gradients",
    "master_weights",
    "optimizer",
    "adapters",
    "activations",
    "kv_cache",
    "overhead",
)


@dataclass(frozen=True, slots=True)
class Memory:
    """Per-GPU memory by component, each (low, high) in GB, against the usable capacity."""

    components: tuple[tuple[str, float, float], ...]
    capacity_gb: float
    usable_gb: float
    host_gb: float = 0.0
    """What offloading or paged optimizers keep in host memory, per GPU."""

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
    return {"fp8": 1.0, "int8": a.precision.int8_bits.value / 8, "int4": a.precision.int4_bits.value / 8}[
        precision
    ]


def overhead_range(groups: int, a: Assumptions, *, training: bool = False) -> tuple[float, float]:
    """Runtime overhead in bytes, (low, high): CUDA context, allocator and workspaces, NCCL buffers per group.

    Serving engines' 'other' memory (AIConfigurator: CUDA graphs, workspaces, allocator caching) bounds the
    high end for inference. Training counts its allocator's fragmentation where it arises, in proportion to
    the activations (see TrainingMemoryModel), so its fixed overhead is the context and the NCCL buffers only.
    """
    m = a.memory
    nccl_lo, nccl_hi = m.nccl_buffers_gb.range
    low = m.cuda_context_gb.range[0] + groups * nccl_lo
    other = (
        m.cuda_context_gb.range[1]
        if training
        else max(m.runtime_other_high_gb.value, m.cuda_context_gb.range[1])
    )
    return low * GB, (other + groups * nccl_hi) * GB


def comm_groups(layout: Layout) -> int:
    """NCCL communicators a rank joins: one per parallel dimension larger than 1."""
    dims = (layout.dp * layout.cp, layout.tp, layout.pp, layout.cp, layout.ep)
    return sum(1 for d in dims if d > 1)


def _ffn_width(arch: Arch) -> float:
    """FFN units a token visits in one layer: the dense FFN, or each routed and shared expert it goes to."""
    return (
        arch.expert_ffn * (arch.experts_per_token + arch.shared_experts) if arch.is_moe else arch.ffn_hidden
    )


def _mlp_bytes_per_token(arch: Arch) -> float:
    """FFN activations per token per layer, 16-bit: input and mask (3h) plus 4 bytes per FFN unit (8 gated);
    Korthikanti's 19h for a 4h GeLU FFN."""
    return 3.0 * arch.hidden + (8.0 if arch.gated else 4.0) * _ffn_width(arch)


def _hf_layer_bytes(arch: Arch, mode: str, adapter_width: float, adapter_bytes: float) -> tuple[float, float]:
    """(bytes a Hugging Face decoder layer saves for backward, bytes of its checkpointed input), per token.

    Derived from the tensors autograd saves in transformers' LlamaDecoderLayer (RMSNorm, SDPA, gated MLP):
    - attention core, every mode: q and k after RoPE, v (SDPA saves them), the SDPA output (o_proj's input):
      2q + 4kv + 2q bytes;
    - 'mixed' (fp32 weights under bf16 autocast): the residual stream is fp32; each RMSNorm keeps its fp32
      input and fp32 normalised value (8h); autocast casts the norm's fp32 output to bf16 separately for each
      linear (q, k, v: 6h; gate, up: 4h); the MLP keeps gate, silu(gate), up and their product (8f);
    - 'pure' (bf16 weights): each RMSNorm keeps an fp32 copy (4h), the bf16 normalised value (2h) and its
      output, the linears' input (2h); the MLP 8f;
    - 'peft' (frozen 16-bit base): a frozen linear keeps no input and a frozen norm weight no normalised
      value, so each norm keeps only its fp32 copy (4h); the MLP keeps gate, silu(gate) and up (6f); every
      adapted layer's input is cast to the fp32 adapter dtype and kept by lora_A (adapter_bytes per input
      feature).
    Checked on the H200 rows: Llama-3.2-1B mixed 3.62 MB per token derived vs 3.63 measured (slope of peak
    allocated over 2k-16k tokens); Llama-3.1-8B LoRA 10.98 vs 10.99.
    """
    h, f = arch.hidden, _ffn_width(arch)
    q, kv = arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    core = 4.0 * q + 4.0 * kv
    if mode == "peft":
        return 8.0 * h + core + (6.0 if arch.gated else 2.0) * f + adapter_bytes * adapter_width, 2.0 * h
    mlp = (8.0 if arch.gated else 4.0) * f
    if mode == "mixed":
        casts = 6.0 * h + (4.0 if arch.gated else 2.0) * h
        return 16.0 * h + casts + core + mlp, 4.0 * h
    return 16.0 * h + core + mlp, 2.0 * h


def _loss_bytes_per_token(job: Job, a: Assumptions) -> tuple[tuple[float, float, float], bool]:
    """Peak bytes per token of the output layer and loss as (low, nominal, high), and whether TP splits it."""
    arch = job.arch
    assert arch is not None
    figure = a.loss.get(job.stack) or a.loss["pytorch"]
    lo, hi = figure.range
    width = (
        arch.hidden if "hidden" in figure.unit else arch.vocab
    )  # chunked: one chunk of about hidden values
    return (lo * width, figure.value * width, hi * width), "tensor-parallel" in figure.unit


# Stacks whose LoRA is Hugging Face PEFT (fp32 adapters fed an fp32 copy of each adapted layer's input).
PEFT_STACKS = ("hf", "deepspeed", "composer", "pytorch")
# torch.optim keeps these optimizers' states in the parameter's dtype (fp32 figures in assumptions.toml).
PARAM_DTYPE_STATES = ("adamw", "sgd", "lion")


def _adapter_input_width(arch: Arch, targets: str) -> float:
    """Input features summed over the adapted linear layers of one block (q, k, v each count their input)."""
    q_width = arch.heads * arch.head_dim
    attention = 3.0 * arch.hidden + q_width
    if targets == "attention":
        return attention
    return attention + 2.0 * arch.hidden + _ffn_width(arch)


def _optimizer_bytes(job: Job, a: Assumptions, mixed: bool, w: float) -> float:
    """Optimizer bytes per trainable parameter: fp32 states, or 16-bit ones without a master copy."""
    opt = a.optimizer.bytes_of(job.optimizer)
    if mixed and not job.master_weights and job.optimizer in PARAM_DTYPE_STATES:
        return opt * w / 4.0
    return opt


def _qlora_base_bytes(job: Job, a: Assumptions, w: float) -> float:
    """Bytes per base parameter under QLoRA: bitsandbytes quantises the blocks' linear layers to NF4, while
    the token embedding and the output layer (not quantised by PEFT/bitsandbytes) stay 16-bit."""
    nf4 = a.precision.nf4_bits.value / 8
    arch = job.arch
    if arch is None or job.params <= 0:
        return nf4
    embed = min(arch.vocab * arch.hidden * (1 if arch.tied_embeddings else 2), job.params)
    return (nf4 * (job.params - embed) + w * embed) / job.params


class TrainingMemoryModel:
    """Training memory of one job on one GPU at one precision, with every per-layout constant precomputed.

    The search asks fixed_high() and per_sequence_high() thousands of times; components() gives the full
    breakdown of a chosen layout from the same constants.
    """

    def __init__(self, job: Job, gpu: Gpu, precision: str, a: Assumptions) -> None:
        self.job, self.gpu, self.a = job, gpu, a
        mixed = precision not in ("fp32", "tf32")
        w = weight_bytes_per_param(precision, a, training=True)
        opt = _optimizer_bytes(job, a, mixed, w)
        master = a.optimizer.master_weights.value if mixed and job.master_weights else 0.0
        self.werr, self.aerr = a.memory.weights_rel_error.value, a.memory.activations_rel_error.value
        self.frag = a.memory.allocator_fragmentation
        self.peft = job.kind in ("lora", "qlora")
        self.base_bytes = _qlora_base_bytes(job, a, w) if job.kind == "qlora" else w
        self.grad_bytes = 0.0 if self.peft else w
        self.master_bytes = 0.0 if self.peft else master
        self.opt_bytes = 0.0 if self.peft else opt
        self.adapter_w, self.adapter_states = (w, master + opt) if self.peft else (0.0, 0.0)
        self.adapter_opt = opt if self.peft else 0.0
        self.paged = job.optimizer.startswith("paged")
        arch = job.arch
        self.expert = min(arch.expert_params, job.params) if arch is not None else 0.0
        self.dense = job.params - self.expert
        self.layers = arch.layers if arch is not None else 1
        self.act_scale = 1.0 if mixed else 2.0  # Korthikanti's coefficients count 16-bit activations
        # Hugging Face model code under autocast keeps an fp32 residual stream; 'pure' trains 16-bit weights.
        self.hf_mode = "peft" if self.peft else ("mixed" if mixed and job.master_weights else "pure")
        self.per_layer: dict[str, tuple[float, float]] = {}
        self._fixed: dict[tuple[object, ...], float] = {}
        self._per_seq: dict[tuple[object, ...], tuple[float, float, float]] = {}
        self.loss_range, self.loss_tp = (0.0, 0.0, 0.0), False
        if arch is not None:
            s = job.seq_len or 1
            per_token, self.loss_tp = _loss_bytes_per_token(job, a)
            self.loss_range = (per_token[0] * s, per_token[1] * s, per_token[2] * s)
            for recompute in ("none", "selective", "full"):
                self.per_layer[recompute] = self._layer_bytes(recompute, s)

    @property
    def loss_per_seq(self) -> float:
        """Nominal bytes per sequence of the output layer and loss at their peak."""
        return self.loss_range[1]

    def _full_layer(self, s: int) -> tuple[float, float]:
        """(one layer's saved activations, its checkpointed input), bytes per sequence at tp = cp = 1."""
        arch, c, job = self.job.arch, self.a.activations, self.job
        assert arch is not None
        h = arch.hidden
        if job.stack in PEFT_STACKS:  # Hugging Face model code: derived from its autograd graph
            width = _adapter_input_width(arch, job.lora_targets) if self.peft else 0.0
            layer, inputs = _hf_layer_bytes(
                arch, self.hf_mode, width, self.a.memory.peft_adapter_input_bytes.value
            )
            return layer * s, inputs * s
        # Korthikanti's 34h = 15h (attention and norms) + 19h (FFN); the FFN part follows the real FFN width.
        full_layer = (c.per_layer_coeff.value - 19.0) * h * s + _mlp_bytes_per_token(arch) * s
        return full_layer, c.full_recompute_coeff.value * s * h

    def _layer_bytes(self, recompute: str, s: int) -> tuple[float, float]:
        """(kept per layer, working set of the layer being recomputed), bytes per sequence at tp = cp = 1."""
        arch, c = self.job.arch, self.a.activations
        assert arch is not None
        full_layer, inputs = self._full_layer(s)
        if recompute == "full":
            return inputs, full_layer
        attention = (
            0.0
            if (recompute == "selective" or self.gpu.features.flash_attention)
            else (c.attention_coeff.value * arch.heads * s * s)
        )
        if recompute == "selective" and self.job.stack == "torchtitan":
            # torchtitan's selective checkpointing recomputes every second block whole.
            return (full_layer + inputs) / 2.0, full_layer
        return full_layer + attention, 0.0

    def _local_params(self, layout: Layout, stage: int) -> float:
        """Parameters (dense + expert) held per GPU for a term ZeRO shards from `stage` on."""
        mp = layout.tp * layout.pp
        dense, expert = self.dense / mp, self.expert / (mp * layout.ep)
        if layout.zero >= stage:
            dense /= layout.shard_ranks
            expert /= max(1, layout.shard_ranks // layout.ep)
        return dense + expert

    def _gathered(self, layout: Layout) -> float:
        """ZeRO-3/FSDP buffers: blocks of 16-bit parameters all-gathered at once, and one block's gradient."""
        if layout.zero < 3 or layout.shard_ranks <= 1 or (layout.pp > 1 and self.job.stack == "torchtitan"):
            return 0.0  # (torchtitan with pipelines keeps the whole stage unsharded: counted in the weights)
        local = self._local_params(layout.with_(sharding="none"), 3)
        arch = self.job.arch
        if arch is not None:
            # A block is one transformer layer: the embedding and output tables are FSDP units of their own,
            # so they are not spread over the layers (which would make a shallow model's blocks look huge).
            tables = arch.vocab * arch.hidden * (1 if arch.tied_embeddings else 2)
            share = max(self.job.params - tables, 0.0) / max(self.job.params, 1.0)
            block = local * share / max(arch.layers // layout.pp, 1)  # local holds one stage's layers
        else:
            block = local / max(self.layers // layout.pp, 1)
        grad = 0.0 if self.peft else block * 4.0  # the unsharded gradient, reduced in fp32
        return block * self.a.memory.fsdp_gathered_layers.value * self.base_bytes + grad

    def _sharded_weights(self, layout: Layout) -> float:
        """Weights on the GPU: torchtitan keeps a pipeline stage's FSDP parameters unsharded between
        passes."""
        if layout.zero >= 3 and layout.pp > 1 and self.job.stack == "torchtitan":
            return self._local_params(layout.with_(sharding="zero2"), 3) * self.base_bytes
        return self._local_params(layout, 3) * self.base_bytes

    def states(self, layout: Layout) -> dict[str, tuple[float, float]]:
        """Weights, gradients, master weights, optimizer and adapters: (GPU bytes, host bytes) each."""
        offload = self.job.offload
        weights = self._sharded_weights(layout)
        grads = self._local_params(layout, 2) * self.grad_bytes
        master = self._local_params(layout, 1) * self.master_bytes
        opt = self._local_params(layout, 1) * self.opt_bytes
        out = {
            "weights": (weights, 0.0),
            "gradients": (grads, 0.0),
            "master_weights": (master, 0.0),
            "optimizer": (opt, 0.0),
        }
        if self.peft:
            a = self.job.trainable_params / (layout.tp * layout.pp)
            shard = lambda stage: layout.shard_ranks if layout.zero >= stage else 1  # noqa: E731
            states = self.adapter_states - (self.adapter_opt if self.paged else 0.0)
            adapters = a * (self.adapter_w / shard(3) + self.adapter_w / shard(2) + states / shard(1))
            out["adapters"] = (adapters, a * self.adapter_opt / shard(1) if self.paged else 0.0)
        elif self.paged:
            out["optimizer"] = (0.0, opt)
        if offload in ("optimizer", "params"):
            out["master_weights"], out["optimizer"] = (0.0, master), (0.0, opt + out["optimizer"][1])
        if offload == "params":
            # ZeRO-Infinity keeps about two layers' gathered weights on the GPU; gradients go to the host too.
            kept = min(
                weights,
                2.0
                * self._local_params(layout.with_(sharding="none"), 3)
                * self.base_bytes
                / max(self.layers // layout.pp, 1),
            )
            out["weights"], out["gradients"] = (kept, weights - kept), (0.0, grads)
        return out

    def fixed_high(self, layout: Layout) -> float:
        """Upper bytes on the GPU of everything but activations (memoised: the search asks per count and
        batch)."""
        key = (layout.tp, layout.pp, layout.dp, layout.cp, layout.ep, layout.sharding, layout.shard_group)
        cached = self._fixed.get(key)
        if cached is None:
            cached = self._fixed[key] = self._fixed_high(layout)
        return cached

    def _fixed_high(self, layout: Layout) -> float:
        st = self.states(layout)
        total = sum(gpu for gpu, _ in st.values()) + st["weights"][0] * self.werr + self._gathered(layout)
        return total + overhead_range(comm_groups(layout), self.a, training=True)[1]

    def fixed_floor(self, count: int) -> float:
        """A lower bound on fixed_high() of every layout over `count` GPUs: each state sharded over all of
        them (no layout splits a parameter over more ranks than tp x pp x its shard ranks, at most the count),
        no ZeRO-3 gather buffers, the fewest communicators (one, past one GPU); offloaded states count
        zero."""
        offload, per = self.job.offload, self.job.params / count
        weights = 0.0 if offload == "params" else per * self.base_bytes
        grads = 0.0 if offload == "params" else per * self.grad_bytes
        on_host = offload in ("optimizer", "params")
        master = 0.0 if on_host else per * self.master_bytes
        opt = 0.0 if on_host or self.paged else per * self.opt_bytes
        adapters = 0.0
        if self.peft:
            states = self.adapter_states - (self.adapter_opt if self.paged else 0.0)
            adapters = self.job.trainable_params / count * (2.0 * self.adapter_w + states)
        least_groups = 1 if count > 1 else 0
        overhead = min(overhead_range(g, self.a, training=True)[1] for g in range(least_groups, 6))
        return weights * (1 + self.werr) + grads + master + opt + adapters + overhead

    def per_sequence(self, recompute: str, tp: int, cp: int = 1, pp: int = 1) -> float:
        """Nominal activation bytes per sequence (or item) of micro-batch on the busiest pipeline stage: what
        autograd holds at the peak, before the allocator's fragmentation."""
        return self._activation_range(recompute, tp, cp, pp)[1]

    def _activation_range(self, recompute: str, tp: int, cp: int, pp: int) -> tuple[float, float, float]:
        key = (recompute, tp, cp, pp)
        cached = self._per_seq.get(key)
        if cached is None:
            cached = self._per_seq[key] = self._per_sequence(recompute, tp, cp, pp)
        return cached

    def _per_sequence(self, recompute: str, tp: int, cp: int, pp: int) -> tuple[float, float, float]:
        """(low, nominal, high) activation bytes per sequence; high adds the model error and fragmentation."""
        job = self.job
        if job.arch is None:
            per = job.activation_bytes_per_item * job.items_per_sequence
            return per * (1 - self.aerr), per, per * (1 + self.aerr) * (1 + self.frag.range[1])
        kept, working = self.per_layer[recompute]
        if recompute == "full" and job.stack == "unsloth":
            kept = 0.0  # Unsloth's checkpointing moves every kept layer input to host memory
        split = (
            tp * cp
        )  # sequence parallelism with TP, and context parallelism, split every token's activations
        first = self.layers * kept * self.act_scale / split
        working = working * self.act_scale / split
        out = []
        for loss_seq in self.loss_range:
            loss = loss_seq / (tp if self.loss_tp else 1) / cp
            # Backward frees the logits and loss before it recomputes the last block, so with recomputation
            # the working set and the loss are never held together.
            tail = loss + working if recompute == "none" else max(loss, working)
            # 1F1B keeps p micro-batches of L/p layers on the first stage (L layers in all); the last adds
            # the loss.
            out.append(max(first + working, first / pp + tail) if pp > 1 else first + tail)
        lo, nominal, hi = out
        return lo * (1 - self.aerr), nominal, hi * (1 + self.aerr) * (1 + self.frag.range[1])

    def per_sequence_high(self, recompute: str, tp: int, cp: int = 1, pp: int = 1) -> float:
        """Upper activation bytes per sequence (or item) of micro-batch, the allocator's fragmentation
        included."""
        return self._activation_range(recompute, tp, cp, pp)[2]

    def nominal_bytes(self, layout: Layout) -> float:
        """The point estimate of the peak on the GPU: nominal states, context and NCCL, nominal activations
        with the middle of the fragmentation range (what the longest trainable sequence is read from)."""
        st = self.states(layout)
        fixed = sum(gpu for gpu, _ in st.values()) + self._gathered(layout)
        lo_o, hi_o = overhead_range(comm_groups(layout), self.a, training=True)
        act = self.per_sequence(layout.recompute, layout.tp, layout.cp, layout.pp) * layout.micro_batch
        return fixed + (lo_o + hi_o) / 2 + act * (1 + self.frag.value)

    def components(self, layout: Layout, usable_gb: float) -> Memory:
        """The full breakdown of a layout, each component as (low, high), and what sits in host memory."""
        st = self.states(layout)
        act_lo, _, act_hi = self._activation_range(layout.recompute, layout.tp, layout.cp, layout.pp)
        lo_o, hi_o = overhead_range(comm_groups(layout), self.a, training=True)
        weights, gathered = st["weights"][0], self._gathered(layout)
        comps = [("weights", weights * (1 - self.werr) + gathered, weights * (1 + self.werr) + gathered)]
        names = ("adapters",) if self.peft else ("gradients", "optimizer", "master_weights")
        comps += [(n, st[n][0], st[n][0]) for n in names if st[n][0] or n != "master_weights"]
        comps += [
            ("activations", act_lo * layout.micro_batch, act_hi * layout.micro_batch),
            ("overhead", lo_o, hi_o),
        ]
        host = sum(h for _, h in st.values())
        return _to_gb(comps, self.gpu, usable_gb, host)


def training_memory(job: Job, gpu: Gpu, layout: Layout, a: Assumptions, usable_gb: float) -> Memory:
    """Per-GPU memory of a training layout at its micro-batch."""
    return TrainingMemoryModel(job, gpu, layout.precision, a).components(layout, usable_gb)


def _to_gb(comps: list[tuple[str, float, float]], gpu: Gpu, usable_gb: float, host: float = 0.0) -> Memory:
    ordered = sorted(comps, key=lambda c: COMPONENT_ORDER.index(c[0]))
    return Memory(tuple((n, lo / GB, hi / GB) for n, lo, hi in ordered), gpu.memory_gb, usable_gb, host / GB)


@dataclass(frozen=True, slots=True)
class InferenceTerms:
    """Serving memory: fixed bytes (weights, working set, overhead) and KV bytes per concurrent sequence."""

    fixed: tuple[tuple[str, float, float], ...]
    kv_per_seq_low: float
    kv_per_seq_high: float


def kv_bytes_per_value(precision: str) -> float:
    """KV cache element size: fp8 when serving in fp8, else 16-bit (int8/int4 quantise weights only)."""
    return 1.0 if precision == "fp8" else 2.0


def inference_terms(
    job: Job, gpu: Gpu, layout: Layout, a: Assumptions, context_tokens: int
) -> InferenceTerms:
    """Per-GPU serving memory: weights over tp x pp, KV per sequence of `context_tokens`, prefill working
    set."""
    assert job.arch is not None
    arch, t, p = job.arch, layout.tp, layout.pp
    w = weight_bytes_per_param(layout.precision, a, training=False)
    werr = a.memory.weights_rel_error.value
    weights = job.params * w / (t * p)
    kv_per_token = arch.layers / p * arch.kv_values_per_token_layer(t) * kv_bytes_per_value(layout.precision)
    kv = kv_per_token * context_tokens
    # Prefill working set: one layer's activations for a prompt chunk (Korthikanti's per-layer term).
    chunk = min(job.prompt_tokens, 8192)
    working = a.activations.per_layer_coeff.value * chunk * arch.hidden / t
    low_o, high_o = overhead_range(int(t > 1) + int(p > 1), a)
    fixed = (
        ("weights", weights * (1 - werr), weights * (1 + werr)),
        ("activations", working, working),
        ("overhead", low_o, high_o),
    )
    kv_err = 0.01  # vllm-memory-estimator: KV per token within 1%
    return InferenceTerms(fixed, kv * (1 - kv_err), kv * (1 + kv_err))


def inference_memory(
    job: Job, gpu: Gpu, layout: Layout, a: Assumptions, usable_gb: float, context_tokens: int
) -> Memory:
    """Per-GPU serving memory with `layout.micro_batch` concurrent sequences per replica."""
    terms = inference_terms(job, gpu, layout, a, context_tokens)
    b = layout.micro_batch
    comps = [*terms.fixed, ("kv_cache", terms.kv_per_seq_low * b, terms.kv_per_seq_high * b)]
    return _to_gb(comps, gpu, usable_gb)
