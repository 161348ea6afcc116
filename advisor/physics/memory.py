"""Provides the per-GPU memory model: every component after sharding as a central estimate in GB, the usable
memory of a card, and the verdict against it with the measured error band."""

from __future__ import annotations

from dataclasses import dataclass, replace

from advisor.catalog.assumptions import Assumptions, StackMemory, optimizer_bytes
from advisor.catalog.gpus import Gpu
from advisor.job.layout import Layout
from advisor.job.resolve import Arch, Job
from advisor.physics.recompute_modules import freed_bytes_per_token

GB = 1e9
GIB = 1024**3 / GB
COMPONENT_ORDER = (
    "weights",
    "gradients",
    "master_weights",
    "optimizer",
    "adapters",
    "activations",
    "allocator",
    "kv_cache",
    "overhead",
)

_COMPONENT_RANK = {name: i for i, name in enumerate(COMPONENT_ORDER)}  # COMPONENT_ORDER.index, as a lookup


def capacity_gb(gpu: Gpu, a: Assumptions) -> float:
    """The card's device memory in GB (1e9 bytes): the catalogue's figure in its unit (NVIDIA's and AMD's
    '80 GB' is 80 GiB), less the sixteenth a GDDR card's ECC takes when it is on."""
    size = gpu.memory_gb * (GIB if gpu.memory_unit == "GiB" else 1.0)
    return size * (1.0 - a.memory["gddr_ecc_fraction"].value) if gpu.memory_ecc else size


def usable_gb(gpu: Gpu, a: Assumptions, headroom: float = 0.0) -> float:
    """What a job may allocate on the card, GB: what CUDA hands out (the capacity less the driver's own
    reservation), less the fraction the user keeps free. The CUDA context, NCCL buffers and the allocator's
    reserve are components of the estimate, not of this."""
    return capacity_gb(gpu, a) * (1.0 - a.memory["driver_reserved"].value) * (1.0 - headroom)


@dataclass(frozen=True, slots=True, repr=False)
class Memory:
    """Per-GPU memory by component (central estimates, GB) against the usable memory, with the relative
    error band (P10, P90) of the central estimate measured on published runs."""

    components: tuple[tuple[str, float], ...]
    capacity_gb: float
    usable_gb: float
    band: tuple[float, float] = (0.0, 0.0)
    """(P25, P75) relative error: 'may not fit' when the usable memory falls inside it."""
    spread: tuple[float, float] = (0.0, 0.0)
    """(P10, P90) relative error: the range shown."""
    host_gb: float = 0.0
    """What offloading or paged optimizers keep in host memory, per GPU."""

    @property
    def central_gb(self) -> float:
        """The central estimate of the peak: what the verdict is decided on."""
        return sum(c[1] for c in self.components)

    @property
    def low_gb(self) -> float:
        """The P10 end of the range (the central estimate times the error measured on published runs)."""
        return self.central_gb * (1.0 + self.spread[0])

    @property
    def high_gb(self) -> float:
        """The P90 end of the range."""
        return self.central_gb * (1.0 + self.spread[1])

    @property
    def fits(self) -> bool:
        """Whether the central estimate fits the usable memory."""
        return self.central_gb <= self.usable_gb

    @property
    def near_limit(self) -> bool:
        """Whether the usable memory lies within the central estimate's interquartile error: the chance of
        running out is then between a quarter and three quarters."""
        return (
            self.central_gb * (1.0 + self.band[0]) <= self.usable_gb < self.central_gb * (1.0 + self.band[1])
        )

    @property
    def verdict(self) -> str:
        """'fits' or 'does not fit' on the central estimate; within the interquartile band around the usable
        memory, 'fits, near the limit' or 'may not fit' by the side the central estimate falls on."""
        if self.near_limit:
            return "fits, near the limit" if self.fits else "may not fit"
        return "fits" if self.fits else "does not fit"

    @property
    def dominant(self) -> str:
        """The largest component."""
        return max(self.components, key=lambda c: c[1])[0]

    def as_dict(self) -> dict[str, float]:
        """Central estimate per component, GB."""
        return {name: round(gb, 3) for name, gb in self.components}


def weight_bytes_per_param(precision: str, a: Assumptions, *, training: bool) -> float:
    """Bytes of one stored weight for a precision (training keeps fp32 or 16-bit working weights)."""
    if precision in ("fp32", "tf32"):
        return 4.0
    if training or precision in ("fp16", "bf16"):
        return 2.0
    return {
        "fp8": 1.0,
        "int8": a.precision["int8_bits"].value / 8,
        "int4": a.precision["int4_bits"].value / 8,
    }[precision]


def overhead_range(groups: int, a: Assumptions, *, training: bool = False) -> tuple[float, float]:
    """Runtime overhead in bytes, (low, high): CUDA context, allocator and workspaces, NCCL buffers per group.

    Serving engines' 'other' memory (AIConfigurator: CUDA graphs, workspaces, allocator caching) bounds the
    high end for inference. Training counts its allocator's reserve apart, in proportion to the activations
    (see TrainingMemoryModel), so its fixed overhead is the context and the NCCL buffers only.
    """
    m = a.memory
    nccl_lo, nccl_hi = m["nccl_buffers_gb"].range
    low = m["cuda_context_gb"].range[0] + groups * nccl_lo
    other = (
        m["cuda_context_gb"].range[1]
        if training
        else max(m["runtime_other_high_gb"].value, m["cuda_context_gb"].range[1])
    )
    return low * GB, (other + groups * nccl_hi) * GB


