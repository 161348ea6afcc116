"""Provides a transformer's shape and the parameter count (total and active per token) computed from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True, repr=False)
class Latent:
    """Multi-head latent attention (DeepSeek-V2/V3): low-rank query and joint key-value projections."""

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True, slots=True, repr=False)
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


@dataclass(frozen=True, slots=True, repr=False)
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


# The largest value each dimension may take: well past every published model (Llama 3.1 405B: 126 layers,
# hidden 16,384, 128 heads, FFN 53,248, vocabulary 128,256; DeepSeek-V3: 256 experts; Gemma: 256k vocabulary),
# and small enough that no count or product computed from them overflows or runs for long.
SHAPE_LIMITS: dict[str, int] = {
    "layers": 10_000,
    "hidden": 1_048_576,
    "heads": 65_536,
    "kv_heads": 65_536,
    "head_dim": 65_536,
    "ffn": 4_194_304,
    "vocab": 16_777_216,
    "experts": 1_048_576,
    "per_token": 1_048_576,
    "dense_layers": 10_000,
    "kv_lora_rank": 1_048_576,
}


def shape_problems(shape: Shape) -> list[tuple[str, int, str, str]]:
    """The architectural invariants a shape breaks, as (field, value, problem, accepted); [] when it is sound.

    Every family the catalogue reads keeps them: whole heads of KV per query group (GQA), a hidden size that
    splits into the heads unless the head size is stated, at most as many routed experts per token as experts,
    and dense leading layers within the depth (DeepSeek's first_k_dense_replace)."""
    out: list[tuple[str, int, str, str]] = []
    sizes = {
        "layers": shape.layers,
        "hidden": shape.hidden,
        "heads": shape.heads,
        "kv_heads": shape.kv_heads,
        "head_dim": shape.head_dim,
        "ffn": shape.ffn,
        "vocab": shape.vocab,
    }
    if shape.moe is not None:
        sizes |= {"experts": shape.moe.experts, "per_token": shape.moe.per_token}
    if shape.mla is not None:
        sizes["kv_lora_rank"] = shape.mla.kv_lora_rank
    for name, value in sizes.items():
        if not 1 <= value <= SHAPE_LIMITS[name]:
            out.append((name, value, "is out of range", f"a whole number from 1 to {SHAPE_LIMITS[name]:,}"))
    if out:
        return out  # the relations below assume sizes in range
    if shape.heads % shape.kv_heads:
        out.append(
            ("kv_heads", shape.kv_heads, f"does not divide the {shape.heads} heads", "a divisor of heads")
        )
    # A head size other than hidden // heads was stated (Languini's XL: 24 heads of 128 at width 2048), so the
    # width need not split into the heads; a derived one must.
    derived = shape.head_dim == shape.hidden // shape.heads
    if shape.mla is None and derived and shape.head_dim * shape.heads != shape.hidden:
        out.append(("heads", shape.heads, f"does not divide hidden {shape.hidden}", "a divisor of hidden"))
    if shape.moe is not None:
        moe = shape.moe
        if moe.per_token > moe.experts:
            out.append(("per_token", moe.per_token, f"exceeds the {moe.experts} experts", "at most experts"))
        if moe.dense_layers > shape.layers:
            out.append(
                ("dense_layers", moe.dense_layers, f"exceeds the {shape.layers} layers", "at most layers")
            )
    return out
