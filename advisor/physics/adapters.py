"""What Hugging Face PEFT's LoRA layers move through memory on top of the adapter itself, per layer.

An adapted linear computes y = W x + s B(A(dropout(x))). Every LoRA implementation runs the adapter's two
thin GEMMs, its scaling and its add; the composed step (advisor/physics/step_ops.py) leaves them to the
residual fitted on full training, because pricing them there moved the LoRA rows of Megatron (NeMo), FSDP
and torchtune, which sit at about 1.0x, to 0.88-0.95x (docs/step-model.md, Stop 43). What is priced here is
what PEFT adds over an adapter kept in the model's dtype (huggingface/peft@5d602fdbff04):

- get_peft_model(autocast_adapter_dtype=True), the default since PEFT v0.12.0, upcasts 16-bit adapter weights
  to fp32 (cast_adapter_dtype, src/peft/tuners/tuners_utils.py; before it, adapters took the base's dtype);
- LoRA (src/peft/tuners/lora/layer.py, Linear.forward): x = self._cast_input_dtype(x, lora_A.weight.dtype),
  a copy of the input per target module (read k x the activation bytes, write 4k), which the trainers'
  bf16/fp16 autocast casts back to 16 bits for lora_A's F.linear (read 4k, write k x the activation bytes);
  backward, both casts run the other way. q, k and v are three modules on one input: three copies each way;
- QLoRA (src/peft/tuners/lora/bnb.py, Linear4bit.forward): under autocast no cast, but the 4-bit base's output
  is cloned before the adapter's add (result.clone(), "as per Tim Dettmers, for 4bit, we need to defensively
  clone here"): read n, write n per forward pass; its backward passes the gradient through.

A recomputed forward (Hugging Face gradient checkpointing) runs the forward passes again. `lora_dropout`
defaults to 0.0, which PEFT builds as nn.Identity (LoraConfig, src/peft/tuners/lora/config.py): no copy.
"""

from __future__ import annotations

from advisor.job.shape import Arch
from advisor.physics.op_prices import OpPrices, Price

FP32 = 4.0


def adapted_modules(
    arch: Arch, gemms: list[tuple[int, int, int, int]], moe: bool, targets: str
) -> list[tuple[int, int, int, int]]:
    """(tokens, output width, input width, how many) of each linear PEFT adapts on one rank, from the layer's
    forward GEMMs in step_ops._gemms's order (QKV fused, attention out, then the FFN's up and down pairs; a
    MoE layer's router at index 4 carries none). Hugging Face modules are unfused (PEFT's target_modules
    q_proj, k_proj, v_proj, gate_proj, up_proj): q, k and v are three modules and a gated FFN's up is two.
    targets 'attention': q, k, v and o only."""
    (m, qkv, h, _), (_, _, q, _) = gemms[0], gemms[1]
    kv = (qkv - q) // 2
    out = [(m, q, h, 1), (m, kv, h, 2), (m, h, q, 1)]
    if targets == "attention":
        return out
    ffn = [g for i, g in enumerate(gemms[2:], start=2) if not (moe and i == 4)]
    up = 2 if arch.gated else 1
    for j, (mm, n, k, count) in enumerate(ffn):
        if j % 2 == 0:  # the pair's up projection (gate and up fused in the GEMM list when gated)
            out.append((mm, n // up, k, count * up))
        else:
            out.append((mm, n, k, count))
    return out


def peft_bytes(kind: str, n: int, k: int, act: float, fwd_passes: float) -> float:
    """Bytes per token PEFT adds on one adapted module of input width k and output width n: LoRA's two casts
    of x each way (forward `fwd_passes` times, backward once); QLoRA's clone of the base output (forward
    only)."""
    if kind == "qlora":
        return 2.0 * n * act * fwd_passes
    return 2.0 * k * (act + FP32) * (fwd_passes + 1.0)


def peft_prices(
    p: OpPrices, modules: list[tuple[int, int, int, int]], kind: str, act: float, fwd_passes: float
) -> list[tuple[Price, float]]:
    """PEFT's passes on one layer for one micro-batch, as (price, times) per adapted module."""
    out = []
    for m, n, k, count in modules:
        nbytes = m * peft_bytes(kind, n, k, act, fwd_passes)
        out.append((p.memory(nbytes, m * max(n, k) * act), float(count)))
    return out
