"""Provides Megatron-Core's selective recomputation by module (--recompute-modules): the activation bytes each
module's recomputation frees, and the forward FLOPs it runs again.

Megatron-Core (NVIDIA/Megatron-LM@d98e8a64ddf3) checkpoints each named module of a transformer layer apart:
- `layernorm`: the input and pre-MLP norms where they are modules of their own, their output discarded and
  recomputed (CheckpointWithoutOutput; megatron/core/transformer/transformer_layer.py, recompute_input_
  layernorm / recompute_pre_mlp_layernorm, set only when the norm is not an IdentityOp). In the Transformer
  Engine layer spec the input norm is fused into the QKV linear and the pre-MLP norm into the dense MLP's
  first linear (IdentityOp), so only a MoE layer's pre-MLP norm (TENorm), and multi-latent attention's input
  norm, are recomputed (megatron/core/models/gpt/gpt_layer_specs.py, get_gpt_layer_with_transformer_engine_
  submodules; mla_down_proj_fusion defaults to False). Each frees its 16-bit output: 2 bytes per hidden unit.
- `moe_act`: the grouped experts' activation, its output (the second expert GEMM's input) discarded
  (megatron/core/transformer/moe/experts.py, activation_recompute; under FP8 the second GEMM is set to save
  that 16-bit input, so the FP8 copy the block count holds goes instead).
- `mlp`: a dense layer's whole MLP checkpointed (transformer_layer.py recompute_mlp, dense layers only): it
  keeps its input and frees the first linear's input (the fused norm's output) and the activation tensors.
- `moe`: the whole MoE layer checkpointed (megatron/core/transformer/moe/moe_layer.py moe_layer_recompute):
  the experts' activations and the routed copies of the tokens go; its input (the norm's output) is kept.
- `shared_experts`: the shared experts checkpointed (moe_layer.py shared_experts_recompute).
- `mla_up_proj`: multi-latent attention's up projections and RoPE, their outputs (the Q, K and V attention
  keeps) discarded.
- `core_attn`: the attention core (Korthikanti's selective recomputation; Megatron's default module): it
  frees the s x s scores an unfused attention keeps, none under a fused (flash) kernel.
The bytes follow the block count of advisor/physics/memory.py (16-bit activations, FP8 linears' inputs one
byte); the FLOPs are each recomputed module's forward GEMMs.
"""

from __future__ import annotations

from advisor.job.shape import Arch

SUBSUMED = {"moe_act": "moe", "shared_experts": "moe"}
"""A module inside another that is recomputed whole: counted once, with the whole."""


def _module_bytes(arch: Arch, dispatch: float, te_fp8: bool) -> dict[str, tuple[float, float]]:
    """Per module: the bytes per token its recomputation frees on (a MoE layer, a dense layer)."""
    h = float(arch.hidden)
    fp8 = 1.0 if te_fp8 else 0.0
    routed = float(arch.expert_ffn * arch.experts_per_token) if arch.is_moe else 0.0
    shared = float(arch.expert_ffn * arch.shared_experts) if arch.is_moe else 0.0
    unit = 6.0 if arch.gated else 4.0  # bytes per FFN unit: fused SwiGLU's 2f-wide input and its output
    mla = arch.kv_lora_rank is not None
    q, kv = arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    norm_in = 2.0 * h if mla else 0.0
    up = 2.0 * q + 4.0 * kv if mla else 0.0
    return {
        "core_attn": (0.0, 0.0),
        "layernorm": (norm_in + (2.0 - fp8) * h, norm_in),
        "moe_act": ((2.0 - fp8) * routed, 0.0),
        "mlp": (0.0, (2.0 - fp8) * h + (unit - fp8) * arch.ffn_hidden),
        "moe": ((unit - fp8) * (routed + shared) + dispatch, 0.0),
        "shared_experts": ((unit - fp8) * shared, 0.0),
        "mla_up_proj": (up, up),
    }


def recomputes_attention(modules: tuple[str, ...] | None) -> bool:
    """Whether a selective recomputation recomputes the attention core: unstated modules are Megatron's
    default, ["core_attn"]."""
    return not modules or "core_attn" in modules


def counted(modules: tuple[str, ...]) -> tuple[str, ...]:
    """The modules counted: one inside another that is recomputed whole is counted with it."""
    return tuple(m for m in modules if SUBSUMED.get(m) not in modules)


def freed_bytes_per_token(
    arch: Arch, modules: tuple[str, ...], dispatch: float, te_fp8: bool
) -> tuple[float, float]:
    """(bytes per token per layer the modules' recomputation frees, averaged over the MoE and dense layers;
    the most one module of one layer re-materialises while its backward runs). `dispatch`: the routed copies'
    bytes per token of a MoE layer (memory.py _moe_dispatch_bytes)."""
    per = _module_bytes(arch, dispatch, te_fp8)
    moe_share = arch.moe_layers / arch.layers if arch.layers else 0.0
    freed = working = 0.0
    for m in counted(modules):
        on_moe, on_dense = per.get(m, (0.0, 0.0))
        freed += moe_share * on_moe + (1.0 - moe_share) * on_dense
        working = max(working, on_moe if moe_share else 0.0, on_dense if moe_share < 1.0 else 0.0)
    return freed, working


def forward_flops_per_token(arch: Arch, modules: tuple[str, ...]) -> float:
    """The forward FLOPs per token, over all layers, the recomputed modules run again (their GEMMs; the norms
    and activations are memory-bound and counted by the step model, core_attn by the selective figure)."""
    h, up = float(arch.hidden), (3.0 if arch.gated else 2.0)
    dense_layers = arch.layers - arch.moe_layers
    routed = arch.expert_ffn * arch.experts_per_token if arch.is_moe else 0
    shared = arch.expert_ffn * arch.shared_experts if arch.is_moe else 0
    q, kv = arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    per_layer = {
        "mlp": dense_layers * 2.0 * up * h * arch.ffn_hidden,
        "moe": arch.moe_layers * 2.0 * (up * h * (routed + shared) + h * arch.experts),
        "shared_experts": arch.moe_layers * 2.0 * up * h * shared,
        "mla_up_proj": arch.layers * 2.0 * (arch.kv_lora_rank or 0) * (q + 2 * kv),
    }
    return sum(per_layer.get(m, 0.0) for m in counted(modules))


def recomputes_ffn(modules: tuple[str, ...], moe: bool) -> bool:
    """Whether a layer's whole FFN runs again: a MoE layer's under `moe`, a dense layer's under `mlp`."""
    return ("moe" if moe else "mlp") in modules


def pass_values_per_token(arch: Arch, modules: tuple[str, ...], moe: bool, tp: int, sp: bool) -> float:
    """The values per token one rank reads and writes again in memory-bound passes of the recomputed modules
    of one layer (the step model's count, advisor/physics/step_ops.py _memory_bound): an FFN activation reads
    its 2f-wide input and writes f (3 values per unit gated, 2 plain), a norm reads and writes the hidden
    width (split over the TP ranks under sequence parallelism)."""
    modules = counted(modules)
    routed = arch.expert_ffn * arch.experts_per_token if moe else 0
    shared = arch.expert_ffn * arch.shared_experts if moe else 0
    if recomputes_ffn(modules, moe):
        width = routed + shared if moe else arch.ffn_hidden
    else:
        width = (shared if "shared_experts" in modules else 0) + (routed if "moe_act" in modules else 0)
    norms = int(moe) + int(arch.kv_lora_rank is not None) if "layernorm" in modules else 0
    return (3.0 if arch.gated else 2.0) * width / tp + 2.0 * norms * arch.hidden / (tp if sp else 1)
