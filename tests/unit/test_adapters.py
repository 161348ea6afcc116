"""PEFT's LoRA and QLoRA passes and the 4-bit base's dequantisation in the composed step
(advisor/physics/adapters.py, advisor/physics/step_ops.py)."""

from __future__ import annotations

import pytest

from advisor.job.inputs import RunConfig, Workload
from advisor.job.resolve import resolve_job
from advisor.physics.adapters import adapted_modules, peft_bytes, peft_prices
from advisor.physics.step_ops import MEM, ComposedStep, _gemms, _layer_params, _Shape

TOKENS = 4096


def _job(knowledge, kind: str, stack: str, targets: str = "all"):
    w = Workload(
        model="llama-3.1-8b",
        kind=kind,
        precision="bf16",
        seq_len=TOKENS,
        batch_size=1,
        lora_rank=16,
        config=RunConfig(global_batch=8, stack=stack, lora_targets=targets),
    )
    return resolve_job(knowledge, w, need_data=False)


def _layer(knowledge, job, recompute: str = "none"):
    gpu = knowledge.gpu("h100-sxm")
    fabric = knowledge.assumptions.fabric[gpu.fabric]
    step = ComposedStep(job, gpu, fabric, knowledge.assumptions, (1.0, 0.0, 0.0, 0.0))
    return step, step.layer(_Shape("bf16", 1, 1, 1, recompute, 1, 8), False)


def test_the_adapted_modules_are_hugging_faces_unfused_linears(knowledge) -> None:
    arch = _job(knowledge, "lora", "hf").arch
    assert arch is not None
    assert (arch.hidden, arch.ffn_hidden, arch.kv_heads * arch.head_dim) == (4096, 14336, 1024)
    gemms = _gemms(arch, TOKENS, 1, 1, False)
    # q, k and v (two of width 1024 under grouped-query attention), o; then gate and up, and down.
    attention = [(TOKENS, 4096, 4096, 1), (TOKENS, 1024, 4096, 2), (TOKENS, 4096, 4096, 1)]
    assert adapted_modules(arch, gemms, False, "attention") == attention
    assert adapted_modules(arch, gemms, False, "all") == [
        *attention,
        (TOKENS, 14336, 4096, 2),
        (TOKENS, 4096, 14336, 1),
    ]


def test_peft_bytes_per_token_are_the_hand_count() -> None:
    # LoRA on k_proj (input 4096), bf16, a recomputed forward: x to fp32 (read 2, write 4 bytes a value) and
    # autocast back (read 4, write 2), each of the 2 forward passes and once backward: 3 x 2 x 6 x 4096.
    assert peft_bytes("lora", 1024, 4096, 2.0, 2.0) == 3 * 2 * 6 * 4096 == 147456
    assert peft_bytes("lora", 1024, 4096, 2.0, 1.0) == 2 * 2 * 6 * 4096
    # QLoRA (bnb's Linear4bit): the base output cloned (read n, write n) each forward pass; no cast.
    assert peft_bytes("qlora", 1024, 4096, 2.0, 2.0) == 2 * 2 * 1024 * 2.0


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_a_peft_stack_pays_its_casts_and_a_stack_with_its_own_adapters_does_not(knowledge, recompute) -> None:
    hf_step, hf = _layer(knowledge, _job(knowledge, "lora", "hf"), recompute)
    _, tt = _layer(knowledge, _job(knowledge, "lora", "torchtune"), recompute)
    assert hf_step.peft_fp32
    arch = hf_step.arch
    modules = adapted_modules(arch, _gemms(arch, TOKENS, 1, 1, False), False, "all")
    passes = 2.0 if recompute == "full" else 1.0
    extra = sum(p.seconds * t for p, t in peft_prices(hf_step.prices, modules, "lora", 2.0, passes))
    assert hf.seconds[MEM] - tt.seconds[MEM] == pytest.approx(extra, rel=1e-9)
    assert extra > 0


def test_full_training_and_a_stack_without_its_own_entry_pay_no_peft_passes(knowledge) -> None:
    assert not _layer(knowledge, _job(knowledge, "finetune", "hf"))[0].peft_fp32
    assert not _layer(knowledge, _job(knowledge, "lora", "fsdp"))[0].peft_fp32
    assert not _layer(knowledge, _job(knowledge, "lora", "megatron"))[0].peft_fp32


@pytest.mark.parametrize("recompute,passes", [("none", 2.0), ("full", 3.0)])
def test_qlora_dequantises_the_base_once_per_pass_that_multiplies_by_it(knowledge, recompute, passes) -> None:
    # torchtune keeps no PEFT passes: the QLoRA layer differs from the LoRA one by the dequantisation alone,
    # forward and backward (bitsandbytes' MatMul4Bit), and once more for a recomputed forward.
    step, qlora = _layer(knowledge, _job(knowledge, "qlora", "torchtune"), recompute)
    _, lora = _layer(knowledge, _job(knowledge, "lora", "torchtune"), recompute)
    local = _layer_params(step.arch, False, 1, 1)
    once = step.prices.memory(local * (0.5 + 2.0), local * 2.0).seconds  # read NF4, write and read 16-bit
    assert qlora.seconds[MEM] - lora.seconds[MEM] == pytest.approx(passes * once, rel=1e-9)
