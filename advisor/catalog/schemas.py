"""Provides the pydantic schemas of the knowledge files, used only to validate (a cache miss, a
`model_validate`): commands run on the plain types of
advisor.catalog.{common,gpus,models,prices,checklist,assumptions,rules}, which carry the same field
names in the same order (tests/unit/test_knowledge.py checks it)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import (
    Discriminator,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Tag,
    field_validator,
    model_validator,
)

from advisor.catalog.assumptions import PRIOR_REGIMES, STACK_TRAITS
from advisor.catalog.models import ModelKind
from advisor.catalog.prices import Pricing
from advisor.catalog.rules import _ORDERED_OPS, _PLACEHOLDER, FIELDS, Op
from advisor.catalog.strict import Strict


class Source(Strict):
    """Where a figure comes from: a repository file at a commit, a datasheet or a paper."""

    title: str = Field(min_length=3)
    ref: str = Field(min_length=3)
    """`owner/repo@commit:path`, or a document title."""
    url: str | None = None
    date: dt.date | None = None
    """When the cited figures were current, where known."""
    note: str = ""


class Interconnect(Strict):
    """The GPU-to-GPU link inside one server."""

    kind: Literal["nvswitch", "nvlink-mesh", "nvlink-bridge", "pcie", "infinity-fabric"]
    """nvlink-mesh: direct NVLink between some pairs only (V100 SXM2's hybrid cube-mesh), no switch."""
    gbs: PositiveFloat | None = None
    """Per GPU, both directions added, GB/s."""
    domain: PositiveInt = 1
    """How many GPUs share that link (the NVLink domain)."""


class Tflops(Strict):
    """Dense peak throughput per dtype in TFLOPS (int8 in TOPS); absent = unsupported or unsourced."""

    fp32: PositiveFloat | None = None
    tf32: PositiveFloat | None = None
    fp16: PositiveFloat | None = None
    bf16: PositiveFloat | None = None
    fp8: PositiveFloat | None = None
    int8: PositiveFloat | None = None


class Features(Strict):
    """Hardware feature flags that gate precisions and kernels."""

    bf16: bool
    fp8: bool
    flash_attention: bool


class Price(Strict):
    """Purchase price of one GPU, with its date and source."""

    usd: PositiveFloat
    date: dt.date
    source: str
    kind: Literal["list", "street", "estimate"]


class Gpu(Strict):
    """One accelerator of the catalogue."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$")
    name: str
    vendor: Literal["nvidia", "amd", "intel", "google"]
    aliases: tuple[str, ...] = ()
    architecture: str
    compute_capability: str | None = Field(default=None, pattern=r"^\d+\.\d+$")
    form_factor: Literal["pcie", "sxm2", "sxm4", "sxm5", "sxm6", "oam", "superchip", "nvl"]
    release_date: dt.date | None = None
    memory_gb: PositiveFloat
    memory_unit: Literal["GiB", "GB"] = "GiB"
    memory_ecc: bool = False
    memory_bw_gbs: PositiveFloat
    tdp_w: PositiveInt | None = None
    pcie_gen: PositiveInt | None = None
    gpus_per_node: PositiveInt
    fabric: str
    features: Features
    interconnect: Interconnect
    tflops: Tflops
    price: Price | None = None
    field_sources: dict[str, str]
    missing: dict[str, str] = {}
    notes: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _supported_dtypes_have_figures(self) -> Gpu:
        for flag in ("bf16", "fp8"):
            if (
                getattr(self.features, flag)
                and getattr(self.tflops, flag) is None
                and f"tflops.{flag}" not in self.missing
            ):
                raise ValueError(f"features.{flag} is true but tflops.{flag} is absent and not in 'missing'")
        if self.tflops.fp16 is None and self.tflops.bf16 is None and "tflops.fp16" not in self.missing:
            raise ValueError("needs tflops.fp16 or tflops.bf16 (or a 'missing' note)")
        return self


class ModelSpec(Strict):
    """One model of the catalogue."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$")
    name: str
    kind: ModelKind
    aliases: tuple[str, ...] = ()
    params: PositiveFloat
    layers: PositiveInt | None = None
    hidden: PositiveInt | None = None
    heads: PositiveInt | None = None
    kv_heads: PositiveInt | None = None
    ffn_hidden: PositiveInt | None = None
    gated_ffn: bool = False
    vocab: PositiveInt | None = None
    max_seq_len: PositiveInt | None = None
    experts: PositiveInt = 1
    experts_per_token: PositiveInt = 1
    active_params: PositiveFloat | None = None
    kv_channels: PositiveInt | None = None
    """Head dimension when it is not hidden / heads (Gemma, Qwen3; the value head of MLA)."""
    moe_ffn_hidden: PositiveInt | None = None
    """FFN width of one routed expert (MoE); ffn_hidden is then the width of the dense layers."""
    shared_experts: NonNegativeInt = 0
    """Experts every token passes through besides the routed ones, each moe_ffn_hidden wide."""
    dense_layers: NonNegativeInt = 0
    """Leading layers of a MoE with a dense FFN of ffn_hidden (DeepSeek first_k_dense_replace)."""
    kv_lora_rank: PositiveInt | None = None
    """MLA: width of the compressed key-value latent cached per token and layer."""
    qk_rope_head_dim: NonNegativeInt = 0
    """MLA: rotary key dimension cached per token and layer beside the latent."""
    tied_embeddings: bool = False
    architecture: str | None = None
    """Hugging Face model_type the shape follows (llama, qwen2, deepseek_v3, ...), where known."""
    throughput_unit: str | None = None
    item: str | None = None
    seq_len: NonNegativeInt = 0
    forward_flops_per_item: PositiveFloat | None = None
    train_flops_per_item: PositiveFloat | None = None
    activation_bytes_per_item: NonNegativeFloat = 0.0
    source: str
    field_sources: dict[str, str] = {}
    derivations: dict[str, str] = {}
    notes: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _complete_for_its_kind(self) -> ModelSpec:
        if self.kind == "llm":
            needed = ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab")
            absent = [name for name in needed if getattr(self, name) is None]
            if absent:
                raise ValueError(f"an llm needs {', '.join(absent)}")
        elif self.train_flops_per_item is None and not self.is_transformer:
            raise ValueError("a non-transformer workload needs train_flops_per_item")
        if self.throughput_unit is not None and self.item is None:
            raise ValueError("a workload with throughput_unit needs item")
        return self

    @property
    def is_transformer(self) -> bool:
        """Whether the transformer fields are complete enough for the per-layer memory model."""
        return all(getattr(self, f) is not None for f in ("layers", "hidden", "heads", "ffn_hidden"))


