"""Tests of an answer whose training stack the user left open: its P50 is the default stack's, its interval
reaches the best-case stack's P50 on the same GPU x count, and the answer says both (answer/stack_span.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from advisor.answer.predict import predict
from advisor.answer.stack_span import open_stack_note, span
from advisor.job.inputs import RunConfig, Workload

TYPED = Workload(model="llama-3.1-70b", kind="pretrain", precision="bf16", seq_len=8192)


@pytest.fixture(scope="module")
def answers(knowledge):
    """The typed answer and the same run with each stack stated, on 1,024 H100 (the DGX Cloud scale)."""
    gpu, count = "h100-sxm", 1024
    typed = predict(knowledge, TYPED, gpu, count)
    fsdp = predict(knowledge, replace(TYPED, config=RunConfig(stack="fsdp")), gpu, count)
    megatron = predict(knowledge, replace(TYPED, config=RunConfig(stack="megatron")), gpu, count)
    return typed, fsdp, megatron


def test_an_open_stack_is_answered_for_the_default_and_spans_the_best_case(answers) -> None:
    typed, fsdp, megatron = answers
    assert typed.throughput and fsdp.throughput and megatron.throughput
    assert typed.configuration["stack"].value == "fsdp"
    assert typed.throughput.value == pytest.approx(fsdp.throughput.value)  # the P50 does not move
    # Megatron-Core's answer at this scale is well above the FSDP stack's (its 4D layouts and fused
    # kernels): the interval reaches it, and the answer names the stack, its layout and its figure.
    assert megatron.throughput.value > fsdp.throughput.value
    assert typed.throughput.p10 <= megatron.throughput.value <= typed.throughput.p90
    said = [n for n in typed.notes if n.startswith("stack not stated")]
    assert len(said) == 1
    assert "answered for fsdp" in said[0] and "with megatron" in said[0]
    assert f"{megatron.throughput.value:,.0f}" in said[0] and megatron.parallelism in said[0]
    # Step time and efficiency widen with the throughput, never narrow.
    assert typed.step_time_s and fsdp.step_time_s and typed.efficiency and fsdp.efficiency
    assert typed.step_time_s.p10 <= fsdp.step_time_s.p10 and typed.step_time_s.p90 >= fsdp.step_time_s.p90
    assert typed.efficiency.p90 >= fsdp.efficiency.p90
    assert typed.step_time_s.p50 == pytest.approx(fsdp.step_time_s.p50)


def test_a_stated_stack_is_answered_for_that_stack_only(knowledge, answers) -> None:
    _, fsdp, megatron = answers
    for stated in (fsdp, megatron):
        assert not any(n.startswith("stack not stated") for n in stated.notes)
    # A default that already is the best-case stack (FP8) has nothing else to span.
    fp8 = predict(knowledge, replace(TYPED, precision="fp8"), "h100-sxm", 64)
    assert fp8.configuration["stack"].value == "megatron"
    assert not any(n.startswith("stack not stated") for n in fp8.notes)


def test_span_keeps_an_interval_that_already_holds_the_other_answer(answers) -> None:
    _, fsdp, _ = answers
    assert fsdp.throughput is not None
    mine = fsdp.throughput
    tput, step, eff = span(mine, mine.value * 1.01, fsdp.step_time_s, fsdp.efficiency)
    assert (tput.p10, tput.value, tput.p90) == (mine.p10, mine.value, mine.p90)
    assert step == fsdp.step_time_s and eff == fsdp.efficiency
    said = open_stack_note("fsdp", "megatron", "TP8 x DP128", mine, mine.value * 1.01, 1024)
    assert "(1.01x)" in said and "1,024 GPUs" in said