def overhead_central(groups: int, a: Assumptions) -> float:
    """Training's fixed overhead in bytes, central: the CUDA context and one NCCL buffer set per group."""
    m = a.memory
    return (m["cuda_context_gb"].value + groups * m["nccl_buffers_gb"].value) * GB


def comm_groups(layout: Layout) -> int:
    """NCCL communicators a rank joins: one per parallel dimension larger than 1."""
    dims = (layout.dp * layout.cp, layout.tp, layout.pp, layout.cp, layout.ep)
    return sum(1 for d in dims if d > 1)


def stack_traits(job: Job, a: Assumptions) -> StackMemory:
    """What the job's training stack keeps in memory (a stack without an entry trains as plain PyTorch)."""
    return a.stack.get(job.stack) or a.stack["pytorch"]


def _loss_per_token(figure_key: str, job: Job, a: Assumptions) -> float:
    """Low-end bytes per token of one [loss.*] figure at the job's shape (no tensor-parallel split)."""
    arch = job.arch
    assert arch is not None
    figure = a.loss[figure_key]
    return figure.range[0] * (arch.hidden if "hidden" in figure.unit else arch.vocab)


def floor_traits(traits: StackMemory, job: Job, a: Assumptions) -> StackMemory:
    """What the leanest runtime the catalogue sources keeps, for a job whose stack was not stated
    (Job.memory_floor): the fused block as Megatron-Core saves it (korthikanti-2022, megatron-swiglu), the
    [loss.*] figure least per token at this shape (a chunked loss: liger-flce), 16-bit gradients beside 16-bit
    weights (no fp32 main-gradient buffer) that one rank frees after each step (torch-zero-grad), and no
    DeepSpeed engine cast (its BF16_Optimizer is taken per layout where it holds less: states()); states,
    master weights, optimizer and offload stay as stated. The allocator's reserve is taken at its low end
    (TrainingMemoryModel._init_traits): a runtime allocating once holds none."""
    loss = min(sorted(a.loss), key=lambda k: _loss_per_token(k, job, a))
    return replace(
        traits,
        model_code="fused",
        loss=loss,
        fp32_main_grads=False,
        grads_freed_each_step=True,
        deepspeed_engine=False,
    )


def default_recompute(traits: StackMemory, kind: str) -> str:
    """What a stack recomputes when the user does not say: its recipes' setting; a QLoRA model prepared by
    PEFT (prepare_model_for_kbit_training) checkpoints every layer unless told not to (peft-kbit)."""
    if kind == "qlora" and traits.peft_fp32_adapters:
        return "full"
    return traits.recompute


def _ffn_width(arch: Arch) -> float:
    """FFN units a token visits in one layer: the dense FFN, or each routed and shared expert it goes to."""
    return (
        arch.expert_ffn * (arch.experts_per_token + arch.shared_experts) if arch.is_moe else arch.ffn_hidden
    )


def _moe_dispatch_bytes(arch: Arch, a: Assumptions) -> float:
    """Token-dispatch bytes per token per layer of a MoE: each routed copy's input and its expert's output."""
    if not arch.is_moe:
        return 0.0
    return a.activations["moe_dispatch_bytes"].value * arch.experts_per_token * arch.hidden


def _mlp_bytes_per_token(arch: Arch, fused_swiglu: bool = False) -> float:
    """FFN activations per token per layer, 16-bit: input and mask (3h) plus 4 bytes per FFN unit: the
    GeLU's input and output (Korthikanti's 19h for a 4h FFN). A gated FFN keeps 8 in eager code (gate,
    silu(gate), up, their product) and 6 with Megatron's fused SwiGLU, which saves only its 2f-wide input
    (megatron-swiglu)."""
    gated = 6.0 if fused_swiglu else 8.0
    return 3.0 * arch.hidden + (gated if arch.gated else 4.0) * _ffn_width(arch)


def _te_fp8_saved_savings(arch: Arch) -> float:
    """Bytes per token per layer that Transformer Engine's FP8 linears save below the 16-bit count: each keeps
    its input for the weight-gradient GEMM as the FP8 cast it multiplied (1 byte, not 2) when the weight
    trains (NVIDIA/TransformerEngine@0004dbd0231c: transformer_engine/pytorch/module/linear.py,
    _Linear.forward saves `inputmat` after cast_to_fp8; LayerNormLinear its FP8 ln_out alike): the QKV input
    (h), the output projection's (q), the first FFN GEMM's (h) and the second's (the FFN width)."""
    return 2.0 * arch.hidden + arch.heads * arch.head_dim + _ffn_width(arch)


