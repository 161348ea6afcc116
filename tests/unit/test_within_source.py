"""The mechanisms that explain how the composed step's ratio to measurement varies within one source: a causal
backward priced below its non-causal rows, the attention kernel a run's software states, and the MoE tokens'
permutation around the experts (advisor/physics/op_prices.py, step_ops.py; learned/efficiency/runs.py)."""

from __future__ import annotations

import pytest

from advisor.job.inputs import RunConfig, Workload
from advisor.job.layout import Layout
from advisor.job.resolve import resolve_job
from advisor.learned.efficiency.runs import Run, stated_attention
from advisor.learned.efficiency.samples import step_of_run
from advisor.physics.memory import TrainingMemoryModel
from advisor.physics.op_prices import OpPrices
from advisor.physics.speed import stack_traits, training_step
from advisor.physics.step_ops import ATTN, MEM


def _flops(seq: int, heads: int, head_dim: int) -> float:
    return 4.0 * seq * seq * heads * head_dim / 2.0


@pytest.mark.parametrize("kernel", ["fa2", "cudnn", "fa3"])
def test_a_causal_backward_runs_below_the_non_causal_rows_by_the_forwards_ratio(
    knowledge, kernel: str
) -> None:
    # H100's backward rows (the FlashAttention-3 paper's) are non-causal only: the causal backward takes the
    # forward's causal/non-causal ratio, so it runs slower at short sequences than at long ones.
    from advisor.catalog import operations

    gpu = knowledge.gpu("h100-sxm")
    prices = OpPrices(gpu, gpu.fabric, None, kernel)
    rates = {}
    for seq in (1024, 16384):
        _, bwd = prices.attention("bf16", seq, 16, 16, 128, 1)
        rates[seq] = 2.5 * _flops(seq, 16, 128) / bwd.seconds / 1e12
        assert "causal/non-causal" in bwd.basis
        ask = {"seq_len": seq, "heads": 16, "kv_heads": 16, "head_dim": 128, "batch": 1, "kernel": kernel}
        open_bwd = operations.attention_tflops("h100-sxm", "bf16", causal=False, pass_="bwd", **ask).value
        fwd = operations.attention_tflops("h100-sxm", "bf16", causal=True, pass_="fwd", **ask).value
        open_fwd = operations.attention_tflops("h100-sxm", "bf16", causal=False, pass_="fwd", **ask).value
        assert rates[seq] == pytest.approx(open_bwd * fwd / open_fwd, rel=1e-6)
    assert rates[1024] / rates[16384] < 0.95


def test_a_gpu_whose_rows_hold_no_non_causal_forward_keeps_its_backward(knowledge) -> None:
    # A100's rows are causal forward passes only: its backward is the forward's at the measured pass ratio,
    # already causal, and is not scaled again.
    gpu = knowledge.gpu("a100-80gb-sxm")
    _, bwd = OpPrices(gpu, gpu.fabric, None, "fa2").attention("bf16", 8192, 32, 8, 128, 1)
    assert "causal/non-causal" not in bwd.basis


@pytest.mark.parametrize(
    "software, cc, kernel",
    [
        (
            "torch 2.11.0+cu130, transformers 5.17.0 (sdpa)",
            9.0,
            "cudnn",
        ),  # cuDNN > 9.15 in the CUDA 13 wheels
        ("torch 2.11.0+cu128, sdpa", 9.0, "fa2"),  # CUDA 12 wheels ship an older cuDNN
        ("torch 2.4.1, sdpa", 9.0, "fa2"),
        ("torch 2.5.0, sdpa", 9.0, "cudnn"),  # 2.5.0 preferred cuDNN on H100, withdrawn in 2.5.1
        ("torch 2.13.0/cu130, transformers 5.14.1 (sdpa)", 8.0, "fa2"),  # Ampere: never cuDNN first
        ("DeepSpeed 0.19.2, torch 2.13.0/cu130, FlashAttention-3 (2026)", 9.0, "fa3"),
        ("LitGPT, FlashAttention-2", 8.0, "fa2"),
        ("torch 2.13.0/cu130, FlashAttention-4 beta (2026)", 10.0, None),  # Blackwell's rows: one kernel
        ("Composer/llm-foundry FSDP (2023)", 8.0, None),
    ],
)
def test_the_attention_kernel_a_runs_software_states(software: str, cc: float, kernel: str | None) -> None:
    assert stated_attention(software, cc) == kernel


