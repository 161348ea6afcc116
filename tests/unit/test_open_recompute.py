"""Tests of an answer whose recipe the user left open at a model size where the assumed stack's public runs
split on recomputation: the P50 midway between no and full recomputation, the interval spanning both, the
answer saying so; nothing changes when any of the recipe is stated or the runs agree (answer/stack_span.py
between, job/data.py open_recompute)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from advisor.answer.plan_out import Throughput
from advisor.answer.predict import predict
from advisor.answer.stack_span import between
from advisor.catalog.stacks import stack_of
from advisor.job.data import open_recompute
from advisor.job.inputs import RunConfig, Workload
from advisor.learned.efficiency.base import Interval

TYPED = Workload(model="llama-3.1-8b", kind="pretrain", precision="bf16", seq_len=4096)
GPU, COUNT = "a100-80gb-sxm", 8


@pytest.fixture(scope="module")
def answers(knowledge):
    """The typed 8B pre-training on 8 A100 and the same run with each recomputation stated."""
    typed = predict(knowledge, TYPED, GPU, COUNT)
    none = predict(knowledge, replace(TYPED, config=RunConfig(recompute="none")), GPU, COUNT)
    full = predict(knowledge, replace(TYPED, config=RunConfig(recompute="full")), GPU, COUNT)
    return typed, none, full


def test_an_open_recipe_is_answered_between_no_and_full_recomputation(answers) -> None:
    typed, none, full = answers
    assert typed.throughput and none.throughput and full.throughput
    assert typed.configuration["stack"].value == "fsdp"
    assert typed.configuration["recompute"].value == "none"
    assert "open" in (typed.configuration["recompute"].note or "")
    # Full recomputation costs a forward pass more: the stated answers differ, and the typed P50 is their
    # geometric middle, its interval reaching both.
    assert full.throughput.value < none.throughput.value
    middle = math.sqrt(none.throughput.value * full.throughput.value)
    assert typed.throughput.value == pytest.approx(middle, rel=1e-6)
    assert typed.throughput.p10 <= full.throughput.value and typed.throughput.p90 >= none.throughput.value
    said = [n for n in typed.notes if n.startswith("recompute not stated")]
    assert len(said) == 1 and f"{full.throughput.value:,.0f}" in said[0] and "8B" in said[0]
    # The step time and the efficiency move with the P50, inside their own intervals.
    assert typed.step_time_s and none.step_time_s and typed.efficiency and none.efficiency
    assert typed.step_time_s.p50 > none.step_time_s.p50 and typed.efficiency.p50 < none.efficiency.p50
    assert typed.step_time_s.p10 <= typed.step_time_s.p50 <= typed.step_time_s.p90


def test_a_stated_recipe_or_a_size_the_runs_agree_on_is_left_alone(knowledge, answers) -> None:
    _, none, full = answers
    for stated in (none, full):
        assert not any(n.startswith("recompute not stated") for n in stated.notes)
    # Any stated piece of the recipe (a micro-batch, a ZeRO stage) keeps the stack's own default.
    for workload in (replace(TYPED, batch_size=1), replace(TYPED, config=RunConfig(zero=2))):
        got = predict(knowledge, workload, GPU, COUNT)
        assert not any(n.startswith("recompute not stated") for n in got.notes)
    # Below 5B the FSDP stack's runs do not recompute: nothing is open.
    small = predict(knowledge, replace(TYPED, model="llama-3.2-1b"), GPU, COUNT)
    assert not any(n.startswith("recompute not stated") for n in small.notes)


def test_open_recompute_reads_the_stack_and_the_size(knowledge) -> None:
    fsdp, trl = stack_of(knowledge, "fsdp"), stack_of(knowledge, "trl")
    assert open_recompute(TYPED, fsdp, 8e9, "none") == "full"
    assert open_recompute(TYPED, fsdp, 1e9, "none") is None  # below recompute_open_from_params
    assert open_recompute(TYPED, fsdp, 70e9, "none") is None  # from recompute_full_from_params: full
    assert open_recompute(TYPED, fsdp, 8e9, "full") is None  # the plan already recomputes
    assert open_recompute(TYPED, trl, 8e9, "none") is None  # a stack without the split
    assert open_recompute(replace(TYPED, config=RunConfig(stack="fsdp")), fsdp, 8e9, "none") is None


def test_between_takes_the_geometric_middle_and_spans_both() -> None:
    mine = Throughput(value=100.0, p10=60.0, p90=130.0, unit="tokens/s")
    step, eff = Interval(8.0, 10.0, 16.0), Interval(0.3, 0.5, 0.8)
    tput, step2, eff2 = between(mine, 64.0, step, eff)
    assert tput.value == pytest.approx(80.0) and (tput.p10, tput.p90) == (60.0, 130.0)
    assert step2 is not None and eff2 is not None
    assert step2.p50 == pytest.approx(12.5) and eff2.p50 == pytest.approx(0.4)
    low = between(mine, 40.0, None, None)[0]  # the other answer below the interval: it is reached
    assert low.p10 == 40.0 and low.value == pytest.approx(math.sqrt(4000.0))
