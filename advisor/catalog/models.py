"""Provides the model catalogue schema: transformer architectures and benchmarked non-LLM workloads."""

from __future__ import annotations

from dataclasses import field
from typing import Literal

from advisor.catalog.common import Record, record

ModelKind = Literal["llm", "encoder", "vit", "cnn", "rnn", "speech", "recsys"]
TRANSFORMER_KINDS = ("llm", "encoder", "vit")


@record
class ModelSpec(Record):
    """One model of the catalogue."""

    id: str
    name: str
    kind: ModelKind
    aliases: tuple[str, ...] = ()
    params: float
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    ffn_hidden: int | None = None
    gated_ffn: bool = False
    vocab: int | None = None
    max_seq_len: int | None = None
    experts: int = 1
    experts_per_token: int = 1
    active_params: float | None = None
    kv_channels: int | None = None
    """Head dimension when it is not hidden / heads (Gemma, Qwen3; the value head of MLA)."""
    moe_ffn_hidden: int | None = None
    """FFN width of one routed expert (MoE); ffn_hidden is then the width of the dense layers."""
    shared_experts: int = 0
    """Experts every token passes through besides the routed ones, each moe_ffn_hidden wide."""
    dense_layers: int = 0
    """Leading layers of a MoE with a dense FFN of ffn_hidden (DeepSeek first_k_dense_replace)."""
    kv_lora_rank: int | None = None
    """MLA: width of the compressed key-value latent cached per token and layer."""
    qk_rope_head_dim: int = 0
    """MLA: rotary key dimension cached per token and layer beside the latent."""
    tied_embeddings: bool = False
    architecture: str | None = None
    """Hugging Face model_type the shape follows (llama, qwen2, deepseek_v3, ...), where known."""
    throughput_unit: str | None = None
    item: str | None = None
    seq_len: int = 0
    forward_flops_per_item: float | None = None
    train_flops_per_item: float | None = None
    activation_bytes_per_item: float = 0.0
    source: str
    field_sources: dict[str, str] = field(default_factory=dict)
    derivations: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def is_transformer(self) -> bool:
        """Whether the transformer fields are complete enough for the per-layer memory model."""
        return all(getattr(self, f) is not None for f in ("layers", "hidden", "heads", "ffn_hidden"))

    @property
    def active(self) -> float:
        """Parameters used per token (all of them for a dense model)."""
        return self.active_params or self.params
