"""Provides Arch: a transformer's shape (GQA, MLA, MoE, tied embeddings) and the counts derived from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.catalog.models import ModelSpec

# Parameters per layer of a dense transformer ~ 12 d^2 (Kaplan et al. 2020, sec. 2.1); Llama-2 7B/13B
# keep d / layers = 128, which fixes the shape of a custom model from its size alone.
_ASPECT = 128
CUSTOM_VOCAB = 32000


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Arch:
    """The transformer shape the per-layer memory and FLOP formulas need."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    gated: bool
    vocab: int
    experts: int = 1
    experts_per_token: int = 1
    kv_channels: int | None = None
    """Explicit head dim (Gemma, Qwen3) when it is not hidden / heads."""
    moe_ffn_hidden: int | None = None
    """Width of one routed expert's FFN (ffn_hidden when None)."""
    shared_experts: int = 0
    dense_layers: int = 0
    """Leading layers with a dense FFN instead of experts (DeepSeek-V3: 3)."""
    kv_lora_rank: int | None = None
    """MLA: the compressed KV width cached per token per layer."""
    qk_rope_head_dim: int = 0
    tied_embeddings: bool = False

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.kv_channels or self.hidden // self.heads

    @property
    def is_moe(self) -> bool:
        """Whether FFNs are routed experts."""
        return self.experts > 1

    @property
    def moe_layers(self) -> int:
        """Layers whose FFN is a set of experts."""
        return self.layers - self.dense_layers if self.is_moe else 0

    @property
    def expert_ffn(self) -> int:
        """FFN width of one routed expert."""
        return self.moe_ffn_hidden or self.ffn_hidden

    def ffn_params(self, width: int) -> float:
        """Weights of one FFN of this width (gated: three matrices)."""
        return float((3 if self.gated else 2) * self.hidden * width)

    @property
    def expert_params(self) -> float:
        """Weights of every routed expert of every MoE layer (split over expert parallel ranks)."""
        return self.moe_layers * self.experts * self.ffn_params(self.expert_ffn)

    def kv_values_per_token_layer(self, tp: int = 1) -> float:
        """KV cache values per token per layer on one of `tp` ranks (MLA caches one latent, replicated)."""
        if self.kv_lora_rank:
            return float(self.kv_lora_rank + self.qk_rope_head_dim)
        kv_heads_local = -(-self.kv_heads // tp)  # ceil: heads are replicated when tp exceeds the KV heads
        return 2.0 * kv_heads_local * self.head_dim

    def kv_bytes_per_token(self, bytes_per_value: float) -> float:
        """KV cache per token of context, all layers."""
        return self.layers * self.kv_values_per_token_layer() * bytes_per_value

    def lora_params(self, rank: int, targets: str = "all") -> float:
        """Adapter parameters of rank r on the attention projections, and (targets 'all') every FFN matrix."""
        h, q, kv = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim
        attention = (h + q) + 2 * (h + kv) + (q + h)
        if targets == "attention":
            return float(self.layers * rank * attention)
        per_ffn = lambda f: (h + f) * (2 if self.gated else 1) + (f + h)  # noqa: E731
        dense = self.layers - self.moe_layers
        ffn = dense * per_ffn(self.ffn_hidden) + self.moe_layers * (
            self.experts * per_ffn(self.expert_ffn) + self.shared_experts * per_ffn(self.expert_ffn)
        )
        return float(rank * (self.layers * attention + ffn))


# Modern decoders (Llama 3, arXiv:2407.21783 table 3: 8B/70B/405B): SwiGLU FFN 3.5x hidden (14336/4096,
# 28672/8192), 8 key-value heads (grouped-query attention) and a 128,256-token vocabulary.
MODERN_FFN_RATIO = 3.5
MODERN_KV_HEADS = 8
MODERN_VOCAB = 128256
GQA_FROM_PARAMS = 7e9


def dense_arch_for(params: float) -> Arch:
    """A generic dense decoder of about `params` parameters: Llama 3 proportions (gated FFN 3.5x, vocab 128k),
    grouped-query attention with 8 KV heads from 7B up (smaller: one KV head per head; under 1B a 32k
    vocabulary)."""
    hidden = max(_ASPECT, round((params * _ASPECT / 12.0) ** (1 / 3) / _ASPECT) * _ASPECT)
    if hidden >= 2048:  # widths of 8 x 128 at scale, so that 8 KV heads divide the heads
        hidden = round(hidden / 1024) * 1024
    # A 128k table would outweigh a small model's layers.
    vocab = MODERN_VOCAB if params >= 1e9 else CUSTOM_VOCAB
    heads = hidden // _ASPECT
    kv_heads = MODERN_KV_HEADS if params >= GQA_FROM_PARAMS and heads % MODERN_KV_HEADS == 0 else heads
    ffn = round(MODERN_FFN_RATIO * hidden / _ASPECT) * _ASPECT
    per_layer = 2.0 * hidden * hidden + 2.0 * hidden * kv_heads * _ASPECT + 3.0 * hidden * ffn
    layers = max(1, round(max(params - 2.0 * vocab * hidden, per_layer) / per_layer))
    return Arch(
        layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, ffn_hidden=ffn, gated=True, vocab=vocab
    )


def arch_of(spec: Any) -> Arch | None:
    """The shape of a catalogue model; fields the catalogue may not carry yet are read with defaults."""
    if not spec.is_transformer:
        return None
    opt = lambda name, default=None: getattr(spec, name, default)  # noqa: E731
    return Arch(
        layers=spec.layers or 0,
        hidden=spec.hidden or 0,
        heads=spec.heads or 0,
        kv_heads=spec.kv_heads or spec.heads or 0,
        ffn_hidden=spec.ffn_hidden or 0,
        gated=spec.gated_ffn,
        vocab=spec.vocab or CUSTOM_VOCAB,
        experts=spec.experts,
        experts_per_token=spec.experts_per_token,
        kv_channels=opt("kv_channels"),
        moe_ffn_hidden=opt("moe_ffn_hidden"),
        shared_experts=opt("shared_experts", 0) or 0,
        dense_layers=opt("dense_layers", 0) or 0,
        kv_lora_rank=opt("kv_lora_rank"),
        qk_rope_head_dim=opt("qk_rope_head_dim", 0) or 0,
        tied_embeddings=bool(opt("tied_embeddings", False)),
    )


def transformer_flops_per_token(active_params: float, arch: Arch, seq_len: int) -> float:
    """Forward FLOPs per token: 2N + 4 x layers x hidden x seq (PaLM appendix B's 6N + 12LHQT / 3)."""
    return 2.0 * active_params + 4.0 * arch.layers * arch.hidden * seq_len


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class ModelShape:
    """The model a job trains or serves: its catalogue entry (or None), architecture and sizes."""

    spec: ModelSpec | None
    arch: Arch | None
    params: float
    active: float
    model_id: str
    name: str
    kind: str


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class WorkSize:
    """What one item of the job costs: its unit, tokens per sequence, FLOPs and activation bytes."""

    unit: str
    items_per_seq: int
    fwd: float
    train: float
    act_bytes: float
