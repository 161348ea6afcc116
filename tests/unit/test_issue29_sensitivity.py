"""Issue 29: what would change the answer: the value of an uncertain input at which a plan's place changes,
found by re-scoring and re-ranking; checked here by re-ranking on either side of it."""

from __future__ import annotations

import pytest

from advisor.answer.recommend import _rank, recommend, run_search, sensitivity_tools
from advisor.answer.sensitivity import change_line, flips, memory_flip
from advisor.job.inputs import Constraints, Workload

ISSUE = Workload(model="llama-3.1-8b", kind="pretrain", tokens=100e9)


@pytest.fixture(scope="module", params=["cheapest", "balanced"])
def tools(request, knowledge):
    c = Constraints(budget_usd=50000, deadline_hours=336, objective=request.param)
    search = run_search(knowledge, ISSUE, c)
    return sensitivity_tools(search, _rank(search.ctx, search.feasible), 5)


def _first_with(pool, rank, i, changed):
    trial = pool[:i] + ([changed] if changed is not None else []) + pool[i + 1 :]
    ranked = rank(trial)
    return ranked[0].key if ranked else None


@pytest.mark.parametrize("i", [0, 1, 2])
def test_each_flip_is_where_the_first_place_changes(tools, i) -> None:
    pool, rescore, rank = tools
    found = flips(pool, i, rescore, rank)
    assert found, "the issue's close plans flip within the ranges searched"
    for f in found:

        def at(x, f=f):
            return rescore(pool[i], x, 1.0) if f.what == "efficiency" else rescore(pool[i], 1.0, x)

        near = f.factor**0.98  # a little nearer 1: the order as it is
        past = f.factor**1.02  # a little past the flip: the other order
        before = _first_with(pool, rank, i, at(near)) == pool[i].key
        after = _first_with(pool, rank, i, at(past)) == pool[i].key
        assert before == (i == 0) and after == (i != 0), (f, before, after)


def test_a_memory_flip_moves_a_plan_whose_p90_then_crosses(tools) -> None:
    pool, _, rank = tools
    flip = memory_flip(pool, rank)
    if flip is not None:
        assert flip.factor > 1.0 and flip.first != f"{pool[0].cand.gpu.id} x{pool[0].cand.layout.count}"


def test_every_plan_has_a_would_change_line(knowledge) -> None:
    report = recommend(
        knowledge, ISSUE, Constraints(budget_usd=50000, deadline_hours=336, objective="cheapest")
    )
    for plan in report.plans:
        line = [r for r in plan.reasons if r.startswith("would change: ")]
        assert len(line) == 1, plan.reasons
    assert "ranks first" in next(r for r in report.plans[0].reasons if r.startswith("would change: "))


def test_no_flip_says_so(tools) -> None:
    pool, _, rank = tools

    def never(s, eff, price):
        return s  # nothing changes the plan: no flip anywhere

    first = change_line(pool, 0, never, rank)
    assert "its efficiency" not in first and "its price" not in first
    assert "no efficiency from 0.5x to 2x" in change_line(pool, 1, never, rank)