class Offer(Strict):
    """One rentable instance type at one price."""

    provider: str
    region: str
    instance: str
    gpu: str
    gpus: PositiveInt
    pricing: Pricing
    usd_per_hour: PositiveFloat
    includes_host: bool = True
    date: dt.date
    source: str
    note: str = ""


class UserPrices(Strict):
    """The file `prices update` writes: offers with their date and where they were read."""

    schema_version: Literal[1] = 1
    fetched: dt.date
    source: str
    offers: tuple[Offer, ...]


class Threshold(Strict):
    """A measured level past which the entry applies."""

    metric: str
    op: Literal[">", ">=", "<", "<="]
    value: float
    unit: str
    meaning: str
    source: str


class Step(Strict):
    """One ordered action."""

    text: str
    tool: str | None = None
    command: str | None = None


class ChecklistEntry(Strict):
    """One error type and what to do about it."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9\-]*$")
    title: str
    category: Literal[
        "memory", "distributed", "network", "compatibility", "performance", "cost", "reliability"
    ]
    keywords: tuple[str, ...] = ()
    symptoms: tuple[str, ...] = Field(min_length=1)
    tools: tuple[str, ...] = ()
    sources: tuple[str, ...] = Field(min_length=1)
    thresholds: tuple[Threshold, ...] = ()
    steps: tuple[Step, ...] = Field(min_length=1)
    remedies: dict[str, tuple[str, ...]] = {}


class Figure(Strict):
    """One constant: a value (with a low-high range where it has one), its unit and its source."""

    value: float
    low: float | None = None
    high: float | None = None
    unit: str
    source: str
    note: str = ""


class MemoryFigures(Strict):
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
    serving_memory_fraction: Figure


class ActivationFigures(Strict):
    """Korthikanti et al.'s per-layer activation terms."""

    per_layer_coeff: Figure
    attention_coeff: Figure
    full_recompute_coeff: Figure
    selective_recompute_flops: Figure
    logits_bytes: Figure
    moe_dispatch_bytes: Figure


