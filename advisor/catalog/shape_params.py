"""Provides a transformer's shape and the parameter count (total and active per token) computed from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Latent:
    """Multi-head latent attention (DeepSeek-V2/V3): low-rank query and joint key-value projections."""

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class Moe:
    """The mixture-of-experts part of a model: routed and shared experts, and its leading dense layers."""

    experts: int
    per_token: int
    ffn: int
    shared_ffn: int = 0
    """Total width of shared expert(s): n_shared x expert width for DeepSeek, one wide MLP for Qwen-MoE."""
    shared_gate: bool = False
    """Qwen-MoE gates its shared expert with a one-output linear layer."""
    dense_layers: int = 0
    router_bias: bool = False
    """DeepSeek-V3's per-expert score-correction bias."""


@dataclass(frozen=True)
class Shape:
    """Everything about a decoder's layout that decides its parameter count and memory."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    gated: bool = True
    qkv_bias: bool = False
    out_bias: bool = False
    mlp_bias: bool = False
    norm: Literal["rms", "layer"] = "rms"
    norms_per_layer: int = 2
    qk_norm: bool = False
    tied: bool = False
    positions: int = 0
    """Rows of a learned positional embedding (GPT-2); 0 with rotary positions."""
    moe: Moe | None = None
    mla: Latent | None = None

    @property
    def norm_size(self) -> int:
        """Parameters of one norm over the hidden size (LayerNorm has a bias, RMSNorm has not)."""
        return self.hidden * (2 if self.norm == "layer" else 1)


def attention_params(s: Shape) -> int:
    """Projections (and biases, q/k norms) of one attention block."""
    if s.mla is not None:
        return _latent_attention(s, s.mla)
    q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    weights = s.hidden * (q + 2 * kv) + q * s.hidden
    biases = (q + 2 * kv if s.qkv_bias else 0) + (s.hidden if s.out_bias else 0)
    return weights + biases + (2 * s.head_dim if s.qk_norm else 0)


def _latent_attention(s: Shape, m: Latent) -> int:
    qk_dim = m.qk_nope_head_dim + m.qk_rope_head_dim
    if m.q_lora_rank:
        query = s.hidden * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * s.heads * qk_dim
    else:
        query = s.hidden * s.heads * qk_dim
    key_value = (
        s.hidden * (m.kv_lora_rank + m.qk_rope_head_dim)
        + m.kv_lora_rank
        + m.kv_lora_rank * s.heads * (m.qk_nope_head_dim + m.v_head_dim)
    )
    return query + key_value + s.heads * m.v_head_dim * s.hidden


def mlp_params(s: Shape, width: int) -> int:
    """One feed-forward block of the given width: three matrices gated, two plain, with biases where used."""
    matrices = (3 if s.gated else 2) * s.hidden * width
    biases = ((2 if s.gated else 1) * width + s.hidden) if s.mlp_bias else 0
    return matrices + biases


def _moe_layer(s: Shape, m: Moe, experts: int) -> int:
    """One MoE block with `experts` routed experts counted (all of them, or those active per token)."""
    router = s.hidden * m.experts + (m.experts if m.router_bias else 0)
    shared = (mlp_params(s, m.shared_ffn) if m.shared_ffn else 0) + (s.hidden if m.shared_gate else 0)
    return experts * mlp_params(s, m.ffn) + shared + router


def count_params(s: Shape) -> tuple[int, int]:
    """Return (total, active per token) parameters: embeddings, layers, final norm and lm head unless tied."""
    outside = s.vocab * s.hidden * (1 if s.tied else 2) + s.positions * s.hidden + s.norm_size
    per_layer = attention_params(s) + s.norms_per_layer * s.norm_size
    if s.moe is None:
        total = outside + s.layers * (per_layer + mlp_params(s, s.ffn))
        return total, total
    m = s.moe
    dense = m.dense_layers * (per_layer + mlp_params(s, s.ffn))
    sparse_layers = s.layers - m.dense_layers
    total = outside + dense + sparse_layers * (per_layer + _moe_layer(s, m, m.experts))
    active = outside + dense + sparse_layers * (per_layer + _moe_layer(s, m, m.per_token))
    return total, active
