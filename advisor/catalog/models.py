"""Provides the model catalogue schema: transformer architectures and benchmarked non-LLM workloads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from advisor.catalog.common import CatalogueId, NonNegFloat, NonNegInt, PosFloat, PosInt

ModelKind = Literal["llm", "encoder", "vit", "cnn", "rnn", "speech", "recsys"]
TRANSFORMER_KINDS = ("llm", "encoder", "vit")


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class ModelSpec:
    """One model of the catalogue."""

    id: CatalogueId
    name: str
    kind: ModelKind
    aliases: tuple[str, ...] = ()
    params: PosFloat
    layers: PosInt | None = None
    hidden: PosInt | None = None
    heads: PosInt | None = None
    kv_heads: PosInt | None = None
    ffn_hidden: PosInt | None = None
    gated_ffn: bool = False
    vocab: PosInt | None = None
    max_seq_len: PosInt | None = None
    experts: PosInt = 1
    experts_per_token: PosInt = 1
    active_params: PosFloat | None = None
    kv_channels: PosInt | None = None
    """Head dimension when it is not hidden / heads (Gemma, Qwen3; the value head of MLA)."""
    moe_ffn_hidden: PosInt | None = None
    """FFN width of one routed expert (MoE); ffn_hidden is then the width of the dense layers."""
    shared_experts: NonNegInt = 0
    """Experts every token passes through besides the routed ones, each moe_ffn_hidden wide."""
    dense_layers: NonNegInt = 0
    """Leading layers of a MoE with a dense FFN of ffn_hidden (DeepSeek first_k_dense_replace)."""
    kv_lora_rank: PosInt | None = None
    """MLA: width of the compressed key-value latent cached per token and layer."""
    qk_rope_head_dim: NonNegInt = 0
    """MLA: rotary key dimension cached per token and layer beside the latent."""
    tied_embeddings: bool = False
    architecture: str | None = None
    """Hugging Face model_type the shape follows (llama, qwen2, deepseek_v3, ...), where known."""
    throughput_unit: str | None = None
    item: str | None = None
    seq_len: NonNegInt = 0
    forward_flops_per_item: PosFloat | None = None
    train_flops_per_item: PosFloat | None = None
    activation_bytes_per_item: NonNegFloat = 0.0
    source: str
    field_sources: dict[str, str] = field(default_factory=dict)
    derivations: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind == "llm":
            needed = ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab")
            absent = [name for name in needed if getattr(self, name) is None]
            if absent:
                raise ValueError(f"an llm needs {', '.join(absent)}")
        elif self.train_flops_per_item is None and not self.is_transformer:
            raise ValueError("a non-transformer workload needs train_flops_per_item")
        if self.throughput_unit is not None and self.item is None:
            raise ValueError("a workload with throughput_unit needs item")

    @property
    def is_transformer(self) -> bool:
        """Whether the transformer fields are complete enough for the per-layer memory model."""
        return all(getattr(self, f) is not None for f in ("layers", "hidden", "heads", "ffn_hidden"))

    @property
    def active(self) -> float:
        """Parameters used per token (all of them for a dense model)."""
        return self.active_params or self.params