class StackMemory(Strict):
    """What a training stack keeps in GPU memory when the user sets nothing, each trait read from its code."""

    name: str
    model_code: Literal["hf", "eager", "fused"]
    loss: str
    recompute: Literal["none", "selective", "full"]
    master_weights: bool
    peft_fp32_adapters: bool
    offload_checkpoints: bool
    fp32_main_grads: bool
    optimizer_in_backward: bool
    kbit_fp32_tables: bool
    sources: dict[str, str]
    note: str = ""

    @model_validator(mode="after")
    def _every_trait_sourced(self) -> StackMemory:
        missing = [t for t in STACK_TRAITS if t not in self.sources]
        if missing:
            raise ValueError(f"no source for trait(s) {', '.join(missing)} (sources: trait = source key)")
        return self


class PrecisionFigures(Strict):
    """Bits per parameter of quantised weights, scales included."""

    nf4_bits: Figure
    int4_bits: Figure
    int8_bits: Figure


class OptimizerFigures(Strict):
    """Bytes per trainable parameter of optimizer states."""

    adamw: Figure
    adamw_8bit: Figure
    paged_adamw: Figure
    paged_adamw_8bit: Figure
    sgd: Figure
    lion: Figure
    adafactor: Figure
    master_weights: Figure


class NetworkFigures(Strict):
    """The rail-optimised fat tree: pod size at full bisection, oversubscription between pods."""

    pod_gpus: Figure
    oversubscription: Figure


class GoodputFigures(Strict):
    """Interruptions at scale and what each costs."""

    interruptions_per_gpu_hour: Figure
    storage_gbs_per_gpu: Figure
    restart_h: Figure


class CommFigures(Strict):
    """Link latencies and PCIe bandwidths."""

    intra_node_latency_s: Figure
    pcie_gen3_gbs: Figure
    pcie_gen4_gbs: Figure
    pcie_gen5_gbs: Figure


class Fabric(Strict):
    """An inter-node network: bandwidth per GPU or per node, and a per-step latency."""

    name: str
    gbps: PositiveFloat
    per: Literal["gpu", "node"]
    latency_s: NonNegativeFloat
    source: str
    note: str = ""


class Prior(Strict):
    """An efficiency prior for one regime, as a P10-P50-P90 interval."""

    p10: float
    p50: float
    p90: float
    source: str
    note: str = ""

    @model_validator(mode="after")
    def _ordered(self) -> Prior:
        if not 0 < self.p10 <= self.p50 <= self.p90 <= 1:
            raise ValueError("needs 0 < p10 <= p50 <= p90 <= 1")
        return self


class CostFigures(Strict):
    """Volatility coefficients, storage price, billing hours and spot interruption rates."""

    volatility_static: Figure
    volatility_fluctuating: Figure
    volatility_high: Figure
    storage_usd_per_gb_month: Figure
    hours_per_month: Figure
    spot_interruptions_per_month: Figure


