"""Provides the schema of assumptions.toml: the sourced constants of the memory, speed and cost model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal, TypedDict, cast

from advisor.catalog.common import FIGURES, NonNegFloat, PosFloat, Source


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Figure:
    """One constant: a value (with a low-high range where it has one), its unit and its source."""

    value: float
    low: float | None = None
    high: float | None = None
    unit: str
    source: str
    note: str = ""

    @property
    def range(self) -> tuple[float, float]:
        """(low, high), both equal to value when no range is given."""
        return (self.value if self.low is None else self.low, self.value if self.high is None else self.high)


class MemoryFigures(TypedDict):
    """Runtime overheads and the error bars of each memory component."""

    headroom: Figure
    cuda_context_gb: Figure
    runtime_other_high_gb: Figure
    nccl_buffers_gb: Figure
    weights_rel_error: Figure
    activations_rel_error: Figure
    fsdp_gathered_layers: Figure
    peft_adapter_input_bytes: Figure
    allocator_fragmentation: Figure
    driver_reserved: Figure
    gddr_ecc_fraction: Figure
    central_error: Figure
    verdict_band: Figure
    offload_bucket_elements: Figure


class ActivationFigures(TypedDict):
    """Korthikanti et al.'s per-layer activation terms."""

    per_layer_coeff: Figure
    attention_coeff: Figure
    full_recompute_coeff: Figure
    selective_recompute_flops: Figure
    logits_bytes: Figure
    moe_dispatch_bytes: Figure


STACK_TRAITS = (
    "model_code",
    "loss",
    "recompute",
    "master_weights",
    "peft_fp32_adapters",
    "offload_checkpoints",
    "fp32_main_grads",
    "optimizer_in_backward",
    "kbit_fp32_tables",
    "grads_freed_each_step",
    "deepspeed_engine",
)


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class StackMemory:
    """What a training stack keeps in GPU memory when the user sets nothing, each trait read from its code."""

    name: str
    model_code: Literal["hf", "eager", "fused"]
    """Whose layers: Hugging Face modeling code, another eager PyTorch implementation (both saved as
    autograd saves them), or fused kernels (Korthikanti et al.'s per-layer bytes)."""
    loss: str
    """A key of [loss]: the output layer and loss path."""
    recompute: Literal["none", "selective", "full"]
    """What its recipes and examples run when the user does not say."""
    master_weights: bool
    """Whether 16-bit training keeps an fp32 copy of the weights by default."""
    peft_fp32_adapters: bool
    """LoRA adapters kept in fp32, each adapted layer's input cast to fp32 and saved (PEFT)."""
    offload_checkpoints: bool
    """Checkpointed layer inputs go to host memory."""
    fp32_main_grads: bool
    """Gradients accumulate in fp32 buffers beside 16-bit weights (Megatron's main_grad)."""
    optimizer_in_backward: bool
    """Full fine-tuning steps each parameter's optimizer as its gradient arrives (no full gradient set)."""
    kbit_fp32_tables: bool
    """QLoRA leaves the parameters it does not quantise (embedding, output layer, norms) in fp32 (PEFT's
    prepare_model_for_kbit_training), rather than in the 16-bit compute dtype."""
    grads_freed_each_step: bool
    """Its loop frees the gradients after each optimizer step (zero_grad(set_to_none=True)) and keeps no
    gradient buffer of its own, so one rank without accumulation holds no gradient while its activations
    peak."""
    deepspeed_engine: bool
    """DeepSpeed's engine runs the model: it casts the module to the 16-bit dtype (no fp32 residual stream
    under a master copy) and, at ZeRO stage 0 in bf16, wraps the optimizer in its BF16_Optimizer (fp32 master
    weights and optimizer states partitioned over the data-parallel ranks, a full fp32 gradient buffer)."""
    sources: dict[str, str]
    """The source of each trait."""
    note: str = ""

    def __post_init__(self) -> None:
        missing = [t for t in STACK_TRAITS if t not in self.sources]
        if missing:
            raise ValueError(f"no source for trait(s) {', '.join(missing)} (sources: trait = source key)")


class PrecisionFigures(TypedDict):
    """Bits per parameter of quantised weights, scales included."""

    nf4_bits: Figure
    int4_bits: Figure
    int8_bits: Figure


class OptimizerFigures(TypedDict):
    """Bytes per trainable parameter of optimizer states."""

    adamw: Figure
    adamw_8bit: Figure
    paged_adamw: Figure
    paged_adamw_8bit: Figure
    sgd: Figure
    lion: Figure
    adafactor: Figure
    master_weights: Figure


def optimizer_bytes(figures: OptimizerFigures, optimizer: str) -> float:
    """Bytes per trainable parameter of an optimizer's states (its CLI name, e.g. 'adamw-8bit')."""
    return float(figures[optimizer.replace("-", "_")].value)  # type: ignore[literal-required]


