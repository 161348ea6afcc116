"""Unit tests of the memory model against published figures."""

from __future__ import annotations

import pytest

from advisor.inputs import Workload
from advisor.job import resolve_job
from advisor.layout import Layout
from advisor.memory import GB, TrainingMemoryModel, inference_terms


def _states_gb(knowledge, params: float, dp: int, zero: int, optimizer: str = "adamw") -> float:  # type: ignore[no-untyped-def]
    job = resolve_job(knowledge, Workload(params=params, kind="pretrain", tokens=1e9, optimizer=optimizer))
    model = TrainingMemoryModel(job, knowledge.gpu("a100-80gb-sxm"), "bf16", knowledge.assumptions)
    sharding = {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}[zero] if dp > 1 else "none"
    layout = Layout(count=dp, nodes=1, node_size=8, precision="bf16", dp=dp, sharding=sharding)
    states = model.states(layout)
    return sum(states[k][0] for k in ("weights", "gradients", "master_weights", "optimizer")) / GB


def test_mixed_precision_adamw_is_16_bytes_per_parameter(knowledge) -> None:  # type: ignore[no-untyped-def]
    assert _states_gb(knowledge, 1e9, 1, 0) == pytest.approx(16.0)


@pytest.mark.parametrize("zero,expected_gb", [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure_1(knowledge, zero: int, expected_gb: float) -> None:  # type: ignore[no-untyped-def]
    # ZeRO (Rajbhandari et al. 2019), figure 1: 7.5B parameters, 64 data-parallel GPUs, K = 12.
    assert _states_gb(knowledge, 7.5e9, 64, zero) == pytest.approx(expected_gb, abs=0.1)


def test_optimizer_choice(knowledge) -> None:  # type: ignore[no-untyped-def]
    assert _states_gb(knowledge, 1e9, 1, 0, "adam8bit") == pytest.approx(10.0)  # 2 + 2 + 4 + 2 (old name)
    assert _states_gb(knowledge, 1e9, 1, 0, "adamw-8bit") == pytest.approx(10.0)
    assert _states_gb(knowledge, 1e9, 1, 0, "lion") == pytest.approx(12.0)  # 2 + 2 + 4 + 4
    assert _states_gb(knowledge, 1e9, 1, 0, "paged-adamw-8bit") == pytest.approx(8.0)  # states in host memory
    assert _states_gb(knowledge, 1e9, 1, 0, "sgd") == pytest.approx(12.0)


def test_llama2_70b_kv_cache_at_4k(knowledge) -> None:  # type: ignore[no-untyped-def]
    # 2 (K, V) x 80 layers x 8 KV heads x 128 head dim x 2 bytes = 327,680 bytes per token.
    job = resolve_job(knowledge, Workload(model="llama-2-70b", kind="inference", prompt_tokens=3072,
                                          output_tokens=1024))
    assert job.arch is not None
    assert job.arch.kv_bytes_per_token(2.0) == 327_680
    layout = Layout(count=1, nodes=1, node_size=8, precision="bf16")
    terms = inference_terms(job, knowledge.gpu("h100-sxm"), layout, knowledge.assumptions, 4096)
    assert terms.kv_per_seq_high / 1.01 / GB == pytest.approx(327_680 * 4096 / GB)  # 1.34 GB per sequence


def test_korthikanti_activations(knowledge) -> None:  # type: ignore[no-untyped-def]
    # Korthikanti et al. 2022: per layer s*b*h*(34 + 5*a*s/h) bytes without recomputation; 2*s*b*h with full.
    job = resolve_job(knowledge, Workload(model="gpt3-175b", kind="pretrain", tokens=1e9, seq_len=2048))
    v100 = knowledge.gpu("v100-32gb")  # no FlashAttention: the attention term stays
    model = TrainingMemoryModel(job, v100, "fp16", knowledge.assumptions)
    s, h, a, layers, vocab = 2048, 12288, 96, 96, job.arch.vocab  # type: ignore[union-attr]
    per_layer = s * h * (34 + 5 * a * s / h)
    assert model.per_sequence("none", 1) == pytest.approx(layers * per_layer + 6 * s * vocab)
    assert model.per_sequence("none", 8) == pytest.approx((layers * per_layer + 6 * s * vocab) / 8)
    full = layers * 2 * s * h + 34 * s * h + 6 * s * vocab
    assert model.per_sequence("full", 1) == pytest.approx(full)


def test_flash_attention_drops_the_attention_matrix(knowledge) -> None:  # type: ignore[no-untyped-def]
    job = resolve_job(knowledge, Workload(model="llama-2-7b", kind="pretrain", tokens=1e9))
    with_flash = TrainingMemoryModel(job, knowledge.gpu("a100-80gb-sxm"), "bf16", knowledge.assumptions)
    without = TrainingMemoryModel(job, knowledge.gpu("v100-32gb"), "fp16", knowledge.assumptions)
    assert with_flash.per_sequence("none", 1) < without.per_sequence("none", 1)
    assert with_flash.per_sequence("none", 1) == pytest.approx(without.per_sequence("selective", 1))


def test_qlora_weights_are_4_bit_with_constants(knowledge) -> None:  # type: ignore[no-untyped-def]
    job = resolve_job(knowledge, Workload(model="llama-2-70b", kind="qlora", tokens=1e8))
    model = TrainingMemoryModel(job, knowledge.gpu("a100-80gb-sxm"), "bf16", knowledge.assumptions)
    mem = model.components(Layout(count=1, nodes=1, node_size=8, precision="bf16", micro_batch=1), 72.0)
    weights = dict((n, hi) for n, _, hi in mem.components)["weights"]
    assert weights == pytest.approx(68.98e9 * 4.127 / 8 / GB, rel=0.03)
    assert "optimizer" not in dict((n, hi) for n, _, hi in mem.components)
    assert job.trainable_params < 0.01 * job.params  # adapters only


def test_upper_estimate_includes_headroom_rule(knowledge) -> None:  # type: ignore[no-untyped-def]
    job = resolve_job(knowledge, Workload(model="llama-2-7b", kind="finetune", tokens=1e8))
    gpu = knowledge.gpu("a100-80gb-sxm")
    model = TrainingMemoryModel(job, gpu, "bf16", knowledge.assumptions)
    mem = model.components(Layout(count=1, nodes=1, node_size=8, precision="bf16", micro_batch=1), 72.0)
    assert mem.low_gb < mem.high_gb
    assert mem.fits == (mem.high_gb <= 72.0)
    assert mem.dominant in {"weights", "gradients", "optimizer", "master_weights", "activations"}
