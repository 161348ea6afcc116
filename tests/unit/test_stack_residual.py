"""Tests of the learned residual's stack term: each stack's residual partially pooled by its sources,
the paired one-standard-error choice, the artefact's round trip, an assumed stack's wider interval, LoRA's
priors' ratio kept off the composed step, and the P50-only caps of runs that fit."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from advisor.job.inputs import RunConfig, Workload
from advisor.learned.efficiency.bounds import Bounds, Cap, Where
from advisor.learned.efficiency.learned import LearnedEfficiency, load_learned
from advisor.learned.efficiency.linear import LinearLogModel
from advisor.learned.efficiency.linear_fit import paired_se, stack_offsets
from advisor.learned.efficiency.prior import PriorEfficiency


def _run(stack: str, origin: str) -> SimpleNamespace:
    return SimpleNamespace(row=SimpleNamespace(stack=stack, origin=origin))


def test_a_stack_seen_in_one_source_barely_moves_and_more_sources_move_it_further() -> None:
    rows = [_run("a", "s1")] * 3 + [_run("b", "s2")] * 2 + [_run("b", "s3")] * 2 + [_run("b", "s4")]
    residuals = [0.3, 0.3, 0.3, 0.2, 0.2, 0.4, 0.4, 0.3]
    got = stack_offsets(rows, residuals, 2.0)  # type: ignore[arg-type]
    # One source: 1 / (1 + 2) of its median; three sources: 3 / (3 + 2) of the median of their medians,
    # every source counting once however many runs it has.
    assert got["a"] == pytest.approx(0.3 / 3.0)
    assert got["b"] == pytest.approx(0.3 * 3.0 / 5.0)
    # The less pooling, the closer each stack sits to its sources.
    assert stack_offsets(rows, residuals, 0.5)["a"] > got["a"]  # type: ignore[arg-type]


def test_the_paired_standard_error_ignores_what_every_candidate_shares() -> None:
    # Sources of very different difficulty, one candidate better by 0.02 on every one: no spread in the
    # difference, so the better one is not "within one standard error" of luck.
    hard_and_easy = [0.05, 0.5, 0.2, 0.35]
    better = [v - 0.02 for v in hard_and_easy]
    assert paired_se(hard_and_easy, better) == pytest.approx(0.0, abs=1e-12)
    assert paired_se([0.1, 0.3], [0.3, 0.1]) > 0.0
    assert paired_se([0.1], [0.2]) == 0.0


def _linear(offsets: dict[str, float]) -> LinearLogModel:
    from advisor.learned.efficiency.linear import INPUTS

    n = len(INPUTS)
    return LinearLogModel(
        INPUTS,
        -0.2,
        (0.0,) * n,
        (0.0,) * n,
        (1.0,) * n,
        (0.0,) * n,
        (1.0,) * n,
        (-0.3, 0.1),
        {},
        1.0,
        offsets,
    )


def test_stack_offsets_round_trip_and_bad_ones_are_refused() -> None:
    model = _linear({"megatron": 0.07, "nanotron": -0.12})
    again = LinearLogModel.from_dict(model.to_dict())
    assert again.stack_offset("megatron") == 0.07 and again.stack_offset("never-measured") == 0.0
    # The other stacks' spread around one stack: below it nanotron, above it nothing (0 is the pooled one).
    assert again.other_stacks("megatron") == pytest.approx((-0.19, 0.0))
    assert again.other_stacks("trl") == pytest.approx((-0.12, 0.07))
    # An artefact written before the stack term reads as none.
    old = model.to_dict()
    del old["stack_offsets"]
    assert LinearLogModel.from_dict(old).stack_offsets == {}
    for bad in (math.nan, 60.0):
        broken = model.to_dict()
        broken["stack_offsets"] = {"megatron": bad}
        with pytest.raises(ValueError, match="linear LLM model"):
            LinearLogModel.from_dict(broken)


def test_the_shipped_residual_is_the_stack_s_and_an_assumed_stack_widens_the_interval(knowledge) -> None:
    from advisor.answer.predict import predict

    learned = load_learned(knowledge, PriorEfficiency(knowledge.assumptions))
    assert isinstance(learned, LearnedEfficiency) and learned.model.linear is not None
    linear = learned.model.linear
    workload = Workload(model="llama-3.1-8b", kind="finetune", seq_len=4096, config=RunConfig(stack="trl"))
    stated = predict(knowledge, workload, "h100-sxm", 8, efficiency=learned)
    typed = predict(
        knowledge,
        Workload(model="llama-3.1-8b", kind="finetune", seq_len=4096),
        "h100-sxm",
        8,
        efficiency=learned,
    )
    assert stated.efficiency is not None and typed.efficiency is not None
    assert typed.configuration["stack"].value == "trl"
    below, above = linear.other_stacks("trl")
    if linear.stack_offsets:
        assert below < 0.0 < above
        # The same plan, the same P50; the typed one's interval spans the stacks it did not assume.
        assert typed.efficiency.p50 == pytest.approx(stated.efficiency.p50)
        assert typed.efficiency.p10 < stated.efficiency.p10 and typed.efficiency.p90 > stated.efficiency.p90
        assert any("stack trl assumed" in note for note in typed.notes)
        assert not any("stack trl assumed" in note for note in stated.notes)
        assert "each stack's own" in typed.efficiency_source


def test_a_composed_lora_step_is_not_discounted_again_by_the_priors_ratio(knowledge, monkeypatch) -> None:
    from advisor.answer.predict import predict

    learned = load_learned(knowledge, PriorEfficiency(knowledge.assumptions))
    assert isinstance(learned, LearnedEfficiency)
    calls: list[str] = []
    real = LearnedEfficiency._lora_shift

    def counted(self: LearnedEfficiency, regime: str) -> float:
        calls.append(regime)
        return real(self, regime)

    monkeypatch.setattr(LearnedEfficiency, "_lora_shift", counted)
    for kind in ("lora", "qlora"):
        workload = Workload(model="llama-3.1-8b", kind=kind, seq_len=2048, config=RunConfig(stack="trl"))
        got = predict(knowledge, workload, "a100-80gb-sxm", 1, efficiency=learned)
        assert got.throughput is not None
    # The composed step leaves out the frozen weights' gradient GEMMs and prices QLoRA's dequantisation.
    assert calls == []
    assert real(learned, "lora") < 0.0  # the priors' ratio itself still stands where no step is composed


def test_p50_caps_bound_the_p50_and_leave_the_p90() -> None:
    where = Where("llm", "hopper", "bf16", 0.0)
    every = {"llm|hopper|16-bit": Cap(1.8, "a run the memory model refuses")}
    fitting = {"llm|hopper|16-bit": Cap(1.0, "a run that fits")}
    plain = Bounds(every, {}, {})
    capped = Bounds(every, {}, {}, {}, fitting)
    offsets = (-0.3, 0.3)
    p10, p50, p90, _ = plain.interval(math.log(1.0), offsets, where)
    q10, q50, q90, note = capped.interval(math.log(1.0), offsets, where)
    assert q50 < p50 and q10 < p10 and q50 < 1.0
    assert q90 == pytest.approx(p90)
    assert "highest of runs that fit" in note
    # Far below both caps nothing moves; the artefact keeps them.
    assert capped.interval(math.log(0.3), offsets, where)[1] == pytest.approx(0.3, rel=1e-3)
    assert Bounds.from_dict(capped.to_dict()).p50_caps == fitting