def _run(software: str, seq: int) -> Run:
    return Run(
        workload="llama-3.1-8b",
        gpu="h200",
        count=8,
        nodes=1,
        precision="bf16",
        throughput=1.0,
        unit="tokens/s",
        stack="deepspeed",
        source="test",
        kind="finetune",
        seq_len=seq,
        micro_batch=1,
        global_batch=8,
        zero=2,
        recompute="none",
        software=software,
    )


def test_a_run_that_states_flashattention_3_can_be_priced_at_its_rows(knowledge) -> None:
    # stas00's DeepSpeed runs on H200 state FlashAttention-3: their attention at FA3's rate (H200's own rows),
    # not FlashAttention-2's (~0.55x of it there); the longer the sequence, the more the step shortens.
    shares = {}
    for seq in (8192, 65536):
        stated = _run("DeepSpeed 0.19.2, torch 2.13.0/cu130, FlashAttention-3", seq)
        fa3 = step_of_run(knowledge, stated, stated_kernel=True)
        plain = step_of_run(knowledge, _run("DeepSpeed 0.19.2", seq), stated_kernel=True)
        # The training samples keep the stack's usual kernel: a user's question states none.
        usual = step_of_run(knowledge, stated)
        assert fa3 is not None and plain is not None and usual is not None
        assert usual.step.total_s == plain.step.total_s
        assert fa3.step.ops is not None and plain.step.ops is not None
        assert fa3.step.ops.seconds(ATTN) < 0.8 * plain.step.ops.seconds(ATTN)
        shares[seq] = fa3.step.total_s / plain.step.total_s
    assert shares[65536] < shares[8192] < 1.0


def _moe_step(knowledge, ep: int):
    w = Workload(
        model="mixtral-8x7b",
        kind="pretrain",
        precision="bf16",
        seq_len=4096,
        batch_size=1,
        config=RunConfig(global_batch=64, stack="megatron", ep=ep),
    )
    job = resolve_job(knowledge, w, need_data=False)
    gpu = knowledge.gpu("h100-sxm")
    layout = Layout(
        count=8,
        nodes=1,
        node_size=8,
        precision="bf16",
        tp=1,
        pp=1,
        dp=8,
        sharding="zero1",
        recompute="none",
        micro_batch=1,
        grad_accum=8,
        ep=ep,
    )
    per = TrainingMemoryModel(job, gpu, "bf16", knowledge.assumptions).per_sequence("none", 1, 1, 1)
    fabric = knowledge.assumptions.fabric[gpu.fabric]
    step = training_step(job, gpu, layout, fabric, knowledge.assumptions, per, stack_traits("megatron"))
    assert step is not None and step.ops is not None
    return job, step


@pytest.mark.parametrize("ep, sorts", [(1, 0.0), (4, 2.0)])
def test_moe_layers_pay_for_permuting_their_routed_tokens(
    knowledge, monkeypatch, ep: int, sorts: float
) -> None:
    # Megatron-Core's all-to-all dispatcher copies every routed token into expert order and back (permute,
    # unpermute), and with several local experts under EP sorts the received chunks by expert each way.
    from advisor.physics.step_ops import ComposedStep

    job, with_permute = _moe_step(knowledge, ep)
    monkeypatch.setattr(ComposedStep, "_permute", lambda *args: None)
    _, without = _moe_step(knowledge, ep)
    arch = job.arch
    assert arch is not None and arch.is_moe and with_permute.ops is not None and without.ops is not None
    tokens, routed = 4096, 4096 * arch.experts_per_token
    nbytes = (2.0 * (tokens + routed) + 2.0 * sorts * routed) * arch.hidden * 2.0
    gpu = knowledge.gpu("h100-sxm")
    one = OpPrices(gpu, gpu.fabric).memory(nbytes, routed * arch.hidden * 2.0).seconds
    # Forward and backward, every MoE layer, 8 micro-batches.
    expected = arch.layers * 2.0 * one * 8
    extra = with_permute.ops.seconds(MEM) - without.ops.seconds(MEM)
    assert extra == pytest.approx(expected, rel=1e-6)
    # The step grows by them (less what more compute hides of the data-parallel traffic).
    assert without.total_s < with_permute.total_s <= without.total_s + expected * (1 + 1e-9)