class NetworkFigures(TypedDict):
    """The rail-optimised fat tree: pod size at full bisection, oversubscription between pods."""

    pod_gpus: Figure
    oversubscription: Figure


class GoodputFigures(TypedDict):
    """Interruptions at scale and what each costs."""

    interruptions_per_gpu_hour: Figure
    storage_gbs_per_gpu: Figure
    restart_h: Figure


class CommFigures(TypedDict):
    """Link latencies, PCIe bandwidths, the host's memory bandwidth and CPU-Adam's measured rate (offload)."""

    intra_node_latency_s: Figure
    pcie_gen3_gbs: Figure
    pcie_gen4_gbs: Figure
    pcie_gen5_gbs: Figure
    host_memory_ddr4_gbs: Figure
    host_memory_ddr5_gbs: Figure
    cpu_adam_params_per_s: Figure
    cpu_adam_host_gbs: Figure


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Fabric:
    """An inter-node network: bandwidth per GPU or per node, and a per-step latency."""

    name: str
    gbps: PosFloat
    per: Literal["gpu", "node"]
    latency_s: NonNegFloat
    source: str
    note: str = ""

    def gbs_per_gpu(self, gpus_per_node: int) -> float:
        """GB/s one GPU can push across nodes in one direction."""
        per_gpu_gbps = self.gbps if self.per == "gpu" else self.gbps / gpus_per_node
        return per_gpu_gbps / 8.0


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Prior:
    """An efficiency prior for one regime, as a P10-P50-P90 interval."""

    p10: float
    p50: float
    p90: float
    source: str
    note: str = ""

    def __post_init__(self) -> None:
        if not 0 < self.p10 <= self.p50 <= self.p90 <= 1:
            raise ValueError("needs 0 < p10 <= p50 <= p90 <= 1")


class CostFigures(TypedDict):
    """Volatility coefficients, storage price, billing hours and spot interruption rates."""

    volatility_static: Figure
    volatility_fluctuating: Figure
    volatility_high: Figure
    storage_usd_per_gb_month: Figure
    hours_per_month: Figure
    spot_interruptions_per_month: Figure


class Defaults(TypedDict):
    """Starting values of user inputs; every output labels them as assumed."""

    pretrain_tokens_per_param: Figure
    finetune_tokens: Figure
    pretrain_global_batch_tokens: Figure
    pretrain_global_batch_tokens_per_gpu: Figure
    finetune_global_batch_seqs: Figure
    max_global_batch_items: Figure
    startup_overhead_h: Figure
    llm_seq_len: Figure
    lora_rank: Figure
    checkpoint_interval_h: Figure
    restart_overhead_h: Figure
    prompt_tokens: Figure
    output_tokens: Figure
    tpot_target_ms: Figure
    serving_utilisation_cap: Figure


PRIOR_REGIMES = ("llm-pretrain", "llm-finetune", "lora", "qlora", "other-train", "decode", "prefill")


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Assumptions:
    """All of assumptions.toml."""

    schema_version: Literal[1]
    sources: dict[str, Source]
    memory: Annotated[MemoryFigures, FIGURES]
    activations: Annotated[ActivationFigures, FIGURES]
    precision: Annotated[PrecisionFigures, FIGURES]
    optimizer: Annotated[OptimizerFigures, FIGURES]
    comm: Annotated[CommFigures, FIGURES]
    loss: dict[str, Figure]
    stack: dict[str, StackMemory]
    network: Annotated[NetworkFigures, FIGURES]
    goodput: Annotated[GoodputFigures, FIGURES]
    fabric: dict[str, Fabric]
    efficiency: dict[str, Prior]
    cost: Annotated[CostFigures, FIGURES]
    defaults: Annotated[Defaults, FIGURES]

    def __post_init__(self) -> None:
        absent = [r for r in PRIOR_REGIMES if r not in self.efficiency]
        if absent:
            raise ValueError(f"efficiency priors missing for: {', '.join(absent)}")
        losses = [f"{k}: loss {s.loss!r}" for k, s in self.stack.items() if s.loss not in self.loss]
        if losses:
            raise ValueError(f"stack loss paths not in [loss]: {'; '.join(losses)}")

    def cited_sources(self) -> set[str]:
        """Every source key the figures cite."""
        keys = {f.source for f in self.fabric.values()} | {p.source for p in self.efficiency.values()}
        keys |= {f.source for f in self.loss.values()}
        keys |= {k for st in self.stack.values() for k in st.sources.values()}
        for section in (
            self.memory,
            self.activations,
            self.precision,
            self.optimizer,
            self.comm,
            self.cost,
            self.defaults,
            self.network,
            self.goodput,
        ):
            keys |= {figure.source for figure in cast("dict[str, Figure]", section).values()}
        return keys
