"""Unit tests of recommend(): plans fit, respect limits, rank by objective, explain themselves."""

from __future__ import annotations

import dataclasses

import pytest

from advisor.answer.recommend import recommend
from advisor.job.inputs import Constraints, Workload
from advisor.learned.efficiency import PriorEfficiency
from advisor.question.errors import InputError


@pytest.fixture(scope="module")
def finetune_70b(knowledge):
    return recommend(
        knowledge,
        Workload(model="llama-2-70b", kind="finetune", precision="bf16"),
        Constraints(budget_usd=20000),
    )


def test_issue_example_gives_fitting_plans_with_reasons(finetune_70b) -> None:
    report = finetune_70b
    assert not report.nothing_fits and len(report.plans) == 5
    for plan in report.plans:
        assert plan.memory.fits and plan.memory.per_gpu_gb <= plan.memory.usable_gb
        assert plan.precision == "bf16"
        assert plan.hours.p10 <= plan.hours.p50 <= plan.hours.p90
        assert 0 < plan.cost_usd.low <= plan.cost_usd.mid <= plan.cost_usd.high <= 20000
        assert plan.price is not None and plan.reasons and plan.parallelism
        # Full fine-tuning of 69B parameters needs over 1.1 TB of model states: no single GPU holds it.
        assert plan.count >= 16
    assert report.prices_as_of is not None and report.prices_line().startswith("prices as of ")
    assert report.why_not and report.front


def test_why_not_names_memory_of_too_few_gpus(finetune_70b) -> None:
    memory_lines = [line for line in finetune_70b.why_not if "needs" in line and "GB per GPU" in line]
    assert memory_lines, finetune_70b.why_not


def test_front_is_pareto(finetune_70b) -> None:
    front = finetune_70b.front
    for a in front:
        for b in front:
            assert not (b.cost_mid < a.cost_mid and b.hours_p50 < a.hours_p50)
    assert sum(p.chosen for p in front) <= 1


def test_objectives_trade_cost_for_time(knowledge) -> None:
    w = Workload(model="llama-2-7b", kind="pretrain", tokens=2e10)
    cheapest = recommend(knowledge, w, Constraints(objective="cheapest")).plans[0]
    fastest = recommend(knowledge, w, Constraints(objective="fastest")).plans[0]
    assert cheapest.cost_usd.mid <= fastest.cost_usd.mid
    assert fastest.hours.p50 <= cheapest.hours.p50


def test_deadline_and_budget_are_respected(knowledge) -> None:
    w = Workload(model="llama-2-7b", kind="pretrain", tokens=2e10)
    report = recommend(knowledge, w, Constraints(deadline_hours=48, budget_usd=30000, objective="cheapest"))
    for plan in report.plans:
        assert plan.hours.p90 <= 48 and plan.cost_usd.high <= 30000


def test_nothing_fits_says_why_and_what_would(knowledge) -> None:
    report = recommend(
        knowledge,
        Workload(model="llama-2-7b", kind="pretrain", tokens=2e10),
        Constraints(budget_usd=50, objective="cheapest"),
    )
    assert report.nothing_fits and not report.plans
    assert any("budget" in line for line in report.why_not)
    budget = [s for s in report.suggestions if s.field == "budget_usd"]  # structured: input, value, outcome
    assert budget and budget[0].value > 0 and budget[0].outcome.startswith("allows ")


@pytest.mark.parametrize("limits", [{"budget_usd": 5.0}, {"deadline_hours": 0.05}])
def test_lifted_limits_read_from_the_search_match_a_rerun(knowledge, monkeypatch, limits) -> None:
    # The budget and deadline a relaxed search would allow are read from the search's own scored plans
    # (no rule tests whether a limit is set); the search rerun without the limit must say the same.
    import advisor.answer.recommend as rec

    w = Workload(model="llama-3.2-1b", kind="lora", tokens=2e9)
    c = Constraints(gpus=("a100-80gb-sxm", "h100-sxm"), max_gpus=8, **limits)
    shared = recommend(knowledge, w, c, PriorEfficiency(knowledge.assumptions))
    monkeypatch.setattr(rec, "LIMIT_FACTS", ("workload.kind",))  # a fact rules test: every limit rerun
    rerun = recommend(knowledge, w, c, PriorEfficiency(knowledge.assumptions))
    assert shared.nothing_fits and shared.suggestions
    assert [dataclasses.asdict(s) for s in shared.suggestions] == [
        dataclasses.asdict(s) for s in rerun.suggestions
    ]


def test_memory_bound_nothing_fits_suggests_qlora(knowledge) -> None:
    # L40S, not L4: 8 L4 are two 4-GPU servers over Ethernet, where the fast-fabric rule refuses a 70B model's
    # sharded training, and the Hugging Face stack a fine-tuning run assumes has no pipeline parallelism.
    report = recommend(
        knowledge,
        Workload(model="llama-2-70b", kind="finetune", tokens=1e8),
        Constraints(gpus=("l40s",), max_gpus=8),
    )
    assert report.nothing_fits
    kinds = [s.value for s in report.suggestions if s.field == "kind"]
    assert "lora" in kinds or "qlora" in kinds, report.suggestions


def test_gpu_filter_and_bf16_rule(knowledge) -> None:
    report = recommend(
        knowledge,
        Workload(model="llama-2-7b", kind="lora", precision="bf16", tokens=1e8),
        Constraints(gpus=("v100-16gb", "a100-80gb-sxm")),
    )
    assert {p.gpu for p in report.plans} == {"a100-80gb-sxm"}
    assert any("v100-16gb" in line and "bf16" in line for line in report.why_not)


def test_tensor_parallel_never_crosses_nvlink_domain_in_training(knowledge) -> None:
    report = recommend(
        knowledge, Workload(model="llama-2-70b", kind="finetune", tokens=1e8), Constraints(top=20)
    )
    by_id = {g.id: g for g in knowledge.gpus}
    for plan in report.plans:
        assert plan.layout.tp <= by_id[plan.gpu].nvlink_domain


def test_inference_sizes_replicas_for_the_load(knowledge) -> None:
    report = recommend(
        knowledge,
        Workload(model="llama-3.1-8b", kind="inference", requests_per_s=20, tpot_ms=50),
        Constraints(),
        PriorEfficiency(knowledge.assumptions),
    )
    assert report.plans
    for plan in report.plans:
        assert plan.serving is not None
        assert plan.serving.capacity_rps >= 20
        assert plan.serving.tpot_ms.p50 <= 50.0 + 1e-9
        assert plan.count == plan.serving.replicas * plan.serving.gpus_per_replica


def test_spot_costs_less_and_says_so(knowledge) -> None:
    w = Workload(model="llama-2-7b", kind="lora", tokens=1e8)
    on_demand = recommend(knowledge, w, Constraints(objective="cheapest", gpus=("h100-sxm",))).plans[0]
    spot = recommend(
        knowledge, w, Constraints(objective="cheapest", pricing="spot", gpus=("h100-sxm",))
    ).plans[0]
    assert spot.cost_usd.mid < on_demand.cost_usd.mid
    assert any("preemption" in r for r in spot.reasons)


def test_bad_combinations_are_input_errors(knowledge) -> None:
    with pytest.raises(InputError, match="needs a transformer"):
        recommend(knowledge, Workload(model="resnet50", kind="lora", samples=1e5), Constraints())
    with pytest.raises(InputError, match="unknown GPU"):
        recommend(knowledge, Workload(model="resnet50", samples=1e5), Constraints(gpus=("h1000",)))
    with pytest.raises(InputError, match="needs a data size"):
        recommend(knowledge, Workload(model="resnet50"), Constraints())
