"""Issue 20's core fixes: the configuration shows the ZeRO stage the user gave, recomputation advice is said
only when true, pipeline advice matches the plan's micro-batches, and 'N plans fit' counts the limits."""

from __future__ import annotations

import dataclasses

import pytest

from advisor.answer.recommend import recommend
from advisor.catalog.gpus import Gpu
from advisor.cli.render import report_text
from advisor.job.inputs import Constraints, RunConfig, Workload
from advisor.job.layout import Layout
from advisor.job.resolve import resolve_job
from advisor.physics.memory import training_memory

WORKLOAD = Workload(model="llama-2-70b", kind="finetune", precision="bf16")


@pytest.fixture(scope="module")
def given(knowledge):
    """The issue's repro: --tp 8 --zero 3 --recompute full --budget 20000."""
    w = dataclasses.replace(WORKLOAD, config=RunConfig(tp=8, zero=3, recompute="full"))
    return recommend(knowledge, w, Constraints(budget_usd=20000))


@pytest.fixture(scope="module")
def one_rank(knowledge):
    """The repro held to one server: TP8 plans with one data-parallel rank."""
    w = dataclasses.replace(WORKLOAD, config=RunConfig(tp=8, zero=3, recompute="full"))
    return recommend(knowledge, w, Constraints(budget_usd=20000, max_gpus=8))


@pytest.fixture(scope="module")
def searched(knowledge):
    """The same job with nothing but the stack stated (Megatron, which runs pipelines): the search chooses
    the layout and the recomputation."""
    w = dataclasses.replace(WORKLOAD, config=RunConfig(stack="megatron"))
    return recommend(knowledge, w, Constraints(budget_usd=800))


def fits_without_recompute(knowledge, report, plan) -> bool:
    gpu: Gpu = knowledge.gpu(plan.gpu)
    lay = plan.layout
    layout = Layout(
        plan.count, plan.nodes, min(plan.count, gpu.gpus_per_node), plan.precision, lay.tp, lay.pp, lay.dp,
        lay.sharding, "none", lay.micro_batch, lay.grad_accum, lay.cp, lay.ep, lay.shard_group, lay.virtual,
    )  # fmt: skip
    job = resolve_job(knowledge, report.workload)
    usable = plan.memory.usable_gb
    return training_memory(job, gpu, layout, knowledge.assumptions, usable).fits


def test_the_given_zero_stage_is_shown_as_given(given, one_rank) -> None:
    assert [p for p in one_rank.plans if p.layout.dp * p.layout.cp == 1], "the repro has a dp-1 plan"
    for report in (given, one_rank):
        for plan in report.plans:
            zero = plan.configuration["zero"]
            assert (zero.value, zero.source) == (3, "given"), plan.parallelism
            assert bool(zero.note) == (plan.layout.dp * plan.layout.cp == 1)
        assert "zero 0 (given)" not in report_text(report)
    assert "zero 3 (given; dp 1: nothing to shard" in report_text(one_rank)


def test_recompute_advice_is_true_of_the_plan(knowledge, given, searched) -> None:
    for report in (given, searched):
        for plan in report.plans:
            ids = {r.id for r in plan.rules}
            if plan.layout.recompute == "none":
                continue
            spare = fits_without_recompute(knowledge, report, plan)
            stated = report is given
            assert ("advise-activation-checkpointing" in ids) == (not spare and not stated), plan.parallelism
            assert ("advise-recompute-not-needed" in ids) == (spare and stated), plan.parallelism
    # The issue's plans use a few GB of a B200's 171 usable: none "only fits" with recomputation.
    assert not any("only fits with it" in a for p in given.plans for a in p.advice)


@pytest.fixture(scope="module")
def piped(knowledge):
    """The same job on Megatron with a pipeline stated (the step composed from measured operations ranks no
    pipeline among the cheapest plans of the searched one: its last stage holds the LM head)."""
    w = dataclasses.replace(WORKLOAD, config=RunConfig(stack="megatron", pp=2))
    return recommend(knowledge, w, Constraints(budget_usd=800))


def test_pipeline_advice_names_the_plans_own_micro_batches(given, searched, piped) -> None:
    plans = [p for r in (given, searched, piped) for p in r.plans if p.layout.pp > 1]
    assert plans
    for plan in plans:
        text = next(a for a in plan.advice if a.startswith(f"Pipeline parallel {plan.layout.pp}"))
        assert f"{plan.layout.grad_accum} micro-batches per step" in text
        # The share of the step (issue 29): at most f / (1 + f) of the closed form's f, never past 100%.
        f = (plan.layout.pp - 1) / (plan.layout.grad_accum * plan.layout.virtual)
        shown = int(text.split("idles about ", 1)[1].split("%", 1)[0])
        assert 0 <= shown <= round(100 * f / (1 + f)) < 100
        assert "at least 4 x" not in text


def test_plans_fit_counts_the_budget(knowledge, searched) -> None:
    """'N plans fit' counts the plans within the budget (the issue: '64 plans fit' above 2 rows at $200)."""
    unlimited = recommend(knowledge, searched.workload, Constraints())
    assert searched.plans and len(searched.plans) <= searched.plans_considered
    assert searched.plans_considered < unlimited.plans_considered  # $800 leaves many plans out
    assert all(p.cost_usd.high <= 800 for p in searched.plans)
    assert f"\n{searched.plans_considered} plans fit; " in report_text(searched)