def _te_frozen_savings(arch: Arch, targets: str) -> float:
    """Bytes per token per layer a frozen base saves in Transformer Engine's linears (LoRA on Megatron-Core):
    `_Linear.forward` keeps its input for the weight gradient only `if weight.requires_grad`
    (NVIDIA/TransformerEngine@0004dbd0231c: transformer_engine/pytorch/module/linear.py), so a frozen linear
    keeps none. An adapted linear's input is still kept, by the adapter's own first GEMM (16-bit), so with
    adapters on the attention projections only the FFN's two inputs go: the first GEMM's (2h) and the
    second's (2 bytes per FFN unit); with adapters everywhere nothing goes."""
    if targets != "attention":
        return 0.0
    return 2.0 * arch.hidden + 2.0 * _ffn_width(arch)


def _fused_attention_bytes_per_token(arch: Arch) -> float:
    """Attention-side activations per token per layer of a fused block, 16-bit (Korthikanti's 15h = 11h + 4h,
    term by term with the real widths): the two norms' inputs (4h), the QKV input (2h), Q and K (2q + 2kv),
    V (2kv), the output projection's input (2q) and the dropout mask (h). Grouped-query attention keeps
    narrower K and V; the s x s terms are counted apart (none with FlashAttention)."""
    h = arch.hidden
    q, kv = arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    return 7.0 * h + 4.0 * q + 4.0 * kv


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
      adapted layer's input is kept by lora_A in the adapter's dtype (adapter_bytes per input feature).
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


def _loss_bytes_per_token(
    job: Job, a: Assumptions, traits: StackMemory
) -> tuple[tuple[float, float, float], bool]:
    """Peak bytes per token of the output layer and loss as (low, nominal, high), and whether TP splits it."""
    arch = job.arch
    assert arch is not None
    # A stated fused linear cross-entropy replaces the stack's loss path (liger-fused-linear-ce).
    stated = a.loss.get(job.fused_loss) if job.fused_loss != "off" else None
    figure = stated or a.loss.get(traits.loss) or a.loss["pytorch"]
    lo, hi = figure.range
    width = (
        arch.hidden if "hidden" in figure.unit else arch.vocab
    )  # chunked: one chunk of about hidden values
    return (lo * width, figure.value * width, hi * width), "tensor-parallel" in figure.unit


def _op_sac_bytes(arch: Arch) -> float:
    """Bytes per token a block keeps under torchtitan's op-level selective checkpointing (16-bit): its input,
    the attention kernel's output and every other matmul output in forward order (wq, wv, w1, w2 of a gated
    block; w1 of a plain one).

    A mixture of experts keeps less (torchtitan-moe-sac): its router's gate is force-recomputed and not
    counted (`force_recompute_mm_shapes_by_fqns` = ['moe.router.gate']), and the routed experts run
    `torch._grouped_mm`, which is not among the ops saved (PyTorch's compute-intensive ops: mm, bmm, addmm,
    the attention kernels, _scaled_mm), so their outputs are recomputed; the top-k scores (fp32) and indices
    (int64) are saved; shared experts are counted on like a dense FFN (w1, w2)."""
    h = arch.hidden
    q, kv = arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    if arch.is_moe:
        shared = arch.expert_ffn * arch.shared_experts
        ffn_mm = shared + h if shared else 0.0
        topk = 12.0 * arch.experts_per_token
    else:
        f = arch.ffn_hidden
        ffn_mm, topk = (f + h if arch.gated else f), 0.0
    return 2.0 * (h + q + q + kv + ffn_mm) + topk


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
    opt = optimizer_bytes(a.optimizer, job.optimizer)
    if mixed and not job.master_weights and job.optimizer in PARAM_DTYPE_STATES:
        return opt * w / 4.0
    return opt


def _qlora_base_bytes(job: Job, a: Assumptions, table_bytes: float) -> float:
    """Bytes per base parameter under QLoRA: bitsandbytes quantises the blocks' linear layers to NF4, while
    the token embedding and the output layer are not quantised: 16-bit, or fp32 where PEFT's
    prepare_model_for_kbit_training casts every parameter that is not 4-bit to fp32 (peft-kbit)."""
    nf4 = a.precision["nf4_bits"].value / 8
    arch = job.arch
    if arch is None or job.params <= 0:
        return nf4
    embed = min(arch.vocab * arch.hidden * (1 if arch.tied_embeddings else 2), job.params)
    return (nf4 * (job.params - embed) + table_bytes * embed) / job.params


def _state_bytes(
    job: Job, a: Assumptions, traits: StackMemory, precision: str
) -> tuple[float, float, float, float]:
    """(gradient, master, optimizer, working weight) bytes per trainable parameter of full training.

    Megatron keeps fp32 main gradients beside bf16 weights (18 bytes per parameter with AdamW, 6 + 12/d with
    the distributed optimizer); with fp16 weights its gradients stay fp16 and the optimizer holds an fp32
    copy of them (20 bytes, 4 + 16/d)."""
    mixed = precision not in ("fp32", "tf32")
    w = weight_bytes_per_param(precision, a, training=True)
    opt = _optimizer_bytes(job, a, mixed, w)
    master = a.optimizer["master_weights"].value if mixed and job.master_weights else 0.0
    grad = w
    if traits.fp32_main_grads and mixed:
        if precision == "fp16":
            opt += 4.0  # the optimizer's fp32 copy of the fp16 gradients
        else:
            grad = 4.0
    return grad, master, opt, w