class Defaults(Strict):
    """Starting values of user inputs; every output labels them as assumed."""

    pretrain_tokens_per_param: Figure
    finetune_tokens: Figure
    pretrain_global_batch_tokens: Figure
    finetune_global_batch_seqs: Figure
    max_global_batch_items: Figure
    startup_overhead_h: Figure
    checkpoint_write_s: Figure
    llm_seq_len: Figure
    lora_rank: Figure
    checkpoint_interval_h: Figure
    restart_overhead_h: Figure
    prompt_tokens: Figure
    output_tokens: Figure
    tpot_target_ms: Figure
    serving_utilisation_cap: Figure


class Assumptions(Strict):
    """All of assumptions.toml."""

    schema_version: Literal[1]
    sources: dict[str, Source]
    memory: MemoryFigures
    activations: ActivationFigures
    precision: PrecisionFigures
    optimizer: OptimizerFigures
    comm: CommFigures
    loss: dict[str, Figure]
    stack: dict[str, StackMemory]
    network: NetworkFigures
    goodput: GoodputFigures
    fabric: dict[str, Fabric]
    efficiency: dict[str, Prior]
    cost: CostFigures
    defaults: Defaults

    @model_validator(mode="after")
    def _complete(self) -> Assumptions:
        absent = [r for r in PRIOR_REGIMES if r not in self.efficiency]
        if absent:
            raise ValueError(f"efficiency priors missing for: {', '.join(absent)}")
        losses = [f"{k}: loss {s.loss!r}" for k, s in self.stack.items() if s.loss not in self.loss]
        if losses:
            raise ValueError(f"stack loss paths not in [loss]: {'; '.join(losses)}")
        return self


class Condition(Strict):
    """One test of a fact against a value."""

    field: str
    op: Op
    value: Any

    @model_validator(mode="after")
    def _typed(self) -> Condition:
        if self.field not in FIELDS:
            raise ValueError(f"unknown field {self.field!r}; known: {', '.join(sorted(FIELDS))}")
        kind = FIELDS[self.field]
        values = self.value if self.op in ("in", "not_in") else [self.value]
        if self.op in ("in", "not_in") and not isinstance(self.value, list):
            raise ValueError(f"op {self.op!r} needs a list value")
        if self.op in _ORDERED_OPS and kind in (str, bool):
            raise ValueError(f"op {self.op!r} does not apply to {kind.__name__} field {self.field!r}")
        for v in values:
            ok = (
                isinstance(v, (int, float)) and not isinstance(v, bool)
                if kind in (int, float)
                else isinstance(v, kind)
            )
            if not ok:
                raise ValueError(f"value {v!r} is not a {kind.__name__} for field {self.field!r}")
        return self


class AllOf(Strict):
    """True when every child is true."""

    all: tuple[Node, ...] = Field(min_length=1)


class AnyOf(Strict):
    """True when at least one child is true."""

    any: tuple[Node, ...] = Field(min_length=1)


def _node_kind(value: Any) -> str:
    """Which node a tree element is, so that a bad condition reports its own error, not three union ones."""
    if isinstance(value, dict):
        return "all" if "all" in value else "any" if "any" in value else "condition"
    return "all" if isinstance(value, AllOf) else "any" if isinstance(value, AnyOf) else "condition"


Node = Annotated[
    Annotated[Condition, Tag("condition")] | Annotated[AllOf, Tag("all")] | Annotated[AnyOf, Tag("any")],
    Discriminator(_node_kind),
]
AllOf.model_rebuild()
AnyOf.model_rebuild()