class TrainingMemoryModel:
    """Training memory of one job on one GPU at one precision, with every per-layout constant precomputed.

    The search asks fixed_bytes() and per_sequence_bytes() thousands of times; components() gives the full
    breakdown of a chosen layout from the same constants. Every figure is the central estimate: the verdict
    is decided on it, and Memory.band says how far published runs fell from it.
    """

    def __init__(
        self, job: Job, gpu: Gpu, precision: str, a: Assumptions, traits: StackMemory | None = None
    ) -> None:
        """`traits` replaces the stack's defaults (what a validation source states it changed)."""
        self.job, self.gpu, self.a = job, gpu, a
        self._init_traits(traits)
        mixed = precision not in ("fp32", "tf32")
        self.peft = job.kind in ("lora", "qlora")
        self._init_states(precision)
        self.paged = job.optimizer.startswith("paged")
        # DeepSpeed at ZeRO stage 0 in bf16 wraps the optimizer in BF16_Optimizer (deepspeed-engine-16bit).
        bf16_possible = precision == "bf16" and not self.peft and job.master_weights and job.offload == "none"
        self.bf16_optimizer = self.traits.deepspeed_engine and bf16_possible
        # The floor takes DeepSpeed's BF16_Optimizer where it holds less (its 1/dp partition of the master
        # weights and states against its full fp32 gradient buffer): a runtime the catalogue sources.
        self.floor_bf16_optimizer = self.floor and bf16_possible
        arch = job.arch
        self.expert = min(arch.expert_params, job.params) if arch is not None else 0.0
        self.dense = job.params - self.expert
        self.layers = arch.layers if arch is not None else 1
        self.act_scale = 1.0 if mixed else 2.0  # Korthikanti's coefficients count 16-bit activations
        # Megatron-Core's block term by term (the floor counts it for any stack, as the leanest sourced)
        self.megatron_block = job.stack == "megatron" or self.floor
        self.te_fp8 = precision == "fp8" and self.megatron_block  # Transformer Engine's FP8 GEMMs
        # Hugging Face model code under autocast keeps an fp32 residual stream; 'pure' trains 16-bit weights,
        # as DeepSpeed's engine does whatever its master copy: it casts the module to the 16-bit dtype
        # (deepspeed-engine-16bit: _configure_distributed_model's self.module.bfloat16() / .half()).
        fp32_module = mixed and job.master_weights and not self.traits.deepspeed_engine
        self.hf_mode = "peft" if self.peft else ("mixed" if fp32_module else "pure")
        self.per_layer: dict[str, tuple[float, float]] = {}
        self._fixed: dict[tuple[object, ...], float] = {}
        self._locals: dict[tuple[int, ...], tuple[float, float]] = {}
        self._per_seq: dict[tuple[object, ...], float] = {}
        self._per_seq_bytes: dict[tuple[object, ...], float] = {}
        self._overheads: dict[int, float] = {}
        self.loss_seq, self.loss_tp = 0.0, False
        if arch is not None:
            self._init_activations()

    def _init_traits(self, traits: StackMemory | None) -> None:
        """The stack's traits (or a validation source's), or the floor's for a Job.memory_floor job, and the
        allocator's reserve: its measured median, its low end at the floor."""
        job, a = self.job, self.a
        self.floor = traits is None and job.memory_floor and job.arch is not None
        self.traits = traits or stack_traits(job, a)
        if self.floor:
            self.traits = floor_traits(self.traits, job, a)
        frag = a.memory["allocator_fragmentation"]
        self.frag = frag.range[0] if self.floor else frag.value

    def _init_states(self, precision: str) -> None:
        """Bytes per parameter of the weights, gradients, master copy and optimizer, and of the adapters'."""
        job, a = self.job, self.a
        grad, master, opt, w = _state_bytes(job, a, self.traits, precision)
        table = 4.0 if self.traits.kbit_fp32_tables else w
        self.base_bytes = _qlora_base_bytes(job, a, table) if job.kind == "qlora" else w
        if job.kind == "lora" and precision == "fp8" and job.stack == "megatron":
            # A frozen base multiplied in FP8 by Transformer Engine is held as FP8 (fp8_model_init: the
            # module's primary weights are Float8Tensors, `primary_weights_in_fp8` in _Linear.forward,
            # NVIDIA/TransformerEngine@0004dbd0231c: transformer_engine/pytorch/module/linear.py): no
            # optimizer steps it, so no higher-precision copy is needed.
            self.base_bytes = 1.0
        self.grad_bytes = 0.0 if self.peft else grad
        # Stepping the optimizer inside backward frees each gradient as it is applied: about one parameter's
        # gradient (the largest, the vocabulary table) is held at a time.
        self.grad_in_backward = not self.peft and self.traits.optimizer_in_backward
        self.master_bytes = 0.0 if self.peft else master
        self.opt_bytes = 0.0 if self.peft else opt
        adapter_w = 4.0 if self.traits.peft_fp32_adapters else w  # PEFT upcasts adapters to fp32
        # fp32 adapters are their own master copy: weights and gradients 4 bytes, no separate copy.
        adapter_master = 0.0 if self.traits.peft_fp32_adapters else master
        self.adapter_w, self.adapter_states = (adapter_w, adapter_master + opt) if self.peft else (0.0, 0.0)
        self.adapter_opt = opt if self.peft else 0.0

    def _init_activations(self) -> None:
        """The loss's bytes per sequence and each recomputation mode's bytes per layer (a layered model)."""
        job = self.job
        s = job.seq_len or 1
        per_token, self.loss_tp = _loss_bytes_per_token(job, self.a, self.traits)
        # The catalogue's encoders are fine-tuning workloads (BERT on SQuAD: two logits per token, no
        # vocabulary-sized output), so only decoders pay the language-model loss.
        self.loss_seq = per_token[1] * s if job.model_kind != "encoder" else 0.0
        for recompute in ("none", "selective", "full"):
            self.per_layer[recompute] = self._layer_bytes(recompute, s)

    @property
    def loss_per_seq(self) -> float:
        """Nominal bytes per sequence of the output layer and loss at their peak."""
        return self.loss_seq

    def _full_layer(self, s: int) -> tuple[float, float]:
        """(one layer's saved activations, its checkpointed input), bytes per sequence at tp = cp = 1."""
        arch, c, a = self.job.arch, self.a.activations, self.a
        assert arch is not None
        h = arch.hidden
        moe = _moe_dispatch_bytes(arch, a) * s
        if self.traits.model_code != "fused":  # eager PyTorch modules: derived from their autograd graph
            width = _adapter_input_width(arch, self.job.lora_targets) if self.peft else 0.0
            per_input = a.memory["peft_adapter_input_bytes"].value if self.traits.peft_fp32_adapters else 2.0
            layer, inputs = _hf_layer_bytes(arch, self.hf_mode, width, per_input)
            return layer * s + moe, inputs * s
        if self.megatron_block:
            # Megatron-Core's block, term by term (Korthikanti's 15h + 19h at the block's real widths):
            # grouped-query K and V, and the fused SwiGLU's saved input only.
            per_token = _fused_attention_bytes_per_token(arch) + _mlp_bytes_per_token(arch, fused_swiglu=True)
            if self.peft:  # frozen FP8 linears keep nothing; the adapters keep their inputs in 16 bits
                per_token -= _te_frozen_savings(arch, self.job.lora_targets)
            elif self.te_fp8:
                per_token -= _te_fp8_saved_savings(arch)
        else:
            # Korthikanti's 34h = 15h (attention and norms) + 19h (FFN); the FFN part follows the real
            # FFN width (torchtitan's and Unsloth's published peaks fit it better than the term-by-term
            # widths).
            per_token = (c["per_layer_coeff"].value - 19.0) * h + _mlp_bytes_per_token(arch)
        return per_token * s + moe, c["full_recompute_coeff"].value * s * h

    def _layer_bytes(self, recompute: str, s: int) -> tuple[float, float]:
        """(kept per layer, working set of the layer being recomputed), bytes per sequence at tp = cp = 1."""
        arch, c = self.job.arch, self.a.activations
        assert arch is not None
        full_layer, inputs = self._full_layer(s)
        if recompute == "full":
            return inputs, full_layer
        modules = self.job.config.recompute_modules if recompute == "selective" else None
        attention = (
            0.0
            if ((recompute == "selective" and not modules) or self.gpu.features.flash_attention)
            else (c["attention_coeff"].value * arch.heads * s * s)
        )
        if modules:  # Megatron-Core's recompute modules (stack megatron only: config_check)
            if "core_attn" in modules:
                attention = 0.0
            freed, working = freed_bytes_per_token(
                arch, modules, _moe_dispatch_bytes(arch, self.a), self.te_fp8
            )
            return max(full_layer - freed * s, inputs) + attention, working * s
        if recompute == "selective" and self.job.stack == "torchtitan":
            return _op_sac_bytes(arch) * s, full_layer
        return full_layer + attention, 0.0

    def _local_params(self, layout: Layout, stage: int) -> float:
        """Parameters (dense + expert) held per GPU for a term ZeRO shards from `stage` on."""
        whole, sharded = self._local_pair(layout)
        return sharded if layout.zero >= stage else whole

    def _local_pair(self, layout: Layout) -> tuple[float, float]:
        """Parameters (dense + expert) held per GPU unsharded, and sharded over the ZeRO ranks (memoised:
        every state term of every layout asks)."""
        shard = layout.shard_ranks
        etp = layout.expert_tp
        key = (layout.tp, layout.pp, layout.ep, shard, etp)
        pair = self._locals.get(key)
        if pair is None:
            mp = layout.tp * layout.pp
            dense, expert = self.dense / mp, self.expert / (etp * layout.pp * layout.ep)
            # The experts' ZeRO ranks: the expert-data-parallel ones (shard / ep unfolded; folded over the
            # tensor-parallel ranks, tp / expert TP times more).
            expert_shard = max(1, shard * layout.tp // (etp * layout.ep))
            pair = self._locals[key] = (dense + expert, dense / shard + expert / expert_shard)
        return pair

    def _gathered(self, layout: Layout) -> float:
        """ZeRO-3/FSDP buffers: blocks of 16-bit parameters all-gathered at once, and one block's gradient."""
        if layout.zero < 3 or layout.shard_ranks <= 1 or (layout.pp > 1 and self.job.stack == "torchtitan"):
            return 0.0  # (torchtitan with pipelines keeps the whole stage unsharded: counted in the weights)
        local = self._local_pair(layout)[0]  # unsharded
        if self.job.stack == "litgpt":
            # LitGPT (2023) builds the whole model on every GPU before FSDP wraps it and loads the full
            # checkpoint into it: its peaks hold the unsharded 16-bit model beside the shard (litgpt-lora).
            return local * self.base_bytes
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
        return block * self.a.memory["fsdp_gathered_layers"].value * self.base_bytes + grad

    def _sharded_weights(self, layout: Layout) -> float:
        """Weights on the GPU: torchtitan keeps a pipeline stage's FSDP parameters unsharded between
        passes."""
        if layout.zero >= 3 and layout.pp > 1 and self.job.stack == "torchtitan":
            return self._local_pair(layout)[0] * self.base_bytes  # as ZeRO-2: weights unsharded
        return self._local_params(layout, 3) * self.base_bytes

    def _adapters(self, layout: Layout) -> tuple[float, float]:
        """LoRA adapters' weights, gradients and optimizer states: (GPU bytes, host bytes)."""
        a = self.job.trainable_params / (layout.tp * layout.pp)
        shard = lambda stage: layout.shard_ranks if layout.zero >= stage else 1  # noqa: E731
        states = self.adapter_states - (self.adapter_opt if self.paged else 0.0)
        gpu = a * (self.adapter_w / shard(3) + self.adapter_w / shard(2) + states / shard(1))
        return gpu, (a * self.adapter_opt / shard(1) if self.paged else 0.0)

    def _offloaded(self, out: dict[str, tuple[float, float]], layout: Layout) -> None:
        """Move what offloading puts in host memory: ZeRO-Offload the master weights, optimizer states and
        gradients (only a reduce bucket of 16-bit gradients stays on the GPU); ZeRO-Infinity the weights."""
        master, opt, grads = out["master_weights"][0], out["optimizer"], out["gradients"][0]
        out["master_weights"], out["optimizer"] = (0.0, master), (0.0, opt[0] + opt[1])
        bucket = self.a.memory["offload_bucket_elements"].value * self.grad_bytes
        kept = min(grads, bucket)
        out["gradients"] = (kept, grads - kept)
        if self.job.offload == "params":
            weights = out["weights"][0]
            # ZeRO-Infinity keeps about two layers' gathered weights on the GPU.
            layer = self._local_pair(layout)[0] * self.base_bytes
            kept_w = min(weights, 2.0 * layer / max(self.layers // layout.pp, 1))
            out["weights"], out["gradients"] = (kept_w, weights - kept_w), (0.0, grads)

    def states(self, layout: Layout) -> dict[str, tuple[float, float]]:
        """Weights, gradients, master weights, optimizer and adapters: (GPU bytes, host bytes) each."""
        out = self._states(layout, self.bf16_optimizer)
        if self.floor_bf16_optimizer and layout.zero == 0 and layout.dp > 1:
            alt = self._states(layout, True)
            if sum(g for g, _ in alt.values()) < sum(g for g, _ in out.values()):
                return alt
        return out

    def _states(self, layout: Layout, bf16_optimizer: bool) -> dict[str, tuple[float, float]]:
        whole, sharded = self._local_pair(layout)
        zero = layout.zero
        bf16_opt = bf16_optimizer and zero == 0
        part = zero >= 1 or bf16_opt  # what ZeRO-1 shards: the optimizer states and the master copy
        opt = (sharded if part else whole) * self.opt_bytes  # _local_params(layout, 1), read once
        grads = (sharded if zero >= 2 else whole) * self.grad_bytes
        if bf16_opt:
            # BF16_Optimizer: a full flat fp32 gradient buffer the bf16 gradients are added into after each
            # backward (update_hp_grads keeps the bf16 ones), besides the 1/dp fp32 partition it steps.
            grads = whole * (self.grad_bytes + 4.0)
        if layout.pp > 1 and zero >= 3 and self.job.stack == "torchtitan" and not self.peft:
            # FSDP2 under a pipeline schedule accumulates each stage's whole gradient in fp32 between
            # micro-batches (gradient sync is off until the last one): fsdp2-pp-grads.
            grads = whole * 4.0  # unsharded
        if self.grad_in_backward and self.job.arch is not None:
            arch = self.job.arch
            grads = min(grads, arch.vocab * arch.hidden / layout.tp * self.grad_bytes)
        out = {
            "weights": (self._sharded_weights(layout), 0.0),
            "gradients": (grads, 0.0),
            "master_weights": ((sharded if part else whole) * self.master_bytes, 0.0),
            "optimizer": (opt, 0.0),
        }
        if self.peft:
            out["adapters"] = self._adapters(layout)
        elif self.paged:
            out["optimizer"] = (0.0, opt)
        if self.job.offload in ("optimizer", "params"):
            self._offloaded(out, layout)
        return out

    def fixed_bytes(self, layout: Layout) -> float:
        """Central bytes on the GPU of everything but activations (memoised: the search asks per count and
        batch)."""
        key = (layout.tp, layout.pp, layout.dp, layout.cp, layout.ep, layout.sharding, layout.shard_group)
        cached = self._fixed.get(key)
        if cached is None:
            st = self.states(layout)
            total = sum([gpu for gpu, _ in st.values()]) + self._gathered(layout)
            groups = comm_groups(layout)
            overhead = self._overheads.get(groups)
            if overhead is None:
                overhead = self._overheads[groups] = overhead_central(groups, self.a)
            cached = self._fixed[key] = total + overhead
        return cached

    def fixed_floor(self, count: int) -> float:
        """A lower bound on fixed_bytes() of every layout over `count` GPUs: each state sharded over all of
        them (no layout splits a parameter over more ranks than tp x pp x its shard ranks, at most the count),
        no ZeRO-3 gather buffers, the fewest communicators (one, past one GPU); offloaded states count
        zero."""
        offload, per = self.job.offload, self.job.params / count
        weights = 0.0 if offload == "params" else per * self.base_bytes
        on_host = offload in ("optimizer", "params")
        grads = 0.0 if on_host or self.grad_in_backward else per * self.grad_bytes
        master = 0.0 if on_host else per * self.master_bytes
        opt = 0.0 if on_host or self.paged else per * self.opt_bytes
        adapters = 0.0
        if self.peft:
            states = self.adapter_states - (self.adapter_opt if self.paged else 0.0)
            adapters = self.job.trainable_params / count * (2.0 * self.adapter_w + states)
        overhead = overhead_central(1 if count > 1 else 0, self.a)
        return weights + grads + master + opt + adapters + overhead

    @property
    def frees_gradients(self) -> bool:
        """Whether the stack's loop frees the whole gradient after each step (zero_grad(set_to_none=True), no
        gradient buffer of its own) with the gradients on the GPU: full training, no optimizer stepped in
        backward or offloaded."""
        return (
            self.traits.grads_freed_each_step
            and not self.peft
            and not self.grad_in_backward
            and self.job.offload not in ("optimizer", "params")
        )

    def freed_floor(self, count: int) -> float:
        """The most of fixed_floor() a layout over `count` GPUs may not hold while its activations peak: the
        whole gradient on one GPU (freed_gradients), nothing on several."""
        return self.job.params * self.grad_bytes if count == 1 and self.frees_gradients else 0.0

    def freed_gradients(self, layout: Layout) -> float:
        """Gradient bytes not held while the activations peak: on one rank without accumulation, a stack that
        frees its gradients after each step (`frees_gradients`) allocates them again only as the backward
        produces them, while it frees the activations (torch-zero-grad, hf-trainer-zero-grad). The step's
        peak is then the larger of weights + optimizer + activations and weights + optimizer + gradients."""
        if layout.count > 1 or layout.grad_accum > 1 or not self.frees_gradients:
            return 0.0
        return self.states(layout)["gradients"][0]

    def per_sequence(self, recompute: str, tp: int, cp: int = 1, pp: int = 1, virtual: int = 1) -> float:
        """Activation bytes per sequence (or item) of micro-batch on the busiest pipeline stage: what autograd
        holds at the peak, before the allocator's reserve (`virtual`: model chunks per stage of an interleaved
        schedule)."""
        key = (recompute, tp, cp, pp, virtual)
        cached = self._per_seq.get(key)
        if cached is None:
            cached = self._per_seq[key] = self._per_sequence(recompute, tp, cp, pp, virtual)
        return cached

    def _per_sequence(self, recompute: str, tp: int, cp: int, pp: int, virtual: int) -> float:
        job = self.job
        if job.arch is None:
            return job.activation_bytes_per_item * job.items_per_sequence
        kept, working = self.per_layer[recompute]
        if recompute == "full" and self.traits.offload_checkpoints:
            kept = 0.0  # Unsloth's checkpointing moves every kept layer input to host memory
        split = (
            tp * cp
        )  # sequence parallelism with TP, and context parallelism, split every token's activations
        first = self.layers * kept * self.act_scale / split
        # Interleaving keeps more micro-batches in flight on the first stage: its activations grow by
        # 1 + (p - 1) / (p v) (Korthikanti et al., arXiv:2205.05198 sec. 4.2.3; Megatron-LM's own estimate,
        # NVIDIA/Megatron-LM@00caa53af309:megatron/training/theoretical_memory_usage.py).
        interleaved = 1.0 + (pp - 1) / (pp * virtual) if pp > 1 and virtual > 1 else 1.0
        working = working * self.act_scale / split
        loss = self.loss_seq / (tp if self.loss_tp else 1) / cp
        # Backward frees the logits and loss before it recomputes the last block, so with recomputation the
        # working set and the loss are never held together.
        tail = loss + working if recompute == "none" else max(loss, working)
        # 1F1B keeps p micro-batches of L/p layers on the first stage (L layers in all); the last, the loss
        return max(first * interleaved + working, first / pp + tail) if pp > 1 else first + tail

    def per_sequence_bytes(
        self, recompute: str, tp: int, cp: int = 1, pp: int = 1, virtual: int = 1
    ) -> float:
        """Central activation bytes per sequence (or item) of micro-batch, with the allocator's reserve
        (memoised)."""
        key = (recompute, tp, cp, pp, virtual)
        cached = self._per_seq_bytes.get(key)
        if cached is None:
            per = self.per_sequence(recompute, tp, cp, pp, virtual)
            cached = self._per_seq_bytes[key] = per * (1.0 + self.frag)
        return cached

    def nominal_bytes(self, layout: Layout) -> float:
        """The central estimate of the peak on the GPU (the total of components())."""
        act = self.per_sequence_bytes(layout.recompute, layout.tp, layout.cp, layout.pp, layout.virtual)
        act *= layout.micro_batch
        freed = self.freed_gradients(layout)
        return self.fixed_bytes(layout) - freed + max(act, freed)

    def components(self, layout: Layout, usable_gb: float) -> Memory:
        """The full breakdown of a layout, each component's central estimate, and what sits in host memory."""
        st = self.states(layout)
        act = self.per_sequence(layout.recompute, layout.tp, layout.cp, layout.pp, layout.virtual)
        act *= layout.micro_batch
        comps = [("weights", st["weights"][0] + self._gathered(layout))]
        names = ("adapters",) if self.peft else ("gradients", "optimizer", "master_weights")
        freed = self.freed_gradients(layout)
        if freed:  # at the peak only the gradients the activations' bytes do not cover are counted
            held = st["gradients"][0] - freed + max(0.0, freed - act * (1.0 + self.frag))
            st = {**st, "gradients": (held, st["gradients"][1])}
        comps += [(n, st[n][0]) for n in names if st[n][0] or n != "master_weights"]
        comps += [
            ("activations", act),
            ("allocator", act * self.frag),
            ("overhead", overhead_central(comm_groups(layout), self.a)),
        ]
        host = sum(h for _, h in st.values())
        return _to_gb(comps, self.gpu, self.a, usable_gb, host, training=True)


def training_memory(job: Job, gpu: Gpu, layout: Layout, a: Assumptions, usable_gb: float) -> Memory:
    """Per-GPU memory of a training layout at its micro-batch."""
    return TrainingMemoryModel(job, gpu, layout.precision, a).components(layout, usable_gb)


def _to_gb(
    comps: list[tuple[str, float]],
    gpu: Gpu,
    a: Assumptions,
    usable: float,
    host: float = 0.0,
    *,
    training: bool = False,
) -> Memory:
    ordered = sorted(comps, key=lambda c: _COMPONENT_RANK[c[0]])
    m = a.memory
    band, spread = (
        (m["verdict_band"].range, m["central_error"].range) if training else ((0.0, 0.0), (0.0, 0.0))
    )
    return Memory(
        tuple((n, b / GB) for n, b in ordered), capacity_gb(gpu, a), usable, band, spread, host / GB
    )


@dataclass(frozen=True, slots=True, repr=False, eq=False)
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
    werr = a.memory["weights_rel_error"].value
    weights = job.params * w / (t * p)
    kv_per_token = arch.layers / p * arch.kv_values_per_token_layer(t) * kv_bytes_per_value(layout.precision)
    kv = kv_per_token * context_tokens
    # Prefill working set: one layer's activations for a prompt chunk (Korthikanti's per-layer term).
    chunk = min(job.prompt_tokens, 8192)
    working = a.activations["per_layer_coeff"].value * chunk * arch.hidden / t
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
    """Per-GPU serving memory with `layout.micro_batch` concurrent sequences per replica, on the upper terms
    (no engine's accounting: one sequence where none fits)."""
    terms = inference_terms(job, gpu, layout, a, context_tokens)
    comps = [(n, hi) for n, _, hi in terms.fixed] + [("kv_cache", terms.kv_per_seq_high * layout.micro_batch)]
    return _to_gb(comps, gpu, a, usable_gb)


def engine_memory(
    gpu: Gpu, a: Assumptions, usable_gb: float, weights: float, kv: float, engine_bytes: tuple[float, float]
) -> Memory:
    """Per-GPU serving memory as the engine accounts it: the replica's weights and the KV its running
    sequences hold (bytes, as the engine's cache sized them), `engine_bytes` (activations, the rest besides
    weights and KV) inside the engine's memory, against what the engine keeps them within."""
    working, rest = engine_bytes
    comps = [("weights", weights), ("activations", working), ("kv_cache", kv), ("overhead", rest)]
    return _to_gb(comps, gpu, a, usable_gb)