class Rule(Strict):
    """A declarative rule: when its condition holds it excludes, scores or advises."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9\-]*$")
    kind: Literal["constraint", "preference", "advice"]
    when: Node
    explanation: str
    source: str
    message: str
    """Shown when the rule fires; may name facts as {gpu.id}."""
    score: float = 0.0
    """Preferences only: added to the plan's score (positive = preferred)."""

    @field_validator("message")
    @classmethod
    def _known_placeholders(cls, text: str) -> str:
        for name in _PLACEHOLDER.findall(text):
            if name not in FIELDS:
                raise ValueError(f"message names unknown field {{{name}}}")
        return text

    @model_validator(mode="after")
    def _score_only_for_preferences(self) -> Rule:
        if (self.kind == "preference") != (self.score != 0.0):
            raise ValueError("a preference needs a non-zero score, and only a preference has one")
        return self


class RuleBook(Strict):
    """All of rules.toml."""

    schema_version: Literal[1]
    sources: dict[str, Any]
    rule: tuple[Rule, ...]

    @model_validator(mode="after")
    def _unique(self) -> RuleBook:
        ids = [r.id for r in self.rule]
        dupes = {i for i in ids if ids.count(i) > 1}
        if dupes:
            raise ValueError(f"duplicate rule ids: {', '.join(sorted(dupes))}")
        return self


# tco.toml (advisor.catalog.tco)


class Hardware(Strict):
    """Non-GPU hardware prices."""

    server_8gpu_sxm_usd: Figure
    server_pcie_usd: Figure
    workstation_usd: Figure
    network_ib_per_gpu_usd: Figure
    residual_value_fraction: Figure
    network_eth_per_node_usd: Figure | None = None
    install_fraction: Figure | None = None


class Power(Strict):
    """Tariffs, PUE and non-GPU server power."""

    electricity_usd_kwh: Figure
    pue: Figure
    server_overhead_w_per_gpu: Figure
    off_peak_usd_kwh: Figure | None = None


class Space(Strict):
    """Data-centre space."""

    colocation_usd_per_kw_month: Figure


class Staff(Strict):
    """Operations staff."""

    engineer_usd_year: Figure
    gpus_per_engineer: Figure | None = None


class Operations(Strict):
    """The field guides' operations policy figures and measured failure rates."""

    maintenance_fraction_per_year: Figure
    hardware_failure_rate_per_month: Figure
    hardware_failure_target_per_month: Figure
    target_utilization: Figure
    max_queue_wait_min: Figure
    queue_levels: Figure
    idle_max_fraction: Figure
    scale_out_utilization: Figure
    scale_in_instance_cost_usd: Figure
    reclaim_start_hour: Figure
    reclaim_end_hour: Figure
    restart_limit: Figure
    hybrid_train_share: Figure
    elastic_reserve_fraction: Figure
    staged_first_purchase_fraction: Figure
    staged_review_interval_months: Figure
    budget_overrun_alert_fraction: Figure
    rack_space_reserve_fraction: Figure


class Lease(Strict):
    """Financing terms."""

    annual_rate: Figure
    term_months: Figure
    lease_to_purchase_ratio: Figure


class PowerCap(Strict):
    """A measured power-capping study and the guide's example policy."""

    cap_fraction: Figure
    energy_saving_fraction: Figure
    slowdown_fraction: Figure
    guide_training_cap_w: Figure
    guide_inference_cap_w: Figure
    guide_night_cap_fraction: Figure
    guide_night_start_hour: Figure
    guide_night_end_hour: Figure


class Shares(Strict):
    """The guide's typical shares of TCO."""

    hardware: Figure
    power: Figure
    staff: Figure
    space: Figure
    network: Figure


class Spot(Strict):
    """Preemption notices."""

    aws_notice_s: Figure
    gcp_notice_s: Figure


class TcoFigures(Strict):
    """All of tco.toml."""

    schema_version: Literal[1]
    sources: dict[str, Source]
    hardware: Hardware
    power: Power
    space: Space
    staff: Staff
    operations: Operations
    lease: Lease
    power_cap: PowerCap
    typical_shares: Shares
    spot: Spot
    missing: dict[str, str] = {}
